package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// PrometheusVersion is the version /api/v1/status/buildinfo reports by default:
// Grafana picks the query features it uses from it, and gpuwatch answers as
// Prometheus 2.42 does.
const PrometheusVersion = "2.42.0"

// MaxPointsPerSeries is the most points a range query may ask of one series,
// Prometheus's own limit.
const MaxPointsPerSeries = 11000

// Options configure NewHandler; every field is optional.
type Options struct {
	// Version is the Prometheus version buildinfo reports; "" means
	// PrometheusVersion.
	Version string
	// GPUWatchVersion and Revision are gpuwatch's own, reported by buildinfo.
	GPUWatchVersion, Revision string
	// Metadata lists the metrics /api/v1/metadata describes; nil means the
	// telemetry catalog, telemetry.Metrics.
	Metadata func() []telemetry.MetricDesc
	// Now is the evaluation time of an instant query without a time parameter;
	// nil means time.Now.
	Now func() time.Time
	// Logger receives one line per failed query; nil discards them.
	Logger *slog.Logger
}

// NewHandler serves the Prometheus query API over q with eng, under the paths
// /api/v1/…; mount it at the server's root (or on "/api/v1/" of a mux).
func NewHandler(q storage.Queryable, eng *promql.Engine, opts Options) http.Handler {
	if opts.Version == "" {
		opts.Version = PrometheusVersion
	}
	if opts.Metadata == nil {
		opts.Metadata = telemetry.Metrics
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{q: q, eng: eng, opts: opts}
	mux := http.NewServeMux()
	for path, f := range map[string]apiFunc{
		"/api/v1/query":           h.query,
		"/api/v1/query_range":     h.queryRange,
		"/api/v1/query_exemplars": h.queryExemplars,
		"/api/v1/series":          h.series,
		"/api/v1/labels":          h.labelNames,
	} {
		mux.Handle("GET "+path, h.wrap(f))
		mux.Handle("POST "+path, h.wrap(f))
	}
	mux.Handle("GET /api/v1/label/{name}/values", h.wrap(h.labelValues))
	mux.Handle("GET /api/v1/metadata", h.wrap(h.metadata))
	mux.Handle("GET /api/v1/status/buildinfo", h.wrap(h.buildInfo))
	notAllowed := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
	for _, path := range []string{"/api/v1/label/{name}/values", "/api/v1/metadata", "/api/v1/status/buildinfo"} {
		mux.HandleFunc(path, notAllowed) // any other method; Grafana retries with GET
	}
	mux.Handle("/api/v1/", h.wrap(func(r *http.Request) result {
		return result{err: &apiError{errorNotFound, fmt.Errorf("%s %s: no such endpoint in gpuwatch's Prometheus API", r.Method, r.URL.Path)}}
	}))
	return mux
}

type handler struct {
	q    storage.Queryable
	eng  *promql.Engine
	opts Options
}

type errorType string

// Prometheus's error types.
const (
	errorTimeout  errorType = "timeout"
	errorCanceled errorType = "canceled"
	errorExec     errorType = "execution"
	errorBadData  errorType = "bad_data"
	errorInternal errorType = "internal"
	errorNotFound errorType = "not_found"
)

type apiError struct {
	typ errorType
	err error
}

func (e *apiError) Error() string { return fmt.Sprintf("%s: %s", e.typ, e.err) }

func badData(err error) *apiError { return &apiError{errorBadData, err} }

// result is an endpoint's answer: data written by write, or err.
type result struct {
	write    func(*bytes.Buffer)
	warnings annotations.Annotations
	query    string
	err      *apiError
	finalize func()
}

type apiFunc func(r *http.Request) result

func (h *handler) wrap(f apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res result
		if err := r.ParseForm(); err != nil {
			res.err = badData(fmt.Errorf("error parsing form values: %w", err))
		} else {
			res = f(r)
		}
		if res.finalize != nil {
			defer res.finalize()
		}
		w.Header().Set("Content-Type", "application/json")
		var b bytes.Buffer
		if res.err != nil {
			h.opts.Logger.Info("prometheus api: request refused", "path", r.URL.Path, "query", res.query, "error_type", string(res.err.typ), "error", res.err.err)
			b.WriteString(`{"status":"error","errorType":"`)
			b.WriteString(string(res.err.typ))
			b.WriteString(`","error":`)
			writeString(&b, res.err.err.Error())
			b.WriteByte('}')
			w.WriteHeader(statusCode(res.err.typ))
			_, _ = w.Write(b.Bytes())
			return
		}
		b.WriteString(`{"status":"success","data":`)
		res.write(&b)
		warnings, infos := res.warnings.AsStrings(res.query, 10, 10)
		writeStrings := func(key string, ss []string) {
			if len(ss) == 0 {
				return
			}
			b.WriteString(`,"` + key + `":`)
			writeStringList(&b, ss)
		}
		writeStrings("warnings", warnings)
		writeStrings("infos", infos)
		b.WriteByte('}')
		_, _ = w.Write(b.Bytes())
	})
}

func statusCode(t errorType) int {
	switch t {
	case errorBadData:
		return http.StatusBadRequest
	case errorExec:
		return http.StatusUnprocessableEntity
	case errorCanceled:
		return 499 // client closed request, as Prometheus answers
	case errorTimeout:
		return http.StatusServiceUnavailable
	case errorNotFound:
		return http.StatusNotFound
	default:
		return http.StatusInternalServerError
	}
}

func writeStringList(b *bytes.Buffer, ss []string) {
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, s)
	}
	b.WriteByte(']')
}

// withTimeout applies the request's timeout parameter to its context.
func withTimeout(r *http.Request) (context.Context, context.CancelFunc, *apiError) {
	ctx := r.Context()
	if to := r.FormValue("timeout"); to != "" {
		d, err := ParseDuration(to)
		if err != nil {
			return nil, nil, badData(invalidParam(err, "timeout"))
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		return ctx, cancel, nil
	}
	return ctx, func() {}, nil
}

func (h *handler) query(r *http.Request) result {
	qs := r.FormValue("query")
	ts, err := timeParam(r, "time", h.opts.Now())
	if err != nil {
		return result{err: badData(err), query: qs}
	}
	ctx, cancel, aerr := withTimeout(r)
	if aerr != nil {
		return result{err: aerr, query: qs}
	}
	qry, err := h.eng.NewInstantQuery(ctx, h.q, nil, qs, ts)
	if err != nil {
		cancel()
		return result{err: badData(invalidParam(err, "query")), query: qs}
	}
	return h.exec(ctx, cancel, qry, qs)
}

func (h *handler) queryRange(r *http.Request) result {
	qs := r.FormValue("query")
	start, err := ParseTime(r.FormValue("start"))
	if err != nil {
		return result{err: badData(invalidParam(err, "start")), query: qs}
	}
	end, err := ParseTime(r.FormValue("end"))
	if err != nil {
		return result{err: badData(invalidParam(err, "end")), query: qs}
	}
	if end.Before(start) {
		return result{err: badData(invalidParam(errors.New("end timestamp must not be before start time"), "end")), query: qs}
	}
	step, err := ParseDuration(r.FormValue("step"))
	if err != nil {
		return result{err: badData(invalidParam(err, "step")), query: qs}
	}
	if step <= 0 {
		return result{err: badData(invalidParam(errors.New("zero or negative query resolution step widths are not accepted. Try a positive integer"), "step")), query: qs}
	}
	if end.Sub(start)/step > MaxPointsPerSeries {
		return result{err: badData(errors.New("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)")), query: qs}
	}
	ctx, cancel, aerr := withTimeout(r)
	if aerr != nil {
		return result{err: aerr, query: qs}
	}
	qry, err := h.eng.NewRangeQuery(ctx, h.q, nil, qs, start, end, step)
	if err != nil {
		cancel()
		return result{err: badData(invalidParam(err, "query")), query: qs}
	}
	return h.exec(ctx, cancel, qry, qs)
}

// exec runs qry; the query is closed (its memory released) once the answer is
// written.
func (h *handler) exec(ctx context.Context, cancel context.CancelFunc, qry promql.Query, qs string) result {
	res := qry.Exec(ctx)
	finalize := func() { qry.Close(); cancel() }
	if res.Err != nil {
		finalize()
		return result{err: queryError(res.Err), query: qs, warnings: res.Warnings}
	}
	return result{
		write:    func(b *bytes.Buffer) { writeValue(b, res.Value) },
		warnings: res.Warnings,
		query:    qs,
		finalize: finalize,
	}
}

func queryError(err error) *apiError {
	var (
		canceled promql.ErrQueryCanceled
		timeout  promql.ErrQueryTimeout
		es       promql.ErrStorage
	)
	switch {
	case errors.As(err, &canceled):
		return &apiError{errorCanceled, err}
	case errors.As(err, &timeout):
		return &apiError{errorTimeout, err}
	case errors.As(err, &es):
		return &apiError{errorInternal, err}
	case errors.Is(err, context.Canceled):
		return &apiError{errorCanceled, err}
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{errorTimeout, err}
	}
	return &apiError{errorExec, err}
}

func (h *handler) queryExemplars(r *http.Request) result {
	qs := r.FormValue("query")
	if _, err := selectorParser.ParseExpr(qs); err != nil {
		return result{err: badData(invalidParam(err, "query")), query: qs}
	}
	for _, p := range []string{"start", "end"} {
		if _, err := timeParam(r, p, MinTime); err != nil {
			return result{err: badData(err), query: qs}
		}
	}
	// gpuwatch stores no exemplars.
	return result{write: func(b *bytes.Buffer) { b.WriteString("[]") }, query: qs}
}

// bounds reads start and end, defaulting to all time.
func bounds(r *http.Request) (start, end time.Time, aerr *apiError) {
	start, err := timeParam(r, "start", MinTime)
	if err != nil {
		return start, end, badData(err)
	}
	end, err = timeParam(r, "end", MaxTime)
	if err != nil {
		return start, end, badData(err)
	}
	if end.Before(start) {
		return start, end, badData(invalidParam(errors.New("end timestamp must not be before start time"), "end"))
	}
	return start, end, nil
}

func (h *handler) querier(r *http.Request) (storage.Querier, [][]*labels.Matcher, int, *apiError) {
	start, end, aerr := bounds(r)
	if aerr != nil {
		return nil, nil, 0, aerr
	}
	sets, err := ParseMatchers(r.Form["match[]"])
	if err != nil {
		return nil, nil, 0, badData(invalidParam(err, "match[]"))
	}
	limit, err := limitParam(r)
	if err != nil {
		return nil, nil, 0, badData(err)
	}
	q, err := h.q.Querier(timestamp.FromTime(start), timestamp.FromTime(end))
	if err != nil {
		return nil, nil, 0, &apiError{errorExec, err}
	}
	return q, sets, limit, nil
}

func (h *handler) series(r *http.Request) result {
	if len(r.Form["match[]"]) == 0 {
		return result{err: badData(errors.New("no match[] parameter provided"))}
	}
	start, end, aerr := bounds(r)
	if aerr != nil {
		return result{err: aerr}
	}
	q, sets, limit, aerr := h.querier(r)
	if aerr != nil {
		return result{err: aerr}
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: timestamp.FromTime(start), End: timestamp.FromTime(end), Func: "series"}
	var set storage.SeriesSet
	if len(sets) > 1 {
		all := make([]storage.SeriesSet, 0, len(sets))
		for _, ms := range sets {
			all = append(all, q.Select(r.Context(), true, hints, ms...))
		}
		set = storage.NewMergeSeriesSet(all, 0, storage.ChainedSeriesMerge)
	} else {
		set = q.Select(r.Context(), false, hints, sets[0]...)
	}
	var (
		metrics   []labels.Labels
		truncated bool
	)
	for set.Next() {
		if limit > 0 && len(metrics) == limit {
			truncated = true
			break
		}
		metrics = append(metrics, set.At().Labels())
	}
	if err := set.Err(); err != nil {
		return result{err: &apiError{errorExec, err}}
	}
	warnings := set.Warnings()
	if truncated {
		warnings.Add(errors.New("results truncated due to limit"))
	}
	return result{warnings: warnings, write: func(b *bytes.Buffer) {
		b.WriteByte('[')
		for i, ls := range metrics {
			if i > 0 {
				b.WriteByte(',')
			}
			writeLabels(b, ls)
		}
		b.WriteByte(']')
	}}
}

func (h *handler) labelNames(r *http.Request) result {
	q, sets, limit, aerr := h.querier(r)
	if aerr != nil {
		return result{err: aerr}
	}
	defer q.Close()
	return h.strings(sets, limit, func(ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
		return q.LabelNames(r.Context(), &storage.LabelHints{}, ms...)
	})
}

func (h *handler) labelValues(r *http.Request) result {
	name := r.PathValue("name")
	if !model.LabelNameRE.MatchString(name) {
		return result{err: badData(fmt.Errorf("invalid label name: %q", name))}
	}
	q, sets, limit, aerr := h.querier(r)
	if aerr != nil {
		return result{err: aerr}
	}
	defer q.Close()
	return h.strings(sets, limit, func(ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
		return q.LabelValues(r.Context(), name, &storage.LabelHints{}, ms...)
	})
}

// strings answers a sorted, de-duplicated union of get over the matcher sets
// (or get with no matchers when there are none).
func (h *handler) strings(sets [][]*labels.Matcher, limit int, get func([]*labels.Matcher) ([]string, annotations.Annotations, error)) result {
	var (
		out      []string
		warnings annotations.Annotations
	)
	if len(sets) == 0 {
		sets = [][]*labels.Matcher{nil}
	}
	for _, ms := range sets {
		vals, ws, err := get(ms)
		if err != nil {
			return result{err: &apiError{errorExec, err}}
		}
		warnings.Merge(ws)
		out = append(out, vals...)
	}
	sort.Strings(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
		warnings.Add(errors.New("results truncated due to limit"))
	}
	return result{warnings: warnings, write: func(b *bytes.Buffer) { writeStringList(b, out) }}
}

func (h *handler) metadata(r *http.Request) result {
	limit := -1
	if s := r.FormValue("limit"); s != "" {
		n, err := limitParam(r)
		if err != nil {
			return result{err: badData(errors.New("limit must be a number"))}
		}
		limit = n
	}
	metric := r.FormValue("metric")
	descs := h.opts.Metadata()
	sort.Slice(descs, func(i, j int) bool { return descs[i].Name < descs[j].Name })
	return result{write: func(b *bytes.Buffer) {
		b.WriteByte('{')
		n := 0
		for _, d := range descs {
			if metric != "" && d.Name != metric {
				continue
			}
			if limit >= 0 && n >= limit {
				break
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			writeString(b, d.Name)
			b.WriteString(`:[{"type":`)
			writeString(b, string(d.Type))
			b.WriteString(`,"help":`)
			writeString(b, d.Help)
			b.WriteString(`,"unit":`)
			writeString(b, d.Unit)
			b.WriteString(`}]`)
		}
		b.WriteByte('}')
	}}
}

func (h *handler) buildInfo(*http.Request) result {
	// No "features" field: Grafana takes a buildinfo with features for Mimir.
	fields := [][2]string{
		{"version", h.opts.Version},
		{"revision", h.opts.Revision},
		{"branch", "gpuwatch"},
		{"buildUser", "gpuwatch"},
		{"buildDate", ""},
		{"goVersion", runtime.Version()},
		{"application", "gpuwatch"},
		{"gpuwatchVersion", h.opts.GPUWatchVersion},
	}
	return result{write: func(b *bytes.Buffer) {
		b.WriteByte('{')
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, f[0])
			b.WriteByte(':')
			writeString(b, f[1])
		}
		b.WriteByte('}')
	}}
}
