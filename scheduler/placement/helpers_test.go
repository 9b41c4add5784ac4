package placement

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func fleet(tb testing.TB, spec snapshot.SyntheticSpec, edit func(b *snapshot.Builder)) *snapshot.Snapshot {
	tb.Helper()
	if spec.Now.IsZero() {
		spec.Now = t0
	}
	b, err := snapshot.SyntheticBuilder(spec)
	if err != nil {
		tb.Fatal(err)
	}
	if edit != nil {
		edit(b)
	}
	s, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func engine(tb testing.TB, s *snapshot.Snapshot, clk *clock) *Engine {
	tb.Helper()
	opts := Options{}
	if clk != nil {
		opts.Now = clk.Now
	}
	e, err := New(s, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// mixedLoad allocates a random background on the synthetic fleet: per node, with
// probability pEmpty nothing, pFull every GPU, else a random subset of GPUs (some
// of them shared in part).
func mixedLoad(r *rand.Rand, nodes, gpus int, pEmpty, pFull float64) func(b *snapshot.Builder) {
	return func(b *snapshot.Builder) {
		for i := range nodes {
			name := snapshot.SyntheticNodeName(i)
			x := r.Float64()
			switch {
			case x < pEmpty:
			case x < pEmpty+pFull:
				all := make([]int, gpus)
				for g := range all {
					all[g] = g
				}
				b.AddAllocation(snapshot.Allocation{JobID: "bg-" + name, Node: name, GPUs: all})
			default:
				for g := range gpus {
					switch y := r.Float64(); {
					case y < 0.45:
						b.AddAllocation(snapshot.Allocation{JobID: "bg", Node: name, GPUs: []int{g}})
					case y < 0.55:
						b.AddAllocation(snapshot.Allocation{JobID: "bgf", Node: name, GPUs: []int{g}, Milli: 250 * (1 + r.IntN(3))})
					}
				}
			}
		}
	}
}
