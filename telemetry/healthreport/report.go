// Package healthreport is the health report: a node's verdict with its GPUs'
// states and the active conditions, worst first. It is the wire contract
// between the agent, which builds it (collector/health), and the control
// plane, which reads it (the server's health push, the drain controller,
// `gpuwatch check`), so it lives in the vocabulary and neither side imports
// the other.
package healthreport

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// SummaryPrefix starts every Summary: the Slurm drain reasons gpuwatch owns, so that
// `gpuwatch check` (like NHC) only undoes drains it made.
const SummaryPrefix = "gpuwatch:"

// MaxSummary is the longest Summary, in bytes.
const MaxSummary = 200

// Report is a node's health verdict, ready for JSON: the agent's /health
// document, what `gpuwatch check` prints, and the body the agent pushes to the
// server's drain controller (the wire contract between them).
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

// AllConditions returns every active condition, worst first.
func (r Report) AllConditions() []telemetry.Condition {
	out := slices.Clone(r.Conditions)
	for _, g := range r.GPUs {
		out = append(out, g.Conditions...)
	}
	SortConditions(out)
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
	return truncate(b.String(), MaxSummary-len(tail)) + tail
}

// SortConditions orders worst first: severity, then action, then kind and target.
func SortConditions(cs []telemetry.Condition) {
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

// truncate cuts s to at most n bytes on a rune boundary, ending with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
