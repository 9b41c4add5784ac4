package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/store/api"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// doHTTP sends rq to a real server at baseURL.
func doHTTP(t *testing.T, baseURL string, rq request) (int, []byte) {
	t.Helper()
	var (
		resp *http.Response
		err  error
	)
	if rq.method == http.MethodPost {
		resp, err = http.Post(baseURL+rq.path, "application/x-www-form-urlencoded", strings.NewReader(rq.form.Encode()))
	} else {
		target := baseURL + rq.path
		if len(rq.form) > 0 {
			target += "?" + rq.form.Encode()
		}
		resp, err = http.Get(target)
	}
	if err != nil {
		t.Fatalf("%s: %v", rq.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func parseJSON(t *testing.T, name string, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: not JSON: %v: %s", name, err, b)
	}
	return v
}

// TestSameAnswersAsPrometheus writes the same fleet into Prometheus 2.42 (remote
// write) and into the embedded store, replays Grafana's requests against both
// and wants the same answers: status codes, envelopes, values, timestamps, label
// sets, order.
func TestSameAnswersAsPrometheus(t *testing.T) {
	prom := realstore.StartPrometheus(t)
	// The last hour, so Prometheus's head takes all of it in one request.
	from := time.Now().UTC().Truncate(time.Minute).Add(-(steps - 1) * every)
	data := fleet(t, from)
	prom.Write(data)

	s := embeddedtest.Open(t, embedded.Options{})
	if err := s.Append(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	srv := api.NewHandler(s.Queryable(), s.Engine(), api.Options{})

	to := from.Add((steps - 1) * every)
	reqs := grafanaRequests(from)
	reqs = append(reqs,
		request{"rate over raw counters", http.MethodPost, "/api/v1/query_range", url.Values{"query": {`sum by (Hostname) (DCGM_FI_DEV_GPU_UTIL > 50)`}, "start": {secs(from)}, "end": {secs(to)}, "step": {"30s"}}},
		request{"instant RFC3339", http.MethodGet, "/api/v1/query", url.Values{"query": {`topk(3, DCGM_FI_DEV_GPU_UTIL)`}, "time": {from.Add(20 * time.Minute).Format(time.RFC3339)}}},
		request{"instant fractional", http.MethodGet, "/api/v1/query", url.Values{"query": {`count(DCGM_FI_DEV_GPU_UTIL)`}, "time": {secs(from) + ".25"}}},
		request{"no data", http.MethodPost, "/api/v1/query_range", url.Values{"query": {`DCGM_FI_DEV_POWER_USAGE`}, "start": {secs(from)}, "end": {secs(to)}, "step": {"60"}}},
		request{"series two sets", http.MethodGet, "/api/v1/series", url.Values{"match[]": {`DCGM_FI_DEV_GPU_UTIL{gpu="1"}`, `{Hostname="node-00",gpu=~"[23]"}`}}},
		request{"label values empty", http.MethodGet, "/api/v1/label/nosuch/values", nil},
		// Refusals: same status, errorType and text.
		request{"parse error", http.MethodPost, "/api/v1/query", url.Values{"query": {"sum("}}},
		request{"end before start", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "start": {secs(to)}, "end": {secs(from)}, "step": {"15"}}},
		request{"zero step", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "start": {secs(from)}, "end": {secs(to)}, "step": {"0"}}},
		request{"bad step", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "start": {secs(from)}, "end": {secs(to)}, "step": {"fast"}}},
		request{"bad time", http.MethodGet, "/api/v1/query", url.Values{"query": {"1"}, "time": {"yesterday"}}},
		request{"too many points", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"1"}, "start": {secs(from)}, "end": {secs(from.Add(24 * time.Hour))}, "step": {"1"}}},
		request{"series without match", http.MethodGet, "/api/v1/series", nil},
		request{"series match everything", http.MethodGet, "/api/v1/series", url.Values{"match[]": {`{gpu=~".*"}`}}},
		request{"bad label name", http.MethodGet, "/api/v1/label/1gpu/values", nil},
		request{"many-to-many", http.MethodPost, "/api/v1/query", url.Values{"query": {`DCGM_FI_DEV_GPU_UTIL + on (Hostname) DCGM_FI_DEV_GPU_UTIL`}, "time": {secs(to)}}},
	)
	for _, rq := range reqs {
		pc, pb := doHTTP(t, prom.URL(), rq)
		gc, gb := rq.do(t, srv)
		switch rq.name {
		case "buildinfo":
			// Every field Prometheus has, gpuwatch has.
			pv := parseJSON(t, rq.name, pb).(map[string]any)["data"].(map[string]any)
			gv := parseJSON(t, rq.name, gb).(map[string]any)["data"].(map[string]any)
			for k := range pv {
				if _, ok := gv[k]; !ok {
					t.Errorf("buildinfo: Prometheus has %q, gpuwatch has not", k)
				}
			}
			if pv["version"] != "2.42.0+ds" && pv["version"] != "2.42.0" {
				t.Logf("Prometheus reports version %v", pv["version"])
			}
			continue
		case "metadata":
			// Prometheus describes what it scrapes (nothing here); gpuwatch its
			// catalog. Same shape: an object of metric name to a list.
			if pc != gc || !bytes.HasPrefix(pb, []byte(`{"status":"success","data":{`)) || !bytes.HasPrefix(gb, []byte(`{"status":"success","data":{`)) {
				t.Errorf("metadata: Prometheus HTTP %d %s, gpuwatch HTTP %d %s", pc, pb, gc, gb)
			}
			continue
		}
		if pc != gc {
			t.Errorf("%s: Prometheus HTTP %d %s; gpuwatch HTTP %d %s", rq.name, pc, pb, gc, gb)
			continue
		}
		pv, gv := parseJSON(t, rq.name, pb), parseJSON(t, rq.name, gb)
		if rq.name == "many-to-many" {
			// The engines list the clashing series in different orders.
			pv.(map[string]any)["error"], gv.(map[string]any)["error"] = nil, nil
		}
		if !sameJSON(pv, gv) {
			t.Errorf("%s: answers differ\nPrometheus: %.1500s\ngpuwatch:   %.1500s", rq.name, pb, gb)
		}
	}
}

// sameJSON is reflect.DeepEqual, except that two strings that are both numbers
// may differ in the last bits: Prometheus 2.42 averages with a running mean,
// the engine gpuwatch embeds with a compensated sum, so avg() of the same
// samples can differ by an ulp or two.
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case string:
		b, ok := b.(string)
		if !ok {
			return false
		}
		if a == b {
			return true
		}
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		return err1 == nil && err2 == nil && math.Abs(x-y) <= 1e-12*math.Max(1, math.Abs(x))
	default:
		return a == b
	}
}
