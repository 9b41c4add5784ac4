package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/jobstats"
	"github.com/gpuwatch/gpuwatch/analyzer/jobstats/jobstatstest"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers/stragglerstest"
	"github.com/gpuwatch/gpuwatch/internal/auth"
)

// TestJobStatsAPI: the synthetic job of jobstatstest written through remote
// write into a server; GET /api/gpuwatch/v1/jobs/4242 answers its numbers
// (derived by hand in jobstatstest), an unknown job is a 404 naming it, bad
// parameters a 400 naming them, and the route needs the read role.
func TestJobStatsAPI(t *testing.T) {
	s, err := New(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	t0 := time.Now().Add(-140 * time.Minute).Truncate(time.Minute)
	remoteWriteFleet(t, ts.URL, jobstatstest.Samples(t0))

	get := func(job string, q url.Values) (*http.Response, string) {
		resp, err := http.Get(ts.URL + APIPrefix + "/jobs/" + job + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	win := url.Values{"from": {t0.Add(-time.Hour).Format(time.RFC3339)}, "to": {t0.Add(3 * time.Hour).Format(time.RFC3339)}}
	resp, b := get(jobstatstest.Job, win)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET jobs/4242: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var r jobstats.Result
	if err := json.Unmarshal([]byte(b), &r); err != nil {
		t.Fatal(err)
	}
	if want := "3 GPUs allocated, 1 did nothing, 1 idle for 30m0s or more; mean activity 34%; 1 Xid"; r.Verdict != want || len(r.GPUs) != 3 ||
		!r.Start.Equal(t0.Add(-time.Minute)) || r.GPUs[0].EnergyJ == nil || *r.GPUs[0].EnergyJ != 3.57e6 || !r.GPUs[1].DidNothing || r.GPUs[2].IdleSeconds != 3600 {
		t.Errorf("job 4242: %s", b)
	}
	// The default window (the last 7 days) finds it too; idle_for moves b0's stretch out.
	resp, b = get(jobstatstest.Job, url.Values{"idle_for": {"90m"}})
	if err := json.Unmarshal([]byte(b), &r); err != nil || resp.StatusCode != http.StatusOK || r.GPUs[2].IdleSeconds != 0 || r.GPUs[1].IdleSeconds != 7200 {
		t.Errorf("idle_for=90m: %d %s", resp.StatusCode, b)
	}

	for _, c := range []struct {
		job  string
		q    url.Values
		code int
		want string
	}{
		{"12345", win, http.StatusNotFound, `job \"12345\": no such job`},
		{"ml%2Ftrainer-0", win, http.StatusNotFound, `job \"ml/trainer-0\"`},
		{"4242", url.Values{"last": {"a week"}}, http.StatusBadRequest, `last \"a week\"`},
		{"4242", url.Values{"idle_below": {"200%"}}, http.StatusBadRequest, "idle_below"},
		{"4242", url.Values{"from": {t0.Format(time.RFC3339)}, "to": {t0.Add(-time.Hour).Format(time.RFC3339)}}, http.StatusBadRequest, "empty or reversed"},
	} {
		resp, b := get(c.job, c.q)
		if resp.StatusCode != c.code || !strings.Contains(b, c.want) {
			t.Errorf("%s?%s: %d %s, want %d with %q", c.job, c.q.Encode(), resp.StatusCode, b, c.code, c.want)
		}
	}
	if role := RequiredRole(httptest.NewRequest(http.MethodGet, APIPrefix+"/jobs/4242", nil)); role != auth.RoleRead {
		t.Errorf("GET jobs/4242 needs %v, want read", role)
	}
	if role := RequiredRole(httptest.NewRequest(http.MethodPost, APIPrefix+"/jobs/4242", nil)); role != auth.RoleAdmin {
		t.Errorf("POST jobs/4242 needs %v, want admin", role)
	}
}

// TestJobStatsStragglersAPI: GET /api/gpuwatch/v1/jobs/{id} names a job's
// stragglers (analyzer/stragglers' simulated fleet written by remote write):
// train-a's thermally throttled GPU 3 with its signals and throttle reason, in
// the verdict too; none for the healthy noisy pod ml/healthy.
func TestJobStatsStragglersAPI(t *testing.T) {
	s, err := New(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	t0 := time.Now().Add(-11 * time.Minute).Truncate(stragglerstest.Every)
	samples := stragglerstest.Fleet(t0)
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	remoteWriteFleet(t, ts.URL, samples)
	get := func(job string) jobstats.Result {
		t.Helper()
		resp, err := http.Get(ts.URL + APIPrefix + "/jobs/" + url.PathEscape(job) + "?last=1h")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r jobstats.Result
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET jobs/%s: %d %v", job, resp.StatusCode, err)
		}
		return r
	}
	a := get("train-a")
	if len(a.Stragglers) != 1 || a.Stragglers[0].UUID != "GPU-a3" || a.Stragglers[0].Index != "3" || len(a.Stragglers[0].Evidence) != 2 ||
		strings.Join(a.Stragglers[0].ThrottleReasons, ",") != "hw_thermal_slowdown" || !strings.Contains(a.Verdict, "1 straggler (GPU 3: ") {
		t.Errorf("train-a: stragglers %+v, verdict %q; want GPU 3 on two signals, hw_thermal_slowdown", a.Stragglers, a.Verdict)
	}
	if h := get("ml/healthy"); len(h.GPUs) != 8 || len(h.Stragglers) != 0 || strings.Contains(h.Verdict, "straggler") {
		t.Errorf("ml/healthy: %d GPUs, stragglers %+v, verdict %q; want 8 and none", len(h.GPUs), h.Stragglers, h.Verdict)
	}
}
