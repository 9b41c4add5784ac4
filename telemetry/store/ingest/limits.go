package ingest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// Limits bounds what one request may carry and how many series the store may hold.
// A zero field means "no limit" except where noted; DefaultLimits gives the values
// `gpuwatch server` starts with. Every violation rejects the whole request with a
// *LimitError (which wraps store.ErrLimit) and appends nothing.
type Limits struct {
	// MaxBodyBytes caps the request body as sent (compressed). Over it: 413.
	// The Content-Length header is checked first, so an oversized request is
	// refused before its body is read.
	MaxBodyBytes int64
	// MaxDecodedBytes caps the body after snappy or gzip decompression: the guard
	// against decompression bombs. For snappy the decoded length in the block
	// header is checked before decoding; gzip is read through a limit. Over it: 413.
	MaxDecodedBytes int64
	// MaxSamplesPerRequest caps the samples in one request. Over it: 413 (the
	// client should send smaller batches).
	MaxSamplesPerRequest int
	// MaxSeriesPerRequest caps the distinct series in one request. Over it: 413.
	MaxSeriesPerRequest int
	// MaxLabelsPerSeries caps the labels of one series, __name__ included. Over
	// it: 400 (the series is malformed for this store, retrying will not help).
	MaxLabelsPerSeries int
	// MaxLabelNameLength caps a label name in bytes. Over it: 400.
	MaxLabelNameLength int
	// MaxLabelValueLength caps a label value (and the metric name) in bytes. Over
	// it: 400.
	MaxLabelValueLength int
	// MaxFutureSkew refuses samples stamped later than now+MaxFutureSkew (400),
	// as Prometheus's receiver does with its 10-minute window. Zero: no check.
	MaxFutureSkew time.Duration
	// MaxActiveSeries is the cardinality guard: a request whose new series would
	// take the store's active series (Options.ActiveSeries) past this cap is
	// refused with 429 and a Retry-After, so a well-behaved sender keeps its
	// samples queued until an operator raises the cap or old series leave the
	// store's head. Zero, or a nil Options.ActiveSeries: no guard.
	MaxActiveSeries uint64
	// ActiveSeriesWindow is how long the guard remembers a series it accepted as
	// "known" after its last sample (default 3h, the TSDB head's reach). Only
	// used when the guard is on.
	ActiveSeriesWindow time.Duration
}

// DefaultLimits returns the limits `gpuwatch server` starts with. They are sized
// for agents sending one collection cycle per request (an HGX H100 node: about
// 1,500 samples) with ample headroom, and follow Prometheus's receiver
// (32 MiB decoded, 10 minutes ahead) and VictoriaMetrics's defaults (label name
// 256 bytes) where those exist.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:         16 << 20,
		MaxDecodedBytes:      32 << 20,
		MaxSamplesPerRequest: 200_000,
		MaxSeriesPerRequest:  100_000,
		MaxLabelsPerSeries:   64,
		MaxLabelNameLength:   256,
		MaxLabelValueLength:  4096,
		MaxFutureSkew:        10 * time.Minute,
		MaxActiveSeries:      0,
		ActiveSeriesWindow:   3 * time.Hour,
	}
}

// Limit names: the Limit field of a LimitError, the reason label of
// gpuwatch_ingest_samples_rejected_total, and the words in error messages.
const (
	LimitBodyBytes         = "max_body_bytes"
	LimitDecodedBytes      = "max_decoded_bytes"
	LimitSamplesPerRequest = "max_samples_per_request"
	LimitSeriesPerRequest  = "max_series_per_request"
	LimitLabelsPerSeries   = "max_labels_per_series"
	LimitLabelNameLength   = "max_label_name_length"
	LimitLabelValueLength  = "max_label_value_length"
	LimitFutureSkew        = "max_future_skew"
	LimitActiveSeries      = "max_active_series"
)

// LimitError is a request refused by a limit. errors.Is(err, store.ErrLimit) holds.
type LimitError struct {
	Limit   string // one of the Limit* names
	Value   int64  // what the request had (bytes, samples, series, labels, milliseconds)
	Max     int64  // the configured limit
	Subject string // the offending series or label, truncated; "" for the whole request
	Status  int    // the HTTP status the receiver answers
}

func (e *LimitError) Error() string {
	s := fmt.Sprintf("%s exceeded: %d > %d", e.Limit, e.Value, e.Max)
	if e.Subject != "" {
		s += " at " + e.Subject
	}
	return s
}

// Unwrap makes errors.Is(err, store.ErrLimit) true.
func (e *LimitError) Unwrap() error { return store.ErrLimit }

func limitErr(limit string, value, max int64, subject string) *LimitError {
	st := http.StatusBadRequest
	switch limit {
	case LimitBodyBytes, LimitDecodedBytes, LimitSamplesPerRequest, LimitSeriesPerRequest:
		st = http.StatusRequestEntityTooLarge
	case LimitActiveSeries:
		st = http.StatusTooManyRequests
	}
	return &LimitError{Limit: limit, Value: value, Max: max, Subject: subject, Status: st}
}
