package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// A scenario file (testdata/scenarios/*.yaml) is a fleet and the decisions
// expected on it: each case a request, as the place API takes it, and what the
// decision must be. A new case is a new entry or a new file; TestScenarioFiles
// reads them all.
type scenarioFile struct {
	Fleet scenarioFleet  `yaml:"fleet"`
	Cases []scenarioCase `yaml:"cases"`
}

// scenarioFleet is a synthetic fleet (snapshot.SyntheticSpec) with allocations,
// drain exclusions and straggler marks.
type scenarioFleet struct {
	Nodes                int `yaml:"nodes"`
	GPUsPerNode          int `yaml:"gpus_per_node"`
	Leaves               int `yaml:"leaves"`
	Spines               int `yaml:"spines"`
	NodesPerNVLinkDomain int `yaml:"nodes_per_nvlink_domain"`
	Allocations          []struct {
		Job   string `yaml:"job"`
		Node  string `yaml:"node"`
		GPUs  []int  `yaml:"gpus"`
		Milli int    `yaml:"milli"`
	} `yaml:"allocations"`
	Exclusions []struct {
		Node   string `yaml:"node"`
		GPU    *int   `yaml:"gpu"` // absent: the whole node
		Reason string `yaml:"reason"`
	} `yaml:"exclusions"`
	// Stragglers are GPUs named stragglers (gpuwatch_straggler_gpu) Age before
	// the snapshot.
	Stragglers []struct {
		Node   string        `yaml:"node"`
		GPU    int           `yaml:"gpu"`
		Job    string        `yaml:"job"`
		Signal string        `yaml:"signal"`
		Lag    float64       `yaml:"lag"`
		Age    time.Duration `yaml:"age"`
	} `yaml:"stragglers"`
}

type scenarioCase struct {
	Name    string         `yaml:"name"`
	Request map[string]any `yaml:"request"` // the place API's JSON fields
	Want    struct {
		Outcome   framework.Outcome `yaml:"outcome"`
		ReasonHas string            `yaml:"reason_has"`
		// Nodes placed on, in any order; Assignments the GPUs (NVML indexes) of
		// each node placed on.
		Nodes       []string         `yaml:"nodes"`
		Assignments map[string][]int `yaml:"assignments"`
		Leaves      int              `yaml:"leaves"` // leaves spanned
		LCA         telemetry.Tier   `yaml:"lca"`    // the lowest tier the gang shares
		RailAligned *bool            `yaml:"rail_aligned"`
	} `yaml:"want"`
}

func readScenario(path string) (*scenarioFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f scenarioFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", path)
	}
	return &f, nil
}

// request reads a case's request as the place API would: JSON field names,
// unknown fields refused.
func (c *scenarioCase) request() (framework.Request, error) {
	var req framework.Request
	data, err := json.Marshal(c.Request)
	if err != nil {
		return req, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("case %q: request: %w", c.Name, err)
	}
	return req, nil
}

func (f *scenarioFleet) build(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	spec := snapshot.SyntheticSpec{Nodes: f.Nodes, GPUsPerNode: f.GPUsPerNode, Leaves: f.Leaves, Spines: f.Spines,
		NodesPerNVLinkDomain: f.NodesPerNVLinkDomain}
	return fleet(t, spec, func(b *snapshot.Builder) {
		for _, a := range f.Allocations {
			b.AddAllocation(snapshot.Allocation{JobID: a.Job, Node: a.Node, GPUs: a.GPUs, Milli: a.Milli})
		}
		for _, x := range f.Exclusions {
			gpu := -1
			if x.GPU != nil {
				gpu = *x.GPU
			}
			b.Exclude(snapshot.Exclusion{Node: x.Node, GPU: gpu, Reason: x.Reason})
		}
		for _, m := range f.Stragglers {
			b.MarkStraggler(snapshot.StragglerMark{Node: m.Node, GPU: m.GPU, Job: m.Job, Signal: m.Signal, Lag: m.Lag, At: t0.Add(-m.Age)})
		}
	})
}

// excluded reports whether the fleet's exclusions take GPU gpu of node out.
func (f *scenarioFleet) excluded(node string, gpu int) bool {
	for _, x := range f.Exclusions {
		if x.Node == node && (x.GPU == nil || *x.GPU == gpu) {
			return true
		}
	}
	return false
}

// TestScenarioFiles runs every case of every scenario file on a fresh engine
// over the file's fleet, and checks the decision against the case's want; and,
// for every case, that nothing is placed on an excluded node or GPU and that a
// placement has the GPUs asked for.
func TestScenarioFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			f, err := readScenario(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range f.Cases {
				t.Run(tc.Name, func(t *testing.T) {
					req, err := tc.request()
					if err != nil {
						t.Fatal(err)
					}
					d, err := engine(t, f.Fleet.build(t), nil).DryRun(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					checkScenario(t, &f.Fleet, &tc, d)
				})
			}
		})
	}
}

func checkScenario(t *testing.T, f *scenarioFleet, tc *scenarioCase, d *framework.Decision) {
	t.Helper()
	w := &tc.Want
	if d.Outcome != w.Outcome {
		t.Fatalf("outcome %s (%s), want %s\n%s", d.Outcome, d.Reason, w.Outcome, framework.Explain(d))
	}
	if w.ReasonHas != "" && !strings.Contains(d.Reason, w.ReasonHas) {
		t.Errorf("reason %q lacks %q", d.Reason, w.ReasonHas)
	}
	if d.Outcome != framework.OutcomePlaced {
		return
	}
	var nodes []string
	gpus := 0
	for _, a := range d.Assignments {
		nodes = append(nodes, a.Node)
		gpus += len(a.GPUs)
		for _, g := range a.GPUs {
			if f.excluded(a.Node, g) {
				t.Errorf("placed on excluded gpu %d of %s", g, a.Node)
			}
		}
		if want, ok := w.Assignments[a.Node]; w.Assignments != nil && (!ok || !slices.Equal(a.GPUs, want)) {
			t.Errorf("%s got gpus %v, want %v", a.Node, a.GPUs, want)
		}
	}
	if gpus != d.Request.GPUs {
		t.Errorf("placed %d GPUs, want %d", gpus, d.Request.GPUs)
	}
	if w.Assignments != nil && len(d.Assignments) != len(w.Assignments) {
		t.Errorf("placed on %v, want %d nodes", nodes, len(w.Assignments))
	}
	slices.Sort(nodes)
	if w.Nodes != nil {
		want := slices.Sorted(slices.Values(w.Nodes))
		if !slices.Equal(nodes, want) {
			t.Errorf("nodes %v, want %v\n%s", nodes, want, framework.Explain(d))
		}
	}
	if w.Leaves > 0 && d.Quality.LeavesSpanned != w.Leaves {
		t.Errorf("leaves spanned %d, want %d", d.Quality.LeavesSpanned, w.Leaves)
	}
	if w.LCA != 0 && d.Quality.LCATier != w.LCA {
		t.Errorf("lca tier %s, want %s", d.Quality.LCATier, w.LCA)
	}
	if w.RailAligned != nil && d.Quality.RailAligned != *w.RailAligned {
		t.Errorf("rail aligned %v (alignment %v), want %v", d.Quality.RailAligned, d.Quality.RailAlignment, *w.RailAligned)
	}
}

// TestScenarioFileErrors: a scenario file with a mistake fails loudly instead of
// checking less than it says.
func TestScenarioFileErrors(t *testing.T) {
	for name, body := range map[string]string{
		"unknown want field":    "fleet: {nodes: 1, gpus_per_node: 1, leaves: 1}\ncases:\n  - name: x\n    request: {gpus: 1}\n    want: {outcome: placed, node: [a]}\n",
		"unknown request field": "fleet: {nodes: 1, gpus_per_node: 1, leaves: 1}\ncases:\n  - name: x\n    request: {gpu: 1}\n    want: {outcome: placed}\n",
		"no cases":              "fleet: {nodes: 1, gpus_per_node: 1, leaves: 1}\n",
		"bad tier":              "fleet: {nodes: 1, gpus_per_node: 1, leaves: 1}\ncases:\n  - name: x\n    request: {gpus: 1}\n    want: {outcome: placed, lca: rack}\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := readScenario(path)
			if err == nil {
				_, err = f.Cases[0].request()
			}
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
