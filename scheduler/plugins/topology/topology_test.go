package topology

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

func TestScore(t *testing.T) {
	// 8 nodes, 2 leaves (0-3, 4-7) under one spine, NVLink domains of 2 nodes.
	s, err := snapshot.Synthetic(snapshot.SyntheticSpec{Nodes: 8, GPUsPerNode: 2, Leaves: 2, Spines: 1, NodesPerNVLinkDomain: 2, Now: time.Unix(1e9, 0)})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Hierarchy()
	for a := range 8 {
		for b := range 8 {
			if got, want := LCATier(s, a, b), h.LCATier(telemetry.NodeID(s.Node(a).Name), telemetry.NodeID(s.Node(b).Name)); got != want {
				t.Fatalf("LCATier(%d,%d) %s, hierarchy says %s", a, b, got, want)
			}
		}
	}
	leafFree := []int64{4000, 8000} // leaf 0 half used, leaf 1 empty
	tests := []struct {
		name string
		node int
		near []int32
		want float64
	}{
		{"same node", 0, []int32{0}, 1},
		{"same nvlink domain", 1, []int32{0}, 0.8},   // 1 − 1/5
		{"same leaf", 2, []int32{0}, 0.6},            // 1 − 2/5
		{"same spine", 4, []int32{0}, 0.4},           // 1 − 3/5
		{"closest peer wins", 4, []int32{0, 5}, 0.8}, // node 5 shares node 4's domain
		{"busy leaf packs", 0, nil, 0.5},             // 1 − 4000/8000
		{"empty leaf", 4, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c framework.Candidate
			c.Reset(&framework.Cycle{Snap: s, Free: make([]int32, s.GPUCount()), LeafFree: leafFree, Near: tc.near}, tc.node)
			got, _ := New().Score(context.Background(), &framework.Request{}, &c)
			if d := got - tc.want; d > 1e-9 || d < -1e-9 {
				t.Errorf("score %v, want %v", got, tc.want)
			}
		})
	}
}
