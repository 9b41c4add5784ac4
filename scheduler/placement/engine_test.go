package placement

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

var small = snapshot.SyntheticSpec{Nodes: 16, GPUsPerNode: 8, Leaves: 4, Spines: 1}

func TestScenarios(t *testing.T) {
	ctx := context.Background()
	// Nodes 0-3 leaf-000, 4-7 leaf-001, 8-11 leaf-002, 12-15 leaf-003.
	busy := func(b *snapshot.Builder) {
		// leaf-000: node 0 has 6 GPUs taken (2 free), node 1 is full.
		b.AddAllocation(snapshot.Allocation{JobID: "a", Node: "node-00000", GPUs: []int{0, 1, 2, 3, 4, 5}})
		b.AddAllocation(snapshot.Allocation{JobID: "b", Node: "node-00001", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}})
		// leaf-002: nodes 8 and 9 full, so leaf-002 offers 2 whole nodes.
		b.AddAllocation(snapshot.Allocation{JobID: "c", Node: "node-00008", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}})
		b.AddAllocation(snapshot.Allocation{JobID: "d", Node: "node-00009", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}})
		// node 12 drained, node 13 gpu 2 draining, node 14 gpu 5 excluded.
		b.Exclude(snapshot.Exclusion{Node: "node-00012", GPU: -1, Reason: "xid 79"})
		b.Exclude(snapshot.Exclusion{Node: "node-00014", GPU: 5, Reason: "row remap failure"})
	}
	tests := []struct {
		name      string
		req       framework.Request
		outcome   framework.Outcome
		nodes     []string // expected nodes, any order; nil: don't check
		leaves    int
		lca       telemetry.Tier
		reasonHas string
	}{
		{
			// Best fit: node 0 has exactly 2 free GPUs: fragmentation 1, leaf-000 is the fullest.
			name: "two GPUs go to the node with exactly two free", req: framework.Request{GPUs: 2},
			outcome: framework.OutcomePlaced, nodes: []string{"node-00000"}, leaves: 1, lca: telemetry.TierNode,
		},
		{
			// Two whole nodes: leaf-002 holds exactly 2 free nodes (best fit among leaves).
			name: "two whole nodes in the best-fitting leaf", req: framework.Request{Nodes: 2, GPUsPerNode: 8},
			outcome: framework.OutcomePlaced, nodes: []string{"node-00010", "node-00011"}, leaves: 1, lca: telemetry.TierLeaf,
		},
		{
			// 5 whole nodes: no leaf has 5; leaf-001 (4 free) whole + 1 from the smallest
			// leaf covering 1: leaf-000 (node 2 and 3 free, 2 nodes) or leaf-002 (2) — 2 leaves.
			name: "five nodes span two leaves", req: framework.Request{Nodes: 5, GPUsPerNode: 8},
			outcome: framework.OutcomePlaced, leaves: 2, lca: telemetry.TierSpine,
		},
		{
			name: "required leaf refuses five nodes", req: framework.Request{Nodes: 5, GPUsPerNode: 8, Required: telemetry.TierLeaf},
			outcome: framework.OutcomeUnschedulable, reasonHas: "does not fit within one leaf",
		},
		{
			name: "too many nodes", req: framework.Request{Nodes: 20, GPUsPerNode: 8},
			outcome: framework.OutcomeUnschedulable, reasonHas: "only",
		},
		{
			name: "wrong model", req: framework.Request{GPUs: 1, Model: "A100"},
			outcome: framework.OutcomeUnschedulable, reasonHas: "no node",
		},
		{
			name: "model matches case-insensitively", req: framework.Request{GPUs: 1, Model: "h100"},
			outcome: framework.OutcomePlaced, leaves: 1,
		},
		{
			name: "memory too small", req: framework.Request{GPUs: 1, MinMemoryMiB: 100000},
			outcome: framework.OutcomeUnschedulable,
		},
		{
			name: "fractional GPU", req: framework.Request{GPUs: 1, Milli: 250},
			outcome: framework.OutcomePlaced, leaves: 1,
		},
		{
			name: "flexible 20 GPUs on fewest nodes", req: framework.Request{GPUs: 20},
			outcome: framework.OutcomePlaced, leaves: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := engine(t, fleet(t, small, busy), nil)
			d, err := e.DryRun(ctx, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.outcome {
				t.Fatalf("outcome %s (%s), want %s\n%s", d.Outcome, d.Reason, tc.outcome, framework.Explain(d))
			}
			if tc.reasonHas != "" && !strings.Contains(d.Reason, tc.reasonHas) {
				t.Errorf("reason %q lacks %q", d.Reason, tc.reasonHas)
			}
			if d.Outcome != framework.OutcomePlaced {
				return
			}
			var got []string
			gpus := 0
			for _, a := range d.Assignments {
				got = append(got, a.Node)
				gpus += len(a.GPUs)
				for _, bad := range []string{"node-00012"} {
					if a.Node == bad {
						t.Errorf("placed on drained %s", bad)
					}
				}
				if a.Node == "node-00014" && slices.Contains(a.GPUs, 5) {
					t.Error("placed on excluded gpu 5 of node-00014")
				}
			}
			if gpus != d.Request.GPUs {
				t.Errorf("placed %d GPUs, want %d", gpus, d.Request.GPUs)
			}
			slices.Sort(got)
			if tc.nodes != nil && !slices.Equal(got, tc.nodes) {
				t.Errorf("nodes %v, want %v\n%s", got, tc.nodes, framework.Explain(d))
			}
			if tc.leaves > 0 && d.Quality.LeavesSpanned != tc.leaves {
				t.Errorf("leaves spanned %d, want %d", d.Quality.LeavesSpanned, tc.leaves)
			}
			if tc.lca != 0 && d.Quality.LCATier != tc.lca {
				t.Errorf("lca tier %s, want %s", d.Quality.LCATier, tc.lca)
			}
		})
	}
}

func TestInvalidRequest(t *testing.T) {
	e := engine(t, fleet(t, small, nil), nil)
	d, err := e.Reserve(context.Background(), framework.Request{GPUs: 3, Nodes: 2})
	if err == nil || d.Outcome != framework.OutcomeInvalid || !strings.Contains(d.Reason, "split evenly") {
		t.Fatalf("got %v, %+v", err, d)
	}
	if len(e.Reservations()) != 0 {
		t.Error("invalid request reserved something")
	}
}

func TestReserveReleaseExpire(t *testing.T) {
	clk := &clock{now: t0}
	e := engine(t, fleet(t, snapshot.SyntheticSpec{Nodes: 2, GPUsPerNode: 8, Leaves: 1}, nil), clk)
	ctx := context.Background()
	d1, err := e.Reserve(ctx, framework.Request{GPUs: 8, JobID: "j1", Lease: framework.Duration(time.Minute)})
	if err != nil || d1.Outcome != framework.OutcomePlaced || d1.Reservation == nil {
		t.Fatalf("first: %v %+v", err, d1)
	}
	d2, _ := e.Reserve(ctx, framework.Request{GPUs: 8})
	if d2.Outcome != framework.OutcomePlaced || d2.Assignments[0].Node == d1.Assignments[0].Node {
		t.Fatalf("second landed on %v (first on %s)", d2.Assignments, d1.Assignments[0].Node)
	}
	d3, _ := e.Reserve(ctx, framework.Request{GPUs: 1})
	if d3.Outcome != framework.OutcomeUnschedulable {
		t.Fatalf("third: %s, want unschedulable: the fleet is reserved", d3.Outcome)
	}
	if err := e.Release(d2.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Release(d2.ID); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("second release: %v", err)
	}
	if got := e.ReservedMilli(d1.Assignments[0].Node, 0); got != 1000 {
		t.Errorf("reserved milli %d, want 1000", got)
	}
	clk.now = clk.now.Add(2 * time.Minute) // d1's lease (1m) is over
	if n := len(e.Reservations()); n != 0 {
		t.Fatalf("%d reservations after expiry", n)
	}
	d4, _ := e.Reserve(ctx, framework.Request{Nodes: 2, GPUsPerNode: 8, JobID: "j4"})
	if d4.Outcome != framework.OutcomePlaced {
		t.Fatalf("after expiry and release: %s %s", d4.Outcome, d4.Reason)
	}
	// A snapshot that shows j4 allocated ends its reservation without double counting.
	next := fleet(t, snapshot.SyntheticSpec{Nodes: 2, GPUsPerNode: 8, Leaves: 1, Now: clk.now}, func(b *snapshot.Builder) {
		for _, a := range d4.Assignments {
			b.AddAllocation(snapshot.Allocation{JobID: "j4", Node: a.Node, GPUs: a.GPUs})
		}
	})
	e.SetSnapshot(next)
	if n := len(e.Reservations()); n != 0 {
		t.Errorf("%d reservations after the job's allocation appeared", n)
	}
	if f, _ := e.FreeMilli("node-00000", 0); f != 0 {
		t.Errorf("free milli %d, want 0 (allocated, counted once)", f)
	}
}

func TestExplainAndMetrics(t *testing.T) {
	e := engine(t, fleet(t, small, func(b *snapshot.Builder) {
		b.Exclude(snapshot.Exclusion{Node: "node-00003", GPU: -1, Reason: "xid 79: fallen off the bus"})
	}), nil)
	d, err := e.Reserve(context.Background(), framework.Request{Nodes: 2, GPUsPerNode: 4, Explain: true, JobID: "train-1"})
	if err != nil || d.Outcome != framework.OutcomePlaced {
		t.Fatal(err, d.Reason)
	}
	text := framework.Explain(d)
	for _, want := range []string{"decision " + d.ID, "2 nodes × 4 GPUs", "leaves spanned 1", "node excluded by the drain controller",
		"xid 79", "filter capacity", "score  gpuset", "rail alignment 1.00"} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
	if len(d.Candidates) != small.Nodes {
		t.Errorf("explain recorded %d candidates, want all %d", len(d.Candidates), small.Nodes)
	}
	js, err := framework.ExplainJSON(d)
	if err != nil {
		t.Fatal(err)
	}
	var back framework.Decision
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("decision JSON does not read back: %v", err)
	}
	if back.ID != d.ID || back.Quality.LeavesSpanned != 1 || back.Request.GPUsPerNode != 4 {
		t.Errorf("JSON round trip lost fields: %+v", back)
	}
	if got, ok := e.Decision(d.ID); !ok || got != d {
		t.Error("Decision(id) does not return the decision")
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(e.metrics.decisions.WithLabelValues("placed", "reserve")); n != 1 {
		t.Errorf("decisions placed/reserve = %v, want 1", n)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric lint: %s: %s", p.Metric, p.Text)
	}
	count, err := testutil.GatherAndCount(reg, "gpuwatch_placement_reservations", "gpuwatch_placement_leaves_spanned")
	if err != nil || count != 2 {
		t.Errorf("gathered %d series (%v), want 2", count, err)
	}
}

func TestRailAlignmentAcrossNodes(t *testing.T) {
	// Node 0 has rails 0-3 taken, node 1 rails 0-1: the common free rails are 4-7,
	// so both nodes should use GPUs 4-7 (rank r on rail 4+r everywhere).
	s := fleet(t, snapshot.SyntheticSpec{Nodes: 2, GPUsPerNode: 8, Leaves: 1}, func(b *snapshot.Builder) {
		b.AddAllocation(snapshot.Allocation{JobID: "x", Node: "node-00000", GPUs: []int{0, 1, 2, 3}})
		b.AddAllocation(snapshot.Allocation{JobID: "y", Node: "node-00001", GPUs: []int{0, 1}})
	})
	d, _ := engine(t, s, nil).DryRun(context.Background(), framework.Request{Nodes: 2, GPUsPerNode: 4})
	if d.Outcome != framework.OutcomePlaced {
		t.Fatal(d.Reason)
	}
	for _, a := range d.Assignments {
		if !slices.Equal(a.GPUs, []int{4, 5, 6, 7}) {
			t.Errorf("%s got gpus %v, want [4 5 6 7]", a.Node, a.GPUs)
		}
	}
	if !d.Quality.RailAligned {
		t.Errorf("rail alignment %v, want 1", d.Quality.RailAlignment)
	}
}

func TestEvaluate(t *testing.T) {
	e := engine(t, fleet(t, small, func(b *snapshot.Builder) {
		b.AddAllocation(snapshot.Allocation{JobID: "a", Node: "node-00001", GPUs: []int{0, 1, 2, 3, 4, 5, 6}})
		b.Exclude(snapshot.Exclusion{Node: "node-00002", GPU: -1})
	}), nil)
	got, err := e.Evaluate(context.Background(), framework.Request{GPUs: 2}, []string{"node-00000", "node-00001", "node-00002", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		feasible bool
		plugin   string
	}{{true, ""}, {false, "capacity"}, {false, "health"}, {false, "snapshot"}}
	for i, w := range want {
		if got[i].Feasible != w.feasible || got[i].Plugin != w.plugin {
			t.Errorf("%s: feasible %v plugin %q, want %v %q", got[i].Node, got[i].Feasible, got[i].Plugin, w.feasible, w.plugin)
		}
		if got[i].Score < 0 || got[i].Score > 1 {
			t.Errorf("%s: score %v outside [0,1]", got[i].Node, got[i].Score)
		}
	}
	if _, err := e.Evaluate(context.Background(), framework.Request{Nodes: 2, GPUsPerNode: 1}, []string{"node-00000"}); err == nil {
		t.Error("a two-node request evaluated per node was accepted")
	}
}

func TestStaleTelemetry(t *testing.T) {
	// Node 0's telemetry is an hour old and says it is idle and cool; node 1 is fresh
	// and busy. Stale load must not make node 0 look better: load rates it 0.5.
	spec := snapshot.SyntheticSpec{Nodes: 2, GPUsPerNode: 8, Leaves: 1}
	spec.Now = t0
	b, _ := snapshot.SyntheticBuilder(spec)
	old := t0.Add(-time.Hour)
	b2 := snapshot.NewBuilder(t0, time.Minute)
	s0, _ := b.Build()
	for i := range s0.Len() {
		n := s0.Node(i)
		in := snapshot.NodeInput{Name: n.Name, Location: n.Location, Topology: n.Topology.Value, TopologyAt: t0}
		for _, g := range n.GPUs {
			gi := snapshot.GPUInput{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB,
				HealthAt: t0, Utilization: 0.9, UtilizationAt: t0, ThermalHeadroom: 0.2, PowerHeadroom: 0.2, HeadroomAt: t0}
			if i == 0 {
				gi.HealthAt, gi.UtilizationAt, gi.HeadroomAt, gi.Utilization, gi.ThermalHeadroom, gi.PowerHeadroom = old, old, old, 0, 1, 1
			}
			in.GPUs = append(in.GPUs, gi)
		}
		b2.AddNode(in)
	}
	s, err := b2.Build()
	if err != nil {
		t.Fatal(err)
	}
	e := engine(t, s, nil)
	d, _ := e.DryRun(context.Background(), framework.Request{GPUs: 8, Explain: true})
	if d.Outcome != framework.OutcomePlaced {
		t.Fatal(d.Reason)
	}
	var loadScore float64
	for _, c := range d.Candidates {
		if c.Node == "node-00000" {
			for _, sc := range c.Scores {
				if sc.Plugin == "load" {
					loadScore = sc.Score
				}
			}
			if !strings.Contains(framework.Explain(d), "stale") {
				t.Error("explain does not flag stale health")
			}
		}
	}
	if loadScore != 0.5 {
		t.Errorf("stale node's load score %v, want neutral 0.5", loadScore)
	}
	// With RequireFresh, node 0 is out.
	d, _ = e.DryRun(context.Background(), framework.Request{GPUs: 8, RequireFresh: true})
	if d.Outcome != framework.OutcomePlaced || d.Assignments[0].Node != "node-00001" {
		t.Errorf("require fresh placed on %v", d.Assignments)
	}
}

// TestRecent: Recent lists the kept decisions newest first, at most n, and
// forgets those the ring dropped.
func TestRecent(t *testing.T) {
	e, err := New(fleet(t, small, nil), Options{KeepDecisions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Recent(10); len(got) != 0 {
		t.Fatalf("a new engine has %d recent decisions", len(got))
	}
	var ids []string
	for range 5 {
		d, err := e.DryRun(context.Background(), framework.Request{GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	got := e.Recent(10)
	if len(got) != 3 || got[0].ID != ids[4] || got[1].ID != ids[3] || got[2].ID != ids[2] {
		var have []string
		for _, d := range got {
			have = append(have, d.ID)
		}
		t.Errorf("Recent(10) = %v, want the last three of %v, newest first", have, ids)
	}
	if got := e.Recent(1); len(got) != 1 || got[0].ID != ids[4] {
		t.Errorf("Recent(1) is not the newest")
	}
}
