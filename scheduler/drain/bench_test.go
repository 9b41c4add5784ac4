package drain

import (
	"testing"
	"time"
)

// BenchmarkObserve is the push path in the common case: a report that decides
// nothing (8 GPUs, one tracked warning on a GPU that is already excluded).
func BenchmarkObserve(b *testing.B) {
	h := newHarness(b, nil)
	for range 3 {
		h.observe(n1, sbe(n1, 2))
	}
	r := report(n1, h.clk.now(), sbe(n1, 2))
	b.ReportAllocs()
	for b.Loop() {
		h.clk.add(time.Second)
		h.c.Observe(r)
	}
}
