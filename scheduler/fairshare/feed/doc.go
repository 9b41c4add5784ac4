// Package feed reads what GPUs did from the telemetry store and turns it into
// fair-share samples: the seam between the store (telemetry/store.Querier,
// embedded or VictoriaMetrics or Prometheus) and the fair-share ledger
// (scheduler/fairshare).
//
// Per interval [from, to) it asks the store two things, both by GPU UUID:
//
//   - who had the GPU: count_over_time(gpuwatch_gpu_allocation_info[D]), the
//     agents' attribution of each GPU to a Slurm job (job_id, account, user) or
//     a Kubernetes pod (namespace, pod); the count of samples times the agents'
//     sample interval is how long the allocation was seen in the interval;
//   - what the GPU did: avg_over_time(DCGM_FI_PROF_SM_ACTIVE[D]) where DCGM
//     profiling runs, otherwise avg_over_time(DCGM_FI_DEV_GPU_UTIL[D]).
//
// A GPU seen allocated to n consumers at once (time-slicing) gives each a
// fraction 1/n and the GPU's activity, so the ledger never charges more than
// the GPU's seconds. A GPU with no activity series is charged as fully used
// and flagged unmeasured by the ledger: hiding telemetry never makes a GPU
// cheaper. Kubernetes pods without an account label are charged to their
// namespace.
//
// Feeder runs that every interval, records the batch in the ledger, saves the
// ledger and publishes the standing (factors) for the API, the metrics and the
// scheduler adapters.
package feed
