package fragmentation

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

func TestScore(t *testing.T) {
	s, err := snapshot.Synthetic(snapshot.SyntheticSpec{Nodes: 1, GPUsPerNode: 8, Leaves: 1, Now: time.Unix(1e9, 0)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		free   int32 // per GPU
		chosen snapshot.GPUSet
		milli  int
		want   float64
	}{
		{"fills an empty node", 1000, snapshot.AllGPUs(8), 1000, 1},     // 0 left
		{"half of an empty node", 1000, snapshot.AllGPUs(4), 1000, 0.5}, // 4000 of 8000 left
		{"a quarter GPU", 1000, 1, 250, 1 - 7750.0/8000},                // 7750 left
		{"last quarters", 250, snapshot.AllGPUs(8), 250, 1},             // 0 left
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			free := make([]int32, 8)
			for i := range free {
				free[i] = tc.free
			}
			var c framework.Candidate
			c.Reset(&framework.Cycle{Snap: s, Free: free}, 0)
			c.Chosen = tc.chosen
			got, _ := New().Score(context.Background(), &framework.Request{Milli: tc.milli}, &c)
			if d := got - tc.want; d > 1e-9 || d < -1e-9 {
				t.Errorf("score %v, want %v", got, tc.want)
			}
		})
	}
}
