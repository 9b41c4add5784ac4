package datasource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/gpuwatch/gpuwatch/datasource"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// The secrets of the test servers' token file, by role.
const (
	readSecret    = "sec-grafana-read"
	agentSecret   = "sec-agents"
	operateSecret = "sec-oncall"
)

// gpuwatch is a real gpuwatch server on loopback with a token file: the
// embedded store, and whatever opts adds (drain controller, placement, fair
// share).
type gpuwatch struct {
	srv *server.Server
	ts  *httptest.Server
}

func startServer(t *testing.T, opts func(*server.Options)) *gpuwatch {
	t.Helper()
	body := fmt.Sprintf("- {name: grafana, role: read, sha256: %s}\n- {name: agents, role: agent, sha256: %s}\n- {name: oncall, role: operate, sha256: %s}\n",
		auth.HashSecret(readSecret), auth.HashSecret(agentSecret), auth.HashSecret(operateSecret))
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := auth.OpenTokenFile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The fixtures lie hours in the past, written after the server has
	// recorded its own series at the present.
	o := server.Options{DataDir: dir, StateDir: dir, Auth: auth.Options{Tokens: tf}, OutOfOrderWindow: 60 * time.Hour}
	if opts != nil {
		opts(&o)
	}
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx) }()
	t.Cleanup(func() { ts.Close(); cancel(); <-done; srv.Close(context.Background()) })
	return &gpuwatch{srv: srv, ts: ts}
}

// write remote-writes samples as agents ship them (with the agent token, ten
// minutes of samples a request, in time order).
func (g *gpuwatch) write(t *testing.T, samples []telemetry.Sample) {
	t.Helper()
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	for len(samples) > 0 {
		n := 1
		for n < len(samples) && samples[n].Time.Before(samples[0].Time.Add(10*time.Minute)) {
			n++
		}
		body, err := realstore.EncodeWriteRequest(samples[:n])
		if err != nil {
			t.Fatal(err)
		}
		code, msg := g.call(t, http.MethodPost, "/api/v1/write", agentSecret, body, map[string]string{
			"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf", "X-Prometheus-Remote-Write-Version": "0.1.0"})
		if code/100 != 2 {
			t.Fatalf("remote write: %d %s", code, msg)
		}
		samples = samples[n:]
	}
}

func (g *gpuwatch) call(t *testing.T, method, path, secret string, body []byte, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, g.ts.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// newDatasource is the plugin's instance for a data source pointing at url
// with token, made by its factory from settings as Grafana hands them over.
func newDatasource(t *testing.T, url, token string) *datasource.Datasource {
	t.Helper()
	settings := backend.DataSourceInstanceSettings{UID: "gpuwatch", Type: datasource.PluginID, Name: "gpuwatch", URL: url,
		JSONData: json.RawMessage(`{"timeoutSeconds": 60}`)}
	if token != "" {
		settings.DecryptedSecureJSONData = map[string]string{datasource.SecureToken: token}
	}
	inst, err := datasource.NewDatasource(context.Background(), settings)
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*datasource.Datasource)
	t.Cleanup(ds.Dispose)
	return ds
}

// query runs queries (refId → query JSON) through QueryData over [from, to]
// as Grafana sends a panel's queries, and returns the responses.
func query(t *testing.T, ds *datasource.Datasource, from, to time.Time, queries map[string]string) backend.Responses {
	t.Helper()
	req := &backend.QueryDataRequest{PluginContext: backend.PluginContext{PluginID: datasource.PluginID}}
	for ref, q := range queries {
		var m struct {
			QueryType string `json:"queryType"`
		}
		_ = json.Unmarshal([]byte(q), &m) // a query that is not JSON goes as it is
		qt := m.QueryType
		req.Queries = append(req.Queries, backend.DataQuery{RefID: ref, QueryType: qt, JSON: json.RawMessage(q),
			TimeRange: backend.TimeRange{From: from, To: to}, Interval: time.Minute, MaxDataPoints: 1000})
	}
	resp, err := ds.QueryData(context.Background(), req)
	if err != nil {
		t.Fatalf("QueryData: %v (a query's failure must be its own error response)", err)
	}
	if len(resp.Responses) != len(queries) {
		t.Fatalf("QueryData answered %d queries of %d", len(resp.Responses), len(queries))
	}
	return resp.Responses
}

// frames is the response's frames, failing the test on an error response.
func frames(t *testing.T, r backend.DataResponse, want int) data.Frames {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error response: %v (status %d)", r.Error, r.Status)
	}
	if len(r.Frames) != want {
		t.Fatalf("%d frames, want %d", len(r.Frames), want)
	}
	return r.Frames
}

// wantError checks r is an error response of status whose message holds each
// of parts.
func wantError(t *testing.T, name string, r backend.DataResponse, status backend.Status, parts ...string) {
	t.Helper()
	if r.Error == nil {
		t.Errorf("%s: no error, frames %d", name, len(r.Frames))
		return
	}
	if r.Status != status {
		t.Errorf("%s: status %d, want %d (%v)", name, r.Status, status, r.Error)
	}
	for _, p := range parts {
		if !strings.Contains(r.Error.Error(), p) {
			t.Errorf("%s: error %q does not say %q", name, r.Error, p)
		}
	}
}

// column is a frame's field by name, checked for its type and unit.
func column(t *testing.T, f *data.Frame, name string, typ data.FieldType, unit string) *data.Field {
	t.Helper()
	fd, i := f.FieldByName(name)
	if i < 0 {
		var names []string
		for _, x := range f.Fields {
			names = append(names, x.Name)
		}
		t.Fatalf("frame %q has no field %q (it has %q)", f.Name, name, names)
	}
	if fd.Type() != typ {
		t.Errorf("frame %q field %q: type %s, want %s", f.Name, name, fd.Type(), typ)
	}
	got := ""
	if fd.Config != nil {
		got = fd.Config.Unit
	}
	if got != unit {
		t.Errorf("frame %q field %q: unit %q, want %q", f.Name, name, got, unit)
	}
	return fd
}

// row finds the row whose string field key is value.
func row(t *testing.T, f *data.Frame, key, value string) int {
	t.Helper()
	fd, i := f.FieldByName(key)
	if i < 0 {
		t.Fatalf("frame %q has no field %q", f.Name, key)
	}
	for r := 0; r < fd.Len(); r++ {
		if s, ok := fd.At(r).(string); ok && s == value {
			return r
		}
	}
	t.Fatalf("frame %q: no row with %s %q", f.Name, key, value)
	return -1
}

func strs(f *data.Field) []string {
	out := make([]string, f.Len())
	for i := range out {
		out[i] = fmt.Sprint(f.At(i))
	}
	return out
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case *float64:
		if x == nil {
			return -1
		}
		return *x
	case int64:
		return float64(x)
	}
	panic(fmt.Sprintf("not a number: %T", v))
}

func near(a, b float64) bool { d := a - b; return d < 1e-6 && d > -1e-6 }

// inventory is what placement's snapshot reads of two idle HGX H100 nodes
// (place-0, place-1) at at: GPUs, memory, health, load, temperature and power,
// the fabric.
func inventory(at time.Time) []telemetry.Sample {
	var out []telemetry.Sample
	add := func(name string, v float64, kv ...string) {
		out = append(out, telemetry.Sample{Name: name, Labels: telemetry.NewLabels(kv...), Value: v, Time: at})
	}
	for n := range 2 {
		node := fmt.Sprintf("place-%d", n)
		add(telemetry.MetricTopologyNodeInfo, 1, "node", node, "leaf", "leaf-00", "spine", "spine-00")
		for g := range 8 {
			idx, uuid := fmt.Sprint(g), fmt.Sprintf("GPU-p%d-%d", n, g)
			add(telemetry.MetricGPUInfo, 1, "node", node, "gpu_index", idx, "gpu_uuid", uuid, "model", "NVIDIA H100 80GB HBM3")
			add(telemetry.DCGMFBTotal, 81559, "node", node, "gpu", idx, "UUID", uuid)
			add(telemetry.MetricGPUHealthState, 0, "node", node, "gpu_index", idx)
			add(telemetry.DCGMGPUUtil, 5, "node", node, "gpu", idx)
			add(telemetry.DCGMGPUTemp, 40, "node", node, "gpu", idx)
			add(telemetry.DCGMSlowdownTemp, 90, "node", node, "gpu", idx)
			add(telemetry.DCGMPowerUsage, 100, "node", node, "gpu", idx)
			add(telemetry.DCGMEnforcedPowerLimit, 700, "node", node, "gpu", idx)
			add(telemetry.MetricTopologyGPUInfo, 1, "node", node, "gpu_index", idx)
		}
	}
	return out
}

// manualDrain drains node through the API as a person does (operate token).
func (g *gpuwatch) manualDrain(t *testing.T, node, reason string) {
	t.Helper()
	b, _ := json.Marshal(drain.ManualRequest{Node: node, Reason: reason})
	if code, msg := g.call(t, http.MethodPost, server.APIPrefix+"/drain", operateSecret, b, map[string]string{"Content-Type": "application/json"}); code/100 != 2 {
		t.Fatalf("manual drain of %s: %d %s", node, code, msg)
	}
}
