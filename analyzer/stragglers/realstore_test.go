package stragglers_test

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers/stragglerstest"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestStragglersRealStores: the same stragglers behind --store.url, on
// Debian's VictoriaMetrics and Prometheus.
func TestStragglersRealStores(t *testing.T) {
	for _, start := range []func(testing.TB) *realstore.Server{realstore.StartVictoriaMetrics, realstore.StartPrometheus} {
		s := start(t)
		t.Run(s.Kind(), func(t *testing.T) {
			t1 := time.Now().Add(-stragglerstest.Every).Truncate(stragglerstest.Every)
			t0 := t1.Add(-10 * time.Minute)
			samples := stragglerstest.Fleet(t0)
			sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
			s.WriteEvery(samples, 2*time.Minute) // two minutes a write, in order, as agents ship
			q, err := remote.New(s.URL(), remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// VictoriaMetrics makes new data searchable within seconds.
			deadline := time.Now().Add(60 * time.Second)
			for {
				r, err := stragglers.Compute(context.Background(), q, stragglers.Options{From: t0, To: t1})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string][]string{}
				for _, j := range r.Jobs {
					got[j.JobID] = stragglerstest.Summary(j)
				}
				if reflect.DeepEqual(got, stragglerstest.Want) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("stragglers\n got %q\nwant %q", got, stragglerstest.Want)
				}
				time.Sleep(time.Second)
			}
		})
	}
}
