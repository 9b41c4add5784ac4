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
