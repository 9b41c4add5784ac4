package health

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestGPUCountMessages: the gpu-count condition names the counts, and the
// Summary (check's line, Slurm's drain reason) carries them.
func TestGPUCountMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   func(*Options)
		change func(n *node)
		want   string
	}{
		{"driver not loaded", nil, func(n *node) {
			n.count("nvml", 0)
			n.source("nvml", "NVML did not start: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND)")
		}, "NVIDIA driver not loaded: 8 NVIDIA GPUs on the PCI bus, NVML: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND)"},
		{"NVML sees fewer than the bus", nil, func(n *node) { n.count("nvml", 7) },
			"NVML sees 7 of the 8 NVIDIA GPUs on the PCI bus"},
		{"NVML starts but sees none", nil, func(n *node) { n.count("nvml", 0) },
			"NVML sees 0 of the 8 NVIDIA GPUs on the PCI bus"},
		{"GPU gone from NVML and the bus", nil, func(n *node) { n.count("nvml", 7); n.count("pci", 7) },
			"7 GPUs visible to NVML, 8 expected"},
		{"GPU gone from the bus, NVML not read", nil, func(n *node) {
			n.count("pci", 7)
			delete(n.samples, sampleKey(telemetry.MetricNodeGPUs, []string{telemetry.LabelSource, "nvml"}))
		}, "7 NVIDIA GPUs on the PCI bus, 8 expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts)
			h.cycles(2)
			tc.change(h.node)
			r := h.cycles(1)
			c, ok := find(r, telemetry.ConditionGPUCount, testNode)
			if !ok || c.Message != tc.want {
				t.Fatalf("gpu-count %q (raised %v), want %q; all %+v", c.Message, ok, tc.want, r.AllConditions())
			}
			if sum := r.Summary(); !strings.HasPrefix(sum, "gpuwatch: gpu-count action=RESTART_BM (") || !strings.Contains(sum, tc.want[:20]) {
				t.Errorf("Summary %q", sum)
			}
			if !c.DiscreteFatal() {
				t.Error("gpu-count does not act on the first report")
			}
		})
	}
}

// TestGPUCountCPUNode: no NVIDIA GPU on the bus and no NVML is a CPU node, not
// a fault; NVML's count 0 while it did not start is not judged against nothing.
func TestGPUCountCPUNode(t *testing.T) {
	h := newHarness(t, nil)
	n := h.node
	n.samples = map[string]*telemetry.Sample{}
	n.order = nil
	n.inv = &collector.Inventory{Node: testNode}
	n.sources = nil
	n.count("nvml", 0)
	n.count("pci", 0)
	n.source("nvml", "NVML did not start: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND)")
	n.source("pci", "")
	r := h.cycles(3)
	if len(r.AllConditions()) != 0 || r.State != telemetry.StateHealthy {
		t.Fatalf("CPU node: %s %+v", r.State, r.AllConditions())
	}
	for _, s := range h.out {
		if s.Name == telemetry.MetricNodeGPUs {
			t.Errorf("a node that never had a GPU exports an expected count: %+v", s)
		}
	}
}

// TestGPUCountRemembered: the most GPUs the node has shown survives a restart in
// the state file, so a node that comes back with one missing, or with the driver
// not loaded and no PCI count, is caught; the expected count is exported.
func TestGPUCountRemembered(t *testing.T) {
	state := filepath.Join(t.TempDir(), "agent-health.json")
	h := newHarness(t, func(o *Options) { o.StateFile = state })
	h.cycles(2)
	var expected float64
	for _, s := range h.out {
		if s.Name == telemetry.MetricNodeGPUs && s.Labels.Get(telemetry.LabelSource) == "expected" {
			expected = s.Value
		}
	}
	if expected != 8 {
		t.Fatalf("expected count %v, want 8", expected)
	}
	if err := h.e.Save(); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, func(o *Options) { o.StateFile = state })
	n := h2.node
	n.inv.GPUs = n.inv.GPUs[:7]
	n.count("nvml", 7)
	n.count("pci", 7)
	r := h2.cycles(1)
	if c, ok := find(r, telemetry.ConditionGPUCount, testNode); !ok || c.Message != "7 GPUs visible to NVML, 8 expected" {
		t.Fatalf("after restart: %+v", r.AllConditions())
	}
	// Back to 8 (a GPU reseated): clears after the state rule's good cycles.
	n.count("nvml", 8)
	n.count("pci", 8)
	if r := h2.cycles(4); len(r.AllConditions()) != 0 {
		t.Fatalf("not cleared: %+v", r.AllConditions())
	}
}

// TestFabricMessages: which GPUs are out of the fabric, and why.
func TestFabricMessages(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(2)
	for g := range 8 {
		h.node.gpu(telemetry.MetricGPUFabricState, g, 1)
	}
	r := h.cycles(1)
	c, ok := find(r, telemetry.ConditionFabricManager, testNode)
	if !ok || c.Message != "GPU 0,1,2,3,4,5,6,7 not in the NVLink fabric (state not started): check nvidia-fabricmanager" {
		t.Fatalf("fabric-manager %+v", r.AllConditions())
	}
	for g := range 8 {
		h.node.gpu(telemetry.MetricGPUFabricState, g, 3)
	}
	h.node.gpu(telemetry.MetricGPUFabricStatus, 5, 999)
	r = h.cycles(1)
	if c, _ := find(r, telemetry.ConditionFabricManager, testNode); c.Message != "GPU 5 fabric registration failed (NVML status 999): check nvidia-fabricmanager" {
		t.Fatalf("fabric-manager %q", c.Message)
	}
	h.node.gpu(telemetry.MetricGPUFabricStatus, 5, 0)
	if r := h.cycles(4); len(r.AllConditions()) != 0 {
		t.Fatalf("not cleared: %+v", r.AllConditions())
	}
}

// TestSXids: a fatal SXid raises nvswitch-fatal on its NVSwitch, which acts on
// the first report and stays until every GPU has been reset; a non-fatal one
// raises nothing; the same SXid read again from the log after the reset is
// history.
func TestSXids(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(2)
	pci, _ := telemetry.ParsePCIBusID("0000:06:00.0")
	at := h.clk.now()
	h.e.ObserveSXid(collector.SXidEvent{Time: at, NVSwitch: 1, PCIBusID: pci, SXid: 20009, Link: 4, Message: "RX Short Error Rate"})
	if r := h.cycles(1); len(r.AllConditions()) != 0 {
		t.Fatalf("a non-fatal SXid raised %+v", r.AllConditions())
	}
	fatal := collector.SXidEvent{Time: at, NVSwitch: 1, PCIBusID: pci, SXid: 20034, Fatal: true, Link: 48, Message: "LTSSM Fault Up"}
	h.e.ObserveSXid(fatal)
	r := h.cycles(1)
	c, ok := find(r, telemetry.ConditionNVSwitchFatal, testNode+"/nvswitch1")
	if !ok || c.Severity != telemetry.SeverityFatal || c.Action != telemetry.ActionRestartBM || !c.DiscreteFatal() ||
		c.Message != "fatal NVSwitch error SXid 20034 on nvswitch1 (0000:06:00.0) link 48: LTSSM Fault Up" || c.Evidence["sxid"] != "20034" {
		t.Fatalf("nvswitch-fatal %+v", c)
	}
	if !strings.Contains(r.Summary(), "nvswitch-fatal nvswitch=1 action=RESTART_BM") {
		t.Errorf("Summary %q", r.Summary())
	}
	if r := h.cycles(5); len(r.AllConditions()) != 1 {
		t.Fatalf("nvswitch-fatal did not stay: %+v", r.AllConditions())
	}
	// Every GPU reset (they disappear and come back).
	for g := range 8 {
		h.node.gpu(telemetry.MetricGPULost, g, 1)
	}
	h.cycles(1)
	for g := range 8 {
		h.node.gpu(telemetry.MetricGPULost, g, 0)
	}
	h.cycle(time.Second)
	var left []telemetry.Condition
	for range 5 {
		left = h.cycles(1).AllConditions()
	}
	if len(left) != 0 {
		t.Fatalf("after every GPU's reset: %+v", left)
	}
	h.e.ObserveSXid(fatal) // read again from the log
	if r := h.cycles(1); len(r.AllConditions()) != 0 {
		t.Fatalf("an SXid from before the reset raised %+v", r.AllConditions())
	}
}
