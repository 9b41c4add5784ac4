package drain

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/yamlfile"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// A drain scenario is a file in testdata/scenarios/: a policy (the default
// when left out), health reports in order, each followed by one worker pass
// and the state its node must be in then, and what must have happened at the
// end: the actuator's successful calls and the GPUs excluded. A new case is a
// new file. The format (decoded strictly: a misspelt key fails the test):
//
//	description: what the case shows
//	policy: |                      # optional, a policy file as ParsePolicy reads it
//	  hysteresis: {observations: 2}
//	reports:
//	  - after: 1s                  # clock advance before the report
//	    node: node2                # default node1
//	    gpus: 7                    # GPUs listed in the report; default 8
//	    conditions:                # what the agent reports; none: a clean report
//	      - {kind: xid, gpu: 3, severity: fatal, action: RESTART_BM, xid: 79}
//	    want: drained              # the node's state after the worker pass
//	    repeat: 10                 # the same report this many times (default 1)
//	  - repeat: 30                 # a group: these reports in turn, 30 times
//	    reports:
//	      - {after: 10s, want: suspect}
//	      - {after: 10s, conditions: *crit, want: suspect}
//	calls:                         # successful actuator calls but evacuations, "method reason"
//	  - reboot gpuwatch: xid79 gpu=GPU-00000003-1111-2222-3333-444444444444 action=RESTART_BM
//	gpu_exclusions: 0              # GPUs excluded at the end
//
// A condition on a GPU carries the UUID the test reports give GPU i
// (GPU-0000000i-1111-2222-3333-444444444444); port: mlx5_0/1 targets an
// InfiniBand port; neither targets the node. YAML anchors name a condition
// list once and use it in many reports.
type scenarioFile struct {
	Description   string           `yaml:"description"`
	Policy        string           `yaml:"policy"`
	Reports       []scenarioReport `yaml:"reports"`
	Calls         []string         `yaml:"calls"`
	GPUExclusions int              `yaml:"gpu_exclusions"`
}

type scenarioReport struct {
	After      time.Duration       `yaml:"after"`
	Node       string              `yaml:"node"`
	GPUs       int                 `yaml:"gpus"`
	Conditions []scenarioCondition `yaml:"conditions"`
	Want       telemetry.State     `yaml:"want"`
	Repeat     int                 `yaml:"repeat"`
	Reports    []scenarioReport    `yaml:"reports"` // a group
}

type scenarioCondition struct {
	Kind     telemetry.ConditionKind `yaml:"kind"`
	GPU      *int                    `yaml:"gpu"`
	Port     string                  `yaml:"port"`
	Severity telemetry.Severity      `yaml:"severity"`
	Action   telemetry.Action        `yaml:"action"`
	Xid      int                     `yaml:"xid"`
	Message  string                  `yaml:"message"`
}

// condition builds the telemetry condition on node.
func (sc scenarioCondition) condition(node string) (telemetry.Condition, error) {
	c := telemetry.Condition{Kind: sc.Kind, Severity: sc.Severity, Action: sc.Action, Message: sc.Message,
		Target: telemetry.NodeTarget(telemetry.NodeID(node))}
	switch {
	case sc.GPU != nil:
		c.Target = telemetry.GPUTarget(telemetry.GPUID{Node: telemetry.NodeID(node), Index: *sc.GPU})
		c.GPUUUID = uuid(*sc.GPU)
	case sc.Port != "":
		dev, port, _ := strings.Cut(sc.Port, "/")
		p, err := strconv.Atoi(port)
		if err != nil {
			return c, err
		}
		c.Target = telemetry.IBPortTarget(telemetry.IBPortID{Node: telemetry.NodeID(node), Device: dev, Port: p})
	}
	if sc.Xid > 0 {
		c.Evidence = map[string]string{"xid": strconv.Itoa(sc.Xid)}
	}
	return c, c.Validate()
}

func loadScenario(t *testing.T, path string) scenarioFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yamlfile.Parse(path, data, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var f scenarioFile
	if err := doc.Decode(&f); err != nil {
		t.Fatal(err)
	}
	var check func(path string, rs []scenarioReport)
	check = func(path string, rs []scenarioReport) {
		for i, r := range rs {
			at := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case len(r.Reports) > 0:
				if r.After != 0 || r.Node != "" || r.GPUs != 0 || r.Conditions != nil || doc.Value(at+".want") != "" {
					doc.Errorf(at, "a group has only reports and repeat")
				}
				check(at+".reports", r.Reports)
			case doc.Value(at+".want") == "":
				doc.Errorf(at+".want", "missing: every report says the state its node must be in")
			}
		}
	}
	check("reports", f.Reports)
	if len(f.Reports) == 0 {
		doc.Errorf("reports", "missing: a scenario has reports")
	}
	if err := doc.Err(); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestScenarios plays every drain scenario in testdata/scenarios.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("%d drain scenarios in testdata/scenarios, want at least the 15 written", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			f := loadScenario(t, path)
			var pol *Policy
			if f.Policy != "" {
				if pol, err = ParsePolicy(path+": policy", []byte(f.Policy)); err != nil {
					t.Fatal(err)
				}
			}
			h := newHarness(t, pol)
			step := 0
			var play func(path string, rs []scenarioReport)
			play = func(path string, rs []scenarioReport) {
				for i, r := range rs {
					at := fmt.Sprintf("%s[%d]", path, i)
					if len(r.Reports) > 0 {
						for range max(r.Repeat, 1) {
							play(at+".reports", r.Reports)
						}
						continue
					}
					node := cmp.Or(r.Node, n1)
					gpus := cmp.Or(r.GPUs, 8)
					var conds []telemetry.Condition
					for j, sc := range r.Conditions {
						c, err := sc.condition(node)
						if err != nil {
							t.Fatalf("%s.conditions[%d]: %v", at, j, err)
						}
						conds = append(conds, c)
					}
					for range max(r.Repeat, 1) {
						h.clk.add(r.After)
						h.c.Observe(reportN(node, h.clk.now(), gpus, conds...))
						h.process()
						if got := h.state(node); got != r.Want {
							t.Fatalf("%s (report %d, at %s): %s is %s, want %s", at, step, h.clk.now().Sub(t0), node, got, r.Want)
						}
						step++
					}
				}
			}
			play("reports", f.Reports)
			var got []string
			for _, c := range h.act.calls {
				if !c.Failed && c.Method != "evacuate" {
					got = append(got, c.Method+" "+c.Reason)
				}
			}
			if !slices.Equal(got, f.Calls) {
				t.Fatalf("actuator calls\n got %q\nwant %q", got, f.Calls)
			}
			if ex := h.c.Exclusions(); countGPU(ex) != f.GPUExclusions {
				t.Fatalf("exclusions %+v, want %d GPU exclusions", ex, f.GPUExclusions)
			}
			h.checkTransitions()
			if len(h.act.violations) > 0 {
				t.Fatalf("violations: %v", h.act.violations)
			}
		})
	}
}
