package nvml

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// BenchmarkCollect is one full cycle of an 8-GPU HGX H100 node: Collect and
// CollectHealth.
func BenchmarkCollect(b *testing.B) {
	r := newRig(b, simhw.ShapeHGXH100)
	if err := r.node.StartJob(simhw.Job{ID: "1", Kind: simhw.JobTraining}, 0, 1, 2, 3, 4, 5, 6, 7); err != nil {
		b.Fatal(err)
	}
	r.advance(b, time.Minute)
	src, _ := r.source(b, Options{Now: time.Now})
	ctx := context.Background()
	buf := make([]telemetry.Sample, 0, 512)
	emit := func(s telemetry.Sample) { buf = append(buf, s) }
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		buf = buf[:0]
		if err := src.Collect(ctx, emit); err != nil {
			b.Fatal(err)
		}
		if err := src.CollectHealth(ctx, emit); err != nil {
			b.Fatal(err)
		}
		n = len(buf)
	}
	b.ReportMetric(float64(n), "samples/op")
}

// TestCollectAllocations keeps the hot path from allocating per sample: a cycle of
// 8 GPUs and ~330 samples may allocate only a handful of times.
func TestCollectAllocations(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src, _ := r.source(t, Options{})
	ctx := context.Background()
	n := 0
	emit := func(telemetry.Sample) { n++ }
	allocs := testing.AllocsPerRun(20, func() {
		_ = src.Collect(ctx, emit)
		_ = src.CollectHealth(ctx, emit)
	})
	if allocs > 8 {
		t.Errorf("%v allocations per cycle, want at most 8", allocs)
	}
	t.Logf("%v allocations per cycle of %d samples", allocs, n/21)
}
