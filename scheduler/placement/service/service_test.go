package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// TestRun: the loop feeds at once, then every interval, picking up new nodes and
// the drain controller's exclusions, and stops with its context.
func TestRun(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: time.Hour})
	now := time.Now()
	if err := st.Append(context.Background(), fleetSamples(1, 1, now.Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	excl := []drain.Exclusion{{Node: "node-00", GPU: 3, Reason: "xid 48"}}
	s, err := New(Options{Querier: st, Interval: 20 * time.Millisecond, Exclusions: func() []drain.Exclusion { return excl }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	waitSnap := func(what string, ok func(*snapshot.Snapshot) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok(s.Engine().Snapshot()) {
			if time.Now().After(deadline) {
				t.Fatalf("the loop never showed %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitSnap("node-00 with gpu 3 excluded", func(snap *snapshot.Snapshot) bool {
		return snap.Len() == 1 && snap.Node(0).GPUs[3].Excluded && snap.Node(0).GPUs[3].ExclusionReason == "xid 48"
	})
	more := fleetSamples(3, 3, time.Now().Add(-time.Second))
	if err := st.Append(context.Background(), more); err != nil {
		t.Fatal(err)
	}
	waitSnap("three nodes", func(snap *snapshot.Snapshot) bool { return snap.Len() == 3 })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "no store querier") {
		t.Errorf("no querier: %v", err)
	}
	if _, err := New(Options{Querier: failingStore{}, Interval: -time.Second}); err == nil || !strings.Contains(err.Error(), "interval -1s") {
		t.Errorf("negative interval: %v", err)
	}
}

// TestSlurmAllocations: one allocation per running job and node with GRES
// indices; a node without indices is left to the store; errors are wrapped.
func TestSlurmAllocations(t *testing.T) {
	start := time.Date(2026, 11, 1, 11, 0, 0, 0, time.UTC)
	jobs := []slurm.Job{
		{ID: 4242, StartTime: start, Nodes: []slurm.JobNode{
			{Name: "gpu01", GRES: []slurm.GRES{{Name: "gpu", Type: "h100", Count: 2, Indices: []int{1, 0}}}},
			{Name: "gpu02", GRES: []slurm.GRES{{Name: "gpu", Count: 8}}}, // no IDX
		}},
		{ID: 7, Nodes: []slurm.JobNode{{Name: "cpu01", GRES: nil}}},
	}
	got, err := SlurmAllocations(func(context.Context) ([]slurm.Job, error) { return jobs, nil })(context.Background())
	want := []snapshot.Allocation{{JobID: "4242", Node: "gpu01", GPUs: []int{0, 1}, Source: "slurm", At: start}}
	if err != nil || len(got) != 1 || got[0].JobID != want[0].JobID || got[0].Node != want[0].Node || !slices.Equal(got[0].GPUs, want[0].GPUs) ||
		got[0].Source != "slurm" || !got[0].At.Equal(start) {
		t.Errorf("allocations %+v, %v; want %+v", got, err, want)
	}
	_, err = SlurmAllocations(func(context.Context) ([]slurm.Job, error) { return nil, errors.New("scontrol: exit 1") })(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot list running Slurm jobs: scontrol: exit 1") {
		t.Errorf("error: %v", err)
	}
}

// TestFeedProperties: whatever values the store holds (health states valid or
// not, utilization in or out of 0..100, samples fresh or old), the snapshot has
// exactly the inventory's GPUs, every value in [0,1], a GPU whose last health
// sample says draining or drained is never schedulable, and a value observed
// longer ago than the bound is stale.
func TestFeedProperties(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: 24 * time.Hour})
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	round := 0
	rapid.Check(t, func(rt *rapid.T) {
		round++
		now := base.Add(time.Duration(round) * time.Hour) // each round reads only its own samples
		nodes := rapid.IntRange(1, 4).Draw(rt, "nodes")
		var batch []telemetry.Sample
		type want struct {
			health float64
			age    time.Duration
		}
		wants := map[[2]int]want{}
		for n := range nodes {
			node := "n" + string(rune('a'+n))
			gpus := rapid.IntRange(1, 8).Draw(rt, "gpus")
			for g := range gpus {
				idx := string(rune('0' + g))
				age := time.Duration(rapid.IntRange(0, 240).Draw(rt, "age")) * time.Second
				at := now.Add(-age)
				h := float64(rapid.IntRange(-1, 6).Draw(rt, "health"))
				util := rapid.Float64Range(-50, 200).Draw(rt, "util")
				batch = append(batch,
					sample(telemetry.MetricGPUInfo, 1, at, "node", node, "gpu_index", idx, "gpu_uuid", node+idx),
					sample(telemetry.MetricGPUHealthState, h, at, "node", node, "gpu_index", idx),
					sample(metricUtil, util, at, "node", node, "gpu", idx),
					sample(metricTemp, rapid.Float64Range(0, 120).Draw(rt, "temp"), at, "node", node, "gpu", idx),
					sample(metricSlowdownTemp, 90, at, "node", node, "gpu", idx),
					sample(metricPowerUsage, rapid.Float64Range(0, 900).Draw(rt, "power"), at, "node", node, "gpu", idx),
					sample(metricPowerMgmtLim, 700, at, "node", node, "gpu", idx))
				wants[[2]int{n, g}] = want{h, age}
			}
		}
		if err := st.Append(context.Background(), batch); err != nil {
			rt.Fatal(err)
		}
		snap, _, err := Feed(context.Background(), st, FeedOptions{Now: now, Staleness: time.Minute})
		if err != nil {
			rt.Fatal(err)
		}
		if snap.GPUCount() != len(wants) || snap.Len() != nodes {
			rt.Fatalf("%d nodes %d GPUs; want %d, %d", snap.Len(), snap.GPUCount(), nodes, len(wants))
		}
		for i := range snap.Len() {
			n := snap.Node(i)
			for _, g := range n.GPUs {
				w := wants[[2]int{int(n.Name[1] - 'a'), g.Index}]
				for name, v := range map[string]float64{"utilization": g.Utilization.Value, "thermal": g.ThermalHeadroom.Value, "power": g.PowerHeadroom.Value} {
					if !(v >= 0 && v <= 1) {
						rt.Fatalf("%s gpu %d: %s %v outside [0,1]", n.Name, g.Index, name, v)
					}
				}
				if (w.health == float64(telemetry.StateDraining) || w.health == float64(telemetry.StateDrained)) && g.Schedulable() {
					rt.Fatalf("%s gpu %d: health sample %v but schedulable", n.Name, g.Index, w.health)
				}
				if w.age > time.Minute && (!g.Health.Stale || !g.Utilization.Stale) {
					rt.Fatalf("%s gpu %d: %v old but not stale: %+v", n.Name, g.Index, w.age, g)
				}
			}
		}
	})
}
