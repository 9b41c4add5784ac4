// Package scheduler turns live GPU telemetry into scheduling decisions: health- and
// topology-aware gang placement, budgeted automatic drains, and fair share charged by
// measured GPU utilization. It feeds the schedulers people already run (Slurm,
// Kubernetes and its batch add-ons) rather than replacing them.
//
// The subpackages: snapshot (the immutable per-cycle fleet view), framework
// (Filter/Scorer/Status and explanations), plugins (one package per pipeline step),
// placement (the engine and, in placement/service, the server's placement API),
// topology (fabric trees and their exports), drain, fairshare, adapters (slurm,
// kube) and sim (trace replay).
// Nothing here imports cgo packages: NVML and DCGM stay in the collector.
package scheduler
