// Package embedded is gpuwatch's default time-series store: Prometheus's own TSDB
// (head, WAL, blocks, retention by time and size, an out-of-order window for samples
// that agents replay after an outage) and its PromQL engine, used as libraries inside
// `gpuwatch server`.
//
// A Store implements store.Appender (all-or-nothing batches through one TSDB
// appender) and store.Querier (PromQL through the engine). Queryable and Engine hand
// the same storage and engine to the Prometheus HTTP API in package api, and
// ActiveSeries feeds the ingest path's cardinality guard.
//
// A store that cannot write says so with store.ErrUnavailable (ingest answers
// 503, so agents keep their queues): while its file system has less than
// Options.MinFreeBytes free (64 MiB) or is read-only, and, after a write to the
// WAL failed (full disk, read-only remount, I/O error), until it is reopened.
// Prometheus's WAL, torn by a write cut short in the middle of a record, drops
// at its repair on the next start everything written after the tear; refusing
// those writes instead keeps every acknowledged sample.
package embedded
