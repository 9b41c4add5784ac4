package demo

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestDefaultStoryPlacement checks, on the built-in story, that every job part
// the simulated fleet ran is exactly where the server's placement engine put
// it (and every placed job ran), that jobs kept arriving while GPUs were
// unhealthy, and that none landed on a GPU with an active critical or fatal
// condition (as the agents reported it), nor on a GPU or node the drain
// controller excluded at the time; and that the output has a line per job and
// the summary.
func TestDefaultStoryPlacement(t *testing.T) {
	res, out := runDefaultStory(t)
	pr := res.Placement
	if len(pr.Placed) < 20 {
		t.Fatalf("%d jobs placed through the engine in 10 minutes, want at least 20 (jobs end and new ones arrive)", len(pr.Placed))
	}
	placed := map[string]PlacedJob{}
	for _, j := range pr.Placed {
		if j.Decision == "" || j.Evaluated == 0 || j.Feasible == 0 {
			t.Errorf("job %s: no engine decision behind it: %+v", j.Job, j)
		}
		placed[j.Job] = j
	}
	ran := map[string]bool{}
	for _, r := range res.ran {
		ran[r.job] = true
		j, ok := placed[r.job]
		if !ok {
			t.Errorf("job %s ran on %s gpus %v without an engine decision", r.job, r.node, r.gpus)
			continue
		}
		if !slices.ContainsFunc(j.Parts, func(p simhw.JobPlacement) bool { return p.Node == r.node && slices.Equal(p.GPUs, r.gpus) }) {
			t.Errorf("job %s ran on %s gpus %v; the engine placed it on %v", r.job, r.node, r.gpus, j.Parts)
		}
		if !r.start.Equal(j.At) {
			t.Errorf("job %s started at %s, placed at %s", r.job, r.start, j.At)
		}
	}
	for id := range placed {
		if !ran[id] {
			t.Errorf("job %s was placed but never ran", id)
		}
	}
	if len(pr.Refused) > 0 {
		t.Errorf("the fleet refused placements on GPUs it knows unusable: %v", pr.Refused)
	}
	if len(pr.OnExcluded) > 0 {
		t.Errorf("placements on excluded GPUs or nodes: %v", pr.OnExcluded)
	}

	// The agents' critical and fatal GPU conditions, as intervals.
	type span struct {
		node        string
		gpu         int
		from, until time.Time // until zero: still active
		what        string
	}
	var bad []span
	for _, e := range res.Events {
		if e.GPU < 0 || strings.Contains(e.Target, "/") {
			continue
		}
		switch e.Kind {
		case EventRaised:
			if e.Severity >= telemetry.SeverityCritical {
				bad = append(bad, span{node: e.Node, gpu: e.GPU, from: e.At, what: fmt.Sprintf("%s %s", e.Condition, e.Severity)})
			}
		case EventCleared:
			for i := range bad {
				if b := &bad[i]; b.node == e.Node && b.gpu == e.GPU && b.until.IsZero() && strings.HasPrefix(b.what, string(e.Condition)+" ") {
					b.until = e.At
				}
			}
		}
	}
	if len(bad) == 0 {
		t.Fatal("the story raised no critical GPU condition: the check below cannot fail")
	}
	during := 0
	for _, j := range pr.Placed {
		active := false
		for _, b := range bad {
			// A job placed at T used the snapshot of the agents' cycles before T.
			if !b.from.Before(j.At) || !b.until.IsZero() && !b.until.After(j.At) {
				continue
			}
			active = true
			for _, p := range j.Parts {
				if p.Node == b.node && slices.Contains(p.GPUs, b.gpu) {
					t.Errorf("job %s placed at %s on %s gpu %d, which had %s since %s", j.Job, j.At, b.node, b.gpu, b.what, b.from)
				}
			}
		}
		if active {
			during++
		}
	}
	if during == 0 {
		t.Error("no job was placed while a GPU was unhealthy: the story does not exercise the health filter")
	}

	if mean, n := pr.MeanLeavesSpanned(); n == 0 || mean < 1 {
		t.Errorf("multi-node jobs: %d, mean leaves spanned %.2f", n, mean)
	}
	if got := strings.Count(out, " placed job "); got != len(pr.Placed) {
		t.Errorf("%d 'placed job' lines for %d placed jobs", got, len(pr.Placed))
	}
	for _, want := range []string{
		fmt.Sprintf("placement: %d jobs placed through the server's placement engine", len(pr.Placed)),
		"mean leaves spanned",
		"no job landed on a GPU or node the drain controller excluded at the time",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
