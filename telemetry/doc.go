// Package telemetry is the vocabulary every gpuwatch component shares: metric names
// and their catalog, label keys, samples, the identities of nodes, GPUs, links,
// switches and InfiniBand ports, the topology graph, health conditions with their
// severities and recommended actions, and NVIDIA's Xid catalog as data.
//
// It imports the standard library only, so the agent, the server, the scheduler and
// the analyzer can all depend on it without pulling in each other's dependencies.
package telemetry
