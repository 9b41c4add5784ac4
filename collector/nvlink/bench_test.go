package nvlink

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// BenchmarkCollect is one full cycle of an HGX H100 node (8 GPUs × 18 links):
// CollectHealth and Collect.
func BenchmarkCollect(b *testing.B) {
	r := newRig(b, simhw.ShapeHGXH100)
	if err := r.node.StartJob(simhw.Job{ID: "1", Kind: simhw.JobTraining}, 0, 1, 2, 3, 4, 5, 6, 7); err != nil {
		b.Fatal(err)
	}
	r.advance(b, time.Minute)
	src := New(r.lib, r.inv, nil)
	ctx := context.Background()
	buf := make([]telemetry.Sample, 0, 2048)
	emit := func(s telemetry.Sample) { buf = append(buf, s) }
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		buf = buf[:0]
		if err := src.CollectHealth(ctx, emit); err != nil {
			b.Fatal(err)
		}
		if err := src.Collect(ctx, emit); err != nil {
			b.Fatal(err)
		}
		n = len(buf)
	}
	b.ReportMetric(float64(n), "samples/op")
}

func TestCollectAllocations(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src := r.source(nil)
	ctx := context.Background()
	emit := func(telemetry.Sample) {}
	allocs := testing.AllocsPerRun(20, func() {
		_ = src.CollectHealth(ctx, emit)
		_ = src.Collect(ctx, emit)
	})
	if allocs > 8 {
		t.Errorf("%v allocations per cycle, want at most 8", allocs)
	}
}
