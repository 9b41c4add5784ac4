// Package stragglers names the GPUs of a multi-GPU job that lag their peers:
// over a window (default the last 10 minutes), for each job with two GPUs or
// more, each GPU's median SM clock, SM activity (DCGM_FI_PROF_SM_ACTIVE, else
// DCGM_FI_DEV_GPU_UTIL) and power draw against the job's reference, the
// median of its upper half of GPUs, with the evidence (signal, how far
// behind, for how long, the clock-throttle reasons seen). It reads the store
// through store.Querier only; jobs come from gpuwatch_gpu_allocation_info.
// docs/reports.md ("Stragglers") defines the rule.
package stragglers
