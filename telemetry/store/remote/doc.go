// Package remote is a store.Querier over any Prometheus-compatible HTTP query API —
// VictoriaMetrics, Prometheus, or gpuwatch's own (package api) — for `gpuwatch
// server --store.url`. It speaks /api/v1/query and /api/v1/query_range (form POST
// by default, GET on request) and decodes vector, matrix and scalar answers into
// store.Vector and store.Matrix; errors carry the server's errorType and text and
// the URL asked.
package remote
