// Package embeddedtest builds fleets of dcgm-exporter-named samples for tests and
// benchmarks of the stores: the GPU series of a number of HGX nodes over time, with
// values a test can recompute, and an embedded store opened in a test's temp
// directory.
package embeddedtest
