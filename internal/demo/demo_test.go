package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestDefaultStory plays the built-in story as fast as possible and checks that
// every scripted fault was observed at the hardware boundary, on the right node and
// GPU, with the catalog's action.
func TestDefaultStory(t *testing.T) {
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Duration: 10 * time.Minute, Speed: -1, Out: &out})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if res.Simulated != 10*time.Minute {
		t.Errorf("simulated %s, want 10m", res.Simulated)
	}
	xids := []struct {
		node   string
		gpu    int
		xid    int
		action telemetry.Action
	}{
		{"node-05", 6, 13, telemetry.ActionRestartApp},
		{"node-07", 3, 48, telemetry.ActionResetGPU},
		{"node-07", 3, 63, telemetry.ActionDrainAndReset}, // the catalog's workflow: 48 with 63
		{"node-11", 5, 79, telemetry.ActionRestartBM},
		{"node-06", 7, 119, telemetry.ActionResetGPU},
		{"node-16", 0, 94, telemetry.ActionRestartApp},
	}
	for _, want := range xids {
		found := false
		for _, e := range res.Xids {
			if e.Node == want.node && e.GPU == want.gpu && e.Xid == want.xid {
				found = true
				if e.Action != want.action {
					t.Errorf("Xid %d action %q, want %q", want.xid, e.Action, want.action)
				}
			}
		}
		if !found {
			t.Errorf("Xid %d on %s gpu%d not observed; saw %+v", want.xid, want.node, want.gpu, res.Xids)
		}
	}
	changes := []struct {
		node string
		gpu  int
		text string
	}{
		{"node-03", 2, "corrected ECC errors"},
		{"node-11", 5, "GPU lost"},
		{"node-11", 5, "answers NVML again"},
		{"node-02", 1, "thermal slowdown"},
		{"node-02", 1, "clocks back to normal"},
		{"node-04", 2, "power capped below its limit"},
		{"node-09", 4, "NVLink CRC errors"},
		{"node-14", -1, "InfiniBand mlx5_3 port 1"},
		{"node-12", -1, "InfiniBand mlx5_6 port 1 went"},
		{"node-12", -1, "InfiniBand mlx5_6 port 1 is ACTIVE again"},
	}
	for _, want := range changes {
		found := false
		for _, e := range res.Events {
			if e.Node == want.node && e.GPU == want.gpu && strings.Contains(e.Text, want.text) {
				found = true
			}
		}
		if !found {
			t.Errorf("change %q on %s gpu%d not observed; output:\n%s", want.text, want.node, want.gpu, out.String())
		}
	}
	// At the end no GPU is lost (node-11's came back) and the fleet is working.
	tot := totals(res.Last)
	// node-06 gpu7's GSP stopped answering (Xid 119) and nobody reset it.
	if tot.gpus != 128 || tot.lost != 0 || tot.failing != 1 {
		t.Errorf("final fleet: %d GPUs, %d lost, %d not answering; want 128, 0, 1", tot.gpus, tot.lost, tot.failing)
	}
	if tot.allocated == 0 || tot.busy == 0 || tot.powerW < 128*60 {
		t.Errorf("final fleet looks dead: %+v", tot)
	}
	for _, s := range []string{"fleet: 128 GPUs", "Xids read from kernel logs", "GPU-hours allocated"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
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
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("Run(%+v) succeeded, want an error", o)
		}
	}
}
