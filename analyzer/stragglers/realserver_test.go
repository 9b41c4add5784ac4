package stragglers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers/stragglerstest"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

func summary(j stragglers.Job) []string { return stragglerstest.Summary(j) }

// startServer is a gpuwatch server on loopback whose embedded store holds
// fleet(t0), written through remote write as agents ship.
func startServer(t *testing.T, t0 time.Time) (*server.Server, *httptest.Server) {
	t.Helper()
	// The server records its own series (gpuwatch_straggler_gpu among them)
	// into its store every 200 ms once it runs.
	srv, err := server.New(server.Options{DataDir: t.TempDir(), SelfInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	samples := stragglerstest.Fleet(t0)
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	realstore.RemoteWrite(t, ts.URL, samples, 2*time.Minute) // two minutes a request
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv, ts
}

// TestStragglersRealServer: the throttled GPU, the slow node's 8 GPUs and the
// sick link's GPU are named with their signals and throttle reasons; the
// healthy job, the healthy node and the single-GPU job are not.
func TestStragglersRealServer(t *testing.T) {
	t1 := time.Now().Add(-stragglerstest.Every).Truncate(stragglerstest.Every)
	t0 := t1.Add(-10 * time.Minute)
	srv, ts := startServer(t, t0)

	r, err := stragglers.Compute(context.Background(), srv.Querier(), stragglers.Options{From: t0, To: t1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, j := range r.Jobs {
		got[j.JobID] = summary(j)
		for _, s := range j.Stragglers {
			for _, e := range s.Evidence {
				t.Logf("%s %s %s: %s %.3g against %.3g, %.1f%% behind for %gs", j.JobID, s.Node, s.GPU, e.Signal, e.Median, e.Reference, 100*e.Lag, e.BehindSeconds)
			}
		}
	}
	if !reflect.DeepEqual(got, stragglerstest.Want) {
		t.Errorf("stragglers\n got %q\nwant %q", got, stragglerstest.Want)
	}
	nodes := map[string]int{}
	for _, j := range r.Jobs {
		nodes[j.JobID] = j.Nodes*100 + j.GPUs
	}
	if w := map[string]int{"train-a": 108, "train-b": 216, "ml/healthy": 108, "train-e": 104}; !reflect.DeepEqual(nodes, w) {
		t.Errorf("nodes*100+gpus by job %v, want %v", nodes, w)
	}
	for _, j := range r.Jobs {
		for _, s := range j.Stragglers {
			for _, e := range s.Evidence {
				var lo, hi float64
				switch {
				case s.GPU == "GPU-e2":
					lo, hi = 0.35, 0.55
					// It lagged for the last 6 minutes, give or take the
					// one-minute smoothing.
					if e.BehindSeconds < 300 || e.BehindSeconds > 420 {
						t.Errorf("%s behind for %gs, want about 360", s.GPU, e.BehindSeconds)
					}
				case j.JobID == "train-b" && e.Signal == stragglers.SignalSMClock:
					lo, hi = 0.12, 0.18
				default:
					lo, hi = 0.27, 0.33
				}
				if e.Lag < lo || e.Lag > hi {
					t.Errorf("%s %s lag %.3f, want %.2f to %.2f", s.GPU, e.Signal, e.Lag, lo, hi)
				}
			}
		}
	}

	// The healthy job's GPUs do differ: with a 5 % gap and hardly any MAD
	// margin, its slowest is named; the defaults keep it quiet.
	r5, err := stragglers.Compute(context.Background(), srv.Querier(), stragglers.Options{From: t0, To: t1, MinGap: 0.05, MADs: 0.01, Job: "ml/healthy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r5.Jobs) != 1 || len(r5.Jobs[0].Stragglers) == 0 || r5.Jobs[0].Stragglers[0].GPU != "GPU-c0" {
		t.Errorf("ml/healthy with a 5 %% gap: %+v, want GPU-c0 named", r5.Jobs)
	}

	// A minimum duration longer than the sick link's lag drops it.
	r8, err := stragglers.Compute(context.Background(), srv.Querier(), stragglers.Options{From: t0, To: t1, MinDuration: 8 * time.Minute, Job: "train-e"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r8.Jobs) != 1 || len(r8.Jobs[0].Stragglers) != 0 {
		t.Errorf("train-e with an 8-minute minimum: %+v, want the job without stragglers", r8.Jobs)
	}

	// The API answers the same report.
	v := stragglers.Options{From: t0, To: t1}.Query()
	var api stragglers.Report
	getJSON(t, ts.URL+server.APIPrefix+"/stragglers?"+v.Encode(), http.StatusOK, &api)
	apiGot := map[string][]string{}
	for _, j := range api.Jobs {
		apiGot[j.JobID] = summary(j)
	}
	if !reflect.DeepEqual(apiGot, stragglerstest.Want) {
		t.Errorf("API stragglers\n got %q\nwant %q", apiGot, stragglerstest.Want)
	}
	var bad map[string]string
	getJSON(t, ts.URL+server.APIPrefix+"/stragglers?min_gap=150%25", http.StatusBadRequest, &bad)
	if !strings.Contains(bad["error"], "min_gap") {
		t.Errorf("bad min_gap answered %q, want an error naming min_gap", bad["error"])
	}
	if role := server.RequiredRole(httptest.NewRequest(http.MethodGet, server.APIPrefix+"/stragglers", nil)); role != auth.RoleRead {
		t.Errorf("GET stragglers needs %v, want the read role", role)
	}

	// /metrics has gpuwatch_straggler_gpu for the last 10 minutes.
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, stragglers.MetricStragglerGPU+"{") {
			lines = append(lines, l)
		}
	}
	a3 := stragglers.MetricStragglerGPU + `{gpu_uuid="GPU-a3",job_id="train-a",node="node-1",signal="sm_clock"} 0.`
	if !strings.Contains(string(body), a3) || len(lines) < 17 || strings.Contains(string(body), `job_id="ml/healthy"`) {
		t.Errorf("/metrics straggler lines:\n%s\nwant 17 or more, with %s and none of ml/healthy", strings.Join(lines, "\n"), a3)
	}
}

// TestStragglersSeriesInStore: the server writes gpuwatch_straggler_gpu into
// its own store, where rules and dashboards read it.
func TestStragglersSeriesInStore(t *testing.T) {
	t1 := time.Now().Add(-stragglerstest.Every).Truncate(stragglerstest.Every)
	srv, _ := startServer(t, t1.Add(-10*time.Minute))
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := srv.Querier().Instant(context.Background(), stragglers.MetricStragglerGPU+`{job_id="train-b",signal="power"}`, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]int{}
		for _, s := range v {
			nodes[s.Labels.Get("node")]++
			if s.Labels.Get("job") != server.SelfJob || s.Value < 0.25 || s.Value > 0.35 {
				t.Errorf("stored %s = %g, want job=%q and a lag near 0.3", s.Labels, s.Value, server.SelfJob)
			}
		}
		if reflect.DeepEqual(nodes, map[string]int{"node-3": 8}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store has train-b's power stragglers by node %v, want node-3's 8 GPUs", nodes)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func getJSON(t *testing.T, u string, code int, into any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != code {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s, want %d", u, resp.Status, b, code)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// TestParseQuery: the API's parameters, and errors naming the bad one.
func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	name := func(p string) string { return "--" + strings.ReplaceAll(p, "_", "-") }
	o, err := stragglers.ParseQuery(url.Values{stragglers.ParamMinGap: {"15%"}, stragglers.ParamMinDuration: {"3m"}, stragglers.ParamJob: {"j1"}}, now, name)
	if err != nil {
		t.Fatal(err)
	}
	if !o.To.Equal(now) || !o.From.Equal(now.Add(-10*time.Minute)) || o.MinGap != 0.15 || o.MinDuration != 3*time.Minute || o.Job != "j1" {
		t.Errorf("parsed %+v", o)
	}
	back, err := stragglers.ParseQuery(o.Query(), now, name)
	if err != nil || !reflect.DeepEqual(back, o) {
		t.Errorf("round trip %+v, %v; want %+v", back, err, o)
	}
	for _, c := range []struct {
		v    url.Values
		want string
	}{
		{url.Values{stragglers.ParamMinGap: {"0"}}, "--min-gap"},
		{url.Values{stragglers.ParamMinGap: {"abc"}}, "--min-gap"},
		{url.Values{stragglers.ParamMinDuration: {"-1m"}}, "--min-duration"},
		{url.Values{report.ParamLast: {"x"}}, "--last"},
		{url.Values{report.ParamLast: {"10s"}}, "shorter than a step"},
	} {
		if _, err := stragglers.ParseQuery(c.v, now, name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.v, err, c.want)
		}
	}
}
