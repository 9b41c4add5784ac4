package faults

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults/faultstest"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestFleetRealStores: the fault report is the same behind --store.url, on
// Debian's VictoriaMetrics and Prometheus, as on the embedded store.
func TestFleetRealStores(t *testing.T) {
	for _, start := range []func(testing.TB) *realstore.Server{realstore.StartVictoriaMetrics, realstore.StartPrometheus} {
		s := start(t)
		t.Run(s.Kind(), func(t *testing.T) {
			t0 := fleetWindow()
			samples := faultstest.Fleet(t0)
			s.WriteEvery(samples, 10*time.Minute) // ten minutes a write, in order, as agents ship
			q, err := remote.New(s.URL(), remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Compute(context.Background(), q, Options{From: t0, To: t0.Add(faultstest.Window), LemonWindow: 24 * time.Hour},
				FromAudit(faultstest.Audit(t0)), "")
			if err != nil {
				t.Fatal(err)
			}
			checkFleet(t, r)
		})
	}
}
