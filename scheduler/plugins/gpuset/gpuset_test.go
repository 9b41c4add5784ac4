package gpuset

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// pairsNode is a 4-GPU PCIe box with NVLink bridges: 0-1 and 2-3 are NV4, other
// pairs SYS; rails unknown.
func pairsNode(t *testing.T) *snapshot.Snapshot {
	topo := &telemetry.NodeTopology{Node: "n1"}
	for g := range 4 {
		topo.GPUs = append(topo.GPUs, telemetry.TopologyGPU{Index: g, NUMANode: g / 2})
	}
	for a := range 4 {
		for b := a + 1; b < 4; b++ {
			l := telemetry.GPULink{A: a, B: b, Type: telemetry.LinkSYS}
			if a/2 == b/2 {
				l = telemetry.GPULink{A: a, B: b, Type: telemetry.LinkNVLink, NVLinks: 4}
			}
			topo.GPULinks = append(topo.GPULinks, l)
		}
	}
	b := snapshot.NewBuilder(t0, time.Minute)
	b.AddNode(snapshot.NodeInput{Name: "n1", Topology: topo, TopologyAt: t0})
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func candidate(s *snapshot.Snapshot, take int, usable snapshot.GPUSet) *framework.Candidate {
	free := make([]int32, s.GPUCount())
	for i := range free {
		free[i] = 1000
	}
	cy := &framework.Cycle{Snap: s, Free: free}
	var c framework.Candidate
	c.Reset(cy, 0)
	c.Take, c.Need, c.Usable = take, take, usable
	return &c
}

func TestPickBestConnected(t *testing.T) {
	s := pairsNode(t)
	tests := []struct {
		name   string
		take   int
		usable snapshot.GPUSet
		want   snapshot.GPUSet
		score  float64
	}{
		// Two GPUs: a bridged pair (0,1), worst link NV4 → 0.7×(0.8+0.2×4/18) + 0.3×0.5 (rails unknown).
		{"pair", 2, snapshot.AllGPUs(4), 0b0011, 0.7*(0.8+0.2*4.0/18) + 0.15},
		// GPU 0 taken: the other whole pair (2,3).
		{"other pair", 2, 0b1110, 0b1100, 0.7*(0.8+0.2*4.0/18) + 0.15},
		// Three GPUs: any set crosses SYS: 0.7×0.2 + 0.15.
		{"three", 3, snapshot.AllGPUs(4), 0b0111, 0.7*0.2 + 0.15},
		// One GPU: links rate 1: 0.7 + 0.15.
		{"one", 1, 0b1000, 0b1000, 0.85},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := candidate(s, tc.take, tc.usable)
			req := &framework.Request{GPUs: tc.take, Milli: 1000}
			if st := New().Pick(context.Background(), req, c); !st.OK() {
				t.Fatal(st)
			}
			if c.Chosen != tc.want {
				t.Errorf("chose %04b, want %04b", c.Chosen, tc.want)
			}
			got, _ := New().Score(context.Background(), req, c)
			if d := got - tc.score; d > 1e-9 || d < -1e-9 {
				t.Errorf("score %v, want %v", got, tc.score)
			}
		})
	}
}

func TestPickRailsAndFractions(t *testing.T) {
	s, err := snapshot.Synthetic(snapshot.SyntheticSpec{Nodes: 1, GPUsPerNode: 8, Leaves: 1, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	c := candidate(s, 2, snapshot.AllGPUs(8))
	c.PreferRails = 1<<5 | 1<<6
	if New().Pick(context.Background(), &framework.Request{GPUs: 2, Milli: 1000}, c); c.Chosen != 1<<5|1<<6 {
		t.Errorf("preferred rails: chose %08b", c.Chosen)
	}
	// Fractional: best fit onto the GPU with the least room that still fits.
	c = candidate(s, 1, snapshot.AllGPUs(8))
	c.Free[3], c.Free[4] = 300, 600
	if New().Pick(context.Background(), &framework.Request{GPUs: 1, Milli: 250}, c); c.Chosen != 1<<3 {
		t.Errorf("best fit: chose %08b, want gpu 3", c.Chosen)
	}
	if got := RankOrder(s.Node(0), 0b1010_0001); len(got) != 3 || got[0] != 0 || got[2] != 7 {
		t.Errorf("rank order %v", got)
	}
	if WorstLink(s.Node(0), 0b11) != telemetry.LinkNVSwitch {
		t.Error("worst link of an NVSwitch pair")
	}
}

// TestPickAvoidsStragglers: stragglers are the picker's last tie-break. On an
// NVSwitch node (any set alike) with GPU 0 named, one GPU is GPU 1, four are 1-4
// (distinct rails either way), eight are all (no clean choice); with rails 0 and
// 1 preferred (a gang), GPU 0's rail is kept: a clean pick would rate lower on
// rails (0.3 × 0.75 instead of 0.3). On the bridged-pairs PCIe box with GPU 0
// named, two GPUs are the other pair (2,3), which rates as well; with GPUs 0 and
// 2 named, the clean pick (1,3) crosses SYS, so the pair (0,1) stays.
func TestPickAvoidsStragglers(t *testing.T) {
	mark := func(b *snapshot.Builder, node string, gpus ...int) {
		for _, g := range gpus {
			b.MarkStraggler(snapshot.StragglerMark{Node: node, GPU: g, Signal: "sm_clock", Lag: 0.3, At: t0})
		}
	}
	b, err := snapshot.SyntheticBuilder(snapshot.SyntheticSpec{Nodes: 1, GPUsPerNode: 8, Leaves: 1, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	mark(b, "node-00000", 0)
	nvs, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pairs := func(named ...int) *snapshot.Snapshot {
		t.Helper()
		topo := pairsNode(t).Node(0).Topology.Value
		b := snapshot.NewBuilder(t0, time.Minute)
		b.AddNode(snapshot.NodeInput{Name: "n1", Topology: topo, TopologyAt: t0})
		mark(b, "n1", named...)
		s, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		s      *snapshot.Snapshot
		take   int
		prefer uint64
		want   snapshot.GPUSet
	}{
		{"one GPU", nvs, 1, 0, 0b10},
		{"four GPUs", nvs, 4, 0, 0b1_1110},
		{"the whole node", nvs, 8, 0, 0xff},
		{"preferred rails", nvs, 2, 0b11, 0b11},
		{"the other pair", pairs(0), 2, 0, 0b1100},
		{"no clean pair", pairs(0, 2), 2, 0, 0b0011},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := candidate(tc.s, tc.take, snapshot.AllGPUs(len(tc.s.Node(0).GPUs)))
			c.PreferRails = tc.prefer
			if st := New().Pick(context.Background(), &framework.Request{GPUs: tc.take, Milli: 1000}, c); !st.OK() || c.Chosen != tc.want {
				t.Errorf("chose %08b (%v), want %08b", c.Chosen, st, tc.want)
			}
		})
	}
}
