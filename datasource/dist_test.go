package datasource_test

import (
	"context"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/gpuwatch/gpuwatch/analyzer/jobstats/jobstatstest"
	"github.com/gpuwatch/gpuwatch/datasource"
)

// pluginJSON is what Grafana reads of plugin.json to load a backend data
// source.
type pluginJSON struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	ID         string `json:"id"`
	Backend    bool   `json:"backend"`
	Executable string `json:"executable"`
	Metrics    bool   `json:"metrics"`
	Info       struct {
		Description string `json:"description"`
		Author      struct {
			Name string `json:"name"`
		} `json:"author"`
		Logos struct {
			Small string `json:"small"`
			Large string `json:"large"`
		} `json:"logos"`
		Version string `json:"version"`
		Updated string `json:"updated"`
	} `json:"info"`
	Dependencies struct {
		GrafanaDependency string `json:"grafanaDependency"`
	} `json:"dependencies"`
}

// TestDist: `make grafana-plugin` builds the directory Grafana loads —
// plugin.json naming this plugin and its executable, module.js, the logo,
// the README, and the backend for linux/amd64 — and the backend, started as
// Grafana starts it (hashicorp/go-plugin, the SDK's handshake, gRPC), answers
// CheckHealth and QueryData against a real server.
func TestDist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin (about a minute of CPU)")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed: %v", err)
	}
	dist := t.TempDir()
	cmd := exec.Command("make", "-C", "..", "grafana-plugin", "GRAFANA_DIST="+dist, "GRAFANA_PLUGIN_VERSION=1.2.3")
	// Under make test, not the outer make's flags and variables.
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make grafana-plugin: %v\n%s", err, out)
	}

	raw, err := os.ReadFile(filepath.Join(dist, "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p pluginJSON
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("plugin.json: %v", err)
	}
	switch {
	case p.Type != "datasource", p.ID != datasource.PluginID, !p.Backend, !p.Metrics, p.Name == "", p.Info.Description == "", p.Info.Author.Name == "":
		t.Errorf("plugin.json: %+v", p)
	case p.Executable != "gpx_gpuwatch":
		t.Errorf("plugin.json: executable %q, want gpx_gpuwatch", p.Executable)
	case p.Info.Version != "1.2.3":
		t.Errorf("plugin.json: version %q, want the make variable's 1.2.3", p.Info.Version)
	case !regexp.MustCompile(`^\d{4}-\d\d-\d\d$`).MatchString(p.Info.Updated):
		t.Errorf("plugin.json: updated %q, want a date", p.Info.Updated)
	case !strings.HasPrefix(p.Dependencies.GrafanaDependency, ">="):
		t.Errorf("plugin.json: grafanaDependency %q", p.Dependencies.GrafanaDependency)
	}
	for _, f := range []string{"module.js", "README.md", p.Info.Logos.Small, p.Info.Logos.Large} {
		if st, err := os.Stat(filepath.Join(dist, f)); err != nil || st.Size() == 0 {
			t.Errorf("dist/%s: %v", f, err)
		}
	}
	bin := filepath.Join(dist, p.Executable+"_linux_amd64")
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable: %s", bin, st.Mode())
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	if ef.Machine != elf.EM_X86_64 {
		t.Errorf("%s: machine %s, want x86-64", bin, ef.Machine)
	}
	ef.Close()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the backend was built for linux/amd64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}

	// Started by hand, it says it is a plugin and exits.
	out, err := exec.Command(bin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "plugin") {
		t.Errorf("%s run by hand: %v\n%s", bin, err, out)
	}

	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	g := startServer(t, nil)
	g.write(t, jobstatstest.Samples(t0))

	logw := &testWriter{t: t}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: grpcplugin.ProtocolVersion,
			MagicCookieKey: grpcplugin.MagicCookieKey, MagicCookieValue: grpcplugin.MagicCookieValue},
		VersionedPlugins: map[int]goplugin.PluginSet{grpcplugin.ProtocolVersion: {
			"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{}, "data": &grpcplugin.DataGRPCPlugin{}}},
		Cmd:              exec.Command(bin),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: logw, Level: hclog.Warn}),
	})
	t.Cleanup(client.Kill)
	t.Cleanup(func() { logw.stopped.Store(true) }) // before Kill: the test's log closes with it
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start the plugin as Grafana does: %v", err)
	}
	diag, err := rpc.Dispense("diagnostics")
	if err != nil {
		t.Fatal(err)
	}
	dataPlugin, err := rpc.Dispense("data")
	if err != nil {
		t.Fatal(err)
	}
	pctx := func(token string) *pluginv2.PluginContext {
		return backend.ToProto().PluginContext(backend.PluginContext{PluginID: datasource.PluginID,
			DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "gw-" + token, Type: datasource.PluginID, Name: "gpuwatch",
				URL: g.ts.URL, JSONData: json.RawMessage(`{}`), DecryptedSecureJSONData: map[string]string{datasource.SecureToken: token},
				Updated: time.Now()}})
	}
	ctx := context.Background()
	for _, c := range []struct {
		token  string
		status pluginv2.CheckHealthResponse_HealthStatus
		says   string
	}{{readSecret, pluginv2.CheckHealthResponse_OK, "accepts the data source's token"},
		{"wrong", pluginv2.CheckHealthResponse_ERROR, "refused the data source's token"}} {
		h, err := diag.(grpcplugin.DiagnosticsClient).CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: pctx(c.token)})
		if err != nil || h.Status != c.status || !strings.Contains(h.Message, c.says) {
			t.Errorf("CheckHealth over gRPC with token %q: %+v, %v; want %s saying %q", c.token, h, err, c.status, c.says)
		}
	}
	req := backend.ToProto().QueryDataRequest(&backend.QueryDataRequest{
		PluginContext: backend.FromProto().PluginContext(pctx(readSecret)),
		Queries: []backend.DataQuery{{RefID: "A", QueryType: datasource.TypeJobStats, JSON: json.RawMessage(`{"queryType":"jobstats","jobId":"4242"}`),
			TimeRange: backend.TimeRange{From: t0.Add(-time.Hour), To: t0.Add(3 * time.Hour)}}},
	})
	pres, err := dataPlugin.(grpcplugin.DataClient).QueryData(ctx, req)
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	res, err := backend.FromProto().QueryDataResponse(pres)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Responses["A"]
	fs := frames(t, r, 2)
	if v := fs[1].Fields[len(fs[1].Fields)-1].At(0); v != "3 GPUs allocated, 1 did nothing, 1 idle for 30m0s or more; mean activity 34%; 1 Xid" {
		t.Errorf("job 4242's verdict over gRPC: %q", v)
	}
}

// testWriter sends the plugin host's log to the test's while it runs.
type testWriter struct {
	t       *testing.T
	stopped atomic.Bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	if !w.stopped.Load() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
