package placement

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// genFleet draws a small fleet with random health, exclusions, staleness and
// allocations (never over-committed, so booking can be checked exactly).
func genFleet(t *rapid.T) *snapshot.Snapshot {
	nodes := rapid.IntRange(1, 20).Draw(t, "nodes")
	gpus := rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus")
	leaves := rapid.IntRange(1, min(nodes, 5)).Draw(t, "leaves")
	spec := snapshot.SyntheticSpec{Nodes: nodes, GPUsPerNode: gpus, Leaves: leaves,
		Spines: rapid.IntRange(0, 1).Draw(t, "spines"), NodesPerNVLinkDomain: rapid.IntRange(0, 2).Draw(t, "nvl"), Now: t0}
	base, err := snapshot.Synthetic(spec)
	if err != nil {
		t.Fatal(err)
	}
	b := snapshot.NewBuilder(t0, time.Minute)
	for i := range base.Len() {
		n := base.Node(i)
		in := snapshot.NodeInput{Name: n.Name, Location: n.Location, Topology: n.Topology.Value, TopologyAt: t0}
		for _, g := range n.GPUs {
			gi := snapshot.GPUInput{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB,
				Health:   telemetry.State(rapid.IntRange(0, int(telemetry.StateProbation)).Draw(t, "state")),
				HealthAt: t0.Add(-time.Duration(rapid.IntRange(0, 120).Draw(t, "age")) * time.Second),
			}
			in.GPUs = append(in.GPUs, gi)
			used := 0
			for used < snapshot.FullMilli && rapid.Bool().Draw(t, "alloc") {
				m := rapid.SampledFrom([]int{250, 500, 1000}).Draw(t, "milli")
				if used+m > snapshot.FullMilli {
					break
				}
				used += m
				b.AddAllocation(snapshot.Allocation{JobID: "bg", Node: n.Name, GPUs: []int{g.Index}, Milli: m})
			}
			if rapid.IntRange(0, 9).Draw(t, "exclude") == 0 {
				b.Exclude(snapshot.Exclusion{Node: n.Name, GPU: g.Index, Reason: "excluded"})
			}
		}
		if rapid.IntRange(0, 9).Draw(t, "excludeNode") == 0 {
			b.Exclude(snapshot.Exclusion{Node: n.Name, GPU: -1, Reason: "drained"})
		}
		b.AddNode(in)
	}
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func genRequest(t *rapid.T) framework.Request {
	r := framework.Request{
		Milli:        rapid.SampledFrom([]int{0, 0, 0, 250, 500}).Draw(t, "req.milli"),
		Exclusive:    rapid.IntRange(0, 5).Draw(t, "req.exclusive") == 0,
		RequireFresh: rapid.Bool().Draw(t, "req.fresh"),
		Required:     telemetry.Tier(rapid.IntRange(0, int(telemetry.TierCluster)).Draw(t, "req.required")),
	}
	if rapid.Bool().Draw(t, "req.fixed") {
		r.Nodes = rapid.IntRange(1, 6).Draw(t, "req.nodes")
		r.GPUsPerNode = rapid.IntRange(1, 8).Draw(t, "req.perNode")
	} else {
		r.GPUs = rapid.IntRange(1, 24).Draw(t, "req.gpus")
	}
	if r.Required == telemetry.TierNode && r.Nodes > 1 {
		r.Required = telemetry.TierLeaf
	}
	return r
}

// TestPlacementProperties drives reserve, dry-run, evaluate and release on random
// fleets and checks the engine's invariants after every step.
func TestPlacementProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		snap := genFleet(t)
		clk := &clock{now: t0}
		e, err := New(snap, Options{Now: clk.Now, ParallelThreshold: rapid.SampledFrom([]int{1, 1 << 20}).Draw(t, "threshold"), Parallelism: 3})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var live []string
		steps := rapid.IntRange(1, 12).Draw(t, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
			case op < 6:
				req := genRequest(t)
				before := len(e.Reservations())
				reserve := op < 4
				var d *framework.Decision
				if reserve {
					d, err = e.Reserve(ctx, req)
				} else {
					d, err = e.DryRun(ctx, req)
				}
				if err != nil {
					t.Fatalf("valid request refused: %v", err)
				}
				checkDecision(t, snap, d)
				after := len(e.Reservations())
				switch {
				case d.Outcome == framework.OutcomePlaced && reserve:
					if after != before+1 || d.Reservation == nil {
						t.Fatalf("placed reservation not held: %d → %d", before, after)
					}
					live = append(live, d.ID)
				case after != before:
					t.Fatalf("%s %s decision changed reservations %d → %d", d.Outcome, map[bool]string{true: "reserve", false: "dry-run"}[reserve], before, after)
				}
			case op < 8 && len(live) > 0:
				k := rapid.IntRange(0, len(live)-1).Draw(t, "release")
				if err := e.Release(live[k]); err != nil {
					t.Fatalf("release %s: %v", live[k], err)
				}
				live = append(live[:k], live[k+1:]...)
			case op == 8:
				req := framework.Request{GPUs: rapid.IntRange(1, 8).Draw(t, "eval.gpus")}
				names := make([]string, snap.Len())
				for i := range names {
					names[i] = snap.Node(i).Name
				}
				out, err := e.Evaluate(ctx, req, names)
				if err != nil {
					t.Fatal(err)
				}
				for _, ns := range out {
					if ns.Score < 0 || ns.Score > 1 {
						t.Fatalf("evaluate score %v of %s outside [0,1]", ns.Score, ns.Node)
					}
					if ns.Feasible {
						i, _ := snap.Lookup(ns.Node)
						if n := snap.Node(i); n.Excluded {
							t.Fatalf("evaluate found excluded node %s feasible", ns.Node)
						}
					}
				}
			default:
				clk.now = clk.now.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "advance")) * time.Second)
				live = live[:0]
				for _, r := range e.Reservations() {
					live = append(live, r.ID)
				}
			}
			checkBooking(t, snap, e)
		}
	})
}

func checkDecision(t *rapid.T, snap *snapshot.Snapshot, d *framework.Decision) {
	for _, c := range d.Candidates {
		if c.Total < 0 || c.Total > 1 {
			t.Fatalf("node %s total %v outside [0,1]", c.Node, c.Total)
		}
		for _, s := range c.Scores {
			if s.Score < 0 || s.Score > 1 {
				t.Fatalf("node %s %s score %v outside [0,1]", c.Node, s.Plugin, s.Score)
			}
		}
	}
	req := d.Request
	if d.Outcome != framework.OutcomePlaced {
		if len(d.Assignments) != 0 || d.Reservation != nil || d.Quality != nil {
			t.Fatalf("%s decision carries a partial gang: %+v", d.Outcome, d.Assignments)
		}
		return
	}
	total := 0
	if req.Fixed() && len(d.Assignments) != req.Nodes {
		t.Fatalf("gang of %d nodes placed on %d", req.Nodes, len(d.Assignments))
	}
	seenNode := map[string]bool{}
	for _, a := range d.Assignments {
		if seenNode[a.Node] {
			t.Fatalf("node %s assigned twice", a.Node)
		}
		seenNode[a.Node] = true
		if req.Fixed() && len(a.GPUs) != req.GPUsPerNode {
			t.Fatalf("node %s got %d GPUs, want %d", a.Node, len(a.GPUs), req.GPUsPerNode)
		}
		i, ok := snap.Lookup(a.Node)
		if !ok {
			t.Fatalf("assigned unknown node %s", a.Node)
		}
		n := snap.Node(i)
		if n.Excluded {
			t.Fatalf("assigned excluded node %s", a.Node)
		}
		if req.Exclusive {
			for _, g := range n.GPUs {
				if g.AllocatedMilli > 0 {
					t.Fatalf("exclusive gang on node %s with gpu %d allocated", a.Node, g.Index)
				}
			}
		}
		seen := map[int]bool{}
		for _, idx := range a.GPUs {
			if seen[idx] {
				t.Fatalf("gpu %d of %s assigned twice", idx, a.Node)
			}
			seen[idx] = true
			var g *snapshot.GPU
			for k := range n.GPUs {
				if n.GPUs[k].Index == idx {
					g = &n.GPUs[k]
				}
			}
			switch {
			case g == nil:
				t.Fatalf("assigned unknown gpu %d of %s", idx, a.Node)
			case !g.Health.Value.Schedulable():
				t.Fatalf("assigned %s gpu %d of %s", g.Health.Value, idx, a.Node)
			case g.Excluded:
				t.Fatalf("assigned excluded gpu %d of %s", idx, a.Node)
			case req.RequireFresh && g.Health.Stale:
				t.Fatalf("assigned stale gpu %d of %s under RequireFresh", idx, a.Node)
			}
			total++
		}
	}
	if total != req.GPUs {
		t.Fatalf("placed %d GPUs of a %d-GPU gang", total, req.GPUs)
	}
	if q := d.Quality; q.RailAlignment < 0 || q.RailAlignment > 1 || q.FragmentationLeft < 0 || q.FragmentationLeft > 1 {
		t.Fatalf("quality out of range: %+v", q)
	}
}

// checkBooking recomputes every GPU's allocated + reserved milli from the public
// reservation list and checks it never exceeds 1000.
func checkBooking(t *rapid.T, snap *snapshot.Snapshot, e *Engine) {
	reserved := map[string]int{}
	for _, r := range e.Reservations() {
		for _, g := range r.GPUs {
			reserved[fmt.Sprintf("%s/%d", g.Node, g.GPU)] += g.Milli
		}
	}
	for i := range snap.Len() {
		n := snap.Node(i)
		for _, g := range n.GPUs {
			sum := int(g.AllocatedMilli) + reserved[fmt.Sprintf("%s/%d", n.Name, g.Index)]
			if sum > snapshot.FullMilli {
				t.Fatalf("gpu %d of %s double-booked: %d allocated + reserved = %d milli", g.Index, n.Name, g.AllocatedMilli, sum)
			}
		}
	}
}
