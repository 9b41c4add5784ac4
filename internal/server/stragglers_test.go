package server

import (
	"context"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/stragglers/stragglerstest"
	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestStragglersReachPlacement is the whole loop in one server: agents' samples
// of analyzer/stragglers' simulated jobs come in by remote write, the server's
// stragglers analysis names the throttled GPU-a3 (node-1 GPU 3), node-3's 8
// power-capped GPUs and GPU-e2, its recorder writes gpuwatch_straggler_gpu into
// the store, and the placement feeder reads the marks back. The jobs have ended
// (a fresh inventory sample 20 s and more after their last allocation sample),
// so every node is free: 8 GPUs go to a clean node (node-2 or node-4, by load),
// two 8-GPU nodes to node-2 and node-4, and the decision record scores node-1
// 1 − 1/8 = 0.875 and node-3 0 on straggler.
func TestStragglersReachPlacement(t *testing.T) {
	srv, err := New(Options{DataDir: t.TempDir(), SelfInterval: 200 * time.Millisecond, Placement: &PlacementOptions{Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	now := time.Now()
	t1 := now.Add(-stragglerstest.Every).Truncate(stragglerstest.Every)
	t0 := t1.Add(-10 * time.Minute)
	samples := stragglerstest.Fleet(t0)
	// The inventory the feeder reads (gpuwatch_gpu_info), alongside, and once
	// more now: the jobs' allocations have ended.
	inv := map[string]telemetry.Labels{}
	for _, s := range samples {
		if s.Name == telemetry.MetricGPUAllocationInfo {
			inv[s.Labels.Get(telemetry.LabelGPUUUID)] = telemetry.NewLabels(telemetry.LabelNode, s.Labels.Get(telemetry.LabelNode),
				telemetry.LabelGPUIndex, s.Labels.Get(telemetry.LabelGPUIndex), telemetry.LabelGPUUUID, s.Labels.Get(telemetry.LabelGPUUUID),
				telemetry.LabelModel, "NVIDIA H100 80GB HBM3")
		}
	}
	for _, ls := range inv {
		for _, at := range []time.Time{t0.Add(5 * time.Second), now.Add(-time.Second)} {
			samples = append(samples, telemetry.Sample{Name: telemetry.MetricGPUInfo, Labels: ls, Value: 1, Time: at})
		}
	}
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	remoteWriteFleet(t, ts.URL, samples)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := srv.Querier().Instant(context.Background(), "count("+telemetry.MetricStragglerGPU+`{signal=~"sm_clock|sm_active"})`, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(v) == 1 && v[0].Value == 10 { // GPU-a3, node-3's 8, GPU-e2
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store's straggler marks: %v, want 10 GPUs", v)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p := srv.Placement()
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sum := p.Summary(context.Background(), false); sum.StragglerGPUs != 10 || sum.GPUs != 37 || sum.FreeGPUs != 37 {
		t.Fatalf("snapshot: %d straggler GPUs of %d, %v free; want 10 of 37, all free", sum.StragglerGPUs, sum.GPUs, sum.FreeGPUs)
	}
	e := p.Engine()
	d, err := e.DryRun(context.Background(), framework.Request{GPUs: 8, Explain: true})
	if err != nil || d.Outcome != framework.OutcomePlaced {
		t.Fatalf("%v %+v", err, d)
	}
	if n := d.Assignments[0].Node; n != "node-2" && n != "node-4" {
		t.Errorf("8 GPUs placed on %s, want a clean node (node-2 or node-4)\n%s", n, framework.Explain(d))
	}
	want := map[string]float64{"node-1": 0.875, "node-2": 1, "node-3": 0, "node-4": 1}
	for _, c := range d.Candidates {
		w, ok := want[c.Node]
		if !ok {
			continue
		}
		for _, s := range c.Scores {
			if s.Plugin == "straggler" && s.Score != w {
				t.Errorf("%s straggler score %v (%s), want %v", c.Node, s.Score, s.Reason, w)
			}
		}
		delete(want, c.Node)
	}
	if len(want) != 0 {
		t.Errorf("candidates %v not recorded", want)
	}
	d, err = e.DryRun(context.Background(), framework.Request{Nodes: 2, GPUsPerNode: 8})
	if err != nil || d.Outcome != framework.OutcomePlaced || len(d.Assignments) != 2 {
		t.Fatalf("%v %+v", err, d)
	}
	if got := []string{d.Assignments[0].Node, d.Assignments[1].Node}; !(got[0] == "node-2" && got[1] == "node-4" || got[0] == "node-4" && got[1] == "node-2") {
		t.Errorf("two 8-GPU nodes placed on %v, want node-2 and node-4\n%s", got, framework.Explain(d))
	}
}
