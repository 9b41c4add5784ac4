// Package jobstats answers how well one job used the GPUs it was given, as
// Slurm sites' jobstats and seff do for CPUs: the job's GPUs and time span as
// the store saw them (gpuwatch_gpu_allocation_info), and per GPU its mean SM
// activity and utilization, memory peak, power and energy, idle stretches,
// Xids and health conditions, with a one-line verdict. It reads the store
// through telemetry/store's Querier, like analyzer/report; docs/reports.md
// ("Per-job efficiency") defines each number.
package jobstats
