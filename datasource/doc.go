// Package datasource is gpuwatch's Grafana data source backend: what PromQL
// cannot serve, read from a gpuwatch server's API (/api/gpuwatch/v1) and
// answered as data frames: utilization report tables, one job's per-GPU
// efficiency, fault analytics, stragglers, placement explanations, the drain
// audit log and fair-share standings.
//
//	Grafana ──gRPC (plugin SDK)──▶ Datasource.QueryData ──HTTP GET, bearer token──▶ gpuwatch server
//	                               Datasource.CheckHealth                            /api/gpuwatch/v1/…
//
// A query is one JSON object (Query, parsed by ParseQuery); each query of a
// request is answered on its own, so a bad query, a refused token or a server
// that does not answer is that query's error (backend.ErrDataResponse), never
// the request's. The plugin's static part (plugin.json, module.js) is in
// plugin/, its executable in cmd/gpx_gpuwatch; `make grafana-plugin` puts
// them together in dist/, the directory Grafana loads
// (docs/grafana-datasource.md).
//
// This is its own Go module so that the plugin SDK's dependencies (gRPC
// plugin host, Arrow, newer OpenTelemetry and prometheus/common) stay out of
// gpuwatch's go.mod and binaries.
package datasource
