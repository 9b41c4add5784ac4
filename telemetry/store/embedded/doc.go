// Package embedded is gpuwatch's default time-series store: Prometheus's own TSDB
// (head, WAL, blocks, retention by time and size, an out-of-order window for samples
// that agents replay after an outage) and its PromQL engine, used as libraries inside
// `gpuwatch server`.
//
// A Store implements store.Appender (all-or-nothing batches through one TSDB
// appender) and store.Querier (PromQL through the engine). Queryable and Engine hand
// the same storage and engine to the Prometheus HTTP API in package api, and
// ActiveSeries feeds the ingest path's cardinality guard.
package embedded
