package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

const prefix = "/api/gpuwatch/v1"

func serve(t *testing.T, s *Service) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	s.Register(mux, prefix)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// call sends body (a string or a value to marshal) and returns the status and
// the answer's bytes.
func call(t *testing.T, ts *httptest.Server, method, path string, body any, accept string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ts.URL+prefix+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// TestPlaceReleaseExplain drives the API over HTTP on a fleet of four 8-GPU nodes
// under two leaves: a 16-GPU dry run lands on one leaf and holds nothing; a
// reservation holds 8 GPUs until released; the decision explains itself as text
// or JSON.
func TestPlaceReleaseExplain(t *testing.T) {
	s, _ := testService(t, 4, 2, Options{})
	ts := serve(t, s)

	code, data := call(t, ts, "POST", "/place", `{"gpus": 16, "dry_run": true}`, "")
	var dry PlaceResponse
	if code != 200 || json.Unmarshal(data, &dry) != nil {
		t.Fatalf("dry run: %d %s", code, data)
	}
	if dry.Outcome != framework.OutcomePlaced || !dry.DryRun || len(dry.Assignments) != 2 || dry.Quality == nil ||
		dry.Quality.LeavesSpanned != 1 || dry.Reservation != nil || dry.ID == "" {
		t.Errorf("dry run answer: %s", data)
	}
	for _, a := range dry.Assignments {
		if len(a.GPUs) != 8 || len(a.UUIDs) != 8 || !strings.HasPrefix(a.UUIDs[0], "GPU-") {
			t.Errorf("assignment %+v: want 8 GPUs with UUIDs", a)
		}
	}
	if len(s.Engine().Reservations()) != 0 {
		t.Error("a dry run reserved GPUs")
	}

	code, data = call(t, ts, "POST", "/place", map[string]any{"gpus": 8, "gpus_per_node": 8, "lease": "10m", "job_id": "train-1"}, "")
	var res PlaceResponse
	if code != 200 || json.Unmarshal(data, &res) != nil || res.Outcome != framework.OutcomePlaced || res.Reservation == nil {
		t.Fatalf("reserve: %d %s", code, data)
	}
	if got := res.Reservation.Expires.Sub(time.Date(2026, 11, 1, 12, 10, 0, 0, time.UTC)); got != 0 {
		t.Errorf("lease ends %v; want 10 minutes after the service's clock", res.Reservation.Expires)
	}
	code, data = call(t, ts, "GET", "/placement/reservations", nil, "")
	if code != 200 || !strings.Contains(string(data), res.ID) || !strings.Contains(string(data), "train-1") {
		t.Errorf("reservations: %d %s", code, data)
	}
	// With 8 GPUs held, 32 GPUs no longer fit.
	code, data = call(t, ts, "POST", "/place", `{"gpus": 32, "dry_run": true}`, "")
	var full PlaceResponse
	if code != 200 || json.Unmarshal(data, &full) != nil || full.Outcome != framework.OutcomeUnschedulable || full.Reason == "" {
		t.Errorf("32 GPUs with 8 reserved: %d %s", code, data)
	}

	code, data = call(t, ts, "GET", "/explain/"+res.ID, nil, "text/plain")
	if code != 200 || !strings.HasPrefix(string(data), "decision "+res.ID) || !strings.Contains(string(data), "reservation "+res.ID) {
		t.Errorf("explain as text: %d %s", code, data)
	}
	code, data = call(t, ts, "GET", "/explain/"+res.ID, nil, "application/json, text/plain;q=0.5")
	var d framework.Decision
	if code != 200 || json.Unmarshal(data, &d) != nil || d.ID != res.ID || len(d.Candidates) == 0 {
		t.Errorf("explain as JSON: %d %s", code, data)
	}
	if code, data = call(t, ts, "GET", "/explain/nope", nil, ""); code != 404 || !strings.Contains(string(data), `no decision \"nope\"`) {
		t.Errorf("explain unknown: %d %s", code, data)
	}

	if code, data = call(t, ts, "POST", "/release", map[string]string{"id": res.ID}, ""); code != 200 {
		t.Errorf("release: %d %s", code, data)
	}
	if code, data = call(t, ts, "POST", "/release", map[string]string{"id": res.ID}, ""); code != 404 || !strings.Contains(string(data), "no reservation") {
		t.Errorf("release twice: %d %s", code, data)
	}
	code, data = call(t, ts, "POST", "/place", `{"gpus": 32, "dry_run": true}`, "")
	if code != 200 || !strings.Contains(string(data), `"outcome": "placed"`) {
		t.Errorf("32 GPUs after the release: %d %s", code, data)
	}
}

// TestPlaceBadRequests: every malformed body is a 400 whose message names the
// field and the problem.
func TestPlaceBadRequests(t *testing.T) {
	s, _ := testService(t, 2, 2, Options{})
	ts := serve(t, s)
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"empty", "/place", ``, "empty body"},
		{"syntax", "/place", `{"gpus": 8,}`, "invalid JSON at byte"},
		{"cut short", "/place", `{"gpus": 8`, "invalid JSON at byte 10: the body ends inside a value"},
		{"unknown field", "/place", `{"gpu": 8}`, `unknown field "gpu"`},
		{"wrong type", "/place", `{"gpus": "8"}`, `field "gpus": want an integer, got string`},
		{"bool type", "/place", `{"gpus": 8, "dry_run": "yes"}`, `field "dry_run": want true or false, got string`},
		{"bad lease", "/place", `{"gpus": 8, "lease": "10x"}`, `field "lease": invalid duration "10x"`},
		{"lease as number", "/place", `{"gpus": 8, "lease": 600}`, `field "lease": want a string, got number`},
		{"bad tier", "/place", `{"gpus": 8, "required_tier": "rack"}`, `field "required_tier": invalid tier "rack"`},
		{"no gpus", "/place", `{"dry_run": true}`, "request: gpus 0"},
		{"negative milli", "/place", `{"gpus": 1, "milli": -5}`, "request: milli -5"},
		{"uneven", "/place", `{"gpus": 9, "gpus_per_node": 4}`, "not a multiple of gpus_per_node 4"},
		{"trailing", "/place", `{"gpus": 8} {"gpus": 8}`, "trailing data"},
		{"array", "/place", `[1]`, "want a JSON object, got array"},
		{"release empty", "/release", `{}`, `field "id" is empty`},
		{"release unknown field", "/release", `{"ID2": "x"}`, `unknown field "ID2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, data := call(t, ts, "POST", tc.path, tc.body, "")
			var e struct{ Error string }
			if code != 400 || json.Unmarshal(data, &e) != nil || !strings.Contains(e.Error, tc.want) {
				t.Errorf("%s %s: %d %s; want 400 with %q", tc.path, tc.body, code, data, tc.want)
			}
		})
	}
}

// TestPlaceBeforeFirstSnapshot: until the feeder has read the store, placing is
// 503 with the reason, and the summary says the snapshot is not fresh.
func TestPlaceBeforeFirstSnapshot(t *testing.T) {
	s, err := New(Options{Querier: failingStore{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(context.Background()); err == nil {
		t.Fatal("refresh from a failing store succeeded")
	}
	ts := serve(t, s)
	code, data := call(t, ts, "POST", "/place", `{"gpus": 1}`, "")
	if code != 503 || !strings.Contains(string(data), "no placement snapshot yet") || !strings.Contains(string(data), "connection refused") {
		t.Errorf("place before the first snapshot: %d %s", code, data)
	}
	code, data = call(t, ts, "GET", "/placement/snapshot", nil, "")
	var sum SnapshotSummary
	if code != 200 || json.Unmarshal(data, &sum) != nil || sum.Fresh || !strings.Contains(sum.FreshError, "none built yet") || sum.LastError == "" {
		t.Errorf("summary: %d %s", code, data)
	}
	if !errors.Is(s.Fresh(), ErrStale) {
		t.Errorf("Fresh: %v; want ErrStale", s.Fresh())
	}
}

// TestSnapshotSummary counts what the snapshot holds, and its age.
func TestSnapshotSummary(t *testing.T) {
	s, clock := testService(t, 3, 2, Options{})
	ts := serve(t, s)
	*clock = clock.Add(5 * time.Second)
	code, data := call(t, ts, "GET", "/placement/snapshot?nodes=true", nil, "")
	var sum SnapshotSummary
	if code != 200 || json.Unmarshal(data, &sum) != nil {
		t.Fatalf("%d %s", code, data)
	}
	// 3 nodes × 8 GPUs, all fresh and free; two leaves (2 + 1 nodes).
	if sum.Nodes != 3 || sum.GPUs != 24 || sum.SchedulableGPUs != 24 || sum.FreeGPUs != 24 || sum.Stale != (StaleCounts{}) ||
		sum.Domains["leaf"] != 2 || sum.Models["NVIDIA H100 80GB HBM3"] != 24 || !sum.Fresh || sum.AgeSeconds != 5 ||
		len(sum.NodeList) != 3 || sum.NodeList[2].Location.Leaf != "leaf-01" || sum.Queries == 0 {
		t.Errorf("summary: %s", data)
	}
	if code, data = call(t, ts, "GET", "/placement/snapshot?nodes=maybe", nil, ""); code != 400 || !strings.Contains(string(data), `nodes=\"maybe\"`) {
		t.Errorf("bad nodes parameter: %d %s", code, data)
	}
}

// TestRefreshKeepsLastGood: when the store fails, the engine keeps the last
// snapshot, the error is counted and shown, and past MaxAge the service is
// stale.
func TestRefreshKeepsLastGood(t *testing.T) {
	sw := &switchStore{}
	s, clock := testService(t, 2, 2, Options{Querier: sw, Interval: time.Second})
	before := s.Engine().Snapshot()
	sw.failing = true
	*clock = clock.Add(2 * time.Second)
	if err := s.Refresh(context.Background()); err == nil {
		t.Fatal("refresh from a failing store succeeded")
	}
	if s.Engine().Snapshot() != before || s.Fresh() != nil {
		t.Errorf("after one failure: snapshot replaced %v, fresh %v; want the last good one, still fresh", s.Engine().Snapshot() != before, s.Fresh())
	}
	*clock = clock.Add(2 * time.Second) // 4 s old, MaxAge 3 s
	if err := s.Fresh(); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Fresh past MaxAge: %v", err)
	}
	code, data := call(t, serve(t, s), "POST", "/place", `{"gpus": 1, "dry_run": true}`, "")
	if code != 200 || !strings.Contains(string(data), "placement snapshot is stale: 4s old") {
		t.Errorf("place on a stale snapshot: %d %s; want placed with a note", code, data)
	}
	if got := testutil.ToFloat64(s.metrics.feedErrors.WithLabelValues("store")); got != 1 {
		t.Errorf("feed errors %v; want 1", got)
	}
	sw.failing = false
	if err := s.Refresh(context.Background()); err != nil || s.Fresh() != nil {
		t.Errorf("after recovery: %v, fresh %v", err, s.Fresh())
	}
}

// TestAllocationsSourceFailure: a failing scheduler source does not stop the
// cycle; the store's view is used and the failure is shown and counted.
func TestAllocationsSourceFailure(t *testing.T) {
	s, _ := testService(t, 1, 1, Options{Allocations: func(context.Context) ([]snapshot.Allocation, error) {
		return nil, errors.New("scontrol: timed out")
	}})
	sum := s.Summary(context.Background(), false)
	if sum.GPUs != 8 || len(sum.Warnings) != 1 || !strings.Contains(sum.Warnings[0], "scontrol: timed out") {
		t.Errorf("summary %+v", sum)
	}
	if got := testutil.ToFloat64(s.metrics.feedErrors.WithLabelValues("allocations")); got != 1 {
		t.Errorf("allocation errors %v; want 1", got)
	}
}

// TestCollector: the service's metrics register on one registry with the
// engine's and pass promlint.
func TestCollector(t *testing.T) {
	s, _ := testService(t, 2, 2, Options{})
	ts := serve(t, s)
	call(t, ts, "POST", "/place", `{"gpus": 4, "dry_run": true}`, "")
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(s.Collector()); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	n, err := testutil.GatherAndCount(reg, "gpuwatch_placement_snapshot_gpus", "gpuwatch_placement_decisions_total", "gpuwatch_placement_api_requests_total")
	if err != nil || n != 3 {
		t.Errorf("series: %d, %v; want 3", n, err)
	}
	if got := testutil.ToFloat64(s.metrics.gpus); got != 16 {
		t.Errorf("snapshot GPUs %v; want 16", got)
	}
}

// TestExtenderThroughService: the extender mounted by Register judges nodes from
// the service's snapshot, and fails open once the snapshot is older than MaxAge.
func TestExtenderThroughService(t *testing.T) {
	s, clock := testService(t, 2, 2, Options{})
	ts := serve(t, s)
	args := `{"Pod": {"metadata": {"name": "p", "namespace": "ml"}, "spec": {"containers": [{"name": "c",
		"resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}, "NodeNames": ["node-00", "node-01"]}`
	code, data := call(t, ts, "POST", "/extender/prioritize", args, "")
	var pl []struct {
		Host  string
		Score int64
	}
	if code != 200 || json.Unmarshal(data, &pl) != nil || len(pl) != 2 || pl[0].Score < 1 || pl[1].Score < 1 {
		t.Fatalf("prioritize on a fresh snapshot: %d %s", code, data)
	}
	// 8 GPUs reserved on one node: the filter now rejects it for capacity.
	code, data = call(t, ts, "POST", "/place", `{"gpus": 8, "candidates": ["node-00"]}`, "")
	if code != 200 || !strings.Contains(string(data), `"placed"`) {
		t.Fatalf("reserve node-00: %d %s", code, data)
	}
	code, data = call(t, ts, "POST", "/extender/filter", args, "")
	if code != 200 || !strings.Contains(string(data), `"NodeNames":["node-01"]`) || !strings.Contains(string(data), `"node-00":"gpuwatch capacity`) {
		t.Errorf("filter with node-00 reserved: %d %s", code, data)
	}
	*clock = clock.Add(time.Minute) // MaxAge is 30 s
	code, data = call(t, ts, "POST", "/extender/filter", args, "")
	if code != 200 || !strings.Contains(string(data), `"NodeNames":["node-00","node-01"]`) {
		t.Errorf("filter on a stale snapshot: %d %s; want every node to pass", code, data)
	}
}
