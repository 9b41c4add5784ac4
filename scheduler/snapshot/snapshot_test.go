package snapshot

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// A drain.Exclusion converts to an Exclusion (compile-time check of the promise in
// Exclusion's doc).
var _ = Exclusion(drain.Exclusion{})

func TestBuildErrors(t *testing.T) {
	gpu := func(i int) GPUInput { return GPUInput{Index: i, HealthAt: t0} }
	tests := []struct {
		name  string
		bound time.Duration
		nodes []NodeInput
		alloc []Allocation
		want  string
	}{
		{"bound", 0, nil, nil, "staleness bound"},
		{"bad name", time.Minute, []NodeInput{{Name: "a b"}}, nil, "invalid node name"},
		{"duplicate node", time.Minute, []NodeInput{{Name: "n1"}, {Name: "n1"}}, nil, "node n1 added twice"},
		{"duplicate gpu", time.Minute, []NodeInput{{Name: "n1", GPUs: []GPUInput{gpu(0), gpu(0)}}}, nil, "gpu 0 listed twice"},
		{"negative gpu", time.Minute, []NodeInput{{Name: "n1", GPUs: []GPUInput{gpu(-1)}}}, nil, "negative index"},
		{"utilization", time.Minute, []NodeInput{{Name: "n1", GPUs: []GPUInput{{Index: 0, Utilization: 1.5}}}}, nil, "utilization 1.5"},
		{"state", time.Minute, []NodeInput{{Name: "n1", GPUs: []GPUInput{{Index: 0, Health: 9}}}}, nil, "unknown health state 9"},
		{"milli", time.Minute, []NodeInput{{Name: "n1", GPUs: []GPUInput{gpu(0)}}}, []Allocation{{JobID: "j", Node: "n1", GPUs: []int{0}, Milli: 1500}}, "milli 1500"},
		{"topology of another node", time.Minute, []NodeInput{{Name: "n1", Topology: &telemetry.NodeTopology{Node: "n2"}}}, nil, "topology is for node n2"},
		{"leaf under two spines", time.Minute, []NodeInput{
			{Name: "n1", Location: telemetry.NodeLocation{Leaf: "l1", Spine: "s1"}},
			{Name: "n2", Location: telemetry.NodeLocation{Leaf: "l1", Spine: "s2"}}}, nil, "under two spines"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(t0, tc.bound)
			for _, n := range tc.nodes {
				b.AddNode(n)
			}
			for _, a := range tc.alloc {
				b.AddAllocation(a)
			}
			_, err := b.Build()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestBuildStateAndWarnings(t *testing.T) {
	b := NewBuilder(t0, time.Minute)
	b.AddNode(NodeInput{Name: "n1", Location: telemetry.NodeLocation{Leaf: "l1"}, GPUs: []GPUInput{
		{Index: 1, Model: "NVIDIA H100", HealthAt: t0, UtilizationAt: t0.Add(-2 * time.Minute), Utilization: 0.5},
		{Index: 0, Model: "NVIDIA H100", Health: telemetry.StateDraining, HealthAt: t0.Add(-30 * time.Second)},
	}})
	b.AddAllocation(Allocation{JobID: "j1", Node: "n1", GPUs: []int{1}, Milli: 600})
	b.AddAllocation(Allocation{JobID: "j2", Node: "n1", GPUs: []int{1}, Milli: 600})
	b.AddAllocation(Allocation{JobID: "j3", Node: "gone", GPUs: []int{0}})
	b.AddAllocation(Allocation{JobID: "j4", Node: "n1", GPUs: []int{7}})
	b.Exclude(Exclusion{Node: "n1", GPU: 1, Reason: "xid 48"})
	b.Exclude(Exclusion{Node: "gone", GPU: -1})
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node(0)
	if n.GPUs[0].Index != 0 || n.GPUs[1].Index != 1 {
		t.Fatalf("gpus not sorted by index: %+v", n.GPUs)
	}
	g0, g1 := n.GPUs[0], n.GPUs[1]
	switch {
	case g0.Health.Stale || !g1.Utilization.Stale || !g0.Utilization.Stale:
		t.Errorf("staleness: g0 health %v util %v, g1 util %v", g0.Health.Stale, g0.Utilization.Stale, g1.Utilization.Stale)
	case g1.FreeMilli != 0 || g1.AllocatedMilli != 1200:
		t.Errorf("over-committed gpu: free %d allocated %d, want 0 and 1200", g1.FreeMilli, g1.AllocatedMilli)
	case !g1.Excluded || g1.ExclusionReason != "xid 48":
		t.Errorf("gpu 1 exclusion %v %q", g1.Excluded, g1.ExclusionReason)
	case n.SchedulableGPUs() != 0:
		t.Errorf("schedulable %b, want none (gpu 0 draining, gpu 1 excluded)", n.SchedulableGPUs())
	case n.Model() != "nvidia h100":
		t.Errorf("node model %q", n.Model())
	}
	w := strings.Join(s.Warnings(), "\n")
	for _, want := range []string{"over-committed", "unknown node \"gone\"", "unknown gpu 7", "exclusion names unknown node"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if h, l := s.StaleGPUs(); h != 0 || l != 2 {
		t.Errorf("stale gpus: health %d load %d, want 0 and 2", h, l)
	}
}

func TestSynthetic(t *testing.T) {
	s, err := Synthetic(SyntheticSpec{Nodes: 10, GPUsPerNode: 8, Leaves: 3, Spines: 1, NodesPerNVLinkDomain: 2, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Domains(telemetry.TierLeaf)); got != 3 {
		t.Errorf("%d leaves, want 3", got)
	}
	n := s.Node(0)
	if !n.UniformLinks() || n.BestLink() != telemetry.LinkNVSwitch {
		t.Errorf("synthetic node not NVSwitch all-to-all: uniform %v best %s", n.UniformLinks(), n.BestLink())
	}
	for p, g := range n.GPUs {
		if g.Rail != p || g.NIC == "" {
			t.Errorf("gpu %d rail %d nic %q, want rail %d", g.Index, g.Rail, g.NIC, p)
		}
	}
	h := s.Hierarchy()
	if tier := h.LCATier("node-00000", "node-00009"); tier != telemetry.TierSpine {
		t.Errorf("lca of first and last node %s, want spine", tier)
	}
	if s.DomainCapacityMilli(telemetry.TierCluster, 0) != 80*FullMilli || s.GPUCount() != 80 {
		t.Errorf("capacity %d gpus %d", s.DomainCapacityMilli(telemetry.TierCluster, 0), s.GPUCount())
	}
	if _, err := Synthetic(SyntheticSpec{Nodes: 4, GPUsPerNode: 8, Leaves: 5, Now: t0}); err == nil {
		t.Error("more leaves than nodes accepted")
	}
}

func TestGPUSet(t *testing.T) {
	s := AllGPUs(8).Without(3).With(10)
	if s.Len() != 8 || s.Has(3) || !s.Has(10) {
		t.Errorf("set %b", s)
	}
	if got := s.Positions(nil); len(got) != 8 || got[7] != 10 {
		t.Errorf("positions %v", got)
	}
	if AllGPUs(64) != ^GPUSet(0) {
		t.Error("AllGPUs(64)")
	}
}

// TestStragglerMarks: a mark counts within the straggler window, by index or by
// UUID, the largest lag of a GPU's marks wins; a mark older than the window or
// without a time does not count; unknown nodes and GPUs are warnings; a lag
// outside [0,1] is an error naming the GPU.
func TestStragglerMarks(t *testing.T) {
	gpus := []GPUInput{{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"}, {Index: 2, UUID: "GPU-2"}, {Index: 3, UUID: "GPU-3"}}
	b := NewBuilder(t0, time.Minute)
	b.AddNode(NodeInput{Name: "n1", GPUs: gpus})
	b.SetStragglerWindow(30 * time.Minute)
	b.MarkStraggler(StragglerMark{Node: "n1", GPU: 1, Job: "j", Signal: "sm_clock", Lag: 0.22, At: t0.Add(-5 * time.Minute)})
	b.MarkStraggler(StragglerMark{Node: "n1", GPU: 1, Job: "j", Signal: "power", Lag: 0.30, At: t0.Add(-6 * time.Minute)})
	b.MarkStraggler(StragglerMark{Node: "n1", GPU: -1, UUID: "GPU-3", Job: "j", Signal: "sm_active", Lag: 0.4, At: t0.Add(-29 * time.Minute)})
	b.MarkStraggler(StragglerMark{Node: "n1", GPU: 2, Job: "old", Signal: "power", Lag: 0.5, At: t0.Add(-31 * time.Minute)}) // too old
	b.MarkStraggler(StragglerMark{Node: "n1", GPU: 0, Job: "when?", Signal: "power", Lag: 0.5})                              // no time
	b.MarkStraggler(StragglerMark{Node: "gone", GPU: 0, Lag: 0.5, At: t0})
	b.MarkStraggler(StragglerMark{Node: "n1", GPU: -1, UUID: "GPU-9", Lag: 0.5, At: t0})
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node(0)
	if n.Stragglers() != 0b1010 {
		t.Errorf("stragglers %04b, want gpus 1 and 3", n.Stragglers())
	}
	if m := n.GPUs[1].Straggler; m.Signal != "power" || m.Lag != 0.30 || m.UUID != "GPU-1" {
		t.Errorf("gpu 1 mark %+v, want the power lag 0.30", m)
	}
	if m := n.GPUs[3].Straggler; m.GPU != 3 || m.Lag != 0.4 || !n.Hot()[3].Straggler || n.Hot()[2].Straggler {
		t.Errorf("gpu 3 mark %+v (found by UUID), hot %+v", m, n.Hot())
	}
	if marked, expired := s.StragglerGPUs(); marked != 2 || expired != 2 || s.StragglerWindow() != 30*time.Minute {
		t.Errorf("marked %d expired %d window %v, want 2, 2, 30m", marked, expired, s.StragglerWindow())
	}
	w := strings.Join(s.Warnings(), "\n")
	for _, want := range []string{`straggler mark names unknown node "gone"`, `unknown gpu -1 ("GPU-9") of node n1`} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}

	b = NewBuilder(t0, time.Minute)
	b.AddNode(NodeInput{Name: "n1", GPUs: gpus})
	b.MarkStraggler(StragglerMark{Node: "n1", GPU: 2, Lag: 1.5, At: t0})
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "node n1 gpu 2") || !strings.Contains(err.Error(), "lag 1.5") {
		t.Errorf("lag 1.5: %v, want an error naming node n1 gpu 2", err)
	}
	b.SetStragglerWindow(0)
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "straggler window") {
		t.Errorf("window 0: %v", err)
	}
}
