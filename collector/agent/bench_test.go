package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
)

// The agent benchmarks run one agent, with its production defaults (10 s full
// interval, 1 s health interval, kernel-log file polled every 250 ms, health state
// saved to a state directory), on one
// simulated HGX H100 node (8 GPUs, 18 NVLinks each, 8 InfiniBand ports) with the
// simulated workload generator filling it with jobs, as `gpuwatch agent --simulate
// hgx-h100` does. They drive Runner.Cycle directly, as the agent's run loop does
// (Agent.Collect also waits for the kernel-log reader, which is wall time, not CPU).
//
// Between cycles the simulated node advances by one second with the timer
// stopped, so the hardware model and its sysfs rewrites are not in the numbers;
// the simulated NVML library's own work inside each NVML call is, and its share
// is measured with a CPU profile (docs/BENCHMARKS.md).
//
// Besides ns/op, B/op and allocs/op each reports:
//   - cpu-ns/op: process CPU time (user+system, getrusage) inside the timed cycle,
//     every goroutine included; on 2 cores the concurrent sources make it exceed
//     ns/op.
//   - series: samples in the published snapshot.
//   - sources-µs/op: the wall time of the slowest source in the cycle (they run
//     concurrently); health-µs/op: the health engine (the deriver). Publishing
//     the snapshot renders nothing: a scrape renders the snapshot it reads, which
//     BenchmarkAgentRender measures (a health cycle's snapshot carries the last
//     full samples too, so both cycles' snapshots render the same series).

type benchAgent struct {
	fleet *simhw.Fleet
	gen   *simhw.WorkloadGenerator
	a     *Agent
	ctx   context.Context
}

func newBenchAgent(b *testing.B) *benchAgent {
	b.Helper()
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm" // as `gpuwatch agent --simulate` does: sysfs rewrites on tmpfs
	}
	root, err := os.MkdirTemp(base, "gpuwatch-agent-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: simhw.ShapeHGXH100, Seed: 1, Root: root})
	if err != nil {
		b.Fatal(err)
	}
	gen := simhw.NewWorkloadGenerator(f, simhw.WorkloadOptions{Seed: 1})
	if err := gen.Step(); err != nil {
		b.Fatal(err)
	}
	if err := f.Advance(0); err != nil {
		b.Fatal(err)
	}
	n := f.Nodes()[0]
	boot := n.Boot()
	ba := &benchAgent{fleet: f, gen: gen}
	a, err := New(Options{
		Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, BootTime: func() (time.Time, error) { return boot, nil }, BootID: "sim-boot",
		StateDir: b.TempDir(), DCGMDisable: true, KubeletSocket: "-", Now: f.Now,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	b.Cleanup(func() {
		cancel()
		wait()
		if err := a.Close(); err != nil {
			b.Errorf("close: %v", err)
		}
	})
	ba.a, ba.ctx = a, ctx
	// Warm up as the run loop starts: a full cycle, then a full interval of health
	// cycles, so every cache and baseline is in place.
	a.Collect(ctx, true)
	for range 10 {
		ba.advance(b)
		a.Runner.Cycle(ctx, false)
	}
	a.Collect(ctx, true)
	return ba
}

func (ba *benchAgent) advance(b *testing.B) {
	if err := ba.fleet.Advance(time.Second); err != nil {
		b.Fatal(err)
	}
	if err := ba.gen.Step(); err != nil {
		b.Fatal(err)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchCycle(b *testing.B, full bool) {
	ba := newBenchAgent(b)
	var cpu, sources, derive time.Duration
	var snap *collector.Snapshot
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		ba.advance(b)
		b.StartTimer()
		c0 := cpuTime()
		snap = ba.a.Runner.Cycle(ba.ctx, full)
		cpu += cpuTime() - c0
		n++
		var slowest time.Duration
		for _, st := range snap.Sources {
			switch st.Name {
			case "health":
				derive += st.Duration
			default:
				slowest = max(slowest, st.Duration)
			}
		}
		sources += slowest
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(cpu), "cpu-ns/op")
	b.ReportMetric(per(sources)/1e3, "sources-µs/op")
	b.ReportMetric(per(derive)/1e3, "health-µs/op")
	b.ReportMetric(float64(len(snap.Samples)), "series")
}

// BenchmarkAgentHealthCycle is one health-interval cycle (every second by default):
// the health-critical fields of every source that has them, the health engine and
// the publication of the snapshot.
func BenchmarkAgentHealthCycle(b *testing.B) { benchCycle(b, false) }

// BenchmarkAgentFullCycle is one full cycle (every 10 s by default): every field
// of every source, the health engine and the publication of the snapshot.
func BenchmarkAgentFullCycle(b *testing.B) { benchCycle(b, true) }

// BenchmarkAgentRender is the exporter's Render alone on the agent's own full
// snapshot: what the first scrape of a snapshot costs on top of encoding it.
func BenchmarkAgentRender(b *testing.B) {
	ba := newBenchAgent(b)
	snap := ba.a.Runner.Snapshot()
	b.ReportAllocs()
	for b.Loop() {
		ba.a.Exporter.Render(snap)
	}
	b.ReportMetric(float64(len(snap.Samples)), "series")
}

// BenchmarkAgentScrape is one GET /metrics on the agent's handler after a full
// cycle, in each exposition format a Prometheus server asks for. The render-time
// goal (under 5 ms) is about this: the first scrape of a snapshot renders it, the
// later ones (as here, after the first iteration) serve that rendering.
func BenchmarkAgentScrape(b *testing.B) {
	ba := newBenchAgent(b)
	h := ba.a.Handler()
	const text = "text/plain;version=0.0.4"
	for _, c := range []struct{ name, accept, encoding string }{
		{"text", text, ""},
		{"openmetrics", "application/openmetrics-text;version=1.0.0", ""},
		{"protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", ""},
		// Prometheus asks for gzip by default (scrape_config enable_compression).
		{"text-gzip", text, "gzip"},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept", c.accept)
			if c.encoding != "" {
				req.Header.Set("Accept-Encoding", c.encoding)
			}
			var size int
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("/metrics: %d", rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
