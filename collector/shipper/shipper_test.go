package shipper

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// enqueued remembers what was handed to a shipper, to count what must arrive,
// and what /metrics shows for it.
type enqueued struct {
	xs   []*collector.Exposition
	fams [][]*dto.MetricFamily
}

func (e *enqueued) add(s *Shipper, f *fixture, sn *collector.Snapshot) {
	x := f.publish(sn)
	e.xs = append(e.xs, x)
	e.fams = append(e.fams, x.Families())
	s.Enqueue(x)
}

// samples is how many samples a fresh encoder makes of everything enqueued.
func (e *enqueued) samples(from int) int {
	enc := newEncoder(telemetry.NewLabels(telemetry.LabelNode, testNode), DefaultBatchSamples, 0)
	n := 0
	for i := range e.xs {
		enc.encode(e.xs[i], func(_ []byte, k int) {
			if i >= from {
				n += k
			}
		})
	}
	return n
}

func TestShipsRenderedSeriesWithCollectionTimes(t *testing.T) {
	for _, mode := range []collector.LabelMode{collector.LabelsDCGM, collector.LabelsSnake} {
		t.Run(string(mode), func(t *testing.T) {
			r := newReceiver(t)
			s, err := New(fastOpts(r.url()))
			if err != nil {
				t.Fatal(err)
			}
			run(t, s)
			f := newFixture(mode, false)
			var e enqueued
			// Two full cycles, each followed by three health cycles whose snapshots
			// carry the full samples again, unchanged: those are sent once.
			for c := range 2 {
				for h := range 4 {
					e.add(s, f, f.snap(c, time.Duration(h)*time.Second))
				}
			}
			want := e.samples(0)
			waitFor(t, "every sample", func() bool { return s.Stats().SamplesSent >= uint64(want) })
			checkExactlyOnceInOrder(t, r.received(telemetry.DCGMGPUTemp), 0, 2)
			if n := len(r.received(telemetry.DCGMPowerUsage)); n != 2*4*gpuSeriesPerCycle {
				t.Errorf("%d power samples, want one per GPU per health cycle: %d", n, 2*4*gpuSeriesPerCycle)
			}
			if n := len(r.all()); n != want {
				t.Errorf("received %d samples, want %d", n, want)
			}

			// The shipped labels are the rendered ones, plus __name__, plus node
			// where the series had none (node_exporter's InfiniBand series).
			wantSeries := map[string]bool{}
			for _, mf := range e.fams[len(e.fams)-1] {
				for _, m := range mf.Metric {
					ls := []prompb.Label{{Name: "__name__", Value: mf.GetName()}}
					hasNode := false
					for _, p := range m.Label {
						ls = append(ls, prompb.Label{Name: p.GetName(), Value: p.GetValue()})
						hasNode = hasNode || p.GetName() == telemetry.LabelNode
					}
					if !hasNode {
						ls = append(ls, prompb.Label{Name: telemetry.LabelNode, Value: testNode})
					}
					slices.SortFunc(ls, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
					wantSeries[seriesString(ls)] = true
				}
			}
			r.mu.Lock()
			for k := range r.series {
				if !wantSeries[k] {
					t.Errorf("shipped series %s is not what /metrics shows", k)
				}
			}
			if len(r.series) != len(wantSeries) {
				t.Errorf("%d series shipped, /metrics has %d", len(r.series), len(wantSeries))
			}
			var gpu0 string
			for k := range r.series {
				if strings.Contains(k, telemetry.DCGMGPUTemp) && (strings.Contains(k, `gpu="0"`) || strings.Contains(k, `gpu_index="0"`)) {
					gpu0 = k
				}
			}
			ua := r.headers.Get("User-Agent")
			errs := r.checkErr
			r.mu.Unlock()
			wantGPU0 := map[collector.LabelMode]string{
				collector.LabelsDCGM:  `{DCGM_FI_DRIVER_VERSION="570.133.20",UUID="GPU-00000000-0000-0000-0000-000000000000",__name__="DCGM_FI_DEV_GPU_TEMP",device="nvidia0",gpu="0",hostname="node-01",modelName="NVIDIA H100 80GB HBM3",node="node-01",pci_bus_id="00000000:18:00.0"}`,
				collector.LabelsSnake: `{__name__="DCGM_FI_DEV_GPU_TEMP",driver_version="570.133.20",gpu_index="0",gpu_uuid="GPU-00000000-0000-0000-0000-000000000000",model="NVIDIA H100 80GB HBM3",node="node-01",pci_bus_id="0000:18:00.0"}`,
			}[mode]
			if gpu0 != wantGPU0 {
				t.Errorf("GPU 0's temperature shipped as\n%s\nwant\n%s", gpu0, wantGPU0)
			}
			if !strings.HasPrefix(ua, "gpuwatch/") {
				t.Errorf("User-Agent %q", ua)
			}
			for _, e := range errs {
				t.Error(e)
			}
			st := s.Stats()
			if st.SamplesSent != uint64(want) || st.QueueSamples != 0 || st.QueueBytes != 0 || st.SendErrors != 0 || st.LastSend.IsZero() {
				t.Errorf("stats %+v after delivering %d samples", st, want)
			}
		})
	}
}

// TestTimestampsMatchTheExporter checks the timestamps the encoder ships against
// the exporter rendering the timestamps itself.
func TestTimestampsMatchTheExporter(t *testing.T) {
	plain, stamped := newFixture(collector.LabelsDCGM, false), newFixture(collector.LabelsDCGM, true)
	decode := func(x *collector.Exposition) map[string]int64 {
		out := map[string]int64{}
		newEncoder(nil, 1<<20, 0).encode(x, func(data []byte, _ int) {
			raw, err := snappy.Decode(nil, data)
			if err != nil {
				t.Fatal(err)
			}
			var wr prompb.WriteRequest
			if err := wr.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
			for _, ts := range wr.Timeseries {
				out[seriesString(ts.Labels)] = ts.Samples[0].Timestamp
			}
		})
		return out
	}
	sn := plain.snap(3, 7*time.Second)
	// Interleave names so the per-name order matters.
	slices.Reverse(sn.Samples)
	a, b := decode(plain.publish(sn)), decode(stamped.publish(sn))
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d series vs %d", len(a), len(b))
	}
	for k, ts := range b {
		if a[k] != ts {
			t.Errorf("%s: shipped at %d, the exporter stamps %d", k, a[k], ts)
		}
	}
}

func TestOutageDeliversEverySampleOnceInOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		disk bool
		down string // "503" or "closed"
	}{{"memory/503", false, "503"}, {"disk/503", true, "503"}, {"disk/closed", true, "closed"}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t)
			url := r.url()
			var ln net.Listener
			if tc.down == "closed" {
				// The store's port answers nothing: listen, note the address, close.
				var err error
				ln, err = net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				url = "http://" + ln.Addr().String() + "/api/v1/write"
				ln.Close()
			} else {
				r.setStatus(http.StatusServiceUnavailable)
			}
			opts := fastOpts(url)
			dir := ""
			if tc.disk {
				dir = t.TempDir()
				opts.QueueDir = dir
			}
			s, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			run(t, s)
			f := newFixture(collector.LabelsDCGM, false)
			var e enqueued
			const cycles = 30
			for c := range cycles {
				e.add(s, f, f.snap(c, 0))
			}
			want := e.samples(0)
			waitFor(t, "the outage's samples queued and retried", func() bool {
				st := s.Stats()
				return st.PendingSamples == 0 && st.QueueSamples == int64(want) && st.SendErrors >= 3
			})
			if n := len(r.all()); n != 0 {
				t.Fatalf("%d samples accepted during the outage", n)
			}
			// The store comes back.
			if tc.down == "closed" {
				ln2, err := net.Listen("tcp", ln.Addr().String())
				if err != nil {
					t.Skipf("cannot listen on %s again: %v", ln.Addr(), err)
				}
				srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
				srv.Listener.Close()
				srv.Listener = ln2
				srv.Start()
				t.Cleanup(srv.Close)
			} else {
				r.setStatus(0)
			}
			waitFor(t, "the backlog delivered", func() bool { return len(r.all()) >= want })
			checkExactlyOnceInOrder(t, r.received(telemetry.DCGMGPUTemp), 0, cycles)
			waitFor(t, "the queue drained", func() bool { return s.Stats().QueueSamples == 0 })
			st := s.Stats()
			if st.SamplesSent != uint64(want) || len(r.all()) != want || st.QueueBytes != 0 {
				t.Errorf("sent %d, received %d, want %d; stats %+v", st.SamplesSent, len(r.all()), want, st)
			}
			for reason, n := range st.Dropped {
				if n != 0 {
					t.Errorf("%d samples dropped (%s)", n, reason)
				}
			}
			if tc.disk {
				segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
				if len(segs) > 1 {
					t.Errorf("sent segments left on disk: %v", segs)
				}
			}
		})
	}
}

func TestRestartSendsTheBacklog(t *testing.T) {
	r := newReceiver(t)
	dir := t.TempDir()
	opts := fastOpts(r.url())
	opts.QueueDir = dir
	opts.SegmentBytes = 4 << 10 // several segments
	s1, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	stop1 := run(t, s1)
	f := newFixture(collector.LabelsDCGM, false)
	var e enqueued
	for c := range 5 {
		e.add(s1, f, f.snap(c, 0))
	}
	waitFor(t, "cycles 0-4 delivered", func() bool { return len(r.received(telemetry.DCGMGPUTemp)) == 5*gpuSeriesPerCycle })
	r.setStatus(http.StatusServiceUnavailable)
	for c := 5; c < 25; c++ {
		e.add(s1, f, f.snap(c, 0))
	}
	backlog := e.samples(5)
	waitFor(t, "cycles 5-24 queued", func() bool {
		st := s1.Stats()
		return st.PendingSamples == 0 && st.QueueSamples == int64(backlog)
	})
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second shipper on a directory in use: %v", err)
	}
	stop1() // the agent stops mid-outage
	// A request s1 abandoned may still be in the receiver's hands, answered with
	// the 503 it was sent under.
	waitFor(t, "abandoned requests answered", func() bool { return r.inflight.Load() == 0 })

	r.setStatus(0)
	s2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if st := s2.Stats(); st.QueueSamples != int64(backlog) {
		t.Fatalf("restarted queue holds %d samples, want the %d unsent", st.QueueSamples, backlog)
	}
	run(t, s2)
	for c := 25; c < 30; c++ {
		e.add(s2, f, f.snap(c, 0))
	}
	waitFor(t, "everything delivered", func() bool { return len(r.received(telemetry.DCGMGPUTemp)) >= 30*gpuSeriesPerCycle })
	checkExactlyOnceInOrder(t, r.received(telemetry.DCGMGPUTemp), 0, 30)
	waitFor(t, "the queue drained", func() bool { return s2.Stats().QueueSamples == 0 })
	if got, want := s2.Stats().SamplesSent, uint64(e.samples(5)); got != want {
		t.Errorf("the new shipper sent %d samples, want the backlog and its own: %d", got, want)
	}
}

func TestFullQueueDropsOldestAndNeverBlocks(t *testing.T) {
	for _, disk := range []bool{false, true} {
		t.Run(fmt.Sprint("disk=", disk), func(t *testing.T) {
			r := newReceiver(t)
			r.block = make(chan struct{}) // the store never answers
			opts := fastOpts(r.url())
			opts.MaxBytes = 8 << 10
			opts.Timeout = time.Minute
			opts.BatchSamples = 30 // one snapshot per record and request
			if disk {
				opts.QueueDir = t.TempDir()
			}
			s, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			run(t, s)
			f := newFixture(collector.LabelsDCGM, false)
			var e enqueued
			const cycles = 200
			var slowest time.Duration
			for c := range cycles {
				x := f.publish(f.snap(c, 0))
				e.xs, e.fams = append(e.xs, x), append(e.fams, x.Families())
				start := time.Now()
				s.Enqueue(x)
				slowest = max(slowest, time.Since(start))
				if c%16 == 15 {
					// Pace the cycles as the run loop does (one a second), so the
					// encoder's short list never overflows and the accounting below
					// is exact; TestPendingSnapshotsAreBounded covers the overflow.
					waitFor(t, "the encoder", func() bool { return s.Stats().PendingSamples == 0 })
				}
			}
			if slowest > 50*time.Millisecond {
				t.Errorf("Enqueue took %s with the store hanging", slowest)
			}
			want := e.samples(0)
			waitFor(t, "the encoder to catch up", func() bool { return s.Stats().PendingSamples == 0 })
			st := s.Stats()
			if st.Dropped[reasonQueueFull] == 0 || st.QueueBytes > opts.MaxBytes {
				t.Fatalf("queue of %d bytes (bound %d), %d dropped", st.QueueBytes, opts.MaxBytes, st.Dropped[reasonQueueFull])
			}
			if got := int64(st.Dropped[reasonQueueFull]) + st.QueueSamples; got != int64(want) {
				t.Errorf("dropped %d + queued %d = %d, want every sample accounted for: %d", st.Dropped[reasonQueueFull], st.QueueSamples, got, want)
			}
			// The store answers again: the hanging request fails, the rest flows.
			r.mu.Lock()
			r.status = http.StatusServiceUnavailable
			close(r.block)
			r.block = nil
			r.mu.Unlock()
			waitFor(t, "the hanging request answered", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.bodies >= 1 })
			r.setStatus(0)
			waitFor(t, "the queue drained", func() bool {
				st := s.Stats()
				return st.SamplesSent+st.Dropped[reasonQueueFull] >= uint64(want)
			})
			st = s.Stats()
			if got := st.SamplesSent + st.Dropped[reasonQueueFull]; got != uint64(want) || uint64(len(r.all())) != st.SamplesSent {
				t.Errorf("sent %d + dropped %d != enqueued %d, or received %d", st.SamplesSent, st.Dropped[reasonQueueFull], want, len(r.all()))
			}
			temps := r.received(telemetry.DCGMGPUTemp)
			if len(temps) == 0 {
				t.Fatal("nothing delivered after the queue filled")
			}
			first := int(time.UnixMilli(temps[0].ts).Sub(t0) / (10 * time.Second))
			if first == 0 {
				t.Error("the oldest cycle survived a full queue")
			}
			checkExactlyOnceInOrder(t, temps, first, cycles) // the newest are kept, in order
		})
	}
}

func TestPendingSnapshotsAreBounded(t *testing.T) {
	s, err := New(fastOpts("http://127.0.0.1:1/api/v1/write"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := newFixture(collector.LabelsDCGM, false)
	// No Run: nothing drains the list, as when the encoder hangs on a disk.
	for c := range 3 * pendingSnapshots {
		sn := f.snap(c, 0)
		s.Enqueue(f.publish(sn))
	}
	st := s.Stats()
	perSnap := 0
	for _, mf := range f.render(f.snap(0, 0)) {
		perSnap += len(mf.Metric)
	}
	if st.PendingSamples != pendingSnapshots*perSnap || st.Dropped[reasonQueueFull] != uint64(2*pendingSnapshots*perSnap) {
		t.Errorf("pending %d samples, dropped %d; want %d and %d", st.PendingSamples, st.Dropped[reasonQueueFull], pendingSnapshots*perSnap, 2*pendingSnapshots*perSnap)
	}
}

func TestPoisonBatchIsDroppedAndLaterBatchesFlow(t *testing.T) {
	r := newReceiver(t)
	poison := t0.Add(20 * time.Second).UnixMilli() // cycle 2
	r.decide = func(wr *prompb.WriteRequest) int {
		for _, ts := range wr.Timeseries {
			for _, s := range ts.Samples {
				if s.Timestamp == poison {
					return http.StatusBadRequest
				}
			}
		}
		return 0
	}
	opts := fastOpts(r.url())
	opts.BatchSamples = 30 // one snapshot per request
	var logs logBuffer
	opts.Logger = logs.logger()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	f := newFixture(collector.LabelsDCGM, false)
	var e enqueued
	for c := range 6 {
		e.add(s, f, f.snap(c, 0))
	}
	want := e.samples(0)
	waitFor(t, "every request answered", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.samples)+r.rejected >= want
	})
	waitFor(t, "the queue drained", func() bool { return s.Stats().QueueSamples == 0 })
	st := s.Stats()
	r.mu.Lock()
	rejected := r.rejected
	r.mu.Unlock()
	if rejected == 0 || st.Dropped[reasonRejected] != uint64(rejected) || st.SamplesSent != uint64(want-rejected) {
		t.Errorf("rejected %d by the store; stats %+v", rejected, st)
	}
	var cycles []int
	for _, g := range r.received(telemetry.DCGMGPUTemp) {
		if c := int(time.UnixMilli(g.ts).Sub(t0) / (10 * time.Second)); !slices.Contains(cycles, c) {
			cycles = append(cycles, c)
		}
	}
	if !slices.Equal(cycles, []int{0, 1, 3, 4, 5}) {
		t.Errorf("cycles delivered %v, want all but the poisoned 2", cycles)
	}
	if !strings.Contains(logs.String(), "rejected") || !strings.Contains(logs.String(), "400") {
		t.Errorf("the rejection is not logged:\n%s", logs.String())
	}
}

// frames reads a segment file's frames: each payload's temperature samples.
func frames(t *testing.T, path string) (temps [][]got, offsets []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off+frameHeader <= len(b); {
		size := int(binary.LittleEndian.Uint32(b[off+4:]))
		raw, err := snappy.Decode(nil, b[off+frameHeader:off+frameHeader+size])
		if err != nil {
			t.Fatal(err)
		}
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		var gs []got
		for _, ts := range wr.Timeseries {
			if ts.Labels[len(ts.Labels)-1].Name != "" && strings.Contains(seriesString(ts.Labels), telemetry.DCGMGPUTemp) {
				gs = append(gs, got{series: seriesString(ts.Labels), ts: ts.Samples[0].Timestamp, value: ts.Samples[0].Value})
			}
		}
		temps = append(temps, gs)
		offsets = append(offsets, int64(off))
		off += frameHeader + size
	}
	return temps, offsets
}

func TestCorruptSegmentIsReportedSkippedAndTheRestSent(t *testing.T) {
	r := newReceiver(t)
	r.setStatus(http.StatusServiceUnavailable)
	dir := t.TempDir()
	opts := fastOpts(r.url())
	opts.QueueDir = dir
	opts.SegmentBytes = 2 << 10
	s1, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	stop1 := run(t, s1)
	f := newFixture(collector.LabelsDCGM, false)
	var e enqueued
	const cycles = 12
	for c := range cycles {
		e.add(s1, f, f.snap(c, 0))
	}
	waitFor(t, "the outage queued", func() bool {
		st := s1.Stats()
		return st.PendingSamples == 0 && st.QueueSamples == int64(e.samples(0))
	})
	stop1()

	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	slices.Sort(segs)
	if len(segs) < 3 {
		t.Fatalf("want at least 3 segments to corrupt one, have %v", segs)
	}
	lost := map[string]bool{}
	// Segment 1: a flipped payload byte in its first frame loses the segment.
	temps, offs := frames(t, segs[1])
	for _, fr := range temps {
		for _, g := range fr {
			lost[fmt.Sprint(g.series, g.ts)] = true
		}
	}
	b, _ := os.ReadFile(segs[1])
	b[offs[0]+frameHeader+5] ^= 0x55
	if err := os.WriteFile(segs[1], b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The last segment: a torn tail loses its last frame only.
	last := segs[len(segs)-1]
	temps, _ = frames(t, last)
	for _, g := range temps[len(temps)-1] {
		lost[fmt.Sprint(g.series, g.ts)] = true
	}
	st, _ := os.Stat(last)
	if err := os.Truncate(last, st.Size()-3); err != nil {
		t.Fatal(err)
	}
	// Junk beside the segments.
	os.WriteFile(filepath.Join(dir, "notes.seg"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "00000000000000009999.seg"), []byte("garbage, not frames"), 0o644)

	var logs logBuffer
	opts.Logger = logs.logger()
	r.setStatus(0)
	s2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"corrupt segment", filepath.Base(segs[1]), "checksum mismatch", filepath.Base(last), "runs past the end"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if s2.Stats().Dropped[reasonCorrupt] == 0 {
		t.Error("corrupt samples not counted")
	}
	run(t, s2)
	wantTemps := cycles*gpuSeriesPerCycle - len(lost)
	waitFor(t, "the good segments delivered", func() bool { return s2.Stats().QueueSamples == 0 })
	gs := r.received(telemetry.DCGMGPUTemp)
	if len(gs) != wantTemps || len(lost) == 0 {
		t.Errorf("received %d temperature samples, want %d (%d lost with the corrupt frames)", len(gs), wantTemps, len(lost))
	}
	seen := map[string]bool{}
	for _, g := range gs {
		k := fmt.Sprint(g.series, g.ts)
		if lost[k] || seen[k] {
			t.Errorf("%s: received from a corrupt frame, or twice", k)
		}
		seen[k] = true
	}
}

func TestSelfMetricsAreCatalogued(t *testing.T) {
	r := newReceiver(t)
	s, err := New(fastOpts(r.url()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.drop(reasonRejected, 7)
	var samples []telemetry.Sample
	if err := s.Collect(t.Context(), func(x telemetry.Sample) { samples = append(samples, x) }); err != nil {
		t.Fatal(err)
	}
	exp := collector.NewExporter(collector.ExporterOptions{Node: testNode})
	fams := exp.Render(&collector.Snapshot{Time: t0, Samples: samples})
	if u := exp.Unknown(); len(u) > 0 {
		t.Errorf("not in the catalog: %v", u)
	}
	names := map[string]bool{}
	for _, mf := range fams {
		names[mf.GetName()] = true
		if d, ok := telemetry.LookupMetric(mf.GetName()); ok && d.Source != telemetry.SourceSelf && strings.HasPrefix(d.Name, "gpuwatch_shipper_") {
			t.Errorf("%s: source %s", d.Name, d.Source)
		}
	}
	for _, n := range []string{telemetry.MetricShipperSamplesSentTotal, telemetry.MetricShipperSamplesDroppedTotal,
		telemetry.MetricShipperQueueBytes, telemetry.MetricShipperQueueSamples, telemetry.MetricShipperSendErrorsTotal} {
		if !names[n] {
			t.Errorf("%s not emitted", n)
		}
	}
	found := false
	for _, x := range samples {
		if x.Name == telemetry.MetricShipperSamplesDroppedTotal && x.Labels.Get(telemetry.LabelReason) == reasonRejected && x.Value == 7 {
			found = true
		}
	}
	if !found {
		t.Error("dropped{reason=rejected} does not say 7")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		o   Options
		msg string
	}{
		{Options{URL: ""}, `remote-write URL ""`},
		{Options{URL: "ftp://store/api/v1/write"}, "want http(s)://"},
		{Options{URL: "http://%zz"}, `remote-write URL "http://%zz"`},
		{Options{URL: "http://store", MaxBytes: -1}, "queue bound -1"},
		{Options{URL: "http://store", BackoffMin: time.Second, BackoffMax: time.Millisecond}, "min ≤ max"},
		{Options{URL: "http://store", ExtraLabels: telemetry.Labels{{Name: "bad-name", Value: "x"}}}, `extra label "bad-name"`},
		{Options{URL: "http://store", QueueDir: "/proc/no/such/dir"}, "/proc/no/such/dir"},
	} {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.msg)
		}
	}
}
