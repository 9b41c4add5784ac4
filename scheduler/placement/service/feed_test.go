package service

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

func gpuOf(t *testing.T, snap *snapshot.Snapshot, node string, index int) *snapshot.GPU {
	t.Helper()
	i, ok := snap.Lookup(node)
	if !ok {
		t.Fatalf("node %s not in the snapshot", node)
	}
	n := snap.Node(i)
	for j := range n.GPUs {
		if n.GPUs[j].Index == index {
			return &n.GPUs[j]
		}
	}
	t.Fatalf("gpu %d of %s not in the snapshot", index, node)
	return nil
}

// TestFeedFromAgents reads what real agents on a simulated fleet shipped: four
// HGX H100 nodes under two leaves, a training job on node-01 GPUs 0-1, a double-bit
// ECC error on node-02 GPU 2. The snapshot has every GPU with its identity, memory,
// place, NVSwitch topology and rails, fresh utilization and headroom, the job's
// allocation and the bad GPU's health; the engine then places a 16-GPU gang on
// the untouched leaf.
func TestFeedFromAgents(t *testing.T) {
	af := newAgentFleet(t, 4, 2, func(f *simhw.Fleet) {
		if err := f.Node("node-01").StartJob(simhw.Job{ID: "4242", Kind: simhw.JobTraining}, 0, 1); err != nil {
			t.Fatal(err)
		}
		if err := f.Node("node-02").Inject(simhw.Fault{GPU: 2, Kind: simhw.FaultECCDBE}); err != nil {
			t.Fatal(err)
		}
	})
	af.cycles(t, 3)
	af.waitFor(t, `count(gpuwatch_gpu_info)`, 32)
	af.waitFor(t, `count(gpuwatch_topology_gpu_link_info)`, 4*28)
	af.waitFor(t, `count(gpuwatch_gpu_allocation_info)`, 2)
	af.waitFor(t, `count(gpuwatch_gpu_health_state{node="node-02",gpu_index="2"} > 0)`, 1)
	af.waitFor(t, `count(DCGM_FI_DEV_POWER_USAGE)`, 32)

	ctx := context.Background()
	now := af.fleet.Now()
	snap, stats, err := Feed(ctx, af.store, FeedOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Skipped) > 0 {
		t.Errorf("skipped: %q", stats.Skipped)
	}
	if snap.Len() != 4 || snap.GPUCount() != 32 || stats.Nodes != 4 || stats.GPUs != 32 {
		t.Fatalf("snapshot has %d nodes, %d GPUs (stats %+v); want 4, 32", snap.Len(), snap.GPUCount(), stats)
	}
	if h, l := snap.StaleGPUs(); h != 0 || l != 0 {
		t.Errorf("stale GPUs: health %d, utilization %d; want none (every value is seconds old)", h, l)
	}
	for i := range snap.Len() {
		n := snap.Node(i)
		sim := af.fleet.Node(n.Name)
		if n.Location.Leaf != sim.Leaf() || n.Location.Spine != sim.Spine() || n.Location.NVLinkDomain != sim.NVLinkDomain() {
			t.Errorf("%s: location %+v; want leaf %s spine %s domain %s", n.Name, n.Location, sim.Leaf(), sim.Spine(), sim.NVLinkDomain())
		}
		if n.Topology.Value == nil || n.Topology.Stale || !n.UniformLinks() || n.BestLink() != telemetry.LinkNVSwitch {
			t.Errorf("%s: topology %v stale %v uniform %v best %s; want the NVSwitch fabric, fresh", n.Name,
				n.Topology.Value != nil, n.Topology.Stale, n.UniformLinks(), n.BestLink())
		}
		rails := map[int]bool{}
		for j := range n.GPUs {
			g := &n.GPUs[j]
			if !strings.HasPrefix(g.UUID, "GPU-") || g.Model != "NVIDIA H100 80GB HBM3" || g.MemoryMiB < 80000 {
				t.Errorf("%s gpu %d: uuid %q model %q memory %d MiB", n.Name, g.Index, g.UUID, g.Model, g.MemoryMiB)
			}
			if g.Utilization.Stale || g.ThermalHeadroom.Stale || g.PowerHeadroom.Stale || g.Health.Stale {
				t.Errorf("%s gpu %d: stale value: %+v", n.Name, g.Index, g)
			}
			if !(g.ThermalHeadroom.Value > 0 && g.ThermalHeadroom.Value <= 1) || g.PowerHeadroom.Value < 0 || g.PowerHeadroom.Value > 1 {
				t.Errorf("%s gpu %d: headroom thermal %v power %v", n.Name, g.Index, g.ThermalHeadroom.Value, g.PowerHeadroom.Value)
			}
			if now.Sub(g.Utilization.At) > 10*time.Second || g.Utilization.At.After(now) {
				t.Errorf("%s gpu %d: utilization observed at %v, now %v", n.Name, g.Index, g.Utilization.At, now)
			}
			rails[g.Rail] = true
		}
		if len(rails) != 8 || rails[-1] {
			t.Errorf("%s: rails %v; want 8 distinct known rails (one NIC per GPU on an HGX H100)", n.Name, rails)
		}
	}
	for _, idx := range []int{0, 1} {
		g := gpuOf(t, snap, "node-01", idx)
		if g.FreeMilli != 0 || !slices.Equal(g.Jobs, []string{"4242"}) {
			t.Errorf("node-01 gpu %d: free %d jobs %v; want 0, [4242]", idx, g.FreeMilli, g.Jobs)
		}
		if g.Utilization.Value < 0.5 {
			t.Errorf("node-01 gpu %d runs training: utilization %v", idx, g.Utilization.Value)
		}
	}
	if g := gpuOf(t, snap, "node-01", 2); g.FreeMilli != 1000 || len(g.Jobs) != 0 {
		t.Errorf("node-01 gpu 2: free %d jobs %v; want idle", g.FreeMilli, g.Jobs)
	}
	if g := gpuOf(t, snap, "node-02", 2); g.Health.Value == telemetry.StateHealthy || g.Schedulable() {
		t.Errorf("node-02 gpu 2 after a DBE: health %v schedulable %v", g.Health.Value, g.Schedulable())
	}

	// Through the service and its HTTP API, as the CLI calls it: a 16-GPU gang
	// goes on the leaf nothing touched.
	svc, err := New(Options{Querier: af.store, Now: af.fleet.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	code, data := call(t, serve(t, svc), "POST", "/place", `{"gpus": 16, "dry_run": true}`, "")
	var d PlaceResponse
	if code != 200 || json.Unmarshal(data, &d) != nil || d.Outcome != framework.OutcomePlaced {
		t.Fatalf("place: %d %s", code, data)
	}
	var nodes []string
	for _, a := range d.Assignments {
		nodes = append(nodes, a.Node)
	}
	slices.Sort(nodes)
	if !slices.Equal(nodes, []string{"node-03", "node-04"}) || d.Quality.LeavesSpanned != 1 || !d.Quality.RailAligned {
		t.Errorf("16 GPUs on %v, %d leaves, rail aligned %v; want node-03 and node-04 under one leaf, rail aligned",
			nodes, d.Quality.LeavesSpanned, d.Quality.RailAligned)
	}

	// Two minutes later with nothing new: every value is stale, the last known
	// health stays (the DBE GPU is still unschedulable).
	later, _, err := Feed(ctx, af.store, FeedOptions{Now: now.Add(2 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if h, l := later.StaleGPUs(); h != 32 || l != 32 || later.Len() != 4 {
		t.Errorf("two minutes on: %d nodes, stale health %d utilization %d; want 4, 32, 32", later.Len(), h, l)
	}
	if g := gpuOf(t, later, "node-02", 2); g.Health.Value == telemetry.StateHealthy || !g.Health.Stale {
		t.Errorf("node-02 gpu 2 two minutes on: %+v; want its last known state, stale", g.Health)
	}
	// Past the store's five-minute lookback the utilization is gone (never
	// observed), the inventory and health are remembered for the feeder's lookback.
	gone, _, err := Feed(ctx, af.store, FeedOptions{Now: now.Add(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if g := gpuOf(t, gone, "node-02", 2); gone.Len() != 4 || !g.Utilization.At.IsZero() || g.Health.Value == telemetry.StateHealthy {
		t.Errorf("ten minutes on: %d nodes, node-02 gpu 2 %+v", gone.Len(), g)
	}
	if none, _, err := Feed(ctx, af.store, FeedOptions{Now: now.Add(20 * time.Minute)}); err != nil || none.Len() != 0 {
		t.Errorf("past the lookback: %v nodes, %v; want none", none.Len(), err)
	}

	// The job ends; half a minute later the agents no longer report it and the
	// store's old allocation series no longer holds the GPUs.
	if err := af.fleet.Node("node-01").StopJob("4242"); err != nil {
		t.Fatal(err)
	}
	if err := af.fleet.Advance(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	af.cycles(t, 2)
	af.waitFor(t, `count(timestamp(gpuwatch_gpu_info{node="node-01"}) > `+unixString(af.fleet.Now().Add(-2*time.Second))+`)`, 8)
	snap, _, err = Feed(ctx, af.store, FeedOptions{Now: af.fleet.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if g := gpuOf(t, snap, "node-01", 0); g.FreeMilli != 1000 || len(snap.Allocations()) != 0 {
		t.Errorf("after the job ended: node-01 gpu 0 free %d, allocations %v", g.FreeMilli, snap.Allocations())
	}
}

func unixString(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// sample is one hand-written series point.
func sample(name string, v float64, at time.Time, kv ...string) telemetry.Sample {
	return telemetry.Sample{Name: name, Labels: telemetry.NewLabels(kv...), Value: v, Time: at}
}

// TestFeedEdges covers what agents rarely show: a dcgm-exporter-only node (no
// gpuwatch series: Hostname names it, health never observed), a GPU replaced
// under the same index (the fresh UUID wins), a scheduler's allocation merged
// with the store's without double counting, an exclusion, site locations
// overriding the agents' labels, an out-of-range utilization left out, and DCGM's
// SM activity preferred to NVML's utilization where both are there.
func TestFeedEdges(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: time.Hour})
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-10 * time.Minute)
	fresh := now.Add(-5 * time.Second)
	gi := func(node, idx, uuid string, at time.Time) telemetry.Sample {
		return sample(telemetry.MetricGPUInfo, 1, at, "node", node, "gpu_index", idx, "gpu_uuid", uuid, "model", "NVIDIA A100-SXM4-80GB")
	}
	batch := []telemetry.Sample{
		gi("a1", "0", "GPU-old", old),
		gi("a1", "0", "GPU-new", fresh),
		gi("a1", "1", "GPU-a1-1", fresh),
		sample(telemetry.MetricGPUHealthState, 0, fresh, "node", "a1", "gpu_index", "0"),
		sample(telemetry.MetricGPUHealthState, 0, fresh, "node", "a1", "gpu_index", "1"),
		sample(metricUtil, 250, fresh, "node", "a1", "gpu", "0"),                     // out of range: left out
		sample(metricUtil, 40, fresh, "node", "a1", "gpu", "1"),                      // NVML's utilization...
		sample(metricSMActive, 0.73, fresh, "node", "a1", "gpu", "1"),                // ...gives way to DCGM's SM activity
		sample(metricUtil, 40, fresh, "Hostname", "d1", "gpu", "0", "UUID", "GPU-d"), // dcgm-exporter only
		sample(metricFBTotal, 40960, fresh, "Hostname", "d1", "gpu", "0", "UUID", "GPU-d", "modelName", "Tesla V100"),
		sample(telemetry.MetricTopologyNodeInfo, 1, fresh, "node", "a1", "leaf", "agent-leaf"),
		sample(telemetry.MetricGPUAllocationInfo, 1, fresh, "node", "a1", "gpu_index", "1", "job_id", "77"),
	}
	if err := st.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	snap, stats, err := Feed(context.Background(), st, FeedOptions{Now: now,
		Allocations: []snapshot.Allocation{{JobID: "77", Node: "a1", GPUs: []int{1}, Source: "slurm"}},
		Exclusions:  []snapshot.Exclusion{{Node: "d1", GPU: -1, Reason: "drained: xid 79"}},
		Locations:   []telemetry.NodeLocation{{Node: "a1", Leaf: "site-leaf"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Len() != 2 || snap.GPUCount() != 3 {
		t.Fatalf("%d nodes %d GPUs; want 2, 3", snap.Len(), snap.GPUCount())
	}
	if g := gpuOf(t, snap, "a1", 0); g.UUID != "GPU-new" || !g.Utilization.At.IsZero() {
		t.Errorf("a1 gpu 0: uuid %s utilization %+v; want the fresh GPU-new, utilization left out", g.UUID, g.Utilization)
	}
	if len(stats.Skipped) != 1 || !strings.Contains(stats.Skipped[0], "utilization 250%") {
		t.Errorf("skipped %q; want the 250%% utilization", stats.Skipped)
	}
	if g := gpuOf(t, snap, "a1", 1); g.AllocatedMilli != 1000 || len(snap.Warnings()) != 0 {
		t.Errorf("a1 gpu 1: allocated %d warnings %q; want one allocation, no over-commit", g.AllocatedMilli, snap.Warnings())
	} else if math.Abs(g.Utilization.Value-0.73) > 1e-9 || g.Utilization.Stale {
		t.Errorf("a1 gpu 1: utilization %+v; want DCGM's SM activity 0.73 over NVML's 40%%", g.Utilization)
	}
	i, _ := snap.Lookup("a1")
	if l := snap.Node(i).Location.Leaf; l != "site-leaf" {
		t.Errorf("a1 leaf %q; want the site's", l)
	}
	d := gpuOf(t, snap, "d1", 0)
	if d.UUID != "GPU-d" || d.Model != "Tesla V100" || d.MemoryMiB != 40960 || d.Utilization.Value != 0.4 || d.Utilization.Stale {
		t.Errorf("dcgm-exporter node: %+v", d)
	}
	if !d.Health.Stale || !d.Health.At.IsZero() || !d.Excluded || d.Schedulable() {
		t.Errorf("dcgm-exporter node health %+v excluded %v: want never observed, excluded", d.Health, d.Excluded)
	}
}

// TestFeedErrors: a store that fails is reported with the query; bad options
// are named.
func TestFeedErrors(t *testing.T) {
	_, _, err := Feed(context.Background(), failingStore{}, FeedOptions{Now: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "cannot read last_over_time(gpuwatch_gpu_info[900s])") {
		t.Errorf("failing store: %v", err)
	}
	if _, _, err := Feed(context.Background(), failingStore{}, FeedOptions{}); err == nil || !strings.Contains(err.Error(), "time is zero") {
		t.Errorf("zero now: %v", err)
	}
	if _, _, err := Feed(context.Background(), failingStore{}, FeedOptions{Now: time.Now(), Lookback: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "lookback") {
		t.Errorf("tiny lookback: %v", err)
	}
}

// countingStore counts the queries it answers.
type countingStore struct {
	store.Querier
	mu sync.Mutex
	n  int
}

func (c *countingStore) Instant(ctx context.Context, expr string, at time.Time) (store.Vector, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Querier.Instant(ctx, expr, at)
}

// TestFeedPrefetchesEveryQuery: every expression a read evaluates is in the
// prefetched list (run in parallel), so nothing is queried twice or late.
func TestFeedPrefetchesEveryQuery(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: time.Hour})
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if err := st.Append(context.Background(), fleetSamples(2, 2, now.Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Querier: st}
	snap, stats, err := Feed(context.Background(), cs, FeedOptions{Now: now})
	if err != nil || snap.GPUCount() != 16 {
		t.Fatalf("%v, %v GPUs", err, snap.GPUCount())
	}
	if want := len(queries("900s", "1800s")); cs.n != want || stats.Queries != want {
		t.Errorf("%d queries sent, %d counted; want the %d prefetched", cs.n, stats.Queries, want)
	}
}
