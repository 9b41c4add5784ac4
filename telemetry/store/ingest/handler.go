package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/storage"

	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// Paths the handler serves.
const (
	WritePath            = "/api/v1/write"             // Prometheus remote write 1.0
	ImportPrometheusPath = "/api/v1/import/prometheus" // VictoriaMetrics's text import
)

// Endpoint names: the endpoint label of the gpuwatch_ingest_* metrics.
const (
	EndpointRemoteWrite      = "remote_write"
	EndpointImportPrometheus = "import_prometheus"
)

// retryAfter is what a 429 from the cardinality guard asks senders to wait.
const retryAfter = "60"

// Options are the handler's collaborators; all optional.
type Options struct {
	// Registerer receives the gpuwatch_ingest_* metrics; nil registers none.
	Registerer prometheus.Registerer
	// ActiveSeries reports how many series the store holds in memory now (for
	// the embedded TSDB: its head's series count). With Limits.MaxActiveSeries
	// it turns the cardinality guard on.
	ActiveSeries func() uint64
	// Now is the clock (request time for the text import, the future-skew check,
	// the guard's memory); nil means time.Now.
	Now func() time.Time
	// Logger reports store failures (5xx); nil discards.
	Logger *slog.Logger
}

// Handler serves WritePath and ImportPrometheusPath; any other path is 404.
type Handler struct {
	app     store.Appender
	v       validator
	opts    Options
	tracker *activeTracker // nil when the guard is off
	m       *metrics
}

// NewHandler returns the ingest handler: every request is decoded and validated
// in full against lim before one Append call stores all of it, so a refused
// request stores nothing.
func NewHandler(app store.Appender, lim Limits, opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{app: app, opts: opts, m: newMetrics(opts.Registerer)}
	h.v.lim = lim
	h.v.seed = newSeed()
	if lim.MaxActiveSeries > 0 && opts.ActiveSeries != nil {
		w := lim.ActiveSeriesWindow
		if w <= 0 {
			w = 3 * time.Hour
		}
		h.tracker = &activeTracker{seen: make(map[uint64]int64), window: w, lastPrune: opts.Now()}
	}
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ep string
	switch r.URL.Path {
	case WritePath:
		ep = EndpointRemoteWrite
	case ImportPrometheusPath:
		ep = EndpointImportPrometheus
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, ep, 0, &requestError{status: http.StatusMethodNotAllowed, reason: reasonMalformed,
			msg: fmt.Sprintf("method %s not allowed on %s; use POST", r.Method, r.URL.Path)})
		return
	}
	n, err := h.ingest(r, ep)
	if err != nil {
		h.fail(w, ep, n, err)
		return
	}
	h.m.accepted.WithLabelValues(ep).Add(float64(n))
	h.m.requests.WithLabelValues(ep, "204").Inc()
	w.WriteHeader(http.StatusNoContent)
}

// fail answers err with its status and counts the request's samples as rejected.
func (h *Handler) fail(w http.ResponseWriter, ep string, samples int, err error) {
	status, reason := classify(err)
	if status >= 500 {
		h.opts.Logger.Error("ingest: storing a request failed", "endpoint", ep, "samples", samples, "err", err)
	}
	var le *LimitError
	if errors.As(err, &le) && le.Limit == LimitActiveSeries {
		w.Header().Set("Retry-After", retryAfter)
	}
	h.m.requests.WithLabelValues(ep, strconv.Itoa(status)).Inc()
	if samples > 0 {
		h.m.rejected.WithLabelValues(ep, reason).Add(float64(samples))
	}
	http.Error(w, ep+": "+err.Error(), status)
}

// classify maps an error to its HTTP status and rejected-samples reason.
func classify(err error) (int, string) {
	var le *LimitError
	var re *requestError
	switch {
	case errors.As(err, &le):
		return le.Status, le.Limit
	case errors.As(err, &re):
		return re.status, re.reason
	case errors.Is(err, store.ErrForbidden):
		return http.StatusForbidden, reasonForbidden
	case errors.Is(err, store.ErrLimit):
		// The store's own limit: retryable once it has room, like the guard.
		return http.StatusTooManyRequests, reasonStore
	case errors.Is(err, store.ErrUnavailable):
		// The store cannot write now (disk full or read-only): the data is good,
		// senders keep it and retry (with their own back-off: writes resume as
		// soon as the disk has room).
		return http.StatusServiceUnavailable, reasonStore
	case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrOutOfBounds),
		errors.Is(err, storage.ErrDuplicateSampleForTimestamp), errors.Is(err, storage.ErrTooOldSample):
		// As Prometheus: samples the TSDB cannot take are a bad request, not retried.
		return http.StatusBadRequest, reasonStore
	default:
		return http.StatusInternalServerError, reasonStore
	}
}

// ingest decodes, validates and appends one request; it returns the number of
// samples the request carried (as far as known) and why it was refused.
func (h *Handler) ingest(r *http.Request, ep string) (int, error) {
	now := h.opts.Now()
	var b *batch
	switch ep {
	case EndpointRemoteWrite:
		if err := checkRemoteWriteHeaders(r); err != nil {
			return 0, err
		}
		body, err := readBody(r, h.v.lim)
		if err != nil {
			return 0, err
		}
		buf, err := decodeSnappy(body, h.v.lim)
		if err != nil {
			return 0, err
		}
		var total int
		if b, total, err = h.v.decodeWriteRequest(buf, now); err != nil {
			return total, err
		}
	default:
		enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
		if enc != "" && enc != "gzip" && enc != "identity" {
			return 0, &requestError{status: http.StatusUnsupportedMediaType, reason: reasonUnsupported,
				msg: fmt.Sprintf("Content-Encoding %q is not accepted for the text import; send it plain or gzip", truncate(enc, 64))}
		}
		args, err := parseImportArgs(r.URL.Query(), now)
		if err != nil {
			return 0, err
		}
		body, err := readBody(r, h.v.lim)
		if err != nil {
			return 0, err
		}
		if body, err = decodeImportBody(body, enc, h.v.lim); err != nil {
			return 0, err
		}
		if b, err = h.v.parseImport(body, args, now); err != nil {
			return countSampleLines(body), err
		}
	}
	n := len(b.samples)
	if n == 0 {
		return 0, nil
	}
	var reserved uint64
	if h.tracker != nil {
		var err error
		if reserved, err = h.tracker.reserve(b, h.opts.ActiveSeries(), h.v.lim.MaxActiveSeries); err != nil {
			return n, err
		}
	}
	err := h.app.Append(r.Context(), b.samples)
	if h.tracker != nil {
		h.tracker.release(b, reserved, err == nil, h.opts.Now())
	}
	if err != nil {
		return n, fmt.Errorf("storing %d samples: %w", n, err)
	}
	return n, nil
}

// readBody reads the request body within MaxBodyBytes; an announced
// Content-Length over the limit is refused without reading.
func readBody(r *http.Request, lim Limits) ([]byte, error) {
	max := lim.MaxBodyBytes
	if max > 0 && r.ContentLength > max {
		return nil, limitErr(LimitBodyBytes, r.ContentLength, max, "request body (Content-Length)")
	}
	rd := io.Reader(r.Body)
	if max > 0 {
		rd = io.LimitReader(r.Body, max+1)
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	if _, err := buf.ReadFrom(rd); err != nil {
		return nil, badRequest(reasonMalformed, "reading the request body: %v", err)
	}
	if max > 0 && int64(buf.Len()) > max {
		return nil, limitErr(LimitBodyBytes, int64(buf.Len()), max, "request body (read so far)")
	}
	if buf.Len() == 0 {
		return nil, badRequest(reasonMalformed, "empty request body")
	}
	return buf.Bytes(), nil
}

// decodeImportBody gunzips a gzip body through MaxDecodedBytes.
func decodeImportBody(body []byte, enc string, lim Limits) ([]byte, error) {
	max := lim.MaxDecodedBytes
	if enc != "gzip" {
		if max > 0 && int64(len(body)) > max {
			return nil, limitErr(LimitDecodedBytes, int64(len(body)), max, "request body")
		}
		return body, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, badRequest(reasonMalformed, "request body is not gzip (Content-Encoding: gzip): %v", err)
	}
	rd := io.Reader(zr)
	if max > 0 {
		rd = io.LimitReader(zr, max+1)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(rd); err != nil {
		return nil, badRequest(reasonMalformed, "request body is not valid gzip (Content-Encoding: gzip): %v", err)
	}
	if max > 0 && int64(out.Len()) > max {
		return nil, limitErr(LimitDecodedBytes, int64(out.Len()), max, "gunzipped request body (read so far)")
	}
	if out.Len() == 0 {
		return nil, badRequest(reasonMalformed, "empty request body after gunzip")
	}
	return out.Bytes(), nil
}
