package placement

import (
	"context"
	rtm "runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
)

func qq(l []time.Duration, p float64) time.Duration {
	slices.Sort(l)
	if len(l) == 0 {
		return 0
	}
	return l[min(len(l)-1, int(float64(len(l))*p))]
}

func BenchmarkDbgTail(b *testing.B) {
	snap := benchFleet(b, 5000)
	e := engine(b, snap, nil)
	names := make([]string, snap.Len())
	for i := range names {
		names[i] = snap.Node(i).Name
	}
	ctx := context.Background()
	s := []rtm.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	var all, gcl, nogc []time.Duration
	for b.Loop() {
		for range 6000 {
			rtm.Read(s)
			c0 := s[0].Value.Uint64()
			t := time.Now()
			_, _ = e.Evaluate(ctx, framework.Request{GPUs: 1}, names)
			d := time.Since(t)
			rtm.Read(s)
			all = append(all, d)
			if s[0].Value.Uint64() != c0 {
				gcl = append(gcl, d)
			} else {
				nogc = append(nogc, d)
			}
		}
	}
	b.Logf("all p50 %v p90 %v p99 %v max %v; calls during which a GC ended: %d p50 %v; others p99 %v", qq(all, .5), qq(all, .9), qq(all, .99), qq(all, 1), len(gcl), qq(gcl, .5), qq(nogc, .99))
}
