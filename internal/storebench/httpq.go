package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// apiResponse is the part of a Prometheus query API answer the benchmarks read.
type apiResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// getAPI GETs a query API URL and decodes the answer; it returns the body's size.
func getAPI(ctx context.Context, u string) (*apiResponse, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	var m apiResponse
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, len(body), fmt.Errorf("GET %s: HTTP %d, not JSON: %.200s", u, resp.StatusCode, body)
	}
	if resp.StatusCode != http.StatusOK || m.Status != "success" {
		return nil, len(body), fmt.Errorf("GET %s: HTTP %d: %s", u, resp.StatusCode, m.Error)
	}
	return &m, len(body), nil
}

// queryValueAt runs an instant query at time at (Unix seconds) and returns the
// first sample's value and the number of series answered.
func queryValueAt(ctx context.Context, base, q, at string) (float64, int, error) {
	m, _, err := getAPI(ctx, base+"/api/v1/query?query="+url.QueryEscape(q)+"&time="+at)
	if err != nil {
		return 0, 0, err
	}
	if len(m.Data.Result) == 0 {
		return 0, 0, nil
	}
	r := m.Data.Result[0]
	if len(r.Value) != 2 {
		return 0, len(m.Data.Result), fmt.Errorf("query %q: sample %v is not [time, value]", q, r.Value)
	}
	s, _ := r.Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, len(m.Data.Result), err
}
