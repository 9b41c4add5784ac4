package demo

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestDefaultStory plays the built-in story as fast as possible and checks that
// the agents observed every scripted fault: a health condition of the right kind on
// the right target, or the Xid counted on the right GPU; that conditions whose
// fault ended cleared; and that every agent served its /metrics over HTTP.
func TestDefaultStory(t *testing.T) {
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Duration: 10 * time.Minute, Speed: -1, Out: &out})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if res.Simulated != 10*time.Minute {
		t.Errorf("simulated %s, want 10m", res.Simulated)
	}
	has := func(node string, kind EventKind, match func(Event) bool) bool {
		for _, e := range res.Events {
			if e.Node == node && e.Kind == kind && match(e) {
				return true
			}
		}
		return false
	}

	// The Xids of the story, counted by the agents' xid source on the right GPU.
	for _, want := range []struct {
		node     string
		gpu, xid int
	}{
		{"node-05", 6, 13},
		{"node-07", 3, 48},
		{"node-07", 3, 63},
		{"node-11", 5, 79},
		{"node-06", 7, 119},
		{"node-16", 0, 94},
	} {
		if !has(want.node, EventXid, func(e Event) bool { return e.GPU == want.gpu && e.Xid == want.xid && e.Count >= 1 }) {
			t.Errorf("Xid %d on %s gpu%d not counted by its agent", want.xid, want.node, want.gpu)
		}
	}

	// Every fault, as the health condition its agent raised.
	raised := []struct {
		node, target string
		kind         telemetry.ConditionKind
		action       telemetry.Action // "" when any
	}{
		{"node-03", "gpu2", telemetry.ConditionECCSBERate, ""},                     // ecc-sbe-storm
		{"node-05", "gpu6", telemetry.ConditionXid, telemetry.ActionRestartApp},    // Xid 13
		{"node-07", "gpu3", telemetry.ConditionECCDBE, ""},                         // Xid 48
		{"node-07", "gpu3", telemetry.ConditionRowRemapPending, ""},                // Xid 63
		{"node-07", "gpu3", telemetry.ConditionXid, telemetry.ActionResetGPU},      // the driver's recovery action overrides 48+63
		{"node-11", "gpu5", telemetry.ConditionGPULost, telemetry.ActionRestartBM}, // Xid 79
		{"node-02", "gpu1", telemetry.ConditionThermalThrottle, ""},                // thermal
		{"node-14", "mlx5_3/port1", telemetry.ConditionIBFlap, ""},                 // ib-flap
		{"node-09", "gpu4/nvlink4", telemetry.ConditionNVLinkErrors, ""},           // nvlink-crc
		{"node-12", "mlx5_6/port1", telemetry.ConditionIBDown, ""},                 // ib-down
		{"node-04", "gpu2", telemetry.ConditionPowerThrottle, ""},                  // power brake
		{"node-06", "gpu7", telemetry.ConditionXid, telemetry.ActionResetGPU},      // Xid 119
		{"node-16", "gpu0", telemetry.ConditionXid, telemetry.ActionDrainAndReset}, // Xid 94 and the driver's action
		{"node-16", "gpu0", telemetry.ConditionRecoveryAction, telemetry.ActionDrainAndReset},
	}
	for _, want := range raised {
		if !has(want.node, EventRaised, func(e Event) bool {
			return e.Target == want.target && e.Condition == want.kind && (want.action == "" || e.Action == want.action)
		}) {
			t.Errorf("no %s condition (action %q) raised on %s %s", want.kind, want.action, want.node, want.target)
		}
	}
	// Faults that ended, as conditions cleared.
	for _, want := range []struct {
		node, target string
		kind         telemetry.ConditionKind
	}{
		{"node-11", "gpu5", telemetry.ConditionGPULost},        // recover at 8m30s
		{"node-12", "mlx5_6/port1", telemetry.ConditionIBDown}, // back after 3m
		{"node-02", "gpu1", telemetry.ConditionClockThrottle},  // cooled down after 2m
		{"node-04", "gpu2", telemetry.ConditionPowerThrottle},  // brake released after 1m30s
	} {
		if !has(want.node, EventCleared, func(e Event) bool { return e.Target == want.target && e.Condition == want.kind }) {
			t.Errorf("%s on %s %s never cleared", want.kind, want.node, want.target)
		}
	}
	// Node states: the GPU that fell off the bus drained its node, the reboot put
	// it on probation; the GPUs waiting for a reset keep theirs draining.
	if !has("node-11", EventState, func(e Event) bool { return e.To == telemetry.StateDrained }) {
		t.Errorf("node-11 never drained after its GPU was lost")
	}
	final := map[string]telemetry.State{}
	for _, n := range res.Nodes {
		final[n.Name] = n.Report.State
	}
	for node, want := range map[string]telemetry.State{
		"node-11": telemetry.StateProbation, "node-07": telemetry.StateDraining, "node-16": telemetry.StateDraining,
		"node-06": telemetry.StateDraining, "node-01": telemetry.StateHealthy,
	} {
		if final[node] != want {
			t.Errorf("%s ends %s, want %s", node, final[node], want)
		}
	}

	// At the end no GPU is lost (node-11's came back) and the fleet is working.
	tot := totals(res.Nodes)
	// node-06 gpu7's GSP stopped answering (Xid 119) and nobody reset it.
	if tot.gpus != 128 || tot.lost != 0 || tot.silent != 1 {
		t.Errorf("final fleet: %d GPUs, %d lost, %d silent; want 128, 0, 1", tot.gpus, tot.lost, tot.silent)
	}
	if tot.allocated == 0 || tot.busy == 0 || tot.powerW < 128*60 {
		t.Errorf("final fleet looks dead: %+v", tot)
	}
	if res.FullCycles == 0 || res.HealthCycles < 5*res.FullCycles-16*5 {
		t.Errorf("%d full and %d health cycles", res.FullCycles, res.HealthCycles)
	}
	for _, n := range res.Nodes {
		if n.SourcesUp == 0 || !strings.HasPrefix(n.URL, "http://127.0.0.1:") {
			t.Errorf("%s: %d sources up, URL %q", n.Name, n.SourcesUp, n.URL)
		}
		if !strings.Contains(out.String(), n.URL+"/metrics") {
			t.Errorf("the output does not give %s's /metrics URL", n.Name)
		}
	}
	// The /metrics excerpt is the worst node's, read over HTTP.
	if !strings.Contains(res.Metrics, fmt.Sprintf("gpuwatch_node_health_state{node=%q} 2", res.MetricsNode)) ||
		!strings.Contains(res.Metrics, "DCGM_FI_DEV_GPU_TEMP{") {
		t.Errorf("/metrics of %s lacks its draining state or GPU temperatures", res.MetricsNode)
	}
	for _, s := range []string{"fleet: 128 GPUs", "Xids counted by the agents", "GPU-hours allocated",
		"node healthy → draining", "cleared ib-down", res.MetricsNode + "'s /metrics"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	if n := strings.Count(out.String(), "\n"); n > 150 {
		t.Errorf("the default output has %d lines, want at most 150", n)
	}
}

// TestShowMetrics prints one node's whole /metrics, served by its agent.
func TestShowMetrics(t *testing.T) {
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Nodes: 2, Duration: time.Minute, Speed: -1, ShowMetrics: "node-02", Out: &out})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if res.MetricsNode != "node-02" || !strings.Contains(out.String(), res.Metrics) ||
		!strings.Contains(res.Metrics, `DCGM_FI_DEV_GPU_TEMP{DCGM_FI_DRIVER_VERSION=`) ||
		!strings.Contains(res.Metrics, `Hostname="node-02"`) {
		t.Errorf("node-02's /metrics not printed whole:\n%s", out.String())
	}
	if _, err := Run(context.Background(), Options{Nodes: 2, Duration: time.Minute, Speed: -1, ShowMetrics: "node-03"}); err == nil ||
		!strings.Contains(err.Error(), "node-03") {
		t.Errorf("--show-metrics on a node the fleet lacks: %v", err)
	}
}

func TestBadScenario(t *testing.T) {
	_, err := Run(context.Background(), Options{
		Duration: time.Minute, Speed: -1,
		Faults: []byte("faults:\n  - at: 10s\n    node: node-99\n    kind: xid\n    xid: 79\n    gpu: 0\n"), FaultsName: "bad.yaml",
	})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "node-99") {
		t.Fatalf("error %v, want one naming bad.yaml and node-99", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{Nodes: -1},
		{Duration: -time.Second},
		{Tick: 2 * time.Minute, Interval: time.Minute},
		{FullEvery: -1},
		{ListenBase: 65530},
		{ListenBase: -1},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("Run(%+v) succeeded, want an error", o)
		}
	}
}
