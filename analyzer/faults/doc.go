// Package faults is the analyzer's fault report: over a window, Xid counts by
// code, catalog action, GPU model and node; mean time between failures per node
// and per GPU model; lemon nodes (repeated drains); a "drain soon" list of GPUs
// whose retired pages or remapped rows grow toward their limits; InfiniBand
// ports ranked by flaps and symbol errors and NVLink links by CRC and replay
// errors. It reads the store through store.Querier only (embedded,
// VictoriaMetrics, Prometheus alike) and the drain controller's audit records
// it is given. docs/faults-report.md defines every number.
package faults
