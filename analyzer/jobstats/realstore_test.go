package jobstats

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/jobstats/jobstatstest"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestSyntheticJobRealStores: the job's stats are the same behind
// --store.url, on Debian's VictoriaMetrics and Prometheus, as on the embedded
// store.
func TestSyntheticJobRealStores(t *testing.T) {
	for _, start := range []func(testing.TB) *realstore.Server{realstore.StartVictoriaMetrics, realstore.StartPrometheus} {
		s := start(t)
		t.Run(s.Kind(), func(t *testing.T) {
			t0 := window()
			samples := jobstatstest.Samples(t0)
			s.WriteEvery(samples, 10*time.Minute) // ten minutes a write, in order, as agents ship
			q, err := remote.New(s.URL(), remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Compute(context.Background(), q, Options{Job: jobstatstest.Job, From: t0.Add(-time.Hour), To: t0.Add(3 * time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			CheckJob(t, r, t0)
		})
	}
}
