// Package service is the placement service around the engine (scheduler/placement):
// a feeder that rebuilds the fleet snapshot from the store every interval, and the
// HTTP JSON API people, the CLI and the schedulers call.
//
//	store (agents' series) ─┐
//	drain exclusions ───────┼─▶ Feed (every Interval) ─▶ snapshot.Snapshot ─▶ Engine.SetSnapshot
//	Slurm allocations ──────┤                                                     │
//	site topology ──────────┘      POST /place, /release, GET /explain/{id}, ◀────┤
//	                               GET /placement/snapshot, /placement/reservations│
//	                               POST /extender/filter, /extender/prioritize ◀───┘ (kube-scheduler)
//
// The server assembles it: New(Options{Querier, Exclusions, Locations,
// Allocations, …}), Register(mux, "/api/gpuwatch/v1"), Run(ctx) in the
// background, and Collector() on its registry.
//
// # What the feeder reads
//
// Per GPU, keyed by the node (label node, else dcgm-exporter's hostname or, before
// its 4.8, Hostname) and NVML
// index (gpu_index, else gpu): identity and model from gpuwatch_gpu_info and
// DCGM_FI_DEV_FB_TOTAL (memory), health from gpuwatch_gpu_health_state,
// utilization from DCGM_FI_PROF_SM_ACTIVE (as a percentage) where DCGM gives it,
// else DCGM_FI_DEV_GPU_UTIL, thermal headroom from
// DCGM_FI_DEV_GPU_TEMP against DCGM_FI_DEV_SLOWDOWN_TEMP, power headroom from
// DCGM_FI_DEV_POWER_USAGE against DCGM_FI_DEV_ENFORCED_POWER_LIMIT (else
// DCGM_FI_DEV_POWER_MGMT_LIMIT), the node's place from
// gpuwatch_topology_node_info, the inside of the node from
// gpuwatch_topology_gpu_link_info and gpuwatch_topology_gpu_nic_info, and who
// holds each GPU from gpuwatch_gpu_allocation_info. Every measured value carries
// the timestamp of its sample (PromQL timestamp()), so the snapshot can flag it
// stale; inventory, health and topology are remembered for Options.Lookback after
// an agent goes quiet, so a silent node's GPUs keep their last known health,
// flagged stale, instead of vanishing or looking healthy.
//
// # Failure
//
// A failed read keeps the last good snapshot and says so (the snapshot summary's
// last_error, gpuwatch_placement_feed_errors_total); Fresh reports a snapshot
// older than Options.MaxAge, and the kube-scheduler extender then fails open.
package service
