package placement

import (
	"context"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// fastOutcomes runs the decision's fast path (grouped and memoised, no reasons
// asked for) for req on the engine's current state and returns each evaluated
// node's outcome by name.
func fastOutcomes(e *Engine, req framework.Request) map[string]nodeOut {
	e.mu.RLock()
	defer e.mu.RUnlock()
	p := e.getScratch(e.snap.Len())
	defer e.pool.Put(p)
	cy := &framework.Cycle{Snap: e.snap, Free: e.free, LeafFree: e.leafFree}
	var d framework.Decision
	e.resolve(&req, e.snap, p, &d)
	cy.Near = p.near
	e.evalAll(context.Background(), &req, cy, p)
	out := make(map[string]nodeOut, len(p.idx))
	for _, i := range p.idx {
		out[e.snap.Node(int(i)).Name] = p.out[i]
	}
	return out
}

// TestRecordMatchesFastPath is the differential test of the decision record. The
// fast path keeps, per node, the verdict, the usable and chosen GPUs and the total
// score but no reasons; the record (record: chosen nodes, runners-up, every node
// with Request.Explain) evaluates its nodes again with Candidate.Explain for the
// reasons. Both must agree on every recorded node: feasible or not, the plugin that
// rejected it, the GPUs chosen and the total score; and a record's per-plugin
// scores make its total. The one allowed difference: a gang's chosen nodes are
// recorded with the rails every node has free preferred and with the GPUs the
// gang's assembly left to them (a flexible request's last node takes the rest),
// which may pick other GPUs (no more, among the usable ones) with another score.
func TestRecordMatchesFastPath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clk := &clock{now: t0}
		snap := genMixedFleet(t, clk.now)
		e, err := New(snap, Options{Now: clk.Now, RecordTop: rapid.SampledFrom([]int{1, 3, 100}).Draw(t, "recordTop")})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for range rapid.IntRange(0, 3).Draw(t, "reservations") {
			if _, err := e.Reserve(ctx, genAnyRequest(t, snap)); err != nil {
				t.Fatal(err)
			}
		}
		req := genAnyRequest(t, snap)
		d, err := e.DryRun(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		fast := fastOutcomes(e, d.Request)
		gang := len(d.Assignments) > 1
		for _, nr := range d.Candidates {
			o, ok := fast[nr.Node]
			if !ok {
				t.Fatalf("recorded %s, which the fast path did not evaluate", nr.Node)
			}
			if nr.Feasible != (o.fail < 0) {
				t.Fatalf("%s: recorded feasible %v, fast path fail %d (%s)", nr.Node, nr.Feasible, o.fail, o.reason)
			}
			if !nr.Feasible {
				last := nr.Verdicts[len(nr.Verdicts)-1]
				if last.Status.OK() || last.Plugin != e.names[o.fail] || len(nr.Verdicts) != int(o.fail)+1 {
					t.Fatalf("%s: recorded rejection by %s (%s) after %d verdicts, fast path by %s (%s)",
						nr.Node, last.Plugin, last.Status, len(nr.Verdicts), e.names[o.fail], o.reason)
				}
				continue
			}
			n, _ := e.snap.Lookup(nr.Node)
			node := e.snap.Node(n)
			got := gpuSetOf(t, node, nr.GPUs)
			var sum float64
			for _, s := range nr.Scores {
				if s.Score < 0 || s.Score > 1 {
					t.Fatalf("%s: %s scored %v", nr.Node, s.Plugin, s.Score)
				}
				sum += s.Weight * s.Score
			}
			if want := clamp01(sum / e.wsum); nr.Total != want {
				t.Fatalf("%s: recorded total %v, its scores make %v", nr.Node, nr.Total, want)
			}
			if nr.Chosen && gang {
				if got.Len() > int(o.take) || got&^o.usable != 0 {
					t.Fatalf("%s: gang member recorded with gpus %v, fast path took %d of usable %b", nr.Node, nr.GPUs, o.take, o.usable)
				}
				continue
			}
			if got != o.chosen || nr.Total != o.score {
				t.Fatalf("%s: recorded gpus %v total %v, fast path chose %b scoring %v", nr.Node, nr.GPUs, nr.Total, o.chosen, o.score)
			}
		}
		for _, a := range d.Assignments {
			if !gang && a.Score != fast[a.Node].score {
				t.Fatalf("%s: assignment score %v, fast path %v", a.Node, a.Score, fast[a.Node].score)
			}
		}
	})
}

// gpuSetOf returns the positions of the GPUs with the NVML indexes idx.
func gpuSetOf(t *rapid.T, n *snapshot.Node, idx []int) snapshot.GPUSet {
	var s snapshot.GPUSet
	for _, x := range idx {
		p := slices.IndexFunc(n.GPUs, func(g snapshot.GPU) bool { return g.Index == x })
		if p < 0 {
			t.Fatalf("%s has no gpu %d", n.Name, x)
		}
		s = s.With(p)
	}
	return s
}
