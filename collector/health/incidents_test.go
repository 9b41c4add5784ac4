package health

import (
	"context"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestIncidents: conditions reported by another component (DCGM health watches)
// raise the GPU's state while reported and clear a quiet period after they stop.
func TestIncidents(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var report []telemetry.Condition
	e, err := New(Options{Node: "n1", BootID: "b", Now: func() time.Time { return now },
		Incidents: func() []telemetry.Condition { return report }})
	if err != nil {
		t.Fatal(err)
	}
	inv := &collector.Inventory{Node: "n1", GPUs: []collector.GPUInfo{{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"}}}
	derive := func() healthreport.Report {
		if err := e.Derive(context.Background(), &collector.Snapshot{Time: now, Inventory: inv}, func(telemetry.Sample) {}); err != nil {
			t.Fatal(err)
		}
		return e.Report()
	}
	derive()
	report = []telemetry.Condition{
		{Kind: telemetry.ConditionDCGMHealth, Target: telemetry.GPUTarget(telemetry.GPUID{Node: "n1", Index: 1}),
			Severity: telemetry.SeverityCritical, Message: "DCGM mem health fail (DCGM_FR_VOLATILE_DBE_DETECTED)", Since: now, Observed: now},
		{Kind: telemetry.ConditionDCGMHealth, Target: telemetry.GPUTarget(telemetry.GPUID{Node: "other", Index: 0}),
			Severity: telemetry.SeverityCritical, Message: "not this node", Since: now, Observed: now},
	}
	now = now.Add(time.Second)
	r := derive()
	if len(r.AllConditions()) != 1 || r.GPUs[1].State == telemetry.StateHealthy || r.GPUs[0].State != telemetry.StateHealthy {
		t.Fatalf("while reported: %+v", r.AllConditions())
	}
	report = nil
	now = now.Add(DefaultRules().ClearAfter + time.Second)
	for range 4 {
		now = now.Add(time.Second)
		r = derive()
	}
	if len(r.AllConditions()) != 0 {
		t.Errorf("after a quiet period: %+v", r.AllConditions())
	}
}

// TestIncidentsClearedByReset: a DCGM incident on a GPU clears when the GPU is
// reset (here: it falls off the bus and comes back), even while the last health
// check, taken before the reset, still lists it; one reported after the reset
// is raised again.
func TestIncidentsClearedByReset(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var report []telemetry.Condition
	e, err := New(Options{Node: "n1", BootID: "b", Now: func() time.Time { return now },
		Incidents: func() []telemetry.Condition { return report }})
	if err != nil {
		t.Fatal(err)
	}
	inv := &collector.Inventory{Node: "n1", GPUs: []collector.GPUInfo{{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"}}}
	derive := func(lost float64) []telemetry.Condition {
		snap := &collector.Snapshot{Time: now, Inventory: inv, Samples: []telemetry.Sample{
			{Name: telemetry.MetricGPULost, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, "0"), Value: 0, Time: now},
			{Name: telemetry.MetricGPULost, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, "1"), Value: lost, Time: now},
		}}
		if err := e.Derive(context.Background(), snap, func(telemetry.Sample) {}); err != nil {
			t.Fatal(err)
		}
		var out []telemetry.Condition
		for _, c := range e.Report().AllConditions() {
			if c.Kind == telemetry.ConditionDCGMHealth {
				out = append(out, c)
			}
		}
		return out
	}
	incident := func(at time.Time) []telemetry.Condition {
		return []telemetry.Condition{{Kind: telemetry.ConditionDCGMHealth, Target: telemetry.GPUTarget(telemetry.GPUID{Node: "n1", Index: 1}),
			Severity: telemetry.SeverityCritical, Message: "DCGM pcie health fail (DCGM_FR_XID_ERROR)", Since: at, Observed: at}}
	}
	derive(0)
	now = now.Add(time.Second)
	report = incident(now)
	if got := derive(1); len(got) != 1 {
		t.Fatalf("while reported: %+v", got)
	}
	now = now.Add(time.Second)
	if got := derive(1); len(got) != 1 {
		t.Fatalf("still reported: %+v", got)
	}
	// The GPU comes back (a reset); DCGM's last check, from before, still lists it.
	now = now.Add(time.Second)
	if got := derive(0); len(got) != 0 {
		t.Errorf("after the GPU's reset: %+v, want none", got)
	}
	now = now.Add(time.Second)
	if got := derive(0); len(got) != 0 {
		t.Errorf("the stale report raised it again: %+v", got)
	}
	// A new report after the reset counts.
	now = now.Add(time.Second)
	report = incident(now)
	if got := derive(0); len(got) != 1 {
		t.Errorf("reported after the reset: %+v, want it raised", got)
	}
}
