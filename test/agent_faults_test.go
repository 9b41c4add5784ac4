package test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/ingest"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// Fault tests of the agent against the store as the gpuwatch server runs it:
// the embedded TSDB behind the ingest handler (internal/server wires them the
// same way).

// embeddedServer is an embedded store in dir behind the ingest handler.
type embeddedServer struct {
	st  *embedded.Store
	srv *httptest.Server
	reg *prometheus.Registry
}

func newEmbeddedServer(t *testing.T, dir string) *embeddedServer {
	t.Helper()
	st, err := embedded.Open(embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	h := ingest.NewHandler(st, ingest.DefaultLimits(), ingest.Options{Registerer: reg, ActiveSeries: st.ActiveSeries})
	es := &embeddedServer{st: st, srv: httptest.NewServer(h), reg: reg}
	t.Cleanup(func() { es.srv.Close(); es.st.Close() })
	return es
}

func (es *embeddedServer) url() string { return es.srv.URL + ingest.WritePath }

// times returns the timestamps the store holds for GPU 0's temperature.
func (es *embeddedServer) times(t *testing.T) []int64 {
	t.Helper()
	q, err := es.st.Queryable().Querier(0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil,
		labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, telemetry.DCGMGPUTemp),
		labels.MustNewMatcher(labels.MatchEqual, telemetry.DCGMLabelGPU, "0"))
	var out []int64
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			ts, _ := it.At()
			out = append(out, ts)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rejected is the samples the ingest handler refused.
func (es *embeddedServer) rejected(t *testing.T) float64 {
	t.Helper()
	fams, err := es.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, mf := range fams {
		if mf.GetName() == "gpuwatch_ingest_samples_rejected_total" {
			for _, m := range mf.Metric {
				n += m.Counter.GetValue()
			}
		}
	}
	return n
}

// steppingAgent is an agent on a simulated HGX H100 whose clock is the fleet's
// plus an offset the test steps, as an NTP step or a wrong RTC would.
type steppingAgent struct {
	fleet  *simhw.Fleet
	a      *agent.Agent
	ctx    context.Context
	offset atomic.Int64
}

func newSteppingAgent(t *testing.T, url string, faults string, mod func(*agent.Options)) *steppingAgent {
	t.Helper()
	start := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Seed: 7, Root: t.TempDir(), Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if faults != "" {
		sc, err := simhw.ParseScenario([]byte(faults))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Schedule(sc); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Advance(0); err != nil {
		t.Fatal(err)
	}
	s := &steppingAgent{fleet: f}
	n := f.Nodes()[0]
	boot := n.Boot()
	o := agent.Options{
		Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, KmsgPoll: 5 * time.Millisecond, BootTime: func() (time.Time, error) { return boot, nil },
		BootID: "e2e", DCGMDisable: true, KubeletSocket: "-", StateDir: t.TempDir(),
		Now:      func() time.Time { return f.Now().Add(time.Duration(s.offset.Load())) },
		Interval: 10 * time.Second, HealthInterval: time.Second,
		RemoteWriteURL: url, QueueDir: t.TempDir(),
	}
	if mod != nil {
		mod(&o)
	}
	a, err := agent.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	t.Cleanup(func() { cancel(); wait(); a.Close() })
	s.a, s.ctx = a, ctx
	return s
}

// collect advances the hardware by d and runs a cycle.
func (s *steppingAgent) collect(t *testing.T, d time.Duration, full bool) *collector.Snapshot {
	t.Helper()
	if err := s.fleet.Advance(d); err != nil {
		t.Fatal(err)
	}
	return s.a.Collect(s.ctx, full)
}

// gpu0Temp is the collection time of GPU 0's temperature in snap.
func gpu0Temp(snap *collector.Snapshot) (int64, bool) {
	for _, x := range snap.Samples {
		if x.Name == telemetry.DCGMGPUTemp && x.Labels.Get(telemetry.LabelGPUIndex) == "0" {
			return x.Time.UnixMilli(), true
		}
	}
	return 0, false
}

// TestAgentClockSteps: the agent's clock steps back 5 minutes, forward 10, and
// back 5 again, while its node carries NVLink CRC errors at three quarters of
// the warning threshold (75 in 10 minutes against 100). It ships to the
// embedded store through the ingest handler. Every sample collected reaches the
// store with the time it was stamped with (the out-of-order window takes those
// from before the step; nothing is rejected, nothing is left queued), and the
// health engine raises nothing: a window measured across a step back does not
// stretch (the CRC rate stays below its threshold), and a step forward does not
// make sources read every full interval look silent.
func TestAgentClockSteps(t *testing.T) {
	es := newEmbeddedServer(t, t.TempDir())
	s := newSteppingAgent(t, es.url(), `
faults:
  - at: 0s
    gpu: 1
    kind: nvlink-crc
    link: 3
    count: 300
    duration: 40m
`, nil)
	var want []int64 // GPU 0's temperature, as collected
	check := func(when string, snap *collector.Snapshot) {
		t.Helper()
		if ts, ok := gpu0Temp(snap); ok && snap.Sources[0].Up {
			if len(want) == 0 || want[len(want)-1] != ts {
				want = append(want, ts)
			}
		}
		rep := s.a.Health.Report()
		conds := slices.Clone(rep.Conditions)
		for _, g := range rep.GPUs {
			conds = append(conds, g.Conditions...)
		}
		if rep.State != telemetry.StateHealthy || len(conds) > 0 {
			t.Fatalf("%s: node %s with conditions %+v", when, rep.State, conds)
		}
	}
	// run does n rounds of two health cycles a second apart (the first after a
	// step sees sources read only in full cycles as they were before it) and a
	// full cycle a minute after the round's start.
	run := func(when string, n int) {
		for range n {
			check(when, s.collect(t, time.Second, false))
			check(when, s.collect(t, time.Second, false))
			check(when, s.collect(t, 58*time.Second, true))
		}
	}
	run("before the steps", 12) // the CRC window fills: 12 minutes
	// Offsets that are not whole seconds, so that no sample lands on the exact
	// millisecond of an earlier one (two values at one time: the store keeps
	// one).
	s.offset.Store(int64(-5*time.Minute - 3500*time.Millisecond))
	run("after stepping back 5 minutes", 6)
	s.offset.Store(int64(5*time.Minute - 3500*time.Millisecond))
	run("after stepping forward 10 minutes", 4)
	s.offset.Store(int64(-1500 * time.Millisecond))
	run("after stepping back 5 minutes again", 4)

	sh := s.a.Shipper
	realstore.Eventually(t, 10*time.Second, "the queue drained", func() bool {
		st := sh.Stats()
		return st.PendingSamples == 0 && st.QueueSamples == 0
	})
	if st := sh.Stats(); st.SendErrors != 0 || len(st.Dropped) > 0 && st.Dropped["rejected"]+st.Dropped["queue_full"]+st.Dropped["corrupt"] != 0 {
		t.Errorf("shipper: %d send errors, dropped %v", st.SendErrors, st.Dropped)
	}
	if n := es.rejected(t); n != 0 {
		t.Errorf("the store rejected %g samples", n)
	}
	got := es.times(t)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		missing, extra := 0, 0
		for _, w := range want {
			if _, ok := slices.BinarySearch(got, w); !ok {
				missing++
			}
		}
		for _, g := range got {
			if _, ok := slices.BinarySearch(want, g); !ok {
				extra++
			}
		}
		t.Errorf("the store holds %d samples of GPU 0's temperature, %d collected: %d missing, %d never collected", len(got), len(want), missing, extra)
	}
}
