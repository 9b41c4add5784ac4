package stragglers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
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
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

const sampleEvery = 15 * time.Second

// gpuSim is one simulated GPU: its healthy levels times its factors, with
// noise, and its throttle-reasons mask.
type gpuSim struct {
	node, uuid string
	index      int
	// Factors on the healthy SM clock, activity and power (1: healthy),
	// applied from lagFrom on (0: the whole window).
	clock, active, power float64
	lagFrom              time.Duration
	throttle             uint64
	noise                float64 // relative, uniform ±
	noSMActive           bool    // reports DCGM_FI_DEV_GPU_UTIL only
}

// fleet simulates the window [t0, t0+10m]:
//
//   - job train-a, 8 GPUs on node-1: GPU-a3 thermally throttled (SM clock
//     and power 30 % down, hw_thermal_slowdown);
//   - job train-b, 16 GPUs on node-2 and node-3: node-3 power capped (power
//     30 %, clock 15 % down, sw_power_cap);
//   - pod ml/healthy (Kubernetes attribution), 8 GPUs on node-4 reporting
//     GPU_UTIL only: per-GPU offsets up to ±4 % and ±8 % noise per sample,
//     nothing else;
//   - job train-e, 4 GPUs on node-5: GPU-e2 (a sick link) 45 % less busy at
//     the same clock for the last 6 minutes;
//   - job solo, 1 GPU on node-6: never compared.
func fleet(t0 time.Time) []telemetry.Sample {
	rng := rand.New(rand.NewPCG(16, 4))
	type job struct {
		id, pod, ns string
		gpus        []gpuSim
	}
	healthy := func(node, prefix string, from, n int) []gpuSim {
		var out []gpuSim
		for i := range n {
			out = append(out, gpuSim{node: node, uuid: fmt.Sprintf("GPU-%s%d", prefix, from+i), index: i, clock: 1, active: 1, power: 1, noise: 0.02})
		}
		return out
	}
	a := healthy("node-1", "a", 0, 8)
	a[3].clock, a[3].power, a[3].throttle = 0.7, 0.7, 0x40
	b := append(healthy("node-2", "b", 0, 8), healthy("node-3", "b", 8, 8)...)
	for i := 8; i < 16; i++ {
		b[i].clock, b[i].power, b[i].throttle = 0.85, 0.7, 0x4
	}
	c := healthy("node-4", "c", 0, 8)
	for i := range c {
		f := 0.96 + 0.08*float64(i)/7
		c[i].clock, c[i].active, c[i].power, c[i].noise, c[i].noSMActive = f, f, f, 0.08, true
	}
	e := healthy("node-5", "e", 0, 4)
	e[2].active, e[2].lagFrom = 0.55, 4*time.Minute
	jobs := []job{{id: "train-a", gpus: a}, {id: "train-b", gpus: b}, {pod: "healthy", ns: "ml", gpus: c},
		{id: "train-e", gpus: e}, {id: "solo", gpus: healthy("node-6", "s", 0, 1)}}

	var out []telemetry.Sample
	for k := range int(10 * time.Minute / sampleEvery) {
		at := t0.Add(time.Duration(k)*sampleEvery + 5*time.Second)
		for _, j := range jobs {
			for _, g := range j.gpus {
				ls := func(extra ...string) telemetry.Labels {
					return telemetry.NewLabels(append([]string{telemetry.LabelNode, g.node, telemetry.LabelGPUIndex, fmt.Sprint(g.index), telemetry.LabelGPUUUID, g.uuid}, extra...)...)
				}
				add := func(name string, v float64, ls telemetry.Labels) {
					out = append(out, telemetry.Sample{Name: name, Labels: ls, Value: v, Time: at})
				}
				f := func(factor float64) float64 {
					if at.Sub(t0) < g.lagFrom {
						factor = 1
					}
					return factor * (1 + g.noise*(2*rng.Float64()-1))
				}
				if j.id != "" {
					add(telemetry.MetricGPUAllocationInfo, 1, ls(telemetry.LabelJobID, j.id))
				} else {
					add(telemetry.MetricGPUAllocationInfo, 1, ls(telemetry.LabelPod, j.pod, telemetry.LabelNamespace, j.ns))
				}
				add(telemetry.DCGMSMClock, 1980*f(g.clock), ls())
				add(telemetry.DCGMPowerUsage, 690*f(g.power), ls())
				if g.noSMActive {
					add(telemetry.DCGMGPUUtil, 90*f(g.active), ls())
				} else {
					add(telemetry.DCGMProfSMActive, 0.9*f(g.active), ls())
				}
				add(telemetry.DCGMClockThrottleReasons, float64(g.throttle), ls())
			}
		}
	}
	return out
}

// want is each job's stragglers as "gpu:signal,signal:reason,reason", sorted.
var want = map[string][]string{
	"train-a":    {"GPU-a3:sm_clock,power:hw_thermal_slowdown"},
	"train-b":    {"GPU-b10:sm_clock,power:sw_power_cap", "GPU-b11:sm_clock,power:sw_power_cap", "GPU-b12:sm_clock,power:sw_power_cap", "GPU-b13:sm_clock,power:sw_power_cap", "GPU-b14:sm_clock,power:sw_power_cap", "GPU-b15:sm_clock,power:sw_power_cap", "GPU-b8:sm_clock,power:sw_power_cap", "GPU-b9:sm_clock,power:sw_power_cap"},
	"ml/healthy": nil,
	"train-e":    {"GPU-e2:sm_active:"},
}

func summary(j stragglers.Job) []string {
	var out []string
	for _, s := range j.Stragglers {
		var sig []string
		for _, e := range s.Evidence {
			sig = append(sig, e.Signal)
		}
		out = append(out, s.GPU+":"+strings.Join(sig, ",")+":"+strings.Join(s.ThrottleReasons, ","))
	}
	sort.Strings(out) // GPU-b10 before GPU-b8, as in want
	return out
}

// startServer is a gpuwatch server on loopback whose embedded store holds
// fleet(t0), written through remote write as agents ship.
func startServer(t *testing.T, t0 time.Time) (*server.Server, *httptest.Server) {
	t.Helper()
	srv, err := server.New(server.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	samples := fleet(t0)
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	for len(samples) > 0 { // two minutes a request
		n := sort.Search(len(samples), func(i int) bool { return !samples[i].Time.Before(samples[0].Time.Add(2 * time.Minute)) })
		body, err := realstore.EncodeWriteRequest(samples[:n])
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/v1/write", bytes.NewReader(body))
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("remote write: %s: %s", resp.Status, msg)
		}
		samples = samples[n:]
	}
	return srv, ts
}

// TestStragglersRealServer: the throttled GPU, the slow node's 8 GPUs and the
// sick link's GPU are named with their signals and throttle reasons; the
// healthy job, the healthy node and the single-GPU job are not.
func TestStragglersRealServer(t *testing.T) {
	t1 := time.Now().Add(-sampleEvery).Truncate(sampleEvery)
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
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stragglers\n got %q\nwant %q", got, want)
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
	if !reflect.DeepEqual(apiGot, want) {
		t.Errorf("API stragglers\n got %q\nwant %q", apiGot, want)
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
	} {
		if _, err := stragglers.ParseQuery(c.v, now, name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.v, err, c.want)
		}
	}
}
