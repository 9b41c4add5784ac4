package service

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
	"github.com/gpuwatch/gpuwatch/telemetry/store/ingest"
)

// agentFleet is a simulated fleet with one real agent per node, each
// remote-writing into an embedded store through the ingest handler, as agents
// ship to `gpuwatch server`.
type agentFleet struct {
	fleet  *simhw.Fleet
	store  *embedded.Store
	agents []*agent.Agent
	ctx    context.Context
}

// newAgentFleet starts nodes HGX H100 nodes, nodesPerLeaf under each leaf, whose
// simulated clock starts ten minutes before the wall clock.
func newAgentFleet(t *testing.T, nodes, nodesPerLeaf int, setup func(f *simhw.Fleet)) *agentFleet {
	t.Helper()
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: time.Hour})
	ts := httptest.NewServer(ingest.NewHandler(st, ingest.DefaultLimits(), ingest.Options{}))
	t.Cleanup(ts.Close)
	start := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: nodes, NodesPerLeaf: nodesPerLeaf, Seed: 11, Root: t.TempDir(), Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(0); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	af := &agentFleet{fleet: f, store: st, ctx: ctx}
	var waits []func()
	for _, n := range f.Nodes() {
		boot := n.Boot()
		a, err := agent.New(agent.Options{
			Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
			KmsgFromStart: true, KmsgPoll: 5 * time.Millisecond, BootTime: func() (time.Time, error) { return boot, nil },
			BootID: "service-test", DCGM: n.DCGM(), KubeletSocket: "-", Now: f.Now,
			Interval: time.Second, HealthInterval: time.Second,
			NVLinkDomain: n.NVLinkDomain(), Leaf: n.Leaf(), Spine: n.Spine(), Block: n.Block(),
			RemoteWriteURL: ts.URL + ingest.WritePath, QueueDir: t.TempDir(),
		})
		if err != nil {
			t.Fatal(err)
		}
		af.agents = append(af.agents, a)
		waits = append(waits, a.Start(ctx))
	}
	t.Cleanup(func() {
		cancel()
		for i, w := range waits {
			w()
			af.agents[i].Close()
		}
	})
	return af
}

// cycles advances the fleet by a simulated second n times, each followed by a
// full collection on every agent.
func (af *agentFleet) cycles(t *testing.T, n int) {
	t.Helper()
	for range n {
		if err := af.fleet.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, a := range af.agents {
			wg.Go(func() { a.Collect(af.ctx, true) })
		}
		wg.Wait()
	}
}

// waitFor polls the store until expr answers want (one sample) at the fleet's now.
func (af *agentFleet) waitFor(t *testing.T, expr string, want float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var got any
	for time.Now().Before(deadline) {
		v, err := af.store.Instant(context.Background(), expr, af.fleet.Now())
		if err == nil && len(v) == 1 && v[0].Value == want {
			return
		}
		got = v
		if err != nil {
			got = err
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("store never answered %s = %v; last: %v", expr, want, got)
}
