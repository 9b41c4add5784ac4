// Package snapshot is the immutable per-cycle fleet view that placement reads: nodes
// (name, labels, leaf/spine/block, NVLink domain), their GPUs (model, memory, health,
// measured load, thermal and power headroom, free milli-GPU), the NVLink/NVSwitch
// connectivity and rail NIC of each GPU, and the current allocations, each value with
// the time it was observed.
//
// A Builder assembles a Snapshot from plain Go inputs (the server feeds it from the
// store, the agents' /topology documents, the drain controller's exclusions and the
// Slurm/Kubernetes allocations); Synthetic builds an N nodes × G GPUs fleet under L
// leaf switches for tests and benchmarks.
//
// # Staleness
//
// The Builder takes the cycle's time (Now) and a staleness bound. A value observed
// longer than the bound ago, or never, is flagged Stale, and placement then falls
// back to allocation-only behaviour: measured load and headroom are ignored, and a
// GPU's health is its last known state, flagged. Allocations and exclusions are never
// stale: they are what the schedulers and the drain controller hold now.
//
// Straggler marks (a GPU named a straggler of a job, MarkStraggler) have their
// own, longer window (DefaultStragglerWindow, 30 minutes): a mark counts while
// its GPU was last named within it, and a mark older than that, or without a
// time, is left out (counted in StragglerGPUs). No mark is no evidence: the GPU
// is not penalised.
//
// # Invariants
//
//   - A Snapshot never changes after Build; every accessor returns data the caller
//     must not modify, so any number of goroutines may read one snapshot.
//   - Node and GPU order is fixed: nodes sorted by name, GPUs of a node by index. A
//     GPU's flat number (Node.First + position) indexes per-GPU arrays, such as the
//     placement engine's reservation overlay.
//   - A node has at most MaxGPUsPerNode GPUs, so a set of them fits a 64-bit mask.
//   - FreeMilli = 1000 − the allocated milli-GPU, never below 0: an over-committed GPU
//     is full, and the snapshot carries a warning naming the allocations.
package snapshot
