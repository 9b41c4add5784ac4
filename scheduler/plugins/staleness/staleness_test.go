package staleness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

func TestFilter(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := snapshot.NewBuilder(t0, time.Minute)
	b.AddNode(snapshot.NodeInput{Name: "n1", GPUs: []snapshot.GPUInput{
		{Index: 0, HealthAt: t0}, {Index: 1, HealthAt: t0.Add(-5 * time.Minute)}, {Index: 2},
	}})
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var c framework.Candidate
	c.Reset(&framework.Cycle{Snap: s, Free: make([]int32, 3)}, 0)
	c.Need, c.Explain = 2, true
	st := New().Filter(ctx, &framework.Request{}, &c)
	if !st.OK() || c.Usable != 0b111 || !strings.Contains(st.Reason, "never observed") {
		t.Errorf("default: %v usable %03b", st, c.Usable)
	}
	c.Reset(c.Cycle, 0)
	c.Need = 2
	if st := New().Filter(ctx, &framework.Request{RequireFresh: true}, &c); st.OK() || c.Usable != 0b001 {
		t.Errorf("require fresh: %v usable %03b", st, c.Usable)
	}
}
