// Package test holds gpuwatch's end-to-end and integration tests: the ones that cross
// packages or start real servers (the gpuwatch binary, VictoriaMetrics, Prometheus,
// Slurm, Chromium) on loopback and stop them afterwards.
package test
