package placement

import (
	"context"
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

	// The record of a gang that needs the straggler's node says why it scores
	// lower: 1 − 1/8 on straggler, GPU 3 named.
	d, err := engine(t, snap, nil).DryRun(ctx, framework.Request{Nodes: 2, GPUsPerNode: 8, Explain: true})
	if err != nil || d.Outcome != framework.OutcomePlaced {
		t.Fatalf("%v %+v", err, d)
	}
	text := framework.Explain(d)
	for _, want := range []string{"score  straggler     0.875 ×1  (1 of 8 chosen GPUs are stragglers: gpu 3 sm_clock 22% behind in job train-a, named 4m0s ago)",
		"score  straggler     1.000 ×1"} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
}
