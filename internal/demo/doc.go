// Package demo runs `gpuwatch demo`: a simulated fleet (collector/simhw) playing a
// scripted fault story, with the real gpuwatch agent (collector/agent) on every
// node, and what the agents report summarised live for a human.
//
// Each agent is built exactly as `gpuwatch agent --simulate` builds one: it reads
// its node through go-nvml's nvml.Interface, the node's /sys tree and its kernel
// log, judges health with the catalog-driven engine, and serves /metrics, /health,
// /topology and /sources on a loopback port that the demo prints. The demo loop
// advances simulated time and then runs one collection cycle on every agent (a full
// one every few ticks), so the agents' clocks and schedules are simulated time.
//
// The demo also runs a gpuwatch server in-process (internal/server: the embedded
// Prometheus TSDB in the demo's working directory, remote write in, the Prometheus
// query API out) on loopback, and every agent remote-writes every sample to it, as
// `gpuwatch agent --remote-write` does. Its URL is the one to add in Grafana as a
// Prometheus data source; the final summary reads the data back through the
// server's Querier. Simulated time ends, by default, when the run starts, so the
// samples' timestamps lie in the recent past where Grafana looks.
//
// The demo never looks inside the simulator to learn what happened: everything it
// prints comes from the agents' snapshots and health reports, so what it shows is
// what gpuwatch would see on real GPUs. Later pieces (placement, drain, fair share)
// join the demo as they land.
package demo
