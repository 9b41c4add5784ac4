package straggler

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestScore: one 8-GPU node with GPU 3 named a straggler 4 minutes ago and GPU 5
// named 40 minutes ago (past the 30-minute window: it does not count), and a
// clean node.
func TestScore(t *testing.T) {
	b, err := snapshot.SyntheticBuilder(snapshot.SyntheticSpec{Nodes: 2, GPUsPerNode: 8, Leaves: 1, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	b.MarkStraggler(snapshot.StragglerMark{Node: "node-00000", GPU: 3, Job: "train-a", Signal: "sm_clock", Lag: 0.22, At: t0.Add(-4 * time.Minute)})
	b.MarkStraggler(snapshot.StragglerMark{Node: "node-00000", GPU: 5, Job: "train-a", Signal: "power", Lag: 0.3, At: t0.Add(-40 * time.Minute)})
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	gpus := func(p ...int) snapshot.GPUSet {
		var set snapshot.GPUSet
		for _, x := range p {
			set = set.With(x)
		}
		return set
	}
	tests := []struct {
		name   string
		node   int
		chosen snapshot.GPUSet
		want   float64
		reason string // with Explain
	}{
		// 1 straggler among 8 chosen: 1 − 1/8.
		{"whole node with the straggler", 0, snapshot.AllGPUs(8), 0.875, "1 of 8 chosen GPUs are stragglers: gpu 3 sm_clock 22% behind in job train-a, named 4m0s ago"},
		// 1 among 2: 1 − 1/2.
		{"two GPUs, one the straggler", 0, gpus(2, 3), 0.5, "gpu 3 sm_clock 22% behind"},
		// 1 among 1: 1 − 1/1.
		{"the straggler alone", 0, gpus(3), 0, "1 of 1 chosen"},
		// GPU 5's mark is 40 minutes old: not a straggler any more.
		{"the expired mark", 0, gpus(5), 1, ""},
		{"the node's clean GPUs", 0, gpus(0, 1, 2, 4, 5, 6, 7), 1, ""},
		{"a clean node", 1, snapshot.AllGPUs(8), 1, ""},
		{"nothing chosen", 0, 0, 1, ""},
	}
	cy := &framework.Cycle{Snap: s, Free: make([]int32, s.GPUCount())}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, explain := range []bool{false, true} {
				var c framework.Candidate
				c.Reset(cy, tc.node)
				c.Chosen, c.Explain = tc.chosen, explain
				got, st := New().Score(context.Background(), &framework.Request{GPUs: tc.chosen.Len()}, &c)
				if math.Abs(got-tc.want) > 1e-12 || !st.OK() {
					t.Errorf("explain %v: score %v (%v), want %v", explain, got, st, tc.want)
				}
				if explain && !strings.Contains(st.Reason, tc.reason) || tc.reason == "" && st.Reason != "" {
					t.Errorf("explain %v: reason %q, want %q", explain, st.Reason, tc.reason)
				}
			}
		})
	}
	// The class key tells the nodes apart by their straggler GPUs, and nothing
	// else: the clean node's key is the one of a node never marked.
	k0, k1 := New().AppendNodeKey(nil, s.Node(0)), New().AppendNodeKey(nil, s.Node(1))
	if string(k0) == string(k1) || string(k1) != string(framework.Key(nil).GPUs(0)) {
		t.Errorf("node keys %x and %x", k0, k1)
	}
}
