package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// API is a Prometheus HTTP API as Grafana's Prometheus data source calls it:
// with the data source's custom Authorization header.
type API struct {
	URL string
	// Authorization is the header's value ("Bearer <secret>"), or "".
	Authorization string
	Client        *http.Client
}

// Series is one series of an answer: its labels and how many of its points
// hold a number (not NaN).
type Series struct {
	Labels map[string]string
	Points int
}

// Empty reports whether no series of the answer has a number.
func Empty(ss []Series) bool {
	for _, s := range ss {
		if s.Points > 0 {
			return false
		}
	}
	return true
}

// do sends req with the data source's Authorization header and returns the
// answer's status and body.
func (a *API) do(req *http.Request) (*http.Response, []byte, error) {
	if a.Authorization != "" {
		req.Header.Set("Authorization", a.Authorization)
	}
	c := a.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func (a *API) get(ctx context.Context, path string, q url.Values, out any) error {
	// Grafana sends queries as a form POST (its default HTTP method).
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+path, strings.NewReader(q.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body, err := a.do(req)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("POST %s: %s: %.200s", path, resp.Status, body)
	}
	if resp.StatusCode != http.StatusOK || env.Status != "success" {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

// GetJSON asks GET path?q (gpuwatch's own API, which answers plain JSON, or
// {"error": …} with a status other than 200) and decodes the answer into out:
// what the gpuwatch data source asks the server for a panel's query.
func (a *API) GetJSON(ctx context.Context, path string, q url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, body, err := a.do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.300s", path, resp.Status, body)
	}
	return json.Unmarshal(body, out)
}

func unix(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64) }

// LabelValues asks /api/v1/label/<label>/values, restricted to the series
// match selects when it is not "", over [start, end]: what Grafana asks for a
// label_values() variable.
func (a *API) LabelValues(ctx context.Context, label, match string, start, end time.Time) ([]string, error) {
	q := url.Values{"start": {unix(start)}, "end": {unix(end)}}
	if match != "" {
		q.Set("match[]", match)
	}
	var out []string
	// The label-values endpoint is a GET in Prometheus's API.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/api/v1/label/"+url.PathEscape(label)+"/values?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, body, err := a.do(req)
	if err != nil {
		return nil, err
	}
	var env struct {
		Status string   `json:"status"`
		Error  string   `json:"error"`
		Data   []string `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Status != "success" {
		return nil, fmt.Errorf("GET /api/v1/label/%s/values: %s: %s %v", label, resp.Status, env.Error, err)
	}
	out = env.Data
	return out, nil
}

// LabelNames asks /api/v1/labels for the label names of the series match
// selects over [start, end].
func (a *API) LabelNames(ctx context.Context, match string, start, end time.Time) ([]string, error) {
	var out []string
	q := url.Values{"match[]": {match}, "start": {unix(start)}, "end": {unix(end)}}
	if err := a.get(ctx, "/api/v1/labels", q, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// QueryRange runs a range query.
func (a *API) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	q := url.Values{"query": {expr}, "start": {unix(start)}, "end": {unix(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	if err := a.get(ctx, "/api/v1/query_range", q, &data); err != nil {
		return nil, err
	}
	out := make([]Series, 0, len(data.Result))
	for _, r := range data.Result {
		s := Series{Labels: r.Metric}
		for _, v := range r.Values {
			if number(v[1]) {
				s.Points++
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// Query runs an instant query at t.
func (a *API) Query(ctx context.Context, expr string, t time.Time) ([]Series, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := a.get(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {unix(t)}}, &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector":
		var vs []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &vs); err != nil {
			return nil, err
		}
		out := make([]Series, 0, len(vs))
		for _, v := range vs {
			s := Series{Labels: v.Metric}
			if number(v.Value[1]) {
				s.Points = 1
			}
			out = append(out, s)
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, err
		}
		s := Series{Labels: map[string]string{}}
		if number(v[1]) {
			s.Points = 1
		}
		return []Series{s}, nil
	}
	return nil, fmt.Errorf("instant query %q: result type %q", expr, data.ResultType)
}

func number(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsNaN(f)
}
