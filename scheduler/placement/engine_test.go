package placement

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

var small = snapshot.SyntheticSpec{Nodes: 16, GPUsPerNode: 8, Leaves: 4, Spines: 1}

// The decision tables of scheduler/placement are data: testdata/scenarios/*.yaml,
// read by TestScenarioFiles.

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
