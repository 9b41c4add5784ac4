// Package realstore starts and stops the real time-series servers gpuwatch's tests
// run against — Debian's VictoriaMetrics 1.79 and Prometheus 2.42, and Debian's
// Alertmanager 0.25 for the alerts — on loopback ports with data directories under
// the test's temp dir. A test that needs one calls StartVictoriaMetrics,
// StartPrometheus or StartAlertmanager; the server stops when the test ends. Stop
// and Start restart it on the same port and data directory, for outage tests.
//
// When the binary is absent the test is skipped, naming the binary — unless
// GPUWATCH_REQUIRE_REALSTORE=1 is set (as CI sets it after `make test-deps`), in
// which case it fails. GPUWATCH_VICTORIA_METRICS, GPUWATCH_PROMETHEUS and
// GPUWATCH_ALERTMANAGER override the binaries' paths.
package realstore
