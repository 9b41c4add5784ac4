package shipper_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/shipper"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// The shipper's benchmarks use one real snapshot of a simulated HGX H100 node
// (8 GPUs, 18 NVLinks each, 8 InfiniBand ports, workload running), rendered by the
// agent's own exporter, as the agent hands them to Enqueue.

type h100 struct {
	snap *collector.Snapshot
	exp  *collector.Exporter
}

func newH100(b *testing.B) *h100 {
	b.Helper()
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: simhw.ShapeHGXH100, Seed: 1, Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	gen := simhw.NewWorkloadGenerator(f, simhw.WorkloadOptions{Seed: 1})
	if err := gen.Step(); err != nil {
		b.Fatal(err)
	}
	if err := f.Advance(time.Second); err != nil {
		b.Fatal(err)
	}
	n := f.Nodes()[0]
	boot := n.Boot()
	a, err := agent.New(agent.Options{
		Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, BootTime: func() (time.Time, error) { return boot, nil }, BootID: "sim-boot",
		DCGMDisable: true, KubeletSocket: "-", Now: f.Now,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	snap := a.Collect(ctx, true)
	cancel()
	wait()
	a.Close()
	return &h100{snap: snap, exp: a.Exporter}
}

// cycle is the snapshot moved i collection intervals later, published: every
// part a new collection.
func (h *h100) cycle(i int) *collector.Exposition {
	d := time.Duration(i) * 10 * time.Second
	s := *h.snap
	s.Time = s.Time.Add(d)
	s.Samples = make([]telemetry.Sample, len(h.snap.Samples))
	for k, x := range h.snap.Samples {
		x.Time = x.Time.Add(d)
		s.Samples[k] = x
	}
	s.Parts = make([]collector.SamplePart, len(h.snap.Parts))
	for k, p := range h.snap.Parts {
		s.Parts[k] = collector.SamplePart{End: p.End, Gen: p.Gen + uint64(i)<<32}
	}
	return h.exp.Publish(&s)
}

// BenchmarkEnqueue is the collection loop's cost of handing a snapshot to the
// shipper.
func BenchmarkEnqueue(b *testing.B) {
	h := newH100(b)
	s, err := shipper.New(shipper.Options{URL: "http://127.0.0.1:1/api/v1/write"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	x := h.cycle(0)
	b.ReportMetric(float64(len(x.Snapshot().Samples)), "samples/snapshot")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Enqueue(x)
	}
}

// BenchmarkEncode is the shipper's background cost per snapshot: dedup,
// conversion to remote-write series, protobuf, snappy, and the append to the
// queue (in memory, or written to a segment file).
func BenchmarkEncode(b *testing.B) {
	for _, disk := range []bool{false, true} {
		name := "memory"
		if disk {
			name = "disk"
		}
		b.Run(name, func(b *testing.B) {
			h := newH100(b)
			o := shipper.Options{URL: "http://127.0.0.1:1/api/v1/write", MaxBytes: 1 << 30, BackoffMin: time.Hour, BackoffMax: time.Hour}
			if disk {
				o.QueueDir = b.TempDir()
			}
			s, err := shipper.New(o)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- s.Run(ctx) }()
			defer func() { cancel(); <-done }()
			i := 0
			for b.Loop() {
				b.StopTimer()
				x := h.cycle(i)
				i++
				b.StartTimer()
				s.Enqueue(x)
				for s.Stats().PendingSamples > 0 {
					time.Sleep(5 * time.Microsecond)
				}
			}
			st := s.Stats()
			b.ReportMetric(float64(st.QueueSamples)/float64(i), "samples/snapshot")
			b.ReportMetric(float64(st.QueueBytes)/float64(i), "queue-bytes/snapshot")
		})
	}
}

// BenchmarkSend drains a backlog of snapshots to a local receiver that decodes
// every request (snappy, protobuf) as a store would before writing.
func BenchmarkSend(b *testing.B) {
	h := newH100(b)
	var up atomic.Bool
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		raw, err := snappy.Decode(nil, body)
		var wr prompb.WriteRequest
		if err == nil {
			err = wr.Unmarshal(raw)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 0
		for _, ts := range wr.Timeseries {
			n += len(ts.Samples)
		}
		received.Add(int64(n))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s, err := shipper.New(shipper.Options{URL: srv.URL + "/api/v1/write", MaxBytes: 1 << 30,
		BackoffMin: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	n := b.N
	for i := range n {
		s.Enqueue(h.cycle(i))
		for s.Stats().PendingSamples > 0 {
			time.Sleep(10 * time.Microsecond)
		}
	}
	want := s.Stats().QueueSamples
	b.ResetTimer()
	start := time.Now()
	up.Store(true)
	for received.Load() < want {
		time.Sleep(50 * time.Microsecond)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(want)/el.Seconds(), "samples/s")
	b.ReportMetric(float64(want)/float64(n), "samples/snapshot")
}
