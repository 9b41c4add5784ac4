// Package collector is the node agent's core: the Source interface every telemetry
// family implements, and (as the agent lands) the explicit registry, the run loop with
// per-source timeouts and up/duration self-metrics, the exporter and the shipper.
//
// One package per source lives below it (nvml, dcgm, infiniband, nvlink, xid,
// topology, attribution); simhw is the simulated hardware those sources read in
// tests and in the demo.
package collector
