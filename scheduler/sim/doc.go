// Package sim is gpuwatch's trace-replay engine: a cluster of nodes (CPU, memory,
// GPUs shared in milli-GPU units), pods that ask for them, a Policy that ranks
// feasible nodes and picks GPUs, and a Scheduler that places one pod at a time
// the way kube-scheduler does (filter, score, pick the best node; ties go to a
// fixed node ranking or are drawn at random).
//
// The engine knows nothing about traces or time: a replay (scheduler/sim/openb
// for the FGD paper's protocol) owns the event loop,
// calls Scheduler.Place for arrivals and Scheduler.Release (with the Binding Place
// returned) for departures, and records what it needs from the Cluster.
//
//	pods ──▶ Scheduler.Place ──▶ Feasible (filter) ──▶ Policy.Score ──▶ best node
//	                                                      (cached)        │ ties: rank
//	                                  Cluster.Bind ◀── Policy.PickGPUs ◀──┘
//
// Invariants:
//   - Feasible, Policy.Score and Policy.PickGPUs are pure: they read only their
//     arguments (PickGPUs may draw from the rng it is given), do no I/O and keep no
//     state that changes their answers. The Scheduler relies on this to cache a
//     node's score for a pod shape until that node changes.
//   - Policy.Score is called only on feasible nodes; PickGPUs only on the chosen
//     one, and must return GPUs on which the pod fits.
//   - Scores are compared exactly; equal best scores go to the node of lowest
//     rank (Options.Rank) or, without a ranking, to one drawn uniformly at random
//     with the Scheduler's rng (kube-scheduler's selectHost), so a replay is
//     deterministic for a given seed. A pod with a single feasible node goes
//     there unscored, as in kube-scheduler.
//   - A pod that fits nowhere is not placed and not retried (ErrUnschedulable);
//     the cluster is left unchanged.
//   - Allocated GPU milli never exceeds capacity; a GPU's free milli stays in
//     [0, 1000]; CPU, memory and pod-count free never go negative.
package sim
