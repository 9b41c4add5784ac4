// Package api serves the part of Prometheus's HTTP API that Grafana's Prometheus
// data source uses, over any storage.Queryable and PromQL engine (the embedded
// store's, in `gpuwatch server`): /api/v1/query, query_range, series, labels,
// label/<name>/values, metadata (from the telemetry metric catalog),
// query_exemplars (always empty) and status/buildinfo.
//
// Answers follow Prometheus 2.42 to the byte where it matters to clients: the
// {"status":"success","data":…} and {"status":"error","errorType":…,"error":…}
// envelopes, values as strings, timestamps as float seconds, time parameters as
// RFC 3339 or unix seconds, steps as durations or float seconds, match[]
// selectors, start/end bounds, the same error texts and HTTP status codes.
package api
