package placement

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/straggler"
)

// TestStragglerScenarioControl is the control of testdata/scenarios/
// stragglers.yaml: without the straggler scorer the whole-node cases go to
// node 0, the straggler's node, so the scenario's node 1 is the scorer's
// doing. And the decision record explains the straggler's score.
func TestStragglerScenarioControl(t *testing.T) {
	f, err := readScenario(filepath.Join("testdata", "scenarios", "stragglers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var without []WeightedScorer
	for _, s := range DefaultScorers() {
		if s.Scorer.Name() != straggler.Name {
			without = append(without, s)
		}
	}
	if len(without) != len(DefaultScorers())-1 {
		t.Fatalf("the straggler scorer is not among the default scorers")
	}
	snap := f.Fleet.build(t)
	ctx := context.Background()
	checked := 0
	for _, tc := range f.Cases {
		if !strings.Contains(tc.Name, "clean one") {
			continue
		}
		req, err := tc.request()
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(snap, Options{Scorers: without})
		if err != nil {
			t.Fatal(err)
		}
		d, err := e.DryRun(ctx, req)
		if err != nil || d.Outcome != framework.OutcomePlaced || d.Assignments[0].Node != "node-00000" {
			t.Errorf("%s: without the straggler scorer placed %+v (%v), want node-00000: the scenario cannot tell", tc.Name, d.Assignments, err)
		}
		checked++
	}
	if checked != 2 {
		t.Fatalf("%d control cases, want 2", checked)
	}

	// A placement on the clean node notes no straggler.
	if d, err := engine(t, snap, nil).DryRun(ctx, framework.Request{GPUs: 8}); err != nil || len(d.Notes) != 0 {
		t.Errorf("clean placement: %v, notes %q", err, d.Notes)
	}

	// The record of a gang that needs the straggler's node says why it scores
	// lower: 1 − 1/8 on straggler, GPU 3 named.
	d, err := engine(t, snap, nil).DryRun(ctx, framework.Request{Nodes: 2, GPUsPerNode: 8, Explain: true})
	if err != nil || d.Outcome != framework.OutcomePlaced {
		t.Fatalf("%v %+v", err, d)
	}
	text := framework.Explain(d)
	for _, want := range []string{"score  straggler     0.875 ×1  (1 of 8 chosen GPUs are stragglers: gpu 3 sm_clock 22% behind in job train-a, named 4m0s ago)",
		"score  straggler     1.000 ×1",
		"note: uses 1 GPU named a straggler in the last 30m0s: node-00000 gpu 3 (sm_clock 22% behind in job train-a)"} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
}

// TestWithWeight: the straggler weight can be tuned, 0 turns the scorer's
// effect off, and a bad weight or an unknown scorer is an error naming it.
func TestWithWeight(t *testing.T) {
	def := DefaultScorers()
	ws, err := WithWeight(def, straggler.Name, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range ws {
		want := def[i].Weight
		if s.Scorer.Name() == straggler.Name {
			want = 3
		}
		if s.Weight != want {
			t.Errorf("%s weight %v, want %v", s.Scorer.Name(), s.Weight, want)
		}
	}
	if def[len(def)-1].Weight != StragglerWeight {
		t.Errorf("WithWeight changed the list it was given")
	}
	// Weight 0: the straggler's node ties with the clean one again, and the
	// first by name takes it.
	f, err := readScenario(filepath.Join("testdata", "scenarios", "stragglers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	off, err := WithWeight(def, straggler.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(f.Fleet.build(t), Options{Scorers: off})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.DryRun(context.Background(), framework.Request{GPUs: 8}); err != nil || d.Assignments[0].Node != "node-00000" {
		t.Errorf("weight 0: %v %+v, want node-00000", err, d.Assignments)
	}
	for _, tc := range []struct {
		name string
		w    float64
		want string
	}{{straggler.Name, -1, "weight -1"}, {straggler.Name, math.NaN(), "weight NaN"}, {"stragglers", 1, `no scorer "stragglers": the scorers are gpuset, fragmentation, topology, health, load, straggler`}} {
		if _, err := WithWeight(def, tc.name, tc.w); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.name, tc.w, err, tc.want)
		}
	}
}
