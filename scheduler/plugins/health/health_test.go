package health

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

func TestFilterAndScore(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := snapshot.NewBuilder(t0, time.Minute)
	states := []telemetry.State{telemetry.StateHealthy, telemetry.StateSuspect, telemetry.StateDraining, telemetry.StateDrained, telemetry.StateProbation, telemetry.StateHealthy}
	var gpus []snapshot.GPUInput
	for i, st := range states {
		gpus = append(gpus, snapshot.GPUInput{Index: i, Health: st, HealthAt: t0})
	}
	b.AddNode(snapshot.NodeInput{Name: "n1", GPUs: gpus})
	b.AddNode(snapshot.NodeInput{Name: "n2", GPUs: gpus[:1]})
	b.Exclude(snapshot.Exclusion{Node: "n1", GPU: 5, Reason: "row remap"})
	b.Exclude(snapshot.Exclusion{Node: "n2", GPU: -1, Reason: "manual drain"})
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	cy := &framework.Cycle{Snap: s, Free: make([]int32, s.GPUCount())}
	ctx := context.Background()
	var c framework.Candidate
	c.Reset(cy, 0)
	c.Need, c.Explain = 3, true
	st := New().Filter(ctx, &framework.Request{}, &c)
	// Usable: 0 healthy, 1 suspect, 4 probation; 2, 3 not schedulable, 5 excluded.
	if !st.OK() || c.Usable != 0b010011 || !strings.Contains(st.Reason, "gpu 5 healthy, excluded: row remap") {
		t.Fatalf("status %v usable %06b", st, c.Usable)
	}
	c.Chosen = c.Usable
	// (1 + 0.4 + 0.6) / 3
	if got, _ := New().Score(ctx, &framework.Request{}, &c); got < 0.6666 || got > 0.6667 {
		t.Errorf("score %v, want 2/3", got)
	}
	c.Reset(cy, 0)
	c.Need = 4
	if st := New().Filter(ctx, &framework.Request{}, &c); st.OK() {
		t.Error("four GPUs needed, three schedulable: passed")
	}
	c.Reset(cy, 1)
	c.Need, c.Explain = 1, true
	if st := New().Filter(ctx, &framework.Request{}, &c); st.OK() || !strings.Contains(st.Reason, "manual drain") {
		t.Errorf("excluded node: %v", st)
	}
}
