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
