package health

import (
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// A real node carries years of errors in its counters; none of them is news.
func TestHealthyAtStartWithNonZeroCounters(t *testing.T) {
	h := newHarness(t, nil)
	r := h.cycles(10)
	if all := r.AllConditions(); len(all) != 0 {
		t.Fatalf("conditions on a healthy node: %+v", all)
	}
	if r.State != telemetry.StateHealthy || len(r.GPUs) != 8 {
		t.Fatalf("state %s with %d GPUs, want healthy with 8", r.State, len(r.GPUs))
	}
	for _, g := range r.GPUs {
		if g.State != telemetry.StateHealthy || g.UUID != gpuUUID(g.Index) {
			t.Errorf("GPU %d: %s %q", g.Index, g.State, g.UUID)
		}
	}
	if got := r.Summary(); got != "gpuwatch: healthy" {
		t.Errorf("Summary = %q", got)
	}
	// The emitted series: catalog names, no node label, one state per GPU.
	var gpuStates, nodeStates int
	for _, s := range h.out {
		if _, ok := telemetry.LookupMetric(s.Name); !ok {
			t.Errorf("emitted %s, not in the catalog", s.Name)
		}
		if s.Labels.Get(telemetry.LabelNode) != "" {
			t.Errorf("%s carries a node label", s.Name)
		}
		switch s.Name {
		case telemetry.MetricGPUHealthState:
			gpuStates++
		case telemetry.MetricNodeHealthState:
			nodeStates++
		}
	}
	if gpuStates != 8 || nodeStates != 1 {
		t.Errorf("emitted %d GPU and %d node states, want 8 and 1", gpuStates, nodeStates)
	}
}

// Each rule: a healthy baseline, one change, the condition it must raise.
func TestRules(t *testing.T) {
	type want struct {
		kind   telemetry.ConditionKind
		target string
		sev    telemetry.Severity
		action telemetry.Action
	}
	gpu3 := gpuTarget(3)
	port2 := testNode + "/mlx5_2/port1"
	link := testNode + "/gpu5/nvlink7"
	tests := []struct {
		name    string
		opts    func(*Options)
		change  func(n *node)
		advance time.Duration // between the baseline and the changed cycle
		cycles  int           // changed cycles to run (default 1)
		want    *want         // nil: no condition at all
	}{
		{name: "new double-bit ECC error", change: func(n *node) { n.gpuAdd(telemetry.DCGMECCDBEVolTotal, 3, 1) },
			want: &want{telemetry.ConditionECCDBE, gpu3, telemetry.SeverityCritical, telemetry.ActionResetGPU}},
		{name: "aggregate DBE grows", change: func(n *node) { n.gpuAdd(telemetry.DCGMECCDBEAggTotal, 3, 2) },
			want: &want{telemetry.ConditionECCDBE, gpu3, telemetry.SeverityCritical, telemetry.ActionResetGPU}},
		{name: "SBE above the hourly rate", change: func(n *node) { n.gpuAdd(telemetry.DCGMECCSBEVolTotal, 3, 5000) },
			want: &want{telemetry.ConditionECCSBERate, gpu3, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "SBE below the hourly rate", change: func(n *node) { n.gpuAdd(telemetry.DCGMECCSBEVolTotal, 3, 500) }},
		{name: "row remap pending", change: func(n *node) { n.gpu(telemetry.DCGMRowRemapPending, 3, 1) },
			want: &want{telemetry.ConditionRowRemapPending, gpu3, telemetry.SeverityCritical, telemetry.ActionResetGPU}},
		{name: "row remap failure", change: func(n *node) { n.gpu(telemetry.DCGMRowRemapFailure, 3, 1) },
			want: &want{telemetry.ConditionRowRemapFailure, gpu3, telemetry.SeverityCritical, telemetry.ActionContactSupport}},
		{name: "too many uncorrectable remapped rows", change: func(n *node) { n.gpu(telemetry.DCGMUncorrectableRemappedRows, 3, 513) },
			want: &want{telemetry.ConditionRowRemapFailure, gpu3, telemetry.SeverityCritical, telemetry.ActionContactSupport}},
		{name: "page pending retirement", change: func(n *node) { n.gpu(telemetry.DCGMRetiredPending, 3, 1) },
			want: &want{telemetry.ConditionRetiredPages, gpu3, telemetry.SeverityWarning, telemetry.ActionResetGPU}},
		{name: "new retired page", change: func(n *node) { n.gpuAdd(telemetry.DCGMRetiredDBE, 3, 1) },
			want: &want{telemetry.ConditionRetiredPages, gpu3, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "retirement table nearly full", change: func(n *node) { n.gpu(telemetry.DCGMRetiredSBE, 3, 59) },
			want: &want{telemetry.ConditionRetiredPages, gpu3, telemetry.SeverityCritical, telemetry.ActionContactSupport}},
		{name: "GPU lost", change: func(n *node) { n.gpu(telemetry.MetricGPULost, 3, 1) },
			want: &want{telemetry.ConditionGPULost, gpu3, telemetry.SeverityFatal, telemetry.ActionRestartBM}},
		{name: "fewer GPUs than discovered", change: func(n *node) { n.count("nvml", 7); n.count("pci", 7) },
			want: &want{telemetry.ConditionGPUCount, testNode, telemetry.SeverityCritical, telemetry.ActionRestartBM}},
		{name: "NVML sees fewer GPUs than the PCI bus", change: func(n *node) { n.count("nvml", 7) },
			want: &want{telemetry.ConditionGPUCount, testNode, telemetry.SeverityCritical, telemetry.ActionRestartBM}},
		{name: "fewer GPUs on the PCI bus than the node had", change: func(n *node) { n.count("pci", 7) },
			want: &want{telemetry.ConditionGPUCount, testNode, telemetry.SeverityCritical, telemetry.ActionRestartBM}},
		{name: "a PCI scan that failed in part is not a GPU gone", change: func(n *node) { n.count("pci", 7); n.source("pci", "pci: read …/class: invalid value") }},
		{name: "GPU not in the NVLink fabric", change: func(n *node) { n.gpu(telemetry.MetricGPUFabricState, 3, 1) },
			want: &want{telemetry.ConditionFabricManager, testNode, telemetry.SeverityCritical, telemetry.ActionRestartFM}},
		{name: "fabric registration failed", change: func(n *node) { n.gpu(telemetry.MetricGPUFabricStatus, 3, 999) },
			want: &want{telemetry.ConditionFabricManager, testNode, telemetry.SeverityCritical, telemetry.ActionRestartFM}},
		{name: "persistence mode off where required", opts: func(o *Options) { o.RequirePersistenceMode = true },
			change: func(n *node) { n.gpu(telemetry.DCGMPersistenceMode, 3, 0) },
			want:   &want{telemetry.ConditionPersistenceMode, gpu3, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "persistence mode off, not required", change: func(n *node) { n.gpu(telemetry.DCGMPersistenceMode, 3, 0) }},
		{name: "fewer GPUs than configured", opts: func(o *Options) { o.ExpectedGPUs = 9 },
			want: &want{telemetry.ConditionGPUCount, testNode, telemetry.SeverityCritical, telemetry.ActionRestartBM}},
		{name: "driver recovery action: node reboot", change: func(n *node) { n.gpu(telemetry.DCGMGPURecoveryAction, 3, 2) },
			want: &want{telemetry.ConditionRecoveryAction, gpu3, telemetry.SeverityFatal, telemetry.ActionRestartBM}},
		{name: "driver recovery action: drain P2P", change: func(n *node) { n.gpu(telemetry.DCGMGPURecoveryAction, 3, 3) },
			want: &want{telemetry.ConditionRecoveryAction, gpu3, telemetry.SeverityCritical, telemetry.ActionDrainAndReset}},
		{name: "thermal violation grows", advance: 2 * time.Minute,
			change: func(n *node) { n.gpuAdd(telemetry.DCGMThermalViolation, 3, float64(30*time.Second)) },
			want:   &want{telemetry.ConditionThermalThrottle, gpu3, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "thermal violation grows a little", advance: 2 * time.Minute,
			change: func(n *node) { n.gpuAdd(telemetry.DCGMThermalViolation, 3, float64(time.Second)) }},
		{name: "power violation grows", advance: 2 * time.Minute,
			change: func(n *node) { n.gpuAdd(telemetry.DCGMPowerViolation, 3, float64(90*time.Second)) },
			want:   &want{telemetry.ConditionPowerThrottle, gpu3, telemetry.SeverityInfo, telemetry.ActionNone}},
		{name: "HW thermal slowdown reason", change: func(n *node) { n.gpu(telemetry.DCGMClockThrottleReasons, 3, 0x44) },
			want: &want{telemetry.ConditionThermalThrottle, gpu3, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "HW slowdown reason", change: func(n *node) { n.gpu(telemetry.DCGMClockThrottleReasons, 3, 0x8) },
			want: &want{telemetry.ConditionClockThrottle, gpu3, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "idle and sync boost reasons", change: func(n *node) { n.gpu(telemetry.DCGMClockThrottleReasons, 3, 0x11) }},
		{name: "PCIe replays", change: func(n *node) { n.gpuAdd(telemetry.DCGMPCIeReplayCounter, 3, 500) },
			want: &want{telemetry.ConditionPCIeReplay, gpu3, telemetry.SeverityWarning, telemetry.ActionNone}},
		// A negative threshold switches a delta rule off (before, SBE and PCIe
		// replay rules fired on every cycle with one).
		{name: "PCIe replays, rule switched off", opts: func(o *Options) { o.Rules.PCIeReplayDelta = -1 },
			change: func(n *node) { n.gpuAdd(telemetry.DCGMPCIeReplayCounter, 3, 500) }},
		{name: "single-bit ECC errors, rule switched off", opts: func(o *Options) { o.Rules.SBEPerHour = -1 },
			change: func(n *node) { n.gpuAdd(telemetry.DCGMECCSBEVolTotal, 3, 5000) }},
		{name: "PCIe link narrower than max", change: func(n *node) { n.gpu(telemetry.DCGMPCIeLinkWidth, 3, 8) },
			want: &want{telemetry.ConditionPCIeDegraded, gpu3, telemetry.SeverityWarning, telemetry.ActionCheckMechanicals}},
		{name: "PCIe link slower than max while busy", change: func(n *node) { n.gpu(telemetry.DCGMPCIeLinkGen, 3, 3) },
			want: &want{telemetry.ConditionPCIeDegraded, gpu3, telemetry.SeverityWarning, telemetry.ActionCheckMechanicals}},
		{name: "PCIe link slower while idle", change: func(n *node) {
			n.gpu(telemetry.DCGMPCIeLinkGen, 3, 1)
			n.gpu(telemetry.DCGMGPUUtil, 3, 0)
		}},
		{name: "NVLink down", change: func(n *node) { n.link(telemetry.MetricNVLinkUp, 5, 7, 0) },
			want: &want{telemetry.ConditionNVLinkDown, link, telemetry.SeverityCritical, telemetry.ActionResetGPU}},
		{name: "NVLink CRC errors", change: func(n *node) { n.link(telemetry.MetricNVLinkCRCFlitErrorsTotal, 5, 7, 2000) },
			want: &want{telemetry.ConditionNVLinkErrors, link, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "NVLink CRC errors below threshold", change: func(n *node) { n.link(telemetry.MetricNVLinkCRCFlitErrorsTotal, 5, 7, 50) }},
		{name: "NVLink recovery", change: func(n *node) { n.link(telemetry.MetricNVLinkRecoveryErrorsTotal, 5, 7, 3) },
			want: &want{telemetry.ConditionNVLinkErrors, link, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "IB port down", change: func(n *node) { n.port(telemetry.NodeIBStateID, 2, 1) },
			want: &want{telemetry.ConditionIBDown, port2, telemetry.SeverityCritical, telemetry.ActionCheckMechanicals}},
		{name: "IB port polling", change: func(n *node) { n.port(telemetry.NodeIBPhysicalStateID, 2, 2) },
			want: &want{telemetry.ConditionIBDown, port2, telemetry.SeverityCritical, telemetry.ActionCheckMechanicals}},
		{name: "IB port slower than at baseline", change: func(n *node) { n.port(telemetry.NodeIBRateBytesPerSecond, 2, 25e9) },
			want: &want{telemetry.ConditionIBDegraded, port2, telemetry.SeverityWarning, telemetry.ActionCheckMechanicals}},
		{name: "IB link flapped once", change: func(n *node) { n.port(telemetry.NodeIBLinkDownedTotal, 2, 4) },
			want: &want{telemetry.ConditionIBFlap, port2, telemetry.SeverityWarning, telemetry.ActionCheckMechanicals}},
		{name: "IB link flapped twice", cycles: 2, change: func(n *node) { n.add(telemetry.NodeIBLinkDownedTotal, 1, "device", "mlx5_2", "port", "1") },
			want: &want{telemetry.ConditionIBFlap, port2, telemetry.SeverityCritical, telemetry.ActionCheckMechanicals}},
		{name: "IB symbol errors", change: func(n *node) {
			n.add(telemetry.MetricIBSymbolErrorsTotal, 1000, telemetry.LabelIBDevice, "mlx5_2", telemetry.LabelIBPort, "1")
		}, want: &want{telemetry.ConditionIBErrors, port2, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "IB receive errors", change: func(n *node) { n.port(telemetry.NodeIBPortErrorsReceivedTotal, 2, 5000) },
			want: &want{telemetry.ConditionIBErrors, port2, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "nvml source down beyond the stale bound", advance: 3 * time.Minute, change: func(n *node) {
			n.sources[0].Up, n.sources[0].Err = false, "nvml: driver not loaded"
		}, cycles: 2, want: &want{telemetry.ConditionTelemetryStale, testNode, telemetry.SeverityWarning, telemetry.ActionNone}},
		{name: "nvml source down briefly", change: func(n *node) { n.sources[0].Up = false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			h.cycles(2)
			if tt.change != nil {
				tt.change(h.node)
			}
			var r healthreport.Report
			n := max(tt.cycles, 1)
			for i := range n {
				d := time.Second
				if i == 0 && tt.advance > 0 {
					d = tt.advance
				}
				if tt.name == "nvml source down beyond the stale bound" && i == 1 {
					d = 3 * time.Minute
				}
				if i > 0 && tt.change != nil && strings.Contains(tt.name, "twice") {
					tt.change(h.node)
				}
				r = h.cycle(d)
			}
			all := r.AllConditions()
			if tt.want == nil {
				if len(all) != 0 {
					t.Fatalf("want no condition, got %+v", all)
				}
				return
			}
			if len(all) != 1 {
				t.Fatalf("want one condition, got %+v", all)
			}
			c := all[0]
			if c.Kind != tt.want.kind || c.Target.String() != tt.want.target || c.Severity != tt.want.sev || c.Action != tt.want.action {
				t.Fatalf("got %s on %s, %s, %q; want %s on %s, %s, %q (%s)", c.Kind, c.Target, c.Severity, c.Action,
					tt.want.kind, tt.want.target, tt.want.sev, tt.want.action, c.Message)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("invalid condition: %v", err)
			}
			if c.Message == "" || c.Evidence["rule"] == "" {
				t.Errorf("condition without message or rule: %+v", c)
			}
			if g, ok := c.Target.GPUID(); ok && c.GPUUUID != gpuUUID(g.Index) {
				t.Errorf("GPU UUID %q", c.GPUUUID)
			}
			// The state follows the severity.
			wantState := map[telemetry.Severity]telemetry.State{
				telemetry.SeverityInfo: telemetry.StateHealthy, telemetry.SeverityWarning: telemetry.StateSuspect,
				telemetry.SeverityCritical: telemetry.StateDraining, telemetry.SeverityFatal: telemetry.StateDraining,
			}[c.Severity]
			if r.State != wantState && !(c.Severity == telemetry.SeverityFatal && r.State == telemetry.StateDrained) {
				t.Errorf("node state %s with a %s condition, want %s", r.State, c.Severity, wantState)
			}
			// The condition is exported with the catalog's labels, except those
			// the exporter adds (node, and the GPU's uuid and PCI address).
			var found bool
			for _, s := range h.out {
				if s.Name == telemetry.MetricHealthCondition && s.Labels.Get(telemetry.LabelCondition) == string(c.Kind) {
					found = true
					d, _ := telemetry.LookupMetric(s.Name)
					if len(s.Labels) != len(d.Labels)-3 {
						t.Errorf("condition labels %s, catalog %v", s.Labels, d.Labels)
					}
					if s.Labels.Get(telemetry.LabelTarget) != tt.want.target || s.Labels.Get(telemetry.LabelAction) != string(tt.want.action) {
						t.Errorf("condition sample %s", s.Labels)
					}
				}
				if s.Name == telemetry.MetricHealthConditionsTotal && s.Value != 1 {
					t.Errorf("conditions_total %s = %g, want 1", s.Labels, s.Value)
				}
			}
			if !found {
				t.Errorf("no %s sample", telemetry.MetricHealthCondition)
			}
		})
	}
}

// A counter that goes down was reset: its new value is the baseline, and growth is
// judged from there.
func TestCounterResetRebases(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(2)
	h.node.link(telemetry.MetricNVLinkCRCFlitErrorsTotal, 1, 1, 0) // driver reload
	if r := h.cycles(2); len(r.AllConditions()) != 0 {
		t.Fatalf("a counter reset raised %+v", r.AllConditions())
	}
	h.node.link(telemetry.MetricNVLinkCRCFlitErrorsTotal, 1, 1, 50) // below the threshold from the new base
	if r := h.cycles(1); len(r.AllConditions()) != 0 {
		t.Fatalf("50 errors raised %+v", r.AllConditions())
	}
	h.node.link(telemetry.MetricNVLinkCRCFlitErrorsTotal, 1, 1, 150)
	if _, ok := find(h.cycles(1), telemetry.ConditionNVLinkErrors, testNode+"/gpu1/nvlink1"); !ok {
		t.Fatal("150 errors since the reset raised nothing")
	}
}

// Counter conditions clear after the quiet period, state ones after good cycles.
func TestConditionsClear(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(2)
	h.node.gpuAdd(telemetry.DCGMPCIeReplayCounter, 0, 500)
	h.node.link(telemetry.MetricNVLinkUp, 0, 0, 0)
	r := h.cycles(1)
	if len(r.AllConditions()) != 2 || r.State != telemetry.StateDraining {
		t.Fatalf("got %s %+v", r.State, r.AllConditions())
	}
	h.node.link(telemetry.MetricNVLinkUp, 0, 0, 1)
	r = h.cycles(2)
	if _, ok := find(r, telemetry.ConditionNVLinkDown, testNode+"/gpu0/nvlink0"); !ok {
		t.Fatal("nvlink-down cleared after 2 good cycles, want 3")
	}
	r = h.cycles(1)
	if _, ok := find(r, telemetry.ConditionNVLinkDown, testNode+"/gpu0/nvlink0"); ok {
		t.Fatal("nvlink-down still there after 3 good cycles")
	}
	// Draining may only go back to healthy (the drain is cancelled); the
	// remaining warning makes it suspect one cycle later.
	if r.State != telemetry.StateHealthy {
		t.Fatalf("state %s, want healthy (drain cancelled)", r.State)
	}
	if r = h.cycles(1); r.State != telemetry.StateSuspect {
		t.Fatalf("state %s, want suspect (pcie-replay remains)", r.State)
	}
	r = h.cycle(15 * time.Minute)
	if len(r.AllConditions()) != 0 || r.State != telemetry.StateHealthy {
		t.Fatalf("after the quiet period: %s %+v", r.State, r.AllConditions())
	}
}

// A port that goes down and up every cycle must not flap the node's state.
func TestFlappingIBPortDoesNotFlapState(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(3)
	downs := 3.0
	for i := range 40 {
		if i%2 == 0 {
			h.node.port(telemetry.NodeIBStateID, 4, 1)
			h.node.port(telemetry.NodeIBPhysicalStateID, 4, 2)
			downs++
			h.node.port(telemetry.NodeIBLinkDownedTotal, 4, downs)
		} else {
			h.node.port(telemetry.NodeIBStateID, 4, 4)
			h.node.port(telemetry.NodeIBPhysicalStateID, 4, 5)
		}
		h.cycle(time.Second)
	}
	changes := 0
	for i := 3; i < len(h.states); i++ {
		if h.states[i] != h.states[i-1] {
			changes++
		}
	}
	// healthy → draining, and nothing after: the GPUs still run work.
	if changes != 1 || h.states[len(h.states)-1] != telemetry.StateDraining {
		t.Fatalf("state changed %d times while the port flapped: %v", changes, h.states[2:])
	}
	r := h.e.Report()
	down, ok := find(r, telemetry.ConditionIBDown, testNode+"/mlx5_4/port1")
	if !ok {
		t.Fatal("no ib-down while flapping")
	}
	if !down.Since.Equal(newClock().at(4 * time.Second)) {
		t.Errorf("ib-down since %s: it was re-raised", down.Since)
	}
	flap, ok := find(r, telemetry.ConditionIBFlap, testNode+"/mlx5_4/port1")
	if !ok || flap.Severity != telemetry.SeverityCritical || flap.Evidence["flaps"] != "20" {
		t.Fatalf("ib-flap %+v", flap)
	}
}

func TestEscalateAction(t *testing.T) {
	for a := range map[telemetry.Action]bool{telemetry.ActionNone: true, telemetry.ActionIgnore: true, telemetry.ActionRestartApp: true,
		telemetry.ActionRestartVM: true, telemetry.ActionResetGPU: true, telemetry.ActionRestartFM: true, telemetry.ActionDrainAndReset: true,
		telemetry.ActionRestartBM: true, telemetry.ActionUpdateSWFW: true, telemetry.ActionCheckMechanicals: true, telemetry.ActionContactSupport: true} {
		up := EscalateAction(a)
		if up.Rank() < a.Rank() {
			t.Errorf("EscalateAction(%q) = %q, less disruptive", a, up)
		}
		if a.Rank() >= telemetry.ActionRestartApp.Rank() && a != telemetry.ActionContactSupport && up == a {
			t.Errorf("EscalateAction(%q) does not escalate", a)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Node: ""},
		{Node: "a/b"},
		{Node: "n", ExpectedGPUs: -1},
		{Node: "n", Rules: Rules{ClearAfter: -time.Second}},
		{Node: "n", Rules: Rules{ThermalFraction: 2}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
