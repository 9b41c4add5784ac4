package health

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// SummaryPrefix starts every Summary: the Slurm drain reasons gpuwatch owns, so that
// `gpuwatch check` (like NHC) only undoes drains it made.
const SummaryPrefix = "gpuwatch:"

// maxSummary is the longest Summary, in bytes.
const maxSummary = 200

// Report is the engine's verdict after the last cycle, ready for JSON: the agent's
// /health document and what `gpuwatch check` prints.
type Report struct {
	Node       string             `json:"node"`
	Time       time.Time          `json:"time"`
	State      telemetry.State    `json:"state"`
	StateSince time.Time          `json:"state_since,omitzero"`
	Severity   telemetry.Severity `json:"severity"`         // worst active condition
	Action     telemetry.Action   `json:"action,omitempty"` // the most disruptive recommended action
	GPUs       []GPUReport        `json:"gpus"`
	// Conditions are the active conditions that are not on one GPU: on the node,
	// an NVSwitch or an InfiniBand port, worst first. GPU and NVLink conditions are
	// under their GPU.
	Conditions []telemetry.Condition `json:"conditions"`
	// Warnings are problems of the engine itself (an unreadable state file,
	// dropped Xid events).
	Warnings []string `json:"warnings,omitempty"`

	all []telemetry.Condition // every active condition, worst first
}

// GPUReport is one GPU's part of the Report.
type GPUReport struct {
	Index      int                `json:"index"`
	UUID       string             `json:"uuid,omitempty"`
	State      telemetry.State    `json:"state"`
	StateSince time.Time          `json:"state_since,omitzero"`
	Severity   telemetry.Severity `json:"severity"`
	Action     telemetry.Action   `json:"action,omitempty"`
	// Conditions on the GPU and on its NVLinks, worst first.
	Conditions []telemetry.Condition `json:"conditions"`
}

// Report returns the verdict of the last Derive (before the first, an empty healthy
// report). The result shares nothing the engine changes later.
func (e *Engine) Report() Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report
}

// AllConditions returns every active condition, worst first.
func (r Report) AllConditions() []telemetry.Condition {
	if r.all != nil {
		return slices.Clone(r.all)
	}
	out := slices.Clone(r.Conditions)
	for _, g := range r.GPUs {
		out = append(out, g.Conditions...)
	}
	sortConditions(out)
	return out
}

// Drain reports whether the node should take no new work: its state is draining or
// drained. `gpuwatch check` exits non-zero then.
func (r Report) Drain() bool { return !r.State.Schedulable() }

// Summary is one line for a Slurm HealthCheckProgram drain reason, at most 200 bytes,
// starting with "gpuwatch:": the worst condition, where it is, its action, and how
// many more there are, e.g.
//
//	gpuwatch: xid79 gpu=GPU-5c3f… action=RESTART_BM
//	gpuwatch: ib-down port=mlx5_3/1 action=CHECK_MECHANICALS +2 more
//	gpuwatch: gpu-count action=RESTART_BM (NVML sees 7 of the 8 NVIDIA GPUs on the PCI bus)
//
// A node without a warning reads "gpuwatch: healthy" (or its state).
func (r Report) Summary() string {
	all := r.AllConditions()
	var worst []telemetry.Condition
	for _, c := range all {
		if c.Severity >= telemetry.SeverityWarning {
			worst = append(worst, c)
		}
	}
	if len(worst) == 0 {
		return SummaryPrefix + " " + r.State.String()
	}
	c := worst[0]
	var b strings.Builder
	b.WriteString(SummaryPrefix)
	b.WriteByte(' ')
	if c.Kind == telemetry.ConditionXid && c.Evidence["xid"] != "" {
		b.WriteString("xid" + c.Evidence["xid"])
	} else {
		b.WriteString(string(c.Kind))
	}
	switch c.Target.Scope {
	case telemetry.ScopeGPU, telemetry.ScopeNVLink:
		b.WriteString(" gpu=")
		if c.GPUUUID != "" {
			b.WriteString(c.GPUUUID)
		} else {
			b.WriteString(strconv.Itoa(c.Target.GPU))
		}
		if c.Target.Scope == telemetry.ScopeNVLink {
			b.WriteString(" link=" + strconv.Itoa(c.Target.Link))
		}
	case telemetry.ScopeIBPort:
		fmt.Fprintf(&b, " port=%s/%d", c.Target.IBDevice, c.Target.IBPort)
	case telemetry.ScopeNVSwitch:
		fmt.Fprintf(&b, " nvswitch=%d", c.Target.NVSwitch)
	}
	if c.Action != telemetry.ActionNone {
		b.WriteString(" action=" + string(c.Action))
	}
	if c.Kind == telemetry.ConditionGPUCount {
		// The counts are the reason: "NVML sees 7 of the 8 NVIDIA GPUs on the PCI bus".
		b.WriteString(" (" + c.Message + ")")
	}
	tail := ""
	if n := len(worst) - 1; n > 0 {
		tail = " +" + strconv.Itoa(n) + " more"
	}
	return truncate(b.String(), maxSummary-len(tail)) + tail
}

// sortConditions orders worst first: severity, then action, then kind and target.
func sortConditions(cs []telemetry.Condition) {
	slices.SortFunc(cs, func(a, b telemetry.Condition) int {
		if c := cmp.Compare(b.Severity, a.Severity); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Action.Rank(), a.Action.Rank()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return cmp.Compare(a.Target.String(), b.Target.String())
	})
}

// buildReport refreshes e.report from the active conditions and states.
func (e *Engine) buildReport(inv *collector.Inventory, now time.Time, dropped uint64) {
	all := make([]telemetry.Condition, 0, len(e.conds))
	for _, a := range e.conds {
		c := a.c
		c.Evidence = cloneMap(c.Evidence)
		all = append(all, c)
	}
	sortConditions(all)
	r := Report{Node: string(e.node), Time: now, State: e.nodeSt.state, StateSince: e.nodeSt.since, all: all,
		Conditions: []telemetry.Condition{}, GPUs: []GPUReport{}}
	byGPU := map[int]int{}
	idx := make([]int, 0, len(e.gpus))
	for i, g := range e.gpus {
		if i >= 0 && g.known {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	for _, i := range idx {
		g := e.gpus[i]
		gr := GPUReport{Index: i, State: g.state, StateSince: g.since, Conditions: []telemetry.Condition{}}
		if info, ok := inv.ByIndex(i); ok {
			gr.UUID = info.UUID
		}
		byGPU[i] = len(r.GPUs)
		r.GPUs = append(r.GPUs, gr)
	}
	for _, c := range all {
		r.Severity = r.Severity.Max(c.Severity)
		r.Action = r.Action.Max(c.Action)
		if g, ok := c.Target.GPUID(); ok {
			if j, ok := byGPU[g.Index]; ok {
				gr := &r.GPUs[j]
				gr.Conditions = append(gr.Conditions, c)
				gr.Severity = gr.Severity.Max(c.Severity)
				gr.Action = gr.Action.Max(c.Action)
				continue
			}
		}
		r.Conditions = append(r.Conditions, c)
	}
	r.Warnings = slices.Clone(e.warnings)
	if dropped > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d Xid events dropped: the engine was not called often enough", dropped))
	}
	e.report = r
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
