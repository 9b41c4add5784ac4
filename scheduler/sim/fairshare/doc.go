// Package fairshare is the fair-share what-if replay: what would fair share
// charged by measured GPU utilization do, compared with fair share charged by
// allocation, on the same jobs and cluster.
//
// A discrete-event replay (Replay) runs jobs — arrival, duration, walltime,
// GPUs, account, user, and a GPU activity profile — on Nodes × GPUsPerNode
// GPUs. Pending jobs are ordered by Slurm multifactor priority,
// Fairshare × factor + Age × min(1, age/MaxAge), with the fair-share factor
// from scheduler/fairshare (Fair Tree by default, or classic) computed from a
// real fairshare.Ledger. Every Interval (Slurm's PriorityCalcPeriod, 5 min)
// the replay records each running job's GPU time since the last charge as
// one fairshare.Sample per GPU, its activity the mean of the job's profile
// over the interval; the ledger charges it by the policy under test
// (allocation, measured = max(activity, idle floor), or blend) with
// half-life decay; factors and pending priorities are recomputed. A new job
// gets its priority on arrival from the current factors.
//
//	jobs ─▶ queue (priority, then arrival, then ID) ─▶ schedule pass at every event
//	           ▲                                        │ start in order until the head blocks
//	           │ factors every Interval                 │ EASY backfill behind the head
//	Ledger ◀── samples of running jobs ◀── running ◀────┘
//
// Scheduling passes run at every arrival, completion and interval. Jobs start
// in priority order until one does not fit: that head job gets a reservation
// at the earliest time it fits if running jobs end at their walltimes (the
// shadow time, node by node); a later job may start now only if it fits now
// and either ends by the shadow time (by its walltime) or leaves the head
// still fitting at the shadow time (EASY backfill; at most BackfillDepth
// jobs are tried, Slurm's bf_max_job_test). Walltime is what the job asked
// for: the composed workload and traces default to duration × 2.
//
// Placement is deterministic: a job of at most GPUsPerNode GPUs goes on one
// node, the one with the fewest free GPUs that fit (lowest index on ties); a
// larger one takes whole free nodes and the remainder best fit.
//
// Inputs: ParseTrace reads a CSV or JSON trace (see trace.go); ComposeHelios
// composes the default workload from two real sources, Helios Earth team
// demand and Alibaba GenAI pod duty cycles (see Compose for the rules, and
// docs/fairshare-whatif.md). Compare replays one workload under several
// policies with all else identical; Evaluate reports per account the
// measured and allocated shares against entitlement, waits and turnaround,
// and cluster-wide Jain's index, utilization and idle allocated GPU-hours.
// Run is the entry point of `gpuwatch simulate fairshare`.
//
// Invariants:
//   - a replay is deterministic: same workload and configuration, same
//     trace; a composition is deterministic for its seed;
//   - GPUs in use never exceed the cluster, per node and in total;
//   - a job starts at or after its arrival and runs exactly its duration;
//   - under allocation charging the schedule does not depend on profiles,
//     and measured charging of fully busy jobs equals allocation charging;
//   - with exact walltimes, EASY backfill never starts the head job later
//     than strict priority order would.
package fairshare
