package service

import (
	"context"
	"testing"
)

// BenchmarkFeed reads a 256-node, 2048-GPU fleet (fleetSamples: inventory,
// health, load, headroom, NVSwitch topology and rails) from the embedded store
// into a snapshot: the feeder's cost per interval.
func BenchmarkFeed(b *testing.B) {
	s, clock := testService(b, 256, 16, Options{})
	now := *clock
	b.ReportAllocs()
	for b.Loop() {
		snap, _, err := Feed(context.Background(), s.opts.Querier, FeedOptions{Now: now})
		if err != nil || snap.GPUCount() != 2048 {
			b.Fatalf("%v, %d GPUs", err, snap.GPUCount())
		}
	}
}
