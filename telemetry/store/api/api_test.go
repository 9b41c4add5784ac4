package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/api"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// The fleet every test here queries: 2 nodes × 8 GPUs of DCGM_FI_DEV_GPU_UTIL,
// a sample every 15 s for an hour.
const (
	nodes = 2
	steps = 240
	every = 15 * time.Second
)

var base = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func fleet(t testing.TB, at time.Time) []telemetry.Sample {
	return embeddedtest.GPUUtil(nodes, at, steps, every)
}

// newHandler serves an embedded store holding the fleet from base.
func newHandler(t testing.TB) http.Handler {
	t.Helper()
	s := embeddedtest.Open(t, embedded.Options{})
	if err := s.Append(context.Background(), fleet(t, base)); err != nil {
		t.Fatal(err)
	}
	return api.NewHandler(s.Queryable(), s.Engine(), api.Options{
		GPUWatchVersion: "v0.4.0-test",
		Now:             func() time.Time { return base.Add(30 * time.Minute) },
	})
}

// request is one HTTP request as Grafana sends it: GET with URL parameters, or a
// form POST.
type request struct {
	name, method, path string
	form               url.Values
}

func (rq request) do(t testing.TB, h http.Handler) (int, []byte) {
	t.Helper()
	var r *http.Request
	if rq.method == http.MethodPost {
		r = httptest.NewRequest(http.MethodPost, rq.path, strings.NewReader(rq.form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		target := rq.path
		if len(rq.form) > 0 {
			target += "?" + rq.form.Encode()
		}
		r = httptest.NewRequest(rq.method, target, nil)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if ct := w.Header().Get("Content-Type"); w.Code != http.StatusMethodNotAllowed && ct != "application/json" {
		t.Errorf("%s: Content-Type %q", rq.name, ct)
	}
	return w.Code, w.Body.Bytes()
}

func secs(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// grafanaRequests are what Grafana 10/11's Prometheus data source sends (its
// pkg/promlib client and query editor) for a data-source test and a dashboard
// panel over the fleet's hour.
func grafanaRequests(from time.Time) []request {
	to := from.Add((steps - 1) * every)
	panel := url.Values{"query": {`avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)`}, "start": {secs(from)}, "end": {secs(to)}, "step": {"15"}}
	return []request{
		// Save & test: an instant 1+1 at t=4 s, then buildinfo for the heuristics.
		{"health 1+1", http.MethodPost, "/api/v1/query", url.Values{"query": {"1+1"}, "time": {"4"}}},
		{"buildinfo", http.MethodGet, "/api/v1/status/buildinfo", nil},
		// A time-series panel.
		{"panel range", http.MethodPost, "/api/v1/query_range", panel},
		{"panel range GET", http.MethodGet, "/api/v1/query_range", panel},
		{"panel raw series", http.MethodPost, "/api/v1/query_range", url.Values{"query": {`DCGM_FI_DEV_GPU_UTIL{Hostname="node-01"}`}, "start": {secs(from)}, "end": {secs(to)}, "step": {"60"}}},
		{"panel exemplars", http.MethodPost, "/api/v1/query_exemplars", url.Values{"query": {`avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)`}, "start": {secs(from)}, "end": {secs(to)}}},
		// A table/stat panel: instant query at the end of the range.
		{"table instant", http.MethodPost, "/api/v1/query", url.Values{"query": {`max by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL)`}, "time": {secs(to)}}},
		// The query editor's metric browser and label filters.
		{"labels", http.MethodGet, "/api/v1/labels", url.Values{"start": {secs(from)}, "end": {secs(to)}}},
		{"metric names", http.MethodGet, "/api/v1/label/__name__/values", url.Values{"start": {secs(from)}, "end": {secs(to)}}},
		{"hostname values for a metric", http.MethodGet, "/api/v1/label/Hostname/values", url.Values{"match[]": {"DCGM_FI_DEV_GPU_UTIL"}, "start": {secs(from)}, "end": {secs(to)}}},
		{"series", http.MethodGet, "/api/v1/series", url.Values{"match[]": {`DCGM_FI_DEV_GPU_UTIL{gpu="0"}`}, "start": {secs(from)}, "end": {secs(to)}}},
		{"labels for a metric POST", http.MethodPost, "/api/v1/labels", url.Values{"match[]": {"DCGM_FI_DEV_GPU_UTIL"}, "start": {secs(from)}, "end": {secs(to)}}},
		{"metadata", http.MethodGet, "/api/v1/metadata", url.Values{"metric": {"DCGM_FI_DEV_GPU_UTIL"}}},
	}
}

type envelope struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

type sampleJSON struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
	Values [][]any           `json:"values"`
}

func decode(t testing.TB, name string, body []byte) envelope {
	t.Helper()
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("%s: answer is not JSON: %v: %s", name, err, body)
	}
	return env
}

func TestGrafanaDashboard(t *testing.T) {
	h := newHandler(t)
	reqs := grafanaRequests(base)
	answers := map[string][]byte{}
	for _, rq := range reqs {
		code, body := rq.do(t, h)
		if code != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", rq.name, code, body)
		}
		if env := decode(t, rq.name, body); env.Status != "success" || len(env.Warnings) != 0 {
			t.Fatalf("%s: %s", rq.name, body)
		}
		answers[rq.name] = body
	}

	// Exact bytes where the answer is small.
	for name, want := range map[string]string{
		"health 1+1":                   `{"status":"success","data":{"resultType":"scalar","result":[4,"2"]}}`,
		"panel exemplars":              `{"status":"success","data":[]}`,
		"labels":                       `{"status":"success","data":["DCGM_FI_DRIVER_VERSION","Hostname","UUID","__name__","device","gpu","modelName","pci_bus_id"]}`,
		"labels for a metric POST":     `{"status":"success","data":["DCGM_FI_DRIVER_VERSION","Hostname","UUID","__name__","device","gpu","modelName","pci_bus_id"]}`,
		"metric names":                 `{"status":"success","data":["DCGM_FI_DEV_GPU_UTIL"]}`,
		"hostname values for a metric": `{"status":"success","data":["node-00","node-01"]}`,
		"series": `{"status":"success","data":[` +
			`{"DCGM_FI_DRIVER_VERSION":"550.144.03","Hostname":"node-00","UUID":"GPU-00000000-0000-4000-8000-000000000000","__name__":"DCGM_FI_DEV_GPU_UTIL","device":"nvidia0","gpu":"0","modelName":"NVIDIA H100 80GB HBM3","pci_bus_id":"00000000:18:00.0"},` +
			`{"DCGM_FI_DRIVER_VERSION":"550.144.03","Hostname":"node-01","UUID":"GPU-00000001-0000-4000-8000-000000000000","__name__":"DCGM_FI_DEV_GPU_UTIL","device":"nvidia0","gpu":"0","modelName":"NVIDIA H100 80GB HBM3","pci_bus_id":"00000000:18:00.0"}]}`,
	} {
		if got := string(answers[name]); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}

	// The panel: one series per node, a point every 15 s, each the average of the
	// node's eight GPUs at that step.
	if string(answers["panel range"]) != string(answers["panel range GET"]) {
		t.Error("POST and GET of the same range query answer differently")
	}
	var m struct {
		ResultType string       `json:"resultType"`
		Result     []sampleJSON `json:"result"`
	}
	if err := json.Unmarshal(decode(t, "panel", answers["panel range"]).Data, &m); err != nil {
		t.Fatal(err)
	}
	if m.ResultType != "matrix" || len(m.Result) != nodes {
		t.Fatalf("panel: %s with %d series, want a matrix of %d", m.ResultType, len(m.Result), nodes)
	}
	for n, s := range m.Result {
		if !reflect.DeepEqual(s.Metric, map[string]string{"Hostname": embeddedtest.Hostname(n)}) {
			t.Errorf("panel series %d metric %v", n, s.Metric)
		}
		if len(s.Values) != steps {
			t.Fatalf("panel series %d: %d points, want %d", n, len(s.Values), steps)
		}
		for i, p := range s.Values {
			var sum float64
			for g := 0; g < embeddedtest.GPUsPerNode; g++ {
				sum += embeddedtest.Util(n, g, i)
			}
			wantT := float64(base.Add(time.Duration(i) * every).Unix())
			wantV := strconv.FormatFloat(sum/embeddedtest.GPUsPerNode, 'f', -1, 64)
			if p[0] != wantT || p[1] != wantV {
				t.Fatalf("panel series %d point %d = %v, want [%v %q]", n, i, p, wantT, wantV)
			}
		}
	}

	// The raw panel: the eight GPUs of node-01 with all their labels, one point a minute.
	m.Result = nil
	if err := json.Unmarshal(decode(t, "raw", answers["panel raw series"]).Data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Result) != embeddedtest.GPUsPerNode {
		t.Fatalf("raw panel: %d series, want 8", len(m.Result))
	}
	for g, s := range m.Result {
		want := map[string]string{"__name__": "DCGM_FI_DEV_GPU_UTIL"}
		for _, l := range embeddedtest.GPULabels(1, g) {
			want[l.Name] = l.Value
		}
		if !reflect.DeepEqual(s.Metric, want) {
			t.Errorf("raw series %d metric %v, want %v", g, s.Metric, want)
		}
		if len(s.Values) != 60 || s.Values[59][1] != strconv.FormatFloat(embeddedtest.Util(1, g, 236), 'f', -1, 64) {
			t.Errorf("raw series %d: %d points, last %v", g, len(s.Values), s.Values[len(s.Values)-1])
		}
	}

	// The table: one sample per GPU at the end of the range.
	m.Result = nil
	if err := json.Unmarshal(decode(t, "table", answers["table instant"]).Data, &m); err != nil {
		t.Fatal(err)
	}
	if m.ResultType != "vector" || len(m.Result) != nodes*embeddedtest.GPUsPerNode {
		t.Fatalf("table: %s of %d, want a vector of 16", m.ResultType, len(m.Result))
	}
	for _, s := range m.Result {
		n, _ := strconv.Atoi(strings.TrimPrefix(s.Metric["Hostname"], "node-"))
		g, _ := strconv.Atoi(s.Metric["gpu"])
		end := float64(base.Add((steps - 1) * every).Unix())
		if len(s.Metric) != 2 || s.Value[0] != end || s.Value[1] != strconv.FormatFloat(embeddedtest.Util(n, g, steps-1), 'f', -1, 64) {
			t.Errorf("table sample %v", s)
		}
	}

	// Buildinfo: a Prometheus version for Grafana, gpuwatch named, and no
	// "features" (Grafana would take it for Mimir).
	var bi map[string]string
	if err := json.Unmarshal(decode(t, "buildinfo", answers["buildinfo"]).Data, &bi); err != nil {
		t.Fatal(err)
	}
	if bi["version"] != "2.42.0" || bi["application"] != "gpuwatch" || bi["gpuwatchVersion"] != "v0.4.0-test" || bi["goVersion"] == "" {
		t.Errorf("buildinfo %v", bi)
	}
	if _, ok := bi["features"]; ok {
		t.Error("buildinfo has features")
	}

	// Metadata from the catalog.
	var md map[string][]map[string]string
	if err := json.Unmarshal(decode(t, "metadata", answers["metadata"]).Data, &md); err != nil {
		t.Fatal(err)
	}
	desc, _ := telemetry.LookupMetric(telemetry.DCGMGPUUtil)
	if len(md) != 1 || len(md[telemetry.DCGMGPUUtil]) != 1 || md[telemetry.DCGMGPUUtil][0]["type"] != "gauge" || md[telemetry.DCGMGPUUtil][0]["help"] != desc.Help {
		t.Errorf("metadata %v", md)
	}
}

func TestMetadataAll(t *testing.T) {
	h := newHandler(t)
	code, body := request{"metadata", http.MethodGet, "/api/v1/metadata", nil}.do(t, h)
	var md map[string][]map[string]string
	if err := json.Unmarshal(decode(t, "metadata", body).Data, &md); code != 200 || err != nil {
		t.Fatalf("HTTP %d %v %s", code, err, body)
	}
	if len(md) != len(telemetry.Metrics()) {
		t.Errorf("%d metrics described, catalog has %d", len(md), len(telemetry.Metrics()))
	}
	_, body = request{"metadata", http.MethodGet, "/api/v1/metadata", url.Values{"limit": {"3"}}}.do(t, h)
	md = nil
	if err := json.Unmarshal(decode(t, "metadata", body).Data, &md); err != nil || len(md) != 3 {
		t.Errorf("limit=3: %d metrics", len(md))
	}
}

func TestErrors(t *testing.T) {
	h := newHandler(t)
	start, end := secs(base), secs(base.Add(time.Hour))
	for _, c := range []struct {
		rq       request
		code     int
		typ      string
		contains string
	}{
		{request{"parse error", http.MethodPost, "/api/v1/query", url.Values{"query": {"sum("}}}, 400, "bad_data", `invalid parameter "query": 1:5: parse error`},
		{request{"empty query", http.MethodGet, "/api/v1/query", nil}, 400, "bad_data", `invalid parameter "query"`},
		{request{"bad time", http.MethodGet, "/api/v1/query", url.Values{"query": {"1"}, "time": {"yesterday"}}}, 400, "bad_data", `invalid parameter "time": Invalid time value for 'time': cannot parse "yesterday" to a valid timestamp`},
		{request{"bad timeout", http.MethodGet, "/api/v1/query", url.Values{"query": {"1"}, "timeout": {"soon"}}}, 400, "bad_data", `invalid parameter "timeout"`},
		{request{"no start", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "end": {end}, "step": {"15"}}}, 400, "bad_data", `invalid parameter "start": cannot parse "" to a valid timestamp`},
		{request{"end before start", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "start": {end}, "end": {start}, "step": {"15"}}}, 400, "bad_data", "end timestamp must not be before start time"},
		{request{"bad step", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "start": {start}, "end": {end}, "step": {"fast"}}}, 400, "bad_data", `invalid parameter "step": cannot parse "fast" to a valid duration`},
		{request{"zero step", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "start": {start}, "end": {end}, "step": {"0"}}}, 400, "bad_data", "zero or negative query resolution step"},
		{request{"too many points", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "start": {start}, "end": {secs(base.Add(24 * time.Hour))}, "step": {"1"}}}, 400, "bad_data", "exceeded maximum resolution of 11,000 points"},
		{request{"series without match", http.MethodGet, "/api/v1/series", nil}, 400, "bad_data", "no match[] parameter provided"},
		{request{"series match everything", http.MethodGet, "/api/v1/series", url.Values{"match[]": {`{gpu=~".*"}`}}}, 400, "bad_data", "at least one non-empty matcher"},
		{request{"bad selector", http.MethodGet, "/api/v1/labels", url.Values{"match[]": {`{gpu=}`}}}, 400, "bad_data", "parse error"},
		{request{"bad label name", http.MethodGet, "/api/v1/label/1gpu/values", nil}, 400, "bad_data", `invalid label name: "1gpu"`},
		{request{"bad limit", http.MethodGet, "/api/v1/labels", url.Values{"limit": {"x"}}}, 400, "bad_data", "limit"},
		{request{"exec error", http.MethodPost, "/api/v1/query", url.Values{"query": {`DCGM_FI_DEV_GPU_UTIL + on (Hostname) DCGM_FI_DEV_GPU_UTIL`}, "time": {secs(base)}}}, 422, "execution", "many-to-many matching not allowed"},
		{request{"unknown endpoint", http.MethodGet, "/api/v1/rules", nil}, 404, "not_found", "/api/v1/rules"},
	} {
		code, body := c.rq.do(t, h)
		env := decode(t, c.rq.name, body)
		if code != c.code || env.Status != "error" || env.ErrorType != c.typ || !strings.Contains(env.Error, c.contains) {
			t.Errorf("%s: HTTP %d %s, want %d %s containing %q", c.rq.name, code, body, c.code, c.typ, c.contains)
		}
		if strings.Contains(string(body), `"data"`) {
			t.Errorf("%s: error answer has data: %s", c.rq.name, body)
		}
	}
	// Label values are GET only, as in Prometheus; Grafana retries a 405 with GET.
	code, _ := request{"POST label values", http.MethodPost, "/api/v1/label/gpu/values", url.Values{}}.do(t, h)
	if code != http.StatusMethodNotAllowed {
		t.Errorf("POST label values: HTTP %d, want 405", code)
	}
}

func TestLimitsAndBounds(t *testing.T) {
	h := newHandler(t)
	// An hour after the data ends nothing matches.
	later := url.Values{"start": {secs(base.Add(3 * time.Hour))}, "end": {secs(base.Add(4 * time.Hour))}}
	_, body := request{"labels later", http.MethodGet, "/api/v1/label/gpu/values", later}.do(t, h)
	if string(body) != `{"status":"success","data":[]}` {
		t.Errorf("label values outside the data: %s", body)
	}
	// RFC 3339 bounds work like unix seconds.
	rfc := url.Values{"start": {base.Format(time.RFC3339)}, "end": {base.Add(time.Hour).Format(time.RFC3339Nano)}, "limit": {"3"}}
	_, body = request{"limited", http.MethodGet, "/api/v1/label/gpu/values", rfc}.do(t, h)
	if want := `{"status":"success","data":["0","1","2"],"warnings":["results truncated due to limit"]}`; string(body) != want {
		t.Errorf("limit 3:\n got %s\nwant %s", body, want)
	}
	_, body = request{"series limit", http.MethodGet, "/api/v1/series", url.Values{"match[]": {"DCGM_FI_DEV_GPU_UTIL"}, "limit": {"1"}}}.do(t, h)
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || len(env.Warnings) != 1 || strings.Count(string(env.Data), "__name__") != 1 {
		t.Errorf("series limit 1: %s", body)
	}
	// Two match[] sets are a union without duplicates.
	_, body = request{"two sets", http.MethodGet, "/api/v1/series", url.Values{"match[]": {`DCGM_FI_DEV_GPU_UTIL{gpu="1"}`, `DCGM_FI_DEV_GPU_UTIL{Hostname="node-00"}`}}}.do(t, h)
	if n := strings.Count(string(body), "__name__"); n != 9 {
		t.Errorf("union of gpu=1 (2) and node-00 (8): %d series, want 9", n)
	}
}

// TestFormatting checks values and timestamps are written as Prometheus writes
// them: strings, millisecond fractions, NaN and infinities.
func TestFormatting(t *testing.T) {
	s := embeddedtest.Open(t, embedded.Options{})
	at := time.UnixMilli(1700000000050)
	if err := s.Append(context.Background(), []telemetry.Sample{
		{Name: "gpuwatch_f", Labels: telemetry.NewLabels("k", "a<b>&\"c\""), Value: 0.5, Time: at},
	}); err != nil {
		t.Fatal(err)
	}
	h := api.NewHandler(s.Queryable(), s.Engine(), api.Options{})
	for expr, want := range map[string]string{
		`gpuwatch_f`:      `[{"metric":{"__name__":"gpuwatch_f","k":"a\u003cb\u003e\u0026\"c\""},"value":[1700000000.050,"0.5"]}]`,
		`gpuwatch_f/0`:    `[{"metric":{"k":"a\u003cb\u003e\u0026\"c\""},"value":[1700000000.050,"+Inf"]}]`,
		`-gpuwatch_f/0`:   `[{"metric":{"k":"a\u003cb\u003e\u0026\"c\""},"value":[1700000000.050,"-Inf"]}]`,
		`gpuwatch_f*0/0`:  `[{"metric":{"k":"a\u003cb\u003e\u0026\"c\""},"value":[1700000000.050,"NaN"]}]`,
		`gpuwatch_f*1e-9`: `[{"metric":{"k":"a\u003cb\u003e\u0026\"c\""},"value":[1700000000.050,"5e-10"]}]`,
		`gpuwatch_f*1e30`: `[{"metric":{"k":"a\u003cb\u003e\u0026\"c\""},"value":[1700000000.050,"5e+29"]}]`,
	} {
		_, body := request{expr, http.MethodGet, "/api/v1/query", url.Values{"query": {expr}, "time": {"1700000000.05"}}}.do(t, h)
		if want := `{"status":"success","data":{"resultType":"vector","result":` + want + `}}`; string(body) != want {
			t.Errorf("%s:\n got %s\nwant %s", expr, body, want)
		}
	}
	_, body := request{"string", http.MethodGet, "/api/v1/query", url.Values{"query": {`"hi"`}, "time": {"1.5"}}}.do(t, h)
	if want := `{"status":"success","data":{"resultType":"string","result":[1.500,"hi"]}}`; string(body) != want {
		t.Errorf("string:\n got %s\nwant %s", body, want)
	}
}

func TestServesOverHTTP(t *testing.T) {
	srv := httptest.NewServer(newHandler(t))
	defer srv.Close()
	resp, err := http.PostForm(srv.URL+"/api/v1/query", url.Values{"query": {"count(DCGM_FI_DEV_GPU_UTIL)"}, "time": {fmt.Sprint(base.Add(time.Minute).Unix())}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if want := fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"16"]}]}}`, base.Add(time.Minute).Unix()); string(body) != want {
		t.Errorf("got %s want %s", body, want)
	}
}
