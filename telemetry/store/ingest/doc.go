// Package ingest receives telemetry over HTTP into a store.Appender: Prometheus
// remote write 1.0 at /api/v1/write and VictoriaMetrics's text import at
// /api/v1/import/prometheus, with limits that answer clear 4xx errors.
//
// # Endpoints
//
// POST /api/v1/write takes a snappy block-compressed prometheus.WriteRequest
// (prompb) and answers 204. As in Prometheus's receiver, the protocol is read
// from Content-Type: absent or application/x-protobuf (optionally
// proto=prometheus.WriteRequest) is 1.0; proto=io.prometheus.write.v2.Request
// (remote write 2.0) and any other media type or message get 415 with a message
// saying to send 1.0. The X-Prometheus-Remote-Write-Version header is not
// required and does not change the decoding, as in Prometheus. Content-Encoding
// must be absent or snappy (else 415). Exemplars and metadata are ignored; native
// histograms are refused (400): the store holds float samples.
//
// POST /api/v1/import/prometheus takes Prometheus exposition text, one
// `name{label="value",...} value [timestamp]` per line, plain or with
// Content-Encoding: gzip, and answers 204. Blank lines and # lines are skipped.
// A line's timestamp is Unix milliseconds, or seconds when below 2^32, possibly
// fractional (as VictoriaMetrics 1.79 reads them); lines without one take the
// query argument timestamp (Unix milliseconds, as VictoriaMetrics) or else the
// request time. extra_label=name=value query arguments add or replace a label on
// every line. Unlike VictoriaMetrics, which logs and skips a bad line, one bad
// line refuses the whole body (400, naming the line).
//
// # All or nothing
//
// A request is decoded and validated in full, limits included, before a single
// Append call stores it; the Appender contract is all or nothing too, so a refused
// request leaves nothing behind.
//
// # Decoding
//
// Remote write bodies are decoded by a zero-copy protobuf reader (protodec.go)
// that accepts exactly what prompb's generated Unmarshal accepts
// (FuzzDecodeWriteRequest compares the two) with a few allocations per request
// instead of two per label. The label strings of the samples handed to Append
// share the request's decoded buffer, which is never reused: an Appender that
// keeps a string (rather than copying it into its own index, as the TSDB's
// labels builder does) keeps that buffer alive.
//
// # Validation (400)
//
// Undecodable snappy, gzip or protobuf, an empty body, text syntax errors; a
// series without __name__, a metric name outside [a-zA-Z_:][a-zA-Z0-9_:]*, a
// label name outside [a-zA-Z_][a-zA-Z0-9_]* (Prometheus's legacy rules), a label
// value that is not UTF-8, a duplicate label, and, in remote write, labels not
// sorted by name (the 1.0 spec requires it; the text import sorts them itself).
// Labels with empty values are dropped (Prometheus reads them as absent). Any
// float is a valid value: NaN, ±Inf, and Prometheus's stale marker (a particular
// NaN, kept bit for bit so the store can end the series).
//
// # Limits
//
// See Limits and DefaultLimits. Each refusal is a *LimitError wrapping
// store.ErrLimit, whose message names the limit, the value, the limit's setting
// and the offending series or label (truncated), e.g.
//
//	remote_write: max_label_value_length exceeded: 5000 > 4096 at value of label "job" of series up{job="aaaa…"}
//
// Status codes: 413 for request size (body bytes, decoded bytes, samples per
// request, series per request: the sender should split its batches; Prometheus
// and VictoriaMetrics also answer oversized bodies with 413 or 400 and do not
// retry); 400 for per-series limits (labels per series, label name and value
// length, samples too far in the future; retrying cannot help, as Mimir and
// Cortex answer their per-series limits); 429 with Retry-After: 60 for the
// active-series cap (the cardinality guard), so that remote write senders, which
// retry 429 and 5xx and drop other 4xx, keep the samples queued until the cap is
// raised or old series leave the head. Appender errors: store.ErrLimit → 429;
// store.ErrUnavailable (the store's disk is full or read-only, or its WAL failed)
// → 503, so senders keep the data and retry; Prometheus's
// out-of-order, out-of-bounds, duplicate and too-old sample errors → 400 (as
// Prometheus's receiver); anything else → 500. Every 5xx is logged with the
// store's message.
//
// # Cardinality guard
//
// With Limits.MaxActiveSeries and Options.ActiveSeries set, a request is refused
// when the store's active series plus the request's new series exceed the cap. A
// series is new when the handler has not accepted it within
// Limits.ActiveSeriesWindow. When the store holds more series than the handler
// remembers (after a restart, say), as many of a request's unknown series as that
// gap are taken to be ones the store already has, so senders are never locked
// out after a restart; the estimate tightens as the handler sees traffic. New
// series of requests in flight are reserved, so concurrent requests cannot jointly
// overshoot.
//
// # Self-metrics
//
// Registered in Options.Registerer (these are server metrics, not part of the
// agent's catalog in telemetry/metrics.go):
//
//	gpuwatch_ingest_requests_total{endpoint,code}           requests answered
//	gpuwatch_ingest_samples_accepted_total{endpoint}        samples stored
//	gpuwatch_ingest_samples_rejected_total{endpoint,reason} samples in refused requests
//
// endpoint is remote_write or import_prometheus; reason is a limit name
// (max_body_bytes, …, max_active_series) or malformed, invalid_series,
// unsupported or store. Rejected samples are counted when the body decoded far
// enough to count them (a protobuf that parsed, a text body's sample lines); a
// body that could not be read at all shows only in requests_total.
package ingest
