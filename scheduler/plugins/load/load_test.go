package load

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

func TestScore(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	old := t0.Add(-time.Hour)
	b := snapshot.NewBuilder(t0, time.Minute)
	b.AddNode(snapshot.NodeInput{Name: "fresh", GPUs: []snapshot.GPUInput{
		{Index: 0, Utilization: 0.8, UtilizationAt: t0, ThermalHeadroom: 0.4, PowerHeadroom: 0.6, HeadroomAt: t0},
	}})
	b.AddNode(snapshot.NodeInput{Name: "stale", GPUs: []snapshot.GPUInput{
		{Index: 0, Utilization: 0, UtilizationAt: old, ThermalHeadroom: 1, PowerHeadroom: 1, HeadroomAt: old},
	}})
	b.AddNode(snapshot.NodeInput{Name: "half", GPUs: []snapshot.GPUInput{
		{Index: 0, Utilization: 0.2, UtilizationAt: t0, ThermalHeadroom: 1, PowerHeadroom: 1, HeadroomAt: old},
	}})
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"fresh": 0.5*0.2 + 0.25*0.4 + 0.25*0.6, // 0.35
		"stale": 0.5,                           // all ignored: neutral
		"half":  0.8,                           // only utilization counts: 1 − 0.2
	}
	for i := range s.Len() {
		var c framework.Candidate
		c.Reset(&framework.Cycle{Snap: s, Free: make([]int32, s.GPUCount())}, i)
		c.Chosen = 1
		got, _ := New().Score(context.Background(), &framework.Request{}, &c)
		name := s.Node(i).Name
		if d := got - want[name]; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: score %v, want %v", name, got, want[name])
		}
	}
}
