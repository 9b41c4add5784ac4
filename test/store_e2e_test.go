package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// shippingAgent is one agent on a simulated HGX H100 whose clock starts ten minutes
// ago, remote-writing to url through an on-disk queue.
type shippingAgent struct {
	fleet *simhw.Fleet
	a     *agent.Agent
	ctx   context.Context
}

func newShippingAgent(t *testing.T, url string) *shippingAgent {
	t.Helper()
	start := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Seed: 7, Root: t.TempDir(), Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(0); err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	boot := n.Boot()
	a, err := agent.New(agent.Options{
		Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, KmsgPoll: 5 * time.Millisecond, BootTime: func() (time.Time, error) { return boot, nil },
		BootID: "e2e", DCGM: n.DCGM(), KubeletSocket: "-", Now: f.Now,
		Interval: time.Second, HealthInterval: time.Second,
		RemoteWriteURL: url, QueueDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	t.Cleanup(func() { cancel(); wait(); a.Close() })
	return &shippingAgent{fleet: f, a: a, ctx: ctx}
}

// cycles runs n full collections, one simulated second apart.
func (s *shippingAgent) cycles(t *testing.T, n int) {
	t.Helper()
	for range n {
		if err := s.fleet.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		s.a.Collect(s.ctx, true)
	}
}

// count is how many samples of one GPU's temperature the store holds.
func count(t *testing.T, q store.Querier, at time.Time) float64 {
	v, err := q.Instant(context.Background(), `count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu="0"}[30m])`, at)
	if err != nil || len(v) != 1 {
		return -1
	}
	return v[0].Value
}

// TestAgentShipsThroughOutage, against real VictoriaMetrics and Prometheus: the
// agent remote-writes; the store is stopped while the agent keeps collecting and
// restarted; every sample collected during the outage arrives with its original
// timestamp, and the server's Querier (--store.url) reads back exactly what was
// collected.
func TestAgentShipsThroughOutage(t *testing.T) {
	for _, kind := range []string{"victoria-metrics", "prometheus"} {
		t.Run(kind, func(t *testing.T) {
			var srv *realstore.Server
			if kind == "prometheus" {
				srv = realstore.StartPrometheus(t)
			} else {
				srv = realstore.StartVictoriaMetrics(t)
			}
			// The server's Querier, as the scheduler and analyzer will use it.
			gs, err := server.New(server.Options{StoreURL: srv.URL()})
			if err != nil {
				t.Fatal(err)
			}
			q := gs.Querier()
			s := newShippingAgent(t, srv.RemoteWriteURL())
			const before, during, after = 5, 20, 5
			s.cycles(t, before)
			realstore.Eventually(t, 20*time.Second, fmt.Sprintf("%d samples before the outage", before), func() bool {
				srv.Flush()
				return count(t, q, s.fleet.Now()) == before
			})
			srv.Stop()
			s.cycles(t, during)
			if st := s.a.Shipper.Stats(); st.QueueSamples == 0 {
				t.Errorf("nothing queued during the outage: %+v", st)
			}
			srv.Start()
			s.cycles(t, after)
			want := float64(before + during + after)
			realstore.Eventually(t, 30*time.Second, fmt.Sprintf("all %v samples after the outage", want), func() bool {
				srv.Flush()
				return count(t, q, s.fleet.Now()) == want
			})
			// Original timestamps: one sample per simulated second, none moved.
			m, err := q.Range(context.Background(), `DCGM_FI_DEV_GPU_TEMP{gpu="0"}`,
				store.Range{Start: s.fleet.Now().Add(-time.Duration(want-1) * time.Second), End: s.fleet.Now(), Step: time.Second})
			if err != nil || len(m) != 1 || len(m[0].Points) != int(want) {
				t.Fatalf("range: %v points, %v", m, err)
			}
		})
	}
}

// TestAgentShipsToEmbeddedServer: the default path, agent → gpuwatch server's
// embedded store, read back through the server's Querier.
func TestAgentShipsToEmbeddedServer(t *testing.T) {
	gs, err := server.New(server.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close(context.Background())
	ts := httptest.NewServer(gs.Handler())
	defer ts.Close()
	s := newShippingAgent(t, ts.URL+"/api/v1/write")
	s.cycles(t, 12)
	realstore.Eventually(t, 20*time.Second, "12 samples in the embedded store", func() bool {
		return count(t, gs.Querier(), s.fleet.Now()) == 12
	})
	v, err := gs.Querier().Instant(context.Background(), `count(DCGM_FI_DEV_GPU_TEMP)`, s.fleet.Now())
	if err != nil || len(v) != 1 || v[0].Value != 8 {
		t.Errorf("GPUs in the store: %v, %v", v, err)
	}
}
