package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// DefaultTimeout bounds one query when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// DefaultMaxResponseBytes bounds the size of one answer when
// Options.MaxResponseBytes is zero.
const DefaultMaxResponseBytes = 256 << 20

// Options configure New; every field is optional.
type Options struct {
	// Client sends the requests; nil means a client with Timeout.
	Client *http.Client
	// Timeout bounds one query, and is also sent as the query's timeout
	// parameter; 0 means DefaultTimeout.
	Timeout time.Duration
	// Header is added to every request (authorization, a tenant header).
	Header http.Header
	// UseGET sends queries as GET with URL parameters instead of a form POST.
	UseGET bool
	// MaxResponseBytes bounds one answer's body; 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// Querier queries one Prometheus-compatible server. It is safe for concurrent use.
type Querier struct {
	base   *url.URL
	client *http.Client
	opts   Options
}

var _ store.Querier = (*Querier)(nil)

// New returns a Querier for the server at baseURL, the URL under which
// /api/v1/query lives ("http://vm:8428", "http://prom:9090", or a path prefix
// such as "http://vmselect:8481/select/0/prometheus").
func New(baseURL string, opts Options) (*Querier, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("remote store URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("remote store URL %q: scheme must be http or https", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("remote store URL %q: no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("remote store URL %q: must not have a query or fragment", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: opts.Timeout + 5*time.Second}
	}
	return &Querier{base: u, client: client, opts: opts}, nil
}

// URL is the base URL queries go to.
func (q *Querier) URL() string { return q.base.String() }

// Error is a query the server refused or could not answer.
type Error struct {
	URL        string // the endpoint asked, without parameters
	Query      string
	StatusCode int    // HTTP status; 0 when no answer came
	Type       string // the server's errorType: bad_data, execution, timeout, …
	Message    string // the server's error text, or what went wrong on the way
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remote store %s: query %q: ", e.URL, e.Query)
	if e.Type != "" {
		b.WriteString(e.Type)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	return b.String()
}

// Instant evaluates expr at time at. A scalar answer becomes one unlabelled
// sample.
func (q *Querier) Instant(ctx context.Context, expr string, at time.Time) (store.Vector, error) {
	if at.IsZero() {
		return nil, fmt.Errorf("remote store %s: instant query %q: evaluation time is zero", q.base, expr)
	}
	params := url.Values{"query": {expr}, "time": {formatTime(at)}}
	data, err := q.do(ctx, "/api/v1/query", expr, params)
	if err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector":
		var raw []struct {
			Metric map[string]string `json:"metric"`
			Value  point             `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &raw); err != nil {
			return nil, q.decodeErr("/api/v1/query", expr, err)
		}
		out := make(store.Vector, len(raw))
		for i, r := range raw {
			ls := toLabels(r.Metric)
			out[i] = telemetry.Sample{Name: r.Metric["__name__"], Labels: ls, Value: r.Value.V, Time: r.Value.T}
		}
		sort.SliceStable(out, func(i, j int) bool { return lessLabels(out[i].Labels, out[j].Labels) })
		return out, nil
	case "scalar":
		var p point
		if err := json.Unmarshal(data.Result, &p); err != nil {
			return nil, q.decodeErr("/api/v1/query", expr, err)
		}
		return store.Vector{{Value: p.V, Time: p.T}}, nil
	default:
		return nil, &Error{URL: q.endpoint("/api/v1/query"), Query: expr, Message: fmt.Sprintf("answer is a %q, not a vector or scalar; use a range query", data.ResultType)}
	}
}

// Range evaluates expr over r; series come sorted by labels.
func (q *Querier) Range(ctx context.Context, expr string, r store.Range) (store.Matrix, error) {
	switch {
	case r.Start.IsZero() || r.End.IsZero():
		return nil, fmt.Errorf("remote store %s: range query %q: start or end time is zero", q.base, expr)
	case r.End.Before(r.Start):
		return nil, fmt.Errorf("remote store %s: range query %q: end %s is before start %s", q.base, expr, r.End.UTC().Format(time.RFC3339), r.Start.UTC().Format(time.RFC3339))
	case r.Step <= 0:
		return nil, fmt.Errorf("remote store %s: range query %q: step %s is not positive", q.base, expr, r.Step)
	}
	params := url.Values{
		"query": {expr},
		"start": {formatTime(r.Start)},
		"end":   {formatTime(r.End)},
		"step":  {strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64)},
	}
	raw, err := q.matrix(ctx, "/api/v1/query_range", expr, params)
	if err != nil {
		return nil, err
	}
	out := make(store.Matrix, len(raw))
	for i, s := range raw {
		pts := make([]store.Point, len(s.Values))
		for j, p := range s.Values {
			pts[j] = store.Point{T: p.T, V: p.V}
		}
		out[i] = store.Series{Labels: toLabels(s.Metric), Points: pts}
	}
	sort.SliceStable(out, func(i, j int) bool { return lessLabels(out[i].Labels, out[j].Labels) })
	return out, nil
}

var _ store.SampleReader = (*Querier)(nil)

// Samples reads the stored samples in (from, to] of the series selector
// matches (store.SampleReader), as the answer to the instant query
// selector[to−from] at to: Prometheus and VictoriaMetrics both answer a
// range selector with the samples as stored.
func (q *Querier) Samples(ctx context.Context, selector string, from, to time.Time) (store.Matrix, error) {
	if !to.After(from) {
		return nil, fmt.Errorf("remote store %s: reading %s: the window %s to %s is empty", q.base, selector, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	expr := selector + "[" + strconv.FormatInt(to.Sub(from).Milliseconds(), 10) + "ms]"
	raw, err := q.matrix(ctx, "/api/v1/query", expr, url.Values{"query": {expr}, "time": {formatTime(to)}})
	if err != nil {
		return nil, err
	}
	out := make(store.Matrix, 0, len(raw))
	for _, s := range raw {
		pts := make([]store.Point, 0, len(s.Values))
		for _, p := range s.Values {
			// Prometheus before 3.0 closes the window on both ends.
			if p.T.After(from) && !p.T.After(to) {
				pts = append(pts, store.Point{T: p.T, V: p.V})
			}
		}
		if len(pts) > 0 {
			out = append(out, store.Series{Labels: toLabels(s.Metric), Points: pts})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return lessLabels(out[i].Labels, out[j].Labels) })
	return out, nil
}

// matrixSeries is one series of a matrix answer as the API writes it.
type matrixSeries struct {
	Metric map[string]string `json:"metric"`
	Values []point           `json:"values"`
}

// matrix asks path for expr and decodes the answer, which must be a matrix:
// a range query's, or an instant query's of a range selector (Samples).
func (q *Querier) matrix(ctx context.Context, path, expr string, params url.Values) ([]matrixSeries, error) {
	data, err := q.do(ctx, path, expr, params)
	if err != nil {
		return nil, err
	}
	if data.ResultType != "matrix" {
		return nil, &Error{URL: q.endpoint(path), Query: expr, Message: fmt.Sprintf("answer is a %q, not a matrix", data.ResultType)}
	}
	var raw []matrixSeries
	if err := json.Unmarshal(data.Result, &raw); err != nil {
		return nil, q.decodeErr(path, expr, err)
	}
	return raw, nil
}

type envelope struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

func (q *Querier) endpoint(path string) string {
	u := *q.base
	u.Path += path
	return u.String()
}

func (q *Querier) decodeErr(path, expr string, err error) error {
	return &Error{URL: q.endpoint(path), Query: expr, Message: "decode answer: " + err.Error()}
}

func (q *Querier) do(ctx context.Context, path, expr string, params url.Values) (*queryData, error) {
	ctx, cancel := context.WithTimeout(ctx, q.opts.Timeout)
	defer cancel()
	params.Set("timeout", strconv.FormatFloat(q.opts.Timeout.Seconds(), 'f', -1, 64)+"s")
	endpoint := q.endpoint(path)
	var (
		req *http.Request
		err error
	)
	if q.opts.UseGET {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+params.Encode(), nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(params.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if err != nil {
		return nil, &Error{URL: endpoint, Query: expr, Message: err.Error()}
	}
	for k, vs := range q.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := q.client.Do(req)
	if err != nil {
		return nil, &Error{URL: endpoint, Query: expr, Message: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, q.opts.MaxResponseBytes+1))
	if err != nil {
		return nil, &Error{URL: endpoint, Query: expr, StatusCode: resp.StatusCode, Message: "read answer: " + err.Error()}
	}
	if int64(len(body)) > q.opts.MaxResponseBytes {
		return nil, &Error{URL: endpoint, Query: expr, StatusCode: resp.StatusCode, Message: fmt.Sprintf("answer is larger than %d bytes", q.opts.MaxResponseBytes)}
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.Status == "" {
		msg := "answer is not a Prometheus API response"
		if err != nil {
			msg += " (" + err.Error() + ")"
		}
		return nil, &Error{URL: endpoint, Query: expr, StatusCode: resp.StatusCode, Message: msg + ": " + snippet(body)}
	}
	if env.Status != "success" {
		msg := env.Error
		if msg == "" {
			msg = "status " + strconv.Quote(env.Status)
		}
		return nil, &Error{URL: endpoint, Query: expr, StatusCode: resp.StatusCode, Type: env.ErrorType, Message: msg}
	}
	if resp.StatusCode/100 != 2 {
		return nil, &Error{URL: endpoint, Query: expr, StatusCode: resp.StatusCode, Message: "success envelope with a failure status: " + snippet(body)}
	}
	var data queryData
	if err := json.Unmarshal(env.Data, &data); err != nil {
		return nil, q.decodeErr(path, expr, err)
	}
	return &data, nil
}

func snippet(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return strconv.Quote(s)
}

// formatTime writes t as unix seconds with millisecond precision.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)
}

// point is a [timestamp, "value"] pair.
type point struct {
	T time.Time
	V float64
}

func (p *point) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) != 2 {
		return fmt.Errorf("point %s: want [timestamp, \"value\"]", b)
	}
	var ts float64
	if err := json.Unmarshal(raw[0], &ts); err != nil {
		return fmt.Errorf("point %s: timestamp: %w", b, err)
	}
	var vs string
	if err := json.Unmarshal(raw[1], &vs); err != nil {
		return fmt.Errorf("point %s: value is not a string: %w", b, err)
	}
	v, err := strconv.ParseFloat(vs, 64)
	if err != nil {
		return fmt.Errorf("point %s: value %q: %w", b, vs, err)
	}
	if math.IsNaN(ts) || math.IsInf(ts, 0) || math.Abs(ts) > 1e13 {
		return fmt.Errorf("point %s: timestamp out of range", b)
	}
	p.T = time.UnixMilli(int64(math.Round(ts * 1000))).UTC()
	p.V = v
	return nil
}

func toLabels(m map[string]string) telemetry.Labels {
	ls := make(telemetry.Labels, 0, len(m))
	for k, v := range m {
		ls = append(ls, telemetry.Label{Name: k, Value: v})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	return ls
}

func lessLabels(a, b telemetry.Labels) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].Name != b[i].Name {
			return a[i].Name < b[i].Name
		}
		if a[i].Value != b[i].Value {
			return a[i].Value < b[i].Value
		}
	}
	return len(a) < len(b)
}
