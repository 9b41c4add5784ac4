package health

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Baselines and conditions survive a restart: the second engine judges the same
// absolute values as healthy, and growth while the agent was down as new.
func TestStatePersistsAcrossEngines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "health.json")
	h1 := newHarness(t, func(o *Options) { o.StateFile = path })
	h1.cycles(3)
	h1.node.link(telemetry.MetricNVLinkUp, 2, 9, 0)
	r := h1.cycles(1)
	if _, ok := find(r, telemetry.ConditionNVLinkDown, testNode+"/gpu2/nvlink9"); !ok {
		t.Fatal("no nvlink-down")
	}
	if err := h1.e.Save(); err != nil {
		t.Fatal(err)
	}
	var sf stateFile
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sf); err != nil || sf.Version != StateVersion || len(sf.Counters) == 0 {
		t.Fatalf("state file: version %d, %d counters, %v", sf.Version, len(sf.Counters), err)
	}

	// The agent restarts; meanwhile GPU 6 had a double-bit error.
	h2 := newHarness(t, func(o *Options) { o.StateFile = path })
	h2.clk.t = h1.clk.now().Add(30 * time.Second)
	h2.node = h1.node
	if _, ok := find(h2.e.Report(), telemetry.ConditionNVLinkDown, testNode+"/gpu2/nvlink9"); !ok {
		t.Fatal("the restored report lacks nvlink-down")
	}
	h2.node.gpuAdd(telemetry.DCGMECCDBEAggTotal, 6, 1)
	r = h2.cycles(1)
	if _, ok := find(r, telemetry.ConditionECCDBE, gpuTarget(6)); !ok {
		t.Fatalf("a DBE while the agent was down went unseen: %+v", r.AllConditions())
	}
	if len(r.AllConditions()) != 2 {
		t.Fatalf("after restart: %+v", r.AllConditions())
	}
	if r.State != telemetry.StateDraining {
		t.Fatalf("state %s", r.State)
	}
	// The link comes back: the restored condition clears like any other.
	h2.node.link(telemetry.MetricNVLinkUp, 2, 9, 1)
	if _, ok := find(h2.cycles(3), telemetry.ConditionNVLinkDown, testNode+"/gpu2/nvlink9"); ok {
		t.Fatal("restored nvlink-down did not clear")
	}
	if len(h2.e.Report().Warnings) != 0 {
		t.Errorf("warnings: %v", h2.e.Report().Warnings)
	}
}

// A fresh engine without the file sees the same node as healthy: the point of the
// baseline is that absolute counts are not news. What DCGM's health watches said
// before the reboot is over too.
func TestRebootResetsGPUs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "health.json")
	var h1 *harness
	h1 = newHarness(t, func(o *Options) {
		o.StateFile = path
		o.Incidents = func() []telemetry.Condition {
			at := h1.clk.now()
			return []telemetry.Condition{{Kind: telemetry.ConditionDCGMHealth, Target: telemetry.GPUTarget(telemetry.GPUID{Node: testNode, Index: 3}),
				Severity: telemetry.SeverityCritical, Message: "DCGM mem health fail (DCGM_FR_VOLATILE_DBE_DETECTED)", Since: at, Observed: at}}
		}
	})
	h1.cycles(1)
	h1.xid(1, 79, "")
	h1.node.gpuAdd(telemetry.DCGMECCDBEVolTotal, 3, 1)
	r := h1.cycles(2)
	if len(r.AllConditions()) != 3 {
		t.Fatalf("before reboot: %+v", r.AllConditions())
	}
	if err := h1.e.Save(); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, func(o *Options) { o.StateFile = path; o.BootID = "boot-2" })
	h2.clk.t = h1.clk.now().Add(10 * time.Minute)
	h2.node = h1.node
	h2.node.gpu(telemetry.DCGMECCDBEVolTotal, 3, 0)
	r = h2.cycles(1)
	if len(r.AllConditions()) != 0 {
		t.Fatalf("after reboot: %+v", r.AllConditions())
	}
}

func TestCorruptStateFile(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":     "\x00\x01not json",
		"truncated":   `{"version":1,"node":"node1","counters":{"a|1|`,
		"old version": `{"version":0,"node":"node1"}`,
		"other node":  `{"version":1,"node":"node7"}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "health.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, func(o *Options) { o.StateFile = path })
			w := h.e.Report().Warnings
			if len(w) != 1 || !strings.Contains(w[0], path) || !strings.Contains(w[0], "unusable") {
				t.Fatalf("warnings %q", w)
			}
			if b, err := os.ReadFile(path + ".corrupt"); err != nil || string(b) != content {
				t.Fatalf("the bad file was not kept aside: %v", err)
			}
			r := h.cycles(2)
			if len(r.AllConditions()) != 0 || r.State != telemetry.StateHealthy {
				t.Fatalf("%s %+v", r.State, r.AllConditions())
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := decodeState(data, testNode); err != nil {
				t.Fatalf("the replacement does not load: %v", err)
			}
		})
	}
}

// Bad entries in a good file are dropped one by one.
func TestStateFileBadEntries(t *testing.T) {
	in := `{"version":1,"node":"node1",
	 "counters":{"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL|0|-1||-1":{"base":4,"last":4},"bad key":{"base":1,"last":1},"x|0|-1||-1":{"base":5,"last":1}},
	 "conditions":[{"kind":"nope","target":"node1","severity":"warning","message":"","since":"2025-01-01T00:00:00Z","observed":"2025-01-01T00:00:00Z","policy":"state","last_bad":"2025-01-01T00:00:00Z"}],
	 "gpus":{"0":{"state":"healthy"},"999":{"state":"healthy"}},
	 "node_state":{"state":"drained"}}`
	sf, warns, err := decodeState([]byte(in), testNode)
	if err != nil {
		t.Fatal(err)
	}
	if len(sf.Counters) != 1 || len(sf.Conditions) != 0 || len(sf.GPUs) != 1 || sf.NodeState.State != telemetry.StateDrained {
		t.Fatalf("kept %+v", sf)
	}
	if len(warns) != 4 {
		t.Fatalf("warnings %q", warns)
	}
}

func FuzzDecodeState(f *testing.F) {
	h := newHarness(f, nil)
	h.cycles(1)
	h.xid(1, 48, "")
	h.xid(1, 63, "")
	h.node.port(telemetry.NodeIBLinkDownedTotal, 0, 9)
	h.node.link(telemetry.MetricNVLinkUp, 0, 1, 0)
	h.cycles(1)
	good, err := json.Marshal(h.e.snapshotState(h.clk.now()))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version":1,"node":"node1"}`))
	f.Add([]byte(`{"version":1,"node":"node1","gpus":{"-1":{"xids":[{"xid":1,"count":0}]}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, _, err := decodeState(data, testNode)
		if err != nil {
			return
		}
		// What loads, restores and round-trips.
		e, err := New(Options{Node: testNode, BootID: "b", Now: newClock().now})
		if err != nil {
			t.Fatal(err)
		}
		e.restore(sf, e.now())
		e.buildReport(nil, e.now(), 0)
		out, err := json.Marshal(e.snapshotState(e.now()))
		if err != nil {
			t.Fatalf("restored state does not encode: %v", err)
		}
		if _, _, err := decodeState(out, testNode); err != nil {
			t.Fatalf("restored state does not decode: %v", err)
		}
	})
}
