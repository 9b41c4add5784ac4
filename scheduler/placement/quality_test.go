package placement

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// minLeaves computes, independently of the engine, the fewest leaves that can hold
// the gang right now: per leaf, the units its nodes offer (a node offers one unit
// per fixed part it can host, or its usable GPUs for a flexible gang), largest
// leaves first. It returns 0 when the fleet cannot hold the gang.
func minLeaves(e *Engine, snap *snapshot.Snapshot, req framework.Request) int {
	perLeaf := map[string]int{}
	for i := range snap.Len() {
		n := snap.Node(i)
		if n.Excluded {
			continue
		}
		usable := 0
		for _, g := range n.GPUs {
			free, _ := e.FreeMilli(n.Name, g.Index)
			if g.Schedulable() && free >= 1000 {
				usable++
			}
		}
		switch {
		case req.GPUsPerNode > 0 && usable >= req.GPUsPerNode:
			perLeaf[n.Location.Leaf]++
		case req.GPUsPerNode == 0:
			perLeaf[n.Location.Leaf] += usable
		}
	}
	caps := make([]int, 0, len(perLeaf))
	for _, c := range perLeaf {
		caps = append(caps, c)
	}
	slices.SortFunc(caps, func(a, b int) int { return cmp.Compare(b, a) })
	want := req.Nodes
	if req.GPUsPerNode == 0 {
		want = req.GPUs
	}
	sum := 0
	for k, c := range caps {
		sum += c
		if sum >= want {
			return k + 1
		}
	}
	return 0
}

// TestTopologyQuality replays multi-node gangs on a two-tier fat tree (256 nodes × 8
// GPUs, 16 leaves under one spine layer) under mixed background load and churn, and
// measures the share of gangs placed on the fewest leaves the capacity allowed.
func TestTopologyQuality(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	spec := snapshot.SyntheticSpec{Nodes: 256, GPUsPerNode: 8, Leaves: 16, Spines: 1}
	snap := fleet(t, spec, func(b *snapshot.Builder) {
		mixedLoad(r, spec.Nodes, spec.GPUsPerNode, 0.45, 0.25)(b)
		for range 6 { // a few drained nodes and excluded GPUs
			b.Exclude(snapshot.Exclusion{Node: snapshot.SyntheticNodeName(r.IntN(spec.Nodes)), GPU: -1, Reason: "drained"})
			b.Exclude(snapshot.Exclusion{Node: snapshot.SyntheticNodeName(r.IntN(spec.Nodes)), GPU: r.IntN(8), Reason: "xid"})
		}
	})
	e := engine(t, snap, nil)
	ctx := context.Background()
	var live []string
	fits, optimal, placedAll, multiLeaf := 0, 0, 0, 0
	const decisions = 400
	for range decisions {
		var req framework.Request
		switch k := r.IntN(3); k {
		case 0:
			req = framework.Request{Nodes: 2 + r.IntN(23), GPUsPerNode: 8}
		case 1:
			req = framework.Request{Nodes: 2 + r.IntN(15), GPUsPerNode: 4}
		default:
			req = framework.Request{GPUs: 9 + r.IntN(120)}
		}
		best := minLeaves(e, snap, req)
		d, err := e.Reserve(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if best > 0 {
			fits++
			if d.Outcome == framework.OutcomePlaced && d.Quality.LeavesSpanned == best {
				optimal++
			} else if d.Outcome == framework.OutcomePlaced {
				t.Logf("decision %s: %d leaves, %d possible\n%s", d.ID, d.Quality.LeavesSpanned, best, framework.Explain(d))
			} else {
				t.Logf("decision %s: %s although %d leaves could hold it", d.ID, d.Reason, best)
			}
		}
		if d.Outcome == framework.OutcomePlaced {
			placedAll++
			if d.Quality.LeavesSpanned > 1 {
				multiLeaf++
			}
			live = append(live, d.ID)
		}
		// Churn: release a random reservation most of the time, keeping the fleet busy.
		for len(live) > 0 && r.IntN(10) < 6 {
			k := r.IntN(len(live))
			if err := e.Release(live[k]); err != nil {
				t.Fatal(err)
			}
			live = append(live[:k], live[k+1:]...)
			if r.IntN(2) == 0 {
				break
			}
		}
	}
	share := float64(optimal) / float64(max(1, fits))
	t.Logf("%d decisions: %d had room, %d placed (%d across leaves), %d on the fewest leaves possible: %.2f%%",
		decisions, fits, placedAll, multiLeaf, optimal, 100*share)
	if fits < decisions/2 || multiLeaf < 20 {
		t.Fatalf("scenario too easy to measure: %d with room, %d across leaves", fits, multiLeaf)
	}
	if share < 0.99 {
		t.Errorf("share on the fewest leaves %.4f, want ≥ 0.99", share)
	}
}
