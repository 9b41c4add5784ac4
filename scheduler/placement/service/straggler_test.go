package service

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// TestFeedStragglers: the feeder reads gpuwatch_straggler_gpu as the server's
// recorder writes it (every 15 s while a GPU is a straggler) into straggler
// marks with the time the GPU was last named, and placement then avoids the
// marked node. Two idle 8-GPU nodes:
//
//   - node-00 GPU 3 named on sm_clock (0.22) and power (0.31) from 20 to 4
//     minutes ago: marked, lag 0.31 (the larger), named 4 minutes ago;
//   - node-01 GPU 5 named from 50 to 40 minutes ago and GPU 6 until 33
//     minutes ago: past the 30-minute window, not marked;
//   - node-01 GPU 7 with a lag of 1.5: left out and noted;
//   - node-00 GPU 1 named 20 seconds ago, after the subquery's last step (on
//     the minute; now is 30 s past it): marked, named 20 s ago.
//
// Asked for 8 GPUs the idle fleet then places them on node-01; with the
// straggler weight 0, on node-00 (first by name in a tie): the control. With a
// 2-minute window only the mark of 20 seconds ago is read.
func TestFeedStragglers(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: 2 * time.Hour})
	now := time.Date(2026, 11, 1, 12, 0, 30, 0, time.UTC)
	samples := fleetSamples(2, 2, now.Add(-2*time.Second))
	named := func(node, uuid, signal string, lag float64, from, to time.Duration) {
		for at := now.Add(-from); !at.After(now.Add(-to)); at = at.Add(15 * time.Second) {
			samples = append(samples, sample(telemetry.MetricStragglerGPU, lag, at, "job", "gpuwatch-server", "job_id", "train-a",
				"node", node, "gpu_uuid", uuid, "signal", signal))
		}
	}
	named("node-00", "GPU-00-3", "sm_clock", 0.22, 20*time.Minute, 4*time.Minute)
	named("node-00", "GPU-00-3", "power", 0.31, 20*time.Minute, 4*time.Minute)
	named("node-01", "GPU-01-5", "power", 0.3, 50*time.Minute, 40*time.Minute)
	named("node-01", "GPU-01-6", "power", 0.3, 50*time.Minute, 33*time.Minute)
	named("node-01", "GPU-01-7", "power", 1.5, 5*time.Minute, 4*time.Minute)
	named("node-00", "GPU-00-1", "sm_active", 0.4, 20*time.Second, 20*time.Second)
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	if err := st.Append(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	snap, stats, err := Feed(ctx, st, FeedOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	g := gpuOf(t, snap, "node-00", 3)
	if m := g.Straggler; !m.Named() || m.Lag != 0.31 || m.Signal != "power" || m.Job != "train-a" || !m.At.Equal(now.Add(-4*time.Minute)) {
		t.Errorf("node-00 gpu 3 mark %+v, want power 0.31 of train-a named at now-4m", m)
	}
	if m := gpuOf(t, snap, "node-00", 1).Straggler; !m.Named() || !m.At.Equal(now.Add(-20*time.Second)) {
		t.Errorf("node-00 gpu 1 mark %+v, want named 20 s ago", m)
	}
	if marked, expired := snap.StragglerGPUs(); marked != 2 || expired != 0 {
		for i := range snap.Len() {
			t.Logf("%s stragglers %b", snap.Node(i).Name, snap.Node(i).Stragglers())
		}
		t.Errorf("%d GPUs marked, %d expired; want 2 and 0", marked, expired)
	}
	if s := strings.Join(stats.Skipped, "\n"); !strings.Contains(s, "node-01 gpu GPU-01-7: straggler lag 1.5 outside [0,1]") {
		t.Errorf("skipped %q, want the lag of 1.5 noted", stats.Skipped)
	}

	place := func(weight float64) string {
		t.Helper()
		scorers, err := placement.WithWeight(placement.DefaultScorers(), "straggler", weight)
		if err != nil {
			t.Fatal(err)
		}
		e, err := placement.New(snap, placement.Options{Scorers: scorers})
		if err != nil {
			t.Fatal(err)
		}
		d, err := e.DryRun(ctx, framework.Request{GPUs: 8})
		if err != nil || d.Outcome != framework.OutcomePlaced {
			t.Fatalf("%v %+v", err, d)
		}
		return d.Assignments[0].Node
	}
	if got := place(1); got != "node-01" {
		t.Errorf("8 GPUs placed on %s, want node-01 (node-00 has stragglers)", got)
	}
	if got := place(0); got != "node-00" {
		t.Errorf("straggler weight 0: 8 GPUs placed on %s, want node-00 (the tie goes to the first)", got)
	}
	short, _, err := Feed(ctx, st, FeedOptions{Now: now, StragglerWindow: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if marked, _ := short.StragglerGPUs(); marked != 1 || !gpuOf(t, short, "node-00", 1).Straggler.Named() {
		t.Errorf("2-minute window: %d GPUs marked, want node-00 gpu 1 only", marked)
	}
	if _, _, err := Feed(ctx, st, FeedOptions{Now: now, StragglerWindow: time.Second}); err == nil || !strings.Contains(err.Error(), "straggler window 1s") {
		t.Errorf("a 1 s window: %v, want an error naming it", err)
	}
}

// TestExtenderStragglers: the kube-scheduler extender's prioritize runs the same
// engine, so the straggler scorer reaches it, at the extender's resolution of
// 0..10 (rounded). Two idle 8-GPU nodes in one empty leaf, a pod asking for 8
// GPUs; each node scores gpuset 1 ×2, fragmentation 1 ×2, topology 0 (a whole
// empty leaf kept free) ×1, health 1 ×1, load 0.803 ×1 (utilization 10 %, 40 of
// 90 °C, 100 of 700 W: 0.45 + 0.139 + 0.214) and straggler ×1, over weights
// of 8:
//
//   - node-01 clean: (6.803 + 1) / 8 = 0.850, priority round(8.50) = 9;
//   - node-00 power capped, all 8 GPUs named: straggler 0, 6.803 / 8 = 0.725,
//     priority 7;
//   - node-00 with one GPU named: 1 − 1/8 = 0.875, (6.803 + 0.875) / 8 =
//     0.835, priority 8. One straggler of eight moves the total by 0.0156,
//     a sixth of the extender's step: here it crosses a rounding boundary,
//     elsewhere it may not (the engine's own placement always sees it).
//
// The filter passes node-00 every time: a soft exclusion.
func TestExtenderStragglers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stragglers int
		want       [2]int64
	}{{"whole node", 8, [2]int64{7, 9}}, {"one GPU", 1, [2]int64{8, 9}}} {
		t.Run(tc.name, func(t *testing.T) {
			st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: time.Hour})
			now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
			samples := fleetSamples(2, 2, now.Add(-2*time.Second))
			for g := range tc.stragglers {
				samples = append(samples, sample(telemetry.MetricStragglerGPU, 0.3, now.Add(-time.Minute), "job_id", "train-b",
					"node", "node-00", "gpu_uuid", fmt.Sprintf("GPU-00-%d", g), "signal", "power"))
			}
			sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
			if err := st.Append(context.Background(), samples); err != nil {
				t.Fatal(err)
			}
			s, err := New(Options{Querier: st, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if sum := s.Summary(context.Background(), false); sum.StragglerGPUs != tc.stragglers || sum.StragglerWindow != framework.Duration(30*time.Minute) {
				t.Errorf("summary: %d straggler GPUs in %v, want %d in 30m", sum.StragglerGPUs, sum.StragglerWindow, tc.stragglers)
			}
			if got := testutil.ToFloat64(s.metrics.stragglers); got != float64(tc.stragglers) {
				t.Errorf("gpuwatch_placement_snapshot_straggler_gpus %v, want %d", got, tc.stragglers)
			}
			ts := serve(t, s)
			args := `{"Pod": {"metadata": {"name": "p", "namespace": "ml"}, "spec": {"containers": [{"name": "c",
				"resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}, "NodeNames": ["node-00", "node-01"]}`
			code, data := call(t, ts, "POST", "/extender/filter", args, "")
			if code != 200 || !strings.Contains(string(data), `"NodeNames":["node-00","node-01"]`) {
				t.Errorf("filter: %d %s, want both nodes to pass", code, data)
			}
			code, data = call(t, ts, "POST", "/extender/prioritize", args, "")
			var pl []struct {
				Host  string
				Score int64
			}
			if code != 200 || json.Unmarshal(data, &pl) != nil || len(pl) != 2 {
				t.Fatalf("prioritize: %d %s", code, data)
			}
			if got := [2]int64{pl[0].Score, pl[1].Score}; pl[0].Host != "node-00" || got != tc.want {
				t.Errorf("prioritize %s, want node-00 %d, node-01 %d", data, tc.want[0], tc.want[1])
			}
		})
	}
}
