// Package straggler is the placement scorer that keeps new work off GPUs that
// were recently named stragglers (analyzer/stragglers: a GPU whose SM clock,
// activity or power lagged the other GPUs of its job, from thermal or power
// throttling or a sick link). It is a soft exclusion, a scorer and not a
// filter: over the GPUs the picker chose, 1 − (straggler GPUs / chosen GPUs),
// so a node with a straggler still takes the gang when nothing better fits. A
// mark counts for the snapshot's straggler window (30 minutes by default) after
// the GPU was last named; a GPU never named, or named longer ago, scores 1.
package straggler
