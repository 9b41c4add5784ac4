package health

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// Report returns the verdict of the last Derive (before the first, an empty healthy
// report). The result shares nothing the engine changes later.
func (e *Engine) Report() healthreport.Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report
}

// buildReport refreshes e.report from the active conditions and states.
func (e *Engine) buildReport(inv *collector.Inventory, now time.Time, dropped uint64) {
	all := make([]telemetry.Condition, 0, len(e.conds))
	for _, a := range e.conds {
		c := a.c
		c.Evidence = cloneMap(c.Evidence)
		all = append(all, c)
	}
	healthreport.SortConditions(all)
	e.reportAll = all
	r := healthreport.Report{Node: string(e.node), Time: now, State: e.nodeSt.state, StateSince: e.nodeSt.since,
		Conditions: []telemetry.Condition{}, GPUs: []healthreport.GPUReport{}}
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
		gr := healthreport.GPUReport{Index: i, State: g.state, StateSince: g.since, Conditions: []telemetry.Condition{}}
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
