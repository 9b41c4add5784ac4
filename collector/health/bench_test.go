package health

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// BenchmarkDerive judges one full HGX H100 node snapshot (8 GPUs × 18 NVLinks, 8
// InfiniBand ports, ~1,500 samples) per iteration, with a few conditions active.
func BenchmarkDerive(b *testing.B) {
	n := newNode(true)
	clk := newClock()
	e, err := New(Options{Node: testNode, Now: clk.now, BootID: "b"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	emitted := 0
	emit := func(telemetry.Sample) { emitted++ }
	snap := n.snapshot(clk.now())
	if err := e.Derive(ctx, snap, emit); err != nil {
		b.Fatal(err)
	}
	n.link(telemetry.MetricNVLinkUp, 3, 4, 0)
	n.port(telemetry.NodeIBStateID, 1, 1)
	e.ObserveXid(xidEvent(2, 13, clk.now()))
	snap = n.snapshot(clk.now()) // the engine reads its own clock, so one snapshot serves
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		clk.add(time.Second)
		emitted = 0
		if err := e.Derive(ctx, snap, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(snap.Samples)), "samples")
	if emitted == 0 {
		b.Fatal("nothing emitted")
	}
}
