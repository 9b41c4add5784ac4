// Package store is gpuwatch's time-series boundary: the Appender and Querier
// interfaces everything else uses, so the embedded Prometheus TSDB (the default,
// inside `gpuwatch server`) and an external VictoriaMetrics or Prometheus behind
// --store.url are interchangeable for the scheduler, the analyzer and the
// dashboards.
//
// Subpackages: embedded (Prometheus's tsdb and promql as libraries), remote (a
// Querier over any Prometheus-compatible HTTP API), ingest (remote write 1.0 and the
// VictoriaMetrics text import receivers, with limits) and api (the Prometheus HTTP
// query API Grafana's data source speaks).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Point is one value of a series at a time.
type Point struct {
	T time.Time
	V float64
}

// Series is a labelled run of points, oldest first. Labels include __name__ when
// the series has a name.
type Series struct {
	Labels telemetry.Labels
	Points []Point
}

// Vector is an instant query's answer: one sample per series, each with the time
// of its value.
type Vector []telemetry.Sample

// Matrix is a range query's answer.
type Matrix []Series

// Range is a range query's window and resolution.
type Range struct {
	Start, End time.Time
	Step       time.Duration
}

// Querier answers PromQL. Every point carries its timestamp so callers can tell
// stale data from fresh.
type Querier interface {
	Instant(ctx context.Context, expr string, at time.Time) (Vector, error)
	Range(ctx context.Context, expr string, r Range) (Matrix, error)
}

// SampleReader reads stored samples as they are, without evaluating PromQL:
// every sample in (from, to] of every series the selector (a series
// selector such as `up{job="x"}`) matches, oldest first, labels with
// __name__. A store offers it where it is cheaper than a range query, which
// evaluates every series at every step: reading a week of hourly values of
// 100,000 series that each live a few hours. Callers fall back to Range on
// a Querier without it.
type SampleReader interface {
	Samples(ctx context.Context, selector string, from, to time.Time) (Matrix, error)
}

// Appender stores samples. Append is all or nothing: when it returns an error,
// none of the batch was stored.
type Appender interface {
	Append(ctx context.Context, batch []telemetry.Sample) error
}

// ErrLimit marks a request refused by a configured limit (size, series, labels,
// active series); receivers answer it with a 4xx status.
var ErrLimit = errors.New("limit exceeded")

// ErrForbidden marks a batch refused because the caller may not write it (an
// agent token bound to other nodes); receivers answer it with 403, and the
// sender must not retry it.
var ErrForbidden = errors.New("forbidden")

// ErrUnavailable marks a write the store cannot take now (its disk is full or
// read-only, or an earlier write to it failed) although the data is good:
// nothing of the batch was stored, and receivers answer 503 so that senders
// keep the data queued and send it again later.
var ErrUnavailable = errors.New("store cannot take writes now")
