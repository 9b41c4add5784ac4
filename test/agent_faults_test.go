package test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/gpuwatch/gpuwatch/test/fulldisk"
	"github.com/gpuwatch/gpuwatch/test/syncbuf"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/shipper"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/ingest"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// Fault tests of the agent against the store as the gpuwatch server runs it:
// the embedded TSDB behind the ingest handler (internal/server wires them the
// same way).

// embeddedServer is an embedded store in dir behind the ingest handler, on one
// URL across restarts.
type embeddedServer struct {
	t    *testing.T
	opts embedded.Options
	lim  ingest.Limits
	srv  *httptest.Server
	h    atomic.Pointer[http.Handler]
	st   *embedded.Store
	reg  *prometheus.Registry
	logs *syncBuffer
}

func newEmbeddedServer(t *testing.T, dir string) *embeddedServer {
	return newEmbeddedServerWith(t, embedded.Options{Dir: dir}, ingest.DefaultLimits())
}

func newEmbeddedServerWith(t *testing.T, opts embedded.Options, lim ingest.Limits) *embeddedServer {
	t.Helper()
	es := &embeddedServer{t: t, opts: opts, lim: lim, logs: &syncBuffer{}}
	es.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := es.h.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "the server is restarting", http.StatusServiceUnavailable)
	}))
	es.start()
	t.Cleanup(func() {
		es.srv.Close()
		if es.st != nil {
			es.st.Close()
		}
	})
	return es
}

// start opens the store and serves it, as the server starts.
func (es *embeddedServer) start() {
	es.t.Helper()
	o := es.opts
	o.Logger = slog.New(slog.NewTextHandler(es.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := embedded.Open(o)
	if err != nil {
		es.t.Fatal(err)
	}
	es.st, es.reg = st, prometheus.NewRegistry()
	var h http.Handler = ingest.NewHandler(st, es.lim, ingest.Options{Registerer: es.reg, ActiveSeries: st.ActiveSeries, Logger: o.Logger})
	es.h.Store(&h)
}

// restart closes the store and opens it again on the same directory.
func (es *embeddedServer) restart() {
	es.t.Helper()
	es.h.Store(nil)
	if err := es.st.Close(); err != nil {
		es.t.Logf("close: %v", err)
	}
	es.st = nil
	es.start()
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
		labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, telemetry.DCGMGPUTemp),
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
		BootID: "e2e", DCGM: n.DCGM(), KubeletSocket: "-", StateDir: t.TempDir(),
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

// syncBuffer is a buffer safe for a writer and a reader at once.
type syncBuffer = syncbuf.Buffer

// post sends one remote-write request of n series at at and returns the answer.
func post(t *testing.T, url string, at time.Time, n int) (int, string) {
	t.Helper()
	var wr prompb.WriteRequest
	for i := range n {
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "probe"}, {Name: "i", Value: fmt.Sprint(i)}},
			Samples: []prompb.Sample{{Value: 1, Timestamp: at.UnixMilli()}}})
	}
	raw, err := wr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(snappy.Encode(nil, raw)))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// storeOutage runs an agent shipping to es through an outage that begin starts
// and end ends, and checks what the fault tests of the store want: refused
// requests answer 503 with a message containing why, the agent keeps
// collecting and queueing (nothing dropped, nothing rejected), and once the
// store takes writes again every sample collected, before, during and after the
// outage, is in the store, still there after a restart of the store.
func storeOutage(t *testing.T, es *embeddedServer, why string, begin, end func()) {
	t.Helper()
	var logs syncBuffer
	s := newSteppingAgent(t, es.url(), "", func(o *agent.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	sh := s.a.Shipper
	var want []int64
	cycle := func() {
		t.Helper()
		snap := s.collect(t, 10*time.Second, true)
		if ts, ok := gpu0Temp(snap); ok {
			want = append(want, ts)
		}
		realstore.Eventually(t, 10*time.Second, "the snapshot queued", func() bool { return sh.Stats().PendingSamples == 0 })
	}
	for range 3 {
		cycle()
	}
	realstore.Eventually(t, 10*time.Second, "the first cycles stored", func() bool { return len(es.times(t)) == 3 })

	begin()
	code, msg := post(t, es.url(), s.fleet.Now(), 10)
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, why) {
		t.Errorf("a write to the failed store: %d %q, want 503 saying %q", code, msg, why)
	}
	for range 4 {
		cycle()
	}
	realstore.Eventually(t, 10*time.Second, "the store refused the agent", func() bool { return sh.Stats().SendErrors > 0 })
	if st := sh.Stats(); st.QueueSamples == 0 || len(st.Dropped) > 0 && st.Dropped["rejected"]+st.Dropped["queue_full"] != 0 {
		t.Errorf("during the outage the agent's queue holds %d samples and dropped %v", st.QueueSamples, st.Dropped)
	}
	if !strings.Contains(logs.String(), "503") || !strings.Contains(logs.String(), why) {
		t.Errorf("the agent's log does not say the store answered 503 %q:\n%s", why, logs.String())
	}
	if got := es.times(t); len(got) != 3 {
		t.Errorf("the store holds %d cycles during the outage, want the 3 before it", len(got))
	}

	end()
	for range 2 {
		cycle()
	}
	realstore.Eventually(t, 20*time.Second, "the queue delivered", func() bool {
		st := sh.Stats()
		return st.QueueSamples == 0 && st.PendingSamples == 0
	})
	if got := es.times(t); !slices.Equal(got, want) {
		t.Errorf("after the outage the store holds %d of the %d cycles collected:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	es.restart()
	if got := es.times(t); !slices.Equal(got, want) {
		t.Errorf("after a restart of the store it holds %d of the %d cycles collected:\n got %v\nwant %v\n%s", len(got), len(want), got, want, es.logs.String())
	}
}

// TestStoreFullKeepsAgentQueues: the embedded store's file system fills up
// (a 16 MiB tmpfs; root needed). The store refuses writes while less than
// MinFreeBytes is free, before its WAL meets the full disk; ingest answers 503
// naming the problem; the agent keeps its queue and delivers it by itself once
// space is freed; nothing acknowledged is lost across a restart of the store.
func TestStoreFullKeepsAgentQueues(t *testing.T) {
	mnt := fulldisk.Tmpfs(t, 16<<20)
	es := newEmbeddedServerWith(t, embedded.Options{Dir: filepath.Join(mnt, "data"), MinFreeBytes: 4 << 20}, ingest.DefaultLimits())
	filler := filepath.Join(mnt, "filler")
	storeOutage(t, es, "free, less than the 4.0 MiB kept free",
		func() { fulldisk.Fill(t, filler, 2<<20) },
		func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		})
}

// TestStoreWALWriteFailureKeepsAgentQueues: the WAL's files become read-only
// under the running store (chattr +i on ext4, which fails writes through open
// files with EPERM, as a file system remounted read-only after errors fails them
// with EROFS; root needed). The failed commit makes the store refuse every
// write, even after the files are writable again, until it is restarted:
// Prometheus's WAL, torn by the failed write, would drop at its repair whatever
// was acknowledged after the tear. Ingest answers 503 naming the problem, the
// agent keeps its queue, and after the restart everything arrives, nothing
// acknowledged lost.
func TestStoreWALWriteFailureKeepsAgentQueues(t *testing.T) {
	dir := t.TempDir()
	requireImmutableBlocksWrites(t, dir)
	data := filepath.Join(dir, "data")
	es := newEmbeddedServerWith(t, embedded.Options{Dir: data}, ingest.DefaultLimits())
	chattr := func(flag string) {
		t.Helper()
		if out, err := exec.Command("chattr", "-R", flag, data).CombinedOutput(); err != nil {
			t.Fatalf("chattr %s: %v: %s", flag, err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-R", "-i", data).Run() })
	storeOutage(t, es, "writes are refused until the server is restarted",
		func() {
			chattr("+i")
			// The first write meets the read-only WAL.
			code, msg := post(t, es.url(), time.Now().Add(-time.Hour), 2000)
			if code != http.StatusServiceUnavailable || !strings.Contains(msg, "operation not permitted") {
				t.Errorf("the write that met the read-only WAL: %d %q", code, msg)
			}
			chattr("-i") // writable again, but the WAL may be torn: still refused
		},
		es.restart)
}

// requireImmutableBlocksWrites skips the test unless chattr +i works in dir and
// fails writes through a file already open (ext4, xfs; not tmpfs).
func requireImmutableBlocksWrites(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "probe")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
		t.Skipf("chattr +i not available here (%v: %s); run as root on ext4 or xfs", err, bytes.TrimSpace(out))
	}
	defer exec.Command("chattr", "-i", p).Run()
	if _, err := f.Write([]byte("x")); err == nil {
		t.Skip("this file system lets an open file be written after chattr +i")
	}
}

// TestStoreActiveSeriesLimitKeepsAgentQueues: the store's active-series cap is
// below what one agent sends. Ingest answers 429 with Retry-After naming the
// limit, the agent's queue keeps everything, and once the cap is raised (the
// server restarted with a higher --limits.active-series) it is all delivered.
func TestStoreActiveSeriesLimitKeepsAgentQueues(t *testing.T) {
	lim := ingest.DefaultLimits()
	lim.MaxActiveSeries = 100
	es := newEmbeddedServerWith(t, embedded.Options{Dir: t.TempDir()}, lim)
	s := newSteppingAgent(t, "", "", nil)
	// The agent's own shipper, with a back-off short enough for a test (the
	// agent's waits up to 10 s; Retry-After: 60 is capped to that).
	sh, err := shipper.New(shipper.Options{URL: es.url(), QueueDir: t.TempDir(), BackoffMin: time.Millisecond, BackoffMax: 50 * time.Millisecond,
		ExtraLabels: telemetry.NewLabels(telemetry.LabelNode, "node-01")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sh.Run(ctx) }()
	defer func() { cancel(); <-done }()

	code, msg := post(t, es.url(), s.fleet.Now(), 200)
	if code != http.StatusTooManyRequests || !strings.Contains(msg, "max_active_series exceeded") {
		t.Errorf("200 new series under a cap of 100: %d %q", code, msg)
	}
	var want []int64
	for range 3 {
		snap := s.collect(t, 10*time.Second, true)
		if ts, ok := gpu0Temp(snap); ok {
			want = append(want, ts)
		}
		sh.Enqueue(s.a.Exporter.Publish(snap))
	}
	realstore.Eventually(t, 10*time.Second, "the store refused the agent", func() bool {
		st := sh.Stats()
		return st.SendErrors >= 3 && st.PendingSamples == 0
	})
	if st := sh.Stats(); st.QueueSamples == 0 || st.SamplesSent != 0 || st.Dropped["rejected"] != 0 {
		t.Errorf("refused by the cap, the agent's queue: %+v", st)
	}
	es.lim.MaxActiveSeries = 100_000
	es.restart()
	realstore.Eventually(t, 10*time.Second, "the queue delivered", func() bool { return sh.Stats().QueueSamples == 0 })
	if got := es.times(t); !slices.Equal(got, want) {
		t.Errorf("after the cap was raised the store holds %v, want %v", got, want)
	}
}
