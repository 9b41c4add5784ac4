package health

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

func TestSummary(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(1)
	h.xid(3, 79, "")
	h.node.port(telemetry.NodeIBStateID, 0, 1)
	h.node.gpuAdd(telemetry.DCGMPCIeReplayCounter, 1, 1000)
	r := h.cycles(1)
	want := "gpuwatch: xid79 gpu=" + gpuUUID(3) + " action=RESTART_BM +2 more"
	if got := r.Summary(); got != want {
		t.Fatalf("Summary = %q, want %q", got, want)
	}
	// The overall action is the Action maximum: CHECK_MECHANICALS ranks above RESTART_BM.
	if !r.Drain() || r.Action != telemetry.ActionCheckMechanicals || r.Severity != telemetry.SeverityFatal {
		t.Fatalf("report %s %q %s", r.State, r.Action, r.Severity)
	}
	if len(r.Conditions) != 1 || r.Conditions[0].Kind != telemetry.ConditionIBDown || len(r.GPUs[3].Conditions) != 1 {
		t.Fatalf("node conditions %+v", r.Conditions)
	}
	// JSON-ready.
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"state":"draining"`) || !strings.Contains(string(b), `"kind":"xid"`) {
		t.Fatalf("json %s %v", b, err)
	}
}

// The engine's defaults against an operator's real checks: Azure's configuration for
// ND96isr H100 v5 nodes (8 GPUs, 8 NDR ports at 400 Gb/s, IB flap check with its
// 6-hour default).
func TestAzureH100Checks(t *testing.T) {
	f, err := os.Open("testdata/nd96isr_h100_v5.conf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var gpus, ports int
	var gbit float64
	flapCheck := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, check, ok := strings.Cut(sc.Text(), "||")
		if !ok {
			continue
		}
		fs := strings.Fields(check)
		switch fs[0] {
		case "check_gpu_count":
			gpus, _ = strconv.Atoi(fs[1])
		case "check_hw_ib":
			ports++
			gbit, _ = strconv.ParseFloat(fs[1], 64)
		case "check_ib_link_flapping":
			flapCheck = true
		}
	}
	if gpus != 8 || ports != 8 || gbit != 400 || !flapCheck {
		t.Fatalf("conf: %d GPUs, %d ports at %g Gb/s, flap check %v", gpus, ports, gbit, flapCheck)
	}
	if d := DefaultRules(); d.IBFlapWindow != 6*time.Hour || d.IBFlapCount != 2 {
		t.Errorf("flap rule %s/%d, Azure fails on 2 flaps in 6 hours", d.IBFlapWindow, d.IBFlapCount)
	}
	h := newHarness(t, func(o *Options) { o.ExpectedGPUs = gpus })
	for p := range ports {
		h.node.port(telemetry.NodeIBRateBytesPerSecond, p, gbit*1e9/8)
	}
	if r := h.cycles(2); len(r.AllConditions()) != 0 {
		t.Fatalf("Azure's healthy node: %+v", r.AllConditions())
	}
	h.node.port(telemetry.NodeIBRateBytesPerSecond, 5, 200e9/8) // trained down to HDR
	h.node.count("nvml", float64(gpus-1))
	r := h.cycles(1)
	c, ok := find(r, telemetry.ConditionIBDegraded, testNode+"/mlx5_5/port1")
	if !ok || !strings.Contains(c.Message, "200 Gb/s, 400 Gb/s") {
		t.Fatalf("ib-degraded %+v", c)
	}
	if _, ok := find(r, telemetry.ConditionGPUCount, testNode); !ok {
		t.Fatal("no gpu-count")
	}
}

// ObserveXid is safe to call while Derive runs.
func TestObserveXidConcurrent(t *testing.T) {
	h := newHarness(t, nil)
	at := h.clk.now()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				h.e.ObserveXid(xidEvent(g, 13, at))
			}
		}()
	}
	for range 20 {
		h.e.Report()
		h.cycle(0)
	}
	wg.Wait()
	r := h.cycles(1)
	if len(r.AllConditions()) != 4 {
		t.Fatalf("conditions %+v", r.AllConditions())
	}
}
