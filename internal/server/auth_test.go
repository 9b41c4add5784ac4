package server

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// secrets of the test's token file, by role.
var testSecrets = map[string]string{"read": "sec-read", "agent": "sec-agent", "bound": "sec-bound", "operate": "sec-operate", "admin": "sec-admin"}

func writeTokens(t *testing.T) *auth.TokenFile {
	t.Helper()
	body := fmt.Sprintf(`- {name: grafana, role: read, sha256: %s}
- {name: agents, role: agent, sha256: %s}
- {name: rack-node-0, role: agent, sha256: %s, nodes: ["node-0*"]}
- {name: oncall, role: operate, sha256: %s}
- {name: root, role: admin, sha256: %s}
`, auth.HashSecret(testSecrets["read"]), auth.HashSecret(testSecrets["agent"]), auth.HashSecret(testSecrets["bound"]),
		auth.HashSecret(testSecrets["operate"]), auth.HashSecret(testSecrets["admin"]))
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := auth.OpenTokenFile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

func authedServer(t *testing.T) (*Server, *httptest.Server, *drain.LogActuator) {
	t.Helper()
	act := drain.NewLogActuator(io.Discard)
	s, err := New(Options{DataDir: t.TempDir(), Auth: auth.Options{Tokens: writeTokens(t)},
		Drain:     &DrainOptions{Actuator: act, ActuatorName: "log", PollInterval: 5 * time.Millisecond},
		Placement: &PlacementOptions{Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { ts.Close(); cancel(); <-done; s.Close(context.Background()) })
	return s, ts, act
}

func call(t *testing.T, method, url, secret, contentType string, body []byte, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(string(body)))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func healthReport(node string) []byte {
	b, _ := json.Marshal(healthreport.Report{Node: node, Time: time.Now().UTC(), State: telemetry.StateHealthy})
	return b
}

// TestEveryWriteAndControlEndpointIsGuarded: each write and control endpoint
// refuses no token and an unknown one (401) and a token one role short (403),
// and a refused request changes nothing; the right token gets through.
func TestEveryWriteAndControlEndpointIsGuarded(t *testing.T) {
	s, ts, act := authedServer(t)
	now := time.Now().Truncate(time.Millisecond)
	rw, err := realstore.EncodeWriteRequest(samples(now, 8))
	if err != nil {
		t.Fatal(err)
	}
	rwHdr := map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
	text := []byte(fmt.Sprintf("DCGM_FI_DEV_GPU_TEMP{Hostname=\"node-02\",gpu=\"0\",node=\"node-02\"} 40 %d\n", now.UnixMilli()))
	type endpoint struct {
		method, path, contentType string
		body                      []byte
		hdr                       map[string]string
		role                      string
		below                     string // the role one short, "" for read (below is no token)
		changed                   func() bool
	}
	count := func(q string) func() bool {
		return func() bool {
			v, err := s.Querier().Instant(context.Background(), q, now)
			return err == nil && len(v) > 0
		}
	}
	nodeKnown := func(n string) func() bool { return func() bool { _, ok := s.Drain().Node(n); return ok } }
	drained := func() bool { d, _, _ := act.State(context.Background(), "node-07"); return d }
	endpoints := []endpoint{
		{"POST", "/api/v1/write", "application/x-protobuf", rw, rwHdr, "agent", "read", count("DCGM_FI_DEV_GPU_UTIL")},
		{"POST", "/api/v1/import/prometheus", "text/plain", text, nil, "agent", "read", count("DCGM_FI_DEV_GPU_TEMP")},
		{"POST", APIPrefix + "/health", "application/json", healthReport("node-05"), nil, "agent", "read", nodeKnown("node-05")},
		{"POST", APIPrefix + "/drain", "application/json", []byte(`{"node":"node-07","reason":"bad fan"}`), nil, "operate", "agent", drained},
		{"POST", APIPrefix + "/place", "application/json", []byte(`{"job_id":"j1","gpus":1}`), nil, "operate", "agent", nil},
		{"POST", APIPrefix + "/release", "application/json", []byte(`{"job_id":"j1"}`), nil, "operate", "agent", nil},
		{"POST", APIPrefix + "/resume", "application/json", []byte(`{"node":"node-07"}`), nil, "operate", "agent", nil},
		{"POST", APIPrefix + "/budget/reset", "application/json", []byte(`{}`), nil, "admin", "operate", nil},
		{"GET", APIPrefix + "/nodes", "", nil, nil, "read", "", nil},
		{"GET", APIPrefix + "/audit", "", nil, nil, "read", "", nil},
		{"GET", "/api/v1/query?query=up", "", nil, nil, "read", "", nil},
		{"POST", "/api/v1/query", "application/x-www-form-urlencoded", []byte("query=up"), nil, "read", "", nil},
		{"POST", APIPrefix + "/extender/filter", "application/json", []byte(`{"pod":{},"nodenames":[]}`), nil, "read", "", nil},
		{"GET", "/metrics", "", nil, nil, "read", "", nil},
	}
	for _, e := range endpoints {
		t.Run(e.method+" "+e.path, func(t *testing.T) {
			refusals := []struct {
				secret string
				code   int
			}{{"", 401}, {"not-a-token", 401}}
			if e.below != "" {
				refusals = append(refusals, struct {
					secret string
					code   int
				}{testSecrets[e.below], 403})
			}
			for _, r := range refusals {
				code, body := call(t, e.method, ts.URL+e.path, r.secret, e.contentType, e.body, e.hdr)
				if code != r.code {
					t.Errorf("with %q: %d %s, want %d", r.secret, code, body, r.code)
				}
				if strings.Contains(body, "sec-") {
					t.Errorf("the refusal repeats a secret: %s", body)
				}
			}
			if e.changed != nil && e.changed() {
				t.Fatalf("a refused request changed the server's state")
			}
			code, body := call(t, e.method, ts.URL+e.path, testSecrets[e.role], e.contentType, e.body, e.hdr)
			// Place answers 503 until the first snapshot is built: let through.
			if code == 401 || code == 403 || (code >= 500 && !(code == 503 && e.path == APIPrefix+"/place")) {
				t.Errorf("with the %s token: %d %s", e.role, code, body)
			}
			if e.changed != nil {
				deadline := time.Now().Add(5 * time.Second)
				for !e.changed() && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if !e.changed() {
					t.Errorf("with the %s token: accepted (%d) but nothing changed", e.role, code)
				}
			}
		})
	}
	if code, _ := call(t, "GET", ts.URL+"/healthz", "", "", nil, nil); code != 200 {
		t.Errorf("/healthz without a token: %d; a liveness probe needs none", code)
	}
	// The audit log names the token, never the secret.
	recs, err := s.Drain().Audit(time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var actors []string
	for _, r := range recs {
		actors = append(actors, fmt.Sprintf("%+v", r))
	}
	all := strings.Join(actors, "\n")
	if !strings.Contains(all, "oncall") || strings.Contains(all, "sec-") {
		t.Errorf("audit log: want the operator token's name as actor and no secret:\n%s", all)
	}
}

// TestNodeBoundAgentToken: an agent token bound to node-0* speaks for those
// nodes only: its health push and its samples for gpu01 are refused (403) and
// change nothing; for node-01 they are taken.
func TestNodeBoundAgentToken(t *testing.T) {
	s, ts, _ := authedServer(t)
	bound := testSecrets["bound"]
	if code, body := call(t, "POST", ts.URL+APIPrefix+"/health", bound, "application/json", healthReport("gpu01"), nil); code != 403 || !strings.Contains(body, "rack-node-0") {
		t.Errorf("bound token pushing gpu01's health: %d %s, want 403 naming the token", code, body)
	}
	if _, ok := s.Drain().Node("gpu01"); ok {
		t.Error("the refused health push reached the drain controller")
	}
	if code, body := call(t, "POST", ts.URL+APIPrefix+"/health", bound, "application/json", healthReport("node-01"), nil); code != 202 {
		t.Errorf("bound token pushing node-01's health: %d %s", code, body)
	}
	now := time.Now().Truncate(time.Millisecond)
	rwHdr := map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
	mixed := []telemetry.Sample{
		{Name: telemetry.DCGMGPUUtil, Labels: telemetry.NewLabels("Hostname", "node-01", "gpu", "0", "node", "node-01"), Value: 1, Time: now},
		{Name: telemetry.DCGMGPUUtil, Labels: telemetry.NewLabels("Hostname", "gpu01", "gpu", "0", "node", "gpu01"), Value: 2, Time: now},
	}
	body, _ := realstore.EncodeWriteRequest(mixed)
	if code, msg := call(t, "POST", ts.URL+"/api/v1/write", bound, "application/x-protobuf", body, rwHdr); code != 403 || !strings.Contains(msg, `"gpu01"`) {
		t.Errorf("bound token writing gpu01's series: %d %s, want 403 naming the node", code, msg)
	}
	if v, err := s.Querier().Instant(context.Background(), "DCGM_FI_DEV_GPU_UTIL", now); err != nil || len(v) != 0 {
		t.Errorf("a refused write stored %v (%v): the request is all or nothing", v, err)
	}
	body, _ = realstore.EncodeWriteRequest(mixed[:1])
	if code, msg := call(t, "POST", ts.URL+"/api/v1/write", bound, "application/x-protobuf", body, rwHdr); code != 204 {
		t.Errorf("bound token writing node-01's series: %d %s", code, msg)
	}
	unnamed := []telemetry.Sample{{Name: "up", Labels: telemetry.NewLabels("job", "x"), Value: 1, Time: now}}
	body, _ = realstore.EncodeWriteRequest(unnamed)
	if code, msg := call(t, "POST", ts.URL+"/api/v1/write", bound, "application/x-protobuf", body, rwHdr); code != 403 || !strings.Contains(msg, "names no node") {
		t.Errorf("bound token writing a series without a node: %d %s", code, msg)
	}
}

// TestAccessTable pins RequiredRole for the paths it decides, including
// spellings that try to slip past it.
func TestAccessTable(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         auth.Role
	}{
		{"GET", "/healthz", auth.RoleNone},
		{"POST", "/healthz", auth.RoleAdmin},
		{"GET", "/", auth.RoleRead},
		{"GET", "/api/v1/query", auth.RoleRead},
		{"POST", "/api/v1/query_range", auth.RoleRead},
		{"POST", "/api/v1/write", auth.RoleAgent},
		{"POST", "/api/v1//write", auth.RoleAgent},
		{"POST", "/api/v1/./import/prometheus", auth.RoleAgent},
		{"POST", "/api/v1/admin/tsdb/delete_series", auth.RoleAdmin},
		{"GET", "/api/v1/admin/tsdb/snapshot", auth.RoleAdmin},
		{"PUT", "/api/v1/write", auth.RoleAdmin},
		{"DELETE", APIPrefix + "/nodes/x", auth.RoleAdmin},
		{"POST", APIPrefix + "/health", auth.RoleAgent},
		{"POST", APIPrefix + "/drain", auth.RoleOperate},
		{"POST", APIPrefix + "/../v1/drain", auth.RoleOperate},
		{"POST", APIPrefix + "/budget/reset", auth.RoleAdmin},
		{"POST", APIPrefix + "/something-new", auth.RoleAdmin},
		{"POST", "/api/v1/something-new", auth.RoleAdmin},
	} {
		r := httptest.NewRequest(tc.method, "http://x"+tc.path, nil)
		if got := RequiredRole(r); got != tc.want {
			t.Errorf("%s %s needs %s, want %s", tc.method, tc.path, got, tc.want)
		}
	}
}

func authInsecure() auth.Options { return auth.Options{Insecure: true} }
