package simhw

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// firstFit is a Place hook over f's own state: the lowest free GPUs of the
// first nodes that have them (whole free nodes for exclusive jobs). It
// records what it returned by job id.
type firstFit struct {
	f      *Fleet
	placed map[string][]JobPlacement
	specs  map[string]JobSpec
}

func (p *firstFit) place(spec JobSpec) ([]JobPlacement, error) {
	var out []JobPlacement
	for _, n := range p.f.Nodes() {
		if len(out) == spec.Nodes {
			break
		}
		free := n.freeGPUs()
		if spec.Exclusive && len(free) != n.shape.GPUs() || len(free) < spec.GPUsPerNode {
			continue
		}
		out = append(out, JobPlacement{Node: n.Name(), GPUs: free[:spec.GPUsPerNode]})
	}
	if len(out) < spec.Nodes {
		return nil, nil
	}
	p.placed[spec.ID], p.specs[spec.ID] = out, spec
	return out, nil
}

// TestWorkloadPlaceHook checks that with WorkloadOptions.Place every job the
// generator starts runs exactly where the hook put it, with the shape the spec
// asked for, and that occupancy still reaches the target.
func TestWorkloadPlaceHook(t *testing.T) {
	f := newTestFleet(t, ShapeHGXH100, 8)
	p := &firstFit{f: f, placed: map[string][]JobPlacement{}, specs: map[string]JobSpec{}}
	w := NewWorkloadGenerator(f, WorkloadOptions{Seed: 7, Place: p.place,
		Refused: func(spec JobSpec, err error) { t.Errorf("job %s refused: %v", spec.ID, err) }})
	seen := map[string]bool{}
	for h := 0; h < 12; h++ {
		if err := w.Step(); err != nil {
			t.Fatal(err)
		}
		busy := 0
		got := map[string][]JobPlacement{}
		for _, n := range f.Nodes() {
			for _, j := range n.Jobs() {
				got[j.ID] = append(got[j.ID], JobPlacement{Node: n.Name(), GPUs: j.GPUs})
				busy += len(j.GPUs)
			}
		}
		for id, parts := range got {
			seen[id] = true
			want, ok := p.placed[id]
			if !ok {
				t.Fatalf("hour %d: job %s runs on %v but the hook never placed it", h, id, parts)
			}
			if !slices.EqualFunc(parts, want, func(a, b JobPlacement) bool { return a.Node == b.Node && slices.Equal(a.GPUs, b.GPUs) }) {
				t.Errorf("hour %d: job %s runs on %v, the hook placed it on %v", h, id, parts, want)
			}
			spec := p.specs[id]
			if spec.GPUs != spec.Nodes*spec.GPUsPerNode || spec.Exclusive != (spec.Kind == JobTraining) ||
				spec.MultiNode != (spec.Nodes > 1) || spec.Exclusive && spec.GPUsPerNode != 8 {
				t.Errorf("job %s: inconsistent spec %+v", id, spec)
			}
		}
		// The last job started may overshoot the target by its size.
		if occ := float64(busy) / 64; occ < 0.6 {
			t.Errorf("hour %d: occupancy %.2f, want about 0.8", h, occ)
		}
		if err := f.Advance(time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) < 10 {
		t.Errorf("only %d jobs ran in 12 hours", len(seen))
	}
}

// TestWorkloadPlaceRefused checks that a placement the fleet cannot honour
// (a busy GPU, an unknown node, the wrong size) starts nothing and is reported
// to Refused with the reason, that no placement starts nothing, and that the
// hook's error is Step's.
func TestWorkloadPlaceRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		where func(spec JobSpec) []JobPlacement
		want  string // in the refusal; "" when none is expected
	}{
		{"busy GPU", func(JobSpec) []JobPlacement { return []JobPlacement{{Node: "node-01", GPUs: []int{0}}} }, "not free"},
		{"unknown node", func(s JobSpec) []JobPlacement { return []JobPlacement{{Node: "node-99", GPUs: []int{1}}} }, "not in the fleet"},
		{"no GPUs", func(JobSpec) []JobPlacement { return []JobPlacement{{Node: "node-02"}} }, "no GPUs"},
		{"wrong size", func(s JobSpec) []JobPlacement {
			n := s.GPUs + 1
			if n > 8 {
				n = 7
			}
			return []JobPlacement{{Node: "node-03", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}[:n]}}
		}, "placed on"},
		{"does not fit", func(JobSpec) []JobPlacement { return nil }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestFleet(t, ShapeHGXH100, 4)
			if err := f.Node("node-01").StartJob(Job{ID: "held", Kind: JobIdleHold}, 0); err != nil {
				t.Fatal(err)
			}
			var refused []string
			w := NewWorkloadGenerator(f, WorkloadOptions{Seed: 3,
				Place:   func(s JobSpec) ([]JobPlacement, error) { return tc.where(s), nil },
				Refused: func(s JobSpec, err error) { refused = append(refused, err.Error()) }})
			if err := w.Step(); err != nil {
				t.Fatal(err)
			}
			for _, n := range f.Nodes() {
				for _, j := range n.Jobs() {
					if j.ID != "held" {
						t.Errorf("job %s started on %s %v", j.ID, n.Name(), j.GPUs)
					}
				}
			}
			if tc.want == "" && len(refused) > 0 || tc.want != "" && len(refused) == 0 {
				t.Fatalf("refusals %q, want some with %q", refused, tc.want)
			}
			for _, r := range refused {
				if !strings.Contains(r, tc.want) {
					t.Errorf("refusal %q does not say %q", r, tc.want)
				}
			}
		})
	}
	f := newTestFleet(t, ShapeHGXH100, 2)
	boom := errors.New("engine down")
	w := NewWorkloadGenerator(f, WorkloadOptions{Seed: 3, Place: func(JobSpec) ([]JobPlacement, error) { return nil, boom }})
	if err := w.Step(); !errors.Is(err, boom) {
		t.Errorf("Step with a failing hook: %v, want %v", err, boom)
	}
}
