// Package collector is the node agent's core: the Source interface every telemetry
// family implements, the contracts between the agent's parts (Inventory, XidEvent),
// the Runner that collects every source with per-source timeouts and up/duration
// self-metrics into immutable snapshots, the Exporter that renders them for /metrics
// and remote write, and the agent's HTTP endpoints.
//
// One package per source lives below it (nvml, dcgm, infiniband, nvlink, xid, pci,
// topology, attribution), with health (the engine that derives conditions from a
// snapshot), healthpush, shipper (remote write with a disk queue) and agent, which
// assembles one agent from the explicit source registry; simhw is the simulated
// hardware those sources read in tests and in the demo.
package collector
