package report

import (
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// writeInBatches remote-writes samples (sorted by time) ten minutes at a time,
// so Prometheus's head takes them in order.
func writeInBatches(s *realstore.Server, samples []telemetry.Sample) {
	s.WriteEvery(samples, 10*time.Minute)
}

// TestSyntheticRealStores: the report is the same behind --store.url, on
// Debian's VictoriaMetrics and Prometheus, as on the embedded store.
func TestSyntheticRealStores(t *testing.T) {
	for _, start := range []func(testing.TB) *realstore.Server{realstore.StartVictoriaMetrics, realstore.StartPrometheus} {
		s := start(t)
		t.Run(s.Kind(), func(t *testing.T) {
			t0 := syntheticWindow()
			writeInBatches(s, syntheticFleet(t0))
			q, err := remote.New(s.URL(), remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkSynthetic(t, q, t0)
		})
	}
}

// TestDownsampledRealStores: behind --store.url the server's Downsampler
// reads VictoriaMetrics or Prometheus through the remote Querier and writes
// its summaries back by remote write; the report read from them equals the
// report read from the raw samples on the same store (tolerance as in
// TestDownsampledEqualsRaw). Six hours of the synthetic week, 12:00 to
// 18:00 of its first day: GPU-B's gap, the idle minutes around it and its
// 3-hour idle stretch, GPU-A's jobs ending and starting, GPU-C's second pod.
func TestDownsampledRealStores(t *testing.T) {
	if testing.Short() {
		t.Skip("six hours of data on two stores")
	}
	from, to := 4320, 6480 // steps of the synthetic week
	for _, start := range []func(testing.TB) *realstore.Server{realstore.StartVictoriaMetrics, realstore.StartPrometheus} {
		s := start(t)
		t.Run(s.Kind(), func(t *testing.T) {
			ctx := t.Context()
			q, err := remote.New(s.URL(), remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := remote.NewWriter(s.RemoteWriteURL(), remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			now := weekStart.Add(time.Duration(from) * 10 * time.Second)
			// VictoriaMetrics takes samples of any age: the six hours are
			// written first and summarized after. Prometheus takes samples an
			// hour behind its newest: they are summarized as they come.
			catchUp := time.Minute
			if s.Kind() == realstore.VictoriaMetrics {
				catchUp = 7 * time.Hour
			}
			ds, err := NewDownsampler(q, w, DownsampleOptions{Now: func() time.Time { return now }, CatchUp: catchUp, StartDelay: -1})
			if err != nil {
				t.Fatal(err)
			}
			end := weekStart.Add(time.Duration(to) * 10 * time.Second)
			if s.Kind() == realstore.VictoriaMetrics {
				// VictoriaMetrics shows new series a second or two after it
				// takes them (the server's Delay covers that): write the six
				// hours, wait until the last step's series show, then summarize.
				s.WriteEvery(weekSamples(from, to), 10*time.Minute)
				realstore.Eventually(t, 30*time.Second, "the last step's allocations", func() bool {
					v, err := q.Instant(ctx, "count(count_over_time("+metricAllocation+"[10s]))", end)
					return err == nil && len(v) == 1 && v[0].Value == 5 // GPU-A, B, D, and C's two pods
				})
				now = end.Add(5 * time.Minute)
				if _, err := ds.Step(ctx); err != nil {
					t.Fatal(err)
				}
				s.Flush()
			} else {
				// Prometheus's head takes samples in time order: five minutes
				// of agents' samples, then what the Downsampler writes.
				for st := from; st < to; st += 30 {
					s.Write(weekSamples(st, st+30))
					now = weekStart.Add(time.Duration(st+30) * 10 * time.Second)
					if _, err := ds.Step(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, o := range []Options{
				{From: weekStart.Add(12 * time.Hour), To: end, By: ByAccount, NoPrevious: true},
				{From: weekStart.Add(12*time.Hour + 17*time.Minute + 20*time.Second), To: end.Add(-7 * time.Minute), By: ByJob, NoPrevious: true},
				{From: weekStart.Add(12 * time.Hour), To: end, By: ByUser, NoPrevious: true, Filter: Filter{Users: []string{"pat", "bob"}}},
			} {
				raw := o
				raw.RawOnly = true
				want, err := Compute(ctx, q, raw)
				if err != nil {
					t.Fatal(err)
				}
				var cq *countingQuerier
				var got *Report
				realstore.Eventually(t, 30*time.Second, "the summaries", func() bool {
					cq = &countingQuerier{Querier: q, counts: map[string]int{}}
					got, err = Compute(ctx, cq, o)
					return err == nil && cq.counts["1h"] > 0
				})
				t.Logf("%s: read %v", o.By, cq.counts)
				sameReport(t, got, want)
			}
		})
	}
}
