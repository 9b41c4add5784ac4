package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/api"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

func parseSecs(t *testing.T, s string) time.Time {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(int64(f * 1000)).UTC()
}

func withName(ls telemetry.Labels) telemetry.Labels {
	return telemetry.NewLabels(append([]string{"__name__", telemetry.DCGMGPUUtil}, flatten(ls)...)...)
}

func flatten(ls telemetry.Labels) []string {
	var kv []string
	for _, l := range ls {
		kv = append(kv, l.Name, l.Value)
	}
	return kv
}

// TestRecordedAnswers decodes answers recorded from VictoriaMetrics 1.79 and
// Prometheus 2.42 (testdata/, made by TestRecord) and checks the Querier sends
// the recorded request.
func TestRecordedAnswers(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) < 16 {
		t.Fatalf("%d recordings in testdata, want 16", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		server, kind, _ := strings.Cut(name, "-")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var rec recording
			if err := json.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			base := time.UnixMilli(rec.Base).UTC()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := r.ParseForm(); err != nil {
					t.Error(err)
				}
				if r.URL.Path != rec.Path {
					t.Errorf("path %s, recorded %s", r.URL.Path, rec.Path)
				}
				if kind != "badstep" {
					for k, v := range rec.Form {
						if got := r.Form[k]; !reflect.DeepEqual(got, v) {
							t.Errorf("parameter %s = %v, recorded %v", k, got, v)
						}
					}
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(rec.Status)
				_, _ = w.Write([]byte(rec.Body))
			}))
			defer srv.Close()
			q, err := remote.New(srv.URL, remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			f := func(k string) string { return rec.Form.Get(k) }
			var (
				vec store.Vector
				mat store.Matrix
			)
			if rec.Path == "/api/v1/query" {
				vec, err = q.Instant(ctx, f("query"), parseSecs(t, f("time")))
			} else {
				start, end := parseSecs(t, f("start")), parseSecs(t, f("end"))
				if end.Before(start) {
					start, end = end, start
				}
				step, _ := strconv.Atoi(f("step"))
				mat, err = q.Range(ctx, f("query"), store.Range{Start: start, End: end, Step: time.Duration(step) * time.Second})
			}
			if rec.Status != http.StatusOK {
				var rerr *remote.Error
				if !errors.As(err, &rerr) || rerr.StatusCode != rec.Status || rerr.Message == "" || rerr.Type == "" ||
					!strings.Contains(err.Error(), srv.URL+rec.Path) || !strings.Contains(rec.Body, jsonEscape(rerr.Message)) {
					t.Fatalf("err = %#v (%v), want the server's errorType and text and the URL", rerr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			at := base.Add(10 * 15 * time.Second)
			switch kind {
			case "vector":
				if len(vec) != embeddedtest.GPUsPerNode {
					t.Fatalf("%d samples, want 8", len(vec))
				}
				for g, s := range vec {
					want := telemetry.Sample{Name: telemetry.DCGMGPUUtil, Labels: withName(embeddedtest.GPULabels(0, g)), Value: embeddedtest.Util(0, g, 10), Time: at}
					if !reflect.DeepEqual(s, want) {
						t.Errorf("sample %d = %+v, want %+v", g, s, want)
					}
				}
			case "matrix":
				if len(mat) != 2 {
					t.Fatalf("%d series, want 2", len(mat))
				}
				for g, s := range mat {
					if !reflect.DeepEqual(s.Labels, withName(embeddedtest.GPULabels(0, g))) || len(s.Points) != recordedSteps {
						t.Fatalf("series %d: %s with %d points", g, s.Labels, len(s.Points))
					}
					for i, p := range s.Points {
						if want := (store.Point{T: base.Add(time.Duration(i) * 15 * time.Second), V: embeddedtest.Util(0, g, i)}); p != want {
							t.Fatalf("series %d point %d = %v, want %v", g, i, p, want)
						}
					}
				}
			case "aggregate":
				if len(mat) != 1 || !reflect.DeepEqual(mat[0].Labels, telemetry.NewLabels("Hostname", "node-00")) || len(mat[0].Points) != 5 {
					t.Fatalf("got %v", mat)
				}
				for k, p := range mat[0].Points {
					var sum float64
					for g := 0; g < embeddedtest.GPUsPerNode; g++ {
						sum += embeddedtest.Util(0, g, 4*k)
					}
					if want := (store.Point{T: base.Add(time.Duration(k) * time.Minute), V: sum}); p != want {
						t.Errorf("point %d = %v, want %v", k, p, want)
					}
				}
			case "scalar": // Prometheus: a scalar; VictoriaMetrics: a vector with no labels.
				if len(vec) != 1 || vec[0].Value != 2 || len(vec[0].Labels) != 0 || vec[0].Name != "" || !vec[0].Time.Equal(at) {
					t.Errorf("1+1 = %+v", vec)
				}
			case "nan": // Prometheus answers NaN; VictoriaMetrics drops NaN results.
				if server == "prometheus" && (len(vec) != 1 || !math.IsNaN(vec[0].Value) || vec[0].Name != "") {
					t.Errorf("NaN = %+v", vec)
				}
				if server == "victoriametrics" && len(vec) != 0 {
					t.Errorf("NaN = %+v", vec)
				}
			case "empty":
				if len(vec) != 0 || vec == nil {
					t.Errorf("empty = %#v, want an empty non-nil vector", vec)
				}
			case "badstep": // VictoriaMetrics answered a swapped range; the Querier asks a valid one.
			default:
				t.Fatalf("unknown recording kind %q", kind)
			}
		})
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

func TestNewErrors(t *testing.T) {
	for _, u := range []string{"", "vm:8428", "ftp://vm:8428", "http://", "http://vm:8428/?x=1", "http://vm:8428/#f", "http://[::1"} {
		if _, err := remote.New(u, remote.Options{}); err == nil || !strings.Contains(err.Error(), u) {
			t.Errorf("New(%q): err = %v, want one naming the URL", u, err)
		}
	}
	q, err := remote.New("http://vmselect:8481/select/0/prometheus/", remote.Options{})
	if err != nil || q.URL() != "http://vmselect:8481/select/0/prometheus" {
		t.Errorf("URL with a prefix: %v, %v", q, err)
	}
}

func TestTransportErrors(t *testing.T) {
	ctx := context.Background()
	at := time.Unix(1700000000, 0)
	for _, c := range []struct {
		name    string
		status  int
		body    string
		want    string
		typ     string
		usesGET bool
	}{
		{"html from a proxy", 502, "<html>bad gateway</html>", `not a Prometheus API response`, "", false},
		{"empty body", 200, "", `(empty body)`, "", false},
		{"error envelope", 422, `{"status":"error","errorType":"execution","error":"many-to-many matching not allowed"}`, "execution: many-to-many matching not allowed (HTTP 422)", "execution", false},
		{"bad point", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`, "value is not a string", "", true},
		{"bad value", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}`, `value "x"`, "", false},
		{"matrix to instant", 200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`, `"matrix", not a vector or scalar`, "", false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if (r.Method == http.MethodGet) != c.usesGET {
				t.Errorf("%s: method %s", c.name, r.Method)
			}
			if r.Header.Get("X-Scope-OrgID") != "fleet-a" {
				t.Errorf("%s: header not passed", c.name)
			}
			if r.FormValue("query") != "up" || r.FormValue("time") != "1700000000" || r.FormValue("timeout") != "120s" {
				t.Errorf("%s: form %v", c.name, r.Form)
			}
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		q, _ := remote.New(srv.URL, remote.Options{UseGET: c.usesGET, Header: http.Header{"X-Scope-OrgID": {"fleet-a"}}})
		_, err := q.Instant(ctx, "up", at)
		var rerr *remote.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), srv.URL+"/api/v1/query") || !errors.As(err, &rerr) || rerr.Type != c.typ {
			t.Errorf("%s: err = %v, want one containing %q and the URL, type %q", c.name, err, c.want, c.typ)
		}
		srv.Close()
	}
	// Nobody listening.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	q, _ := remote.New(srv.URL, remote.Options{Timeout: time.Second})
	if _, err := q.Instant(ctx, "up", at); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("closed server: err = %v", err)
	}
	// Local validation.
	if _, err := q.Range(ctx, "up", store.Range{Start: at, End: at.Add(-time.Second), Step: time.Second}); err == nil || !strings.Contains(err.Error(), "before start") {
		t.Errorf("end before start: %v", err)
	}
	if _, err := q.Range(ctx, "up", store.Range{Start: at, End: at}); err == nil || !strings.Contains(err.Error(), "step") {
		t.Errorf("zero step: %v", err)
	}
}

// queries are compared across backends.
var queries = []string{
	`DCGM_FI_DEV_GPU_UTIL`,
	`DCGM_FI_DEV_GPU_UTIL{Hostname="node-01",gpu=~"[0-3]"}`,
	`max by (Hostname) (DCGM_FI_DEV_GPU_UTIL)`,
	`count(DCGM_FI_DEV_GPU_UTIL > 50)`,
}

// compare asks want (the embedded store) and got the same instant and range
// queries over the fleet starting at base and wants the same answers.
func compare(t *testing.T, want, got store.Querier, base time.Time, steps int) {
	t.Helper()
	ctx := context.Background()
	end := base.Add(time.Duration(steps-1) * 15 * time.Second)
	for _, expr := range queries {
		for _, at := range []time.Time{base, base.Add(7 * time.Minute), end} {
			w, err := want.Instant(ctx, expr, at)
			if err != nil {
				t.Fatal(err)
			}
			g, err := got.Instant(ctx, expr, at)
			if err != nil {
				t.Fatal(err)
			}
			sortVector(w)
			if !reflect.DeepEqual(w, g) && !(len(w) == 0 && len(g) == 0) {
				t.Errorf("instant %s at %s:\n got %v\nwant %v", expr, at, g, w)
			}
		}
		r := store.Range{Start: base, End: end, Step: time.Minute}
		w, err := want.Range(ctx, expr, r)
		if err != nil {
			t.Fatal(err)
		}
		g, err := got.Range(ctx, expr, r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("range %s:\n got %v\nwant %v", expr, g, w)
		}
	}
}

func sortVector(v store.Vector) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j].Labels.String() < v[j-1].Labels.String(); j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

func openFleet(t *testing.T, base time.Time, steps int) (*embedded.Store, []telemetry.Sample) {
	t.Helper()
	s := embeddedtest.Open(t, embedded.Options{})
	data := embeddedtest.GPUUtil(2, base, steps, 15*time.Second)
	if err := s.Append(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	return s, data
}

// TestAgainstEmbeddedAPI reads the embedded store through gpuwatch's own HTTP API
// and wants exactly what the store answers directly.
func TestAgainstEmbeddedAPI(t *testing.T) {
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s, _ := openFleet(t, base, 240)
	srv := httptest.NewServer(api.NewHandler(s.Queryable(), s.Engine(), api.Options{}))
	defer srv.Close()
	for _, useGET := range []bool{false, true} {
		q, err := remote.New(srv.URL, remote.Options{UseGET: useGET})
		if err != nil {
			t.Fatal(err)
		}
		compare(t, s, q, base, 240)
		// Scalars and errors travel too.
		v, err := q.Instant(context.Background(), "1+1", base)
		if err != nil || len(v) != 1 || v[0].Value != 2 {
			t.Errorf("1+1 = %v, %v", v, err)
		}
		_, err = q.Instant(context.Background(), "sum(", base)
		var rerr *remote.Error
		if !errors.As(err, &rerr) || rerr.Type != "bad_data" || rerr.StatusCode != 400 || !strings.Contains(rerr.Message, "parse error") {
			t.Errorf("parse error: %v", err)
		}
	}
}

// realFleet writes the fleet's last 30 minutes into srv and waits until all of
// it is visible.
func realFleet(t *testing.T, srv *realstore.Server, write func([]telemetry.Sample)) (*embedded.Store, *remote.Querier, time.Time) {
	t.Helper()
	const steps = 120
	base := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	s, data := openFleet(t, base, steps)
	write(data)
	q, err := remote.New(srv.URL(), remote.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	realstore.Eventually(t, 15*time.Second, "all samples visible", func() bool {
		v, err := q.Instant(context.Background(), `sum(count_over_time(DCGM_FI_DEV_GPU_UTIL[1h]))`, base.Add(40*time.Minute))
		return err == nil && len(v) == 1 && v[0].Value == float64(len(data))
	})
	return s, q, base
}

func TestRealVictoriaMetrics(t *testing.T) {
	vm := realstore.StartVictoriaMetrics(t)
	s, q, base := realFleet(t, vm, vm.ImportSamples)
	compare(t, s, q, base, 120)
}

func TestRealPrometheus(t *testing.T) {
	p := realstore.StartPrometheus(t)
	s, q, base := realFleet(t, p, p.Write)
	compare(t, s, q, base, 120)
}
