package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// BenchmarkAppend appends one H100 node's collection cycle (1,500 samples) per
// operation, cycling over 100 nodes whose series already exist: the steady state of
// a fleet shipping every 10 s. samples/s is the figure to compare.
func BenchmarkAppend(b *testing.B) {
	const nodes = 100
	s := embeddedtest.Open(b, embedded.Options{})
	ctx := context.Background()
	cycles := make([][]telemetry.Sample, nodes)
	for n := range cycles {
		cycles[n] = embeddedtest.NodeCycle(n, base)
		if err := s.Append(ctx, cycles[n]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		n := i % nodes
		at := base.Add(time.Duration(i/nodes+1) * 10 * time.Second)
		c := cycles[n]
		for k := range c {
			c[k].Time = at
			c[k].Value = float64(i + k)
		}
		if err := s.Append(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*embeddedtest.NodeSeries)/time.Since(start).Seconds(), "samples/s")
}

// BenchmarkAppendNewSeries is BenchmarkAppend where every cycle comes from a node
// never seen before: the cost of creating series (a fleet starting up).
func BenchmarkAppendNewSeries(b *testing.B) {
	s := embeddedtest.Open(b, embedded.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := embeddedtest.NodeCycle(i, base)
		b.StartTimer()
		if err := s.Append(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*embeddedtest.NodeSeries)/time.Since(start).Seconds(), "samples/s")
}

// BenchmarkQueryRange runs a dashboard panel's query, the per-node average GPU
// utilisation, over one hour at a 15 s step on 100 nodes × 8 GPUs.
func BenchmarkQueryRange(b *testing.B) {
	const nodes = 100
	s := embeddedtest.Open(b, embedded.Options{})
	ctx := context.Background()
	if err := s.Append(ctx, embeddedtest.GPUUtil(nodes, base, 240, 15*time.Second)); err != nil {
		b.Fatal(err)
	}
	r := store.Range{Start: base, End: base.Add(time.Hour), Step: 15 * time.Second}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := s.Range(ctx, `avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)`, r)
		if err != nil {
			b.Fatal(err)
		}
		if len(m) != nodes {
			b.Fatalf("%d series, want %d", len(m), nodes)
		}
	}
}
