package shipper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

const testNode = "node-01"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testInventory() *collector.Inventory {
	inv := &collector.Inventory{Node: testNode, DriverVersion: "570.133.20"}
	for i := range 8 {
		pci, err := telemetry.ParsePCIBusID(fmt.Sprintf("0000:%02x:00.0", 0x18+i))
		if err != nil {
			panic(err)
		}
		inv.GPUs = append(inv.GPUs, collector.GPUInfo{Index: i, UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i),
			PCIBusID: pci, Minor: i, Model: "NVIDIA H100 80GB HBM3"})
	}
	return inv
}

// fixture builds snapshots the way the agent does and renders them with a real
// exporter.
type fixture struct {
	inv *collector.Inventory
	exp *collector.Exporter
}

func newFixture(labels collector.LabelMode, timestamps bool) *fixture {
	return &fixture{inv: testInventory(), exp: collector.NewExporter(collector.ExporterOptions{Node: testNode, Labels: labels, Timestamps: timestamps, Version: "test"})}
}

// gpuSeriesPerCycle is how many temperature samples (one per GPU) a cycle has.
const gpuSeriesPerCycle = 8

// snap is cycle c: full samples collected at t0+10s*c, health samples (power) at
// t0+10s*c+hsub, the snapshot published 5 ms after.
func (f *fixture) snap(c int, hsub time.Duration) *collector.Snapshot {
	full := t0.Add(time.Duration(c) * 10 * time.Second)
	health := full.Add(hsub)
	s := &collector.Snapshot{Time: health.Add(5 * time.Millisecond), Inventory: f.inv}
	for i := range gpuSeriesPerCycle {
		s.Samples = append(s.Samples,
			telemetry.Sample{Name: telemetry.DCGMGPUTemp, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, fmt.Sprint(i)), Value: float64(c*100 + i), Time: full},
			telemetry.Sample{Name: telemetry.DCGMPowerUsage, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, fmt.Sprint(i)), Value: float64(300 + i), Time: health})
	}
	for p := range 2 {
		s.Samples = append(s.Samples, telemetry.Sample{Name: telemetry.NodeIBPortDataReceivedBytesTotal,
			Labels: telemetry.NewLabels("device", "mlx5_0", "port", fmt.Sprint(p+1)), Value: float64(c * 1000), Time: full})
	}
	s.Sources = []collector.SourceStatus{{Name: "nvml", Up: true, LastSuccess: full}}
	return s
}

func (f *fixture) render(s *collector.Snapshot) []*dto.MetricFamily { return f.exp.Render(s) }

func (f *fixture) publish(s *collector.Snapshot) *collector.Exposition { return f.exp.Publish(s) }

// got is one received sample.
type got struct {
	series string // labels, sorted, as {a="b",...}
	ts     int64
	value  float64
}

// receiver is a remote-write endpoint that decodes what it is sent.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	status   int                            // answer; 0 means 204
	decide   func(*prompb.WriteRequest) int // when set, chooses the answer
	block    chan struct{}                  // when set, requests wait on it
	samples  []got                          // accepted, in arrival order
	rejected int                            // samples answered 4xx/5xx
	headers  http.Header                    // of the last request
	bodies   int                            // requests seen
	series   map[string][]prompb.Label      // labels by series string
	checkErr []string                       // protocol violations
	inflight atomic.Int32                   // requests being handled
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, series: map[string][]prompb.Label{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.mu.Lock()
		if r.block != nil {
			close(r.block)
			r.block = nil
		}
		r.mu.Unlock()
		r.srv.Close()
	})
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/api/v1/write" }

func (r *receiver) setStatus(code int) {
	r.mu.Lock()
	r.status = code
	r.mu.Unlock()
}

func seriesString(ls []prompb.Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	r.mu.Lock()
	block := r.block
	r.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-req.Context().Done():
			return
		}
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		http.Error(w, "snappy: "+err.Error(), http.StatusBadRequest)
		return
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		http.Error(w, "protobuf: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies++
	r.headers = req.Header.Clone()
	for _, h := range [][2]string{{"Content-Encoding", "snappy"}, {"Content-Type", "application/x-protobuf"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}} {
		if req.Header.Get(h[0]) != h[1] {
			r.checkErr = append(r.checkErr, fmt.Sprintf("header %s = %q, want %q", h[0], req.Header.Get(h[0]), h[1]))
		}
	}
	n := 0
	for _, ts := range wr.Timeseries {
		n += len(ts.Samples)
		if !slices.IsSortedFunc(ts.Labels, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) }) {
			r.checkErr = append(r.checkErr, "unsorted labels "+seriesString(ts.Labels))
		}
	}
	code := r.status
	if r.decide != nil {
		code = r.decide(&wr)
	}
	if code == 0 {
		code = http.StatusNoContent
	}
	if code/100 != 2 {
		r.rejected += n
		http.Error(w, "test receiver says no", code)
		return
	}
	for _, ts := range wr.Timeseries {
		key := seriesString(ts.Labels)
		r.series[key] = slices.Clone(ts.Labels)
		for _, s := range ts.Samples {
			r.samples = append(r.samples, got{series: key, ts: s.Timestamp, value: s.Value})
		}
	}
	w.WriteHeader(code)
}

// received returns the accepted samples of metric name, in arrival order.
func (r *receiver) received(name string) []got {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []got
	for _, g := range r.samples {
		if strings.HasPrefix(g.series, `{__name__="`+name+`"`) || strings.Contains(g.series, `__name__="`+name+`"`) {
			out = append(out, g)
		}
	}
	return out
}

func (r *receiver) all() []got {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.samples)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// run starts s.Run and returns a function that stops it and waits.
func run(t *testing.T, s *Shipper) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// fastOpts are options for tests: quick retries.
func fastOpts(url string) Options {
	return Options{URL: url, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond, Timeout: 5 * time.Second,
		ExtraLabels: telemetry.NewLabels(telemetry.LabelNode, testNode)}
}

// logBuffer collects log output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// checkExactlyOnceInOrder checks that the received temperature samples are cycles
// [from, to) of every GPU, each exactly once, each series in time order, with the
// original timestamps and values.
func checkExactlyOnceInOrder(t *testing.T, gs []got, from, to int) {
	t.Helper()
	want := (to - from) * gpuSeriesPerCycle
	if len(gs) != want {
		t.Errorf("received %d temperature samples, want %d (cycles %d..%d × %d GPUs)", len(gs), want, from, to-1, gpuSeriesPerCycle)
	}
	seen := map[string]bool{}
	last := map[string]int64{}
	errs := 0
	for _, g := range gs {
		if t.Failed() {
			if errs++; errs > 5 {
				t.Error("…")
				return
			}
		}
		k := fmt.Sprint(g.series, g.ts)
		if seen[k] {
			t.Errorf("sample %s @%d received twice", g.series, g.ts)
		}
		seen[k] = true
		if g.ts <= last[g.series] {
			t.Errorf("series %s went back in time: %d after %d", g.series, g.ts, last[g.series])
		}
		last[g.series] = g.ts
		c := int(time.UnixMilli(g.ts).Sub(t0) / (10 * time.Second))
		if !time.UnixMilli(g.ts).Equal(t0.Add(time.Duration(c)*10*time.Second)) || c < from || c >= to {
			t.Errorf("sample at %s is not the collection time of a cycle in %d..%d", time.UnixMilli(g.ts).UTC(), from, to-1)
			continue
		}
		if int(g.value)/100 != c {
			t.Errorf("sample of cycle %d carries value %g, collected in cycle %d", c, g.value, int(g.value)/100)
		}
	}
}
