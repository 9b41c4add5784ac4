// Package scheduler turns live GPU telemetry into scheduling decisions: health- and
// topology-aware gang placement, budgeted automatic drains, and fair share charged by
// measured GPU utilization. It feeds the schedulers people already run (Slurm,
// Kubernetes and its batch add-ons) rather than replacing them.
//
// The subpackages land with their issues: snapshot (the immutable per-cycle fleet
// view), framework (Filter/Scorer/Status and explanations), plugins (one package per
// pipeline step), drain, fairshare, adapters (slurm, kube) and sim (trace replay).
// Nothing here imports cgo packages: NVML and DCGM stay in the collector.
package scheduler
