package ingest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const prometheusBinary = "/usr/bin/prometheus"

// A real remote write 1.0 client: Debian's Prometheus scrapes its own /metrics
// every second and remote-writes to the handler; its samples must arrive, with
// no request refused.
func TestRealPrometheusRemoteWrite(t *testing.T) {
	if _, err := os.Stat(prometheusBinary); err != nil {
		t.Skipf("%s not installed (make test-deps installs it): %v", prometheusBinary, err)
	}
	if testing.Short() {
		t.Skip("starts a Prometheus server; skipped with -short")
	}
	app := &memAppender{}
	reg := prometheus.NewRegistry()
	h := NewHandler(app, DefaultLimits(), Options{Registerer: reg})
	srv := httptest.NewServer(h)
	defer srv.Close()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: self
    static_configs:
      - targets: [%q]
remote_write:
  - url: %q
    queue_config:
      batch_send_deadline: 500ms
      min_backoff: 100ms
    metadata_config:
      send: false
`, addr, srv.URL+WritePath)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, prometheusBinary,
		"--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()

	deadline := time.Now().Add(30 * time.Second)
	for {
		var up, total int
		for _, s := range app.samples() {
			total++
			if s.Name == "up" && s.Labels.Get("job") == "self" && s.Labels.Get("instance") == addr && s.Value == 1 {
				up++
				if s.Time.Before(start.Add(-time.Second)) || s.Time.After(time.Now().Add(time.Second)) {
					t.Fatalf("up sample stamped %v, outside the test's run", s.Time)
				}
			}
		}
		if up >= 1 && total > 100 {
			t.Logf("Prometheus delivered %d samples (%d of up) in %v", total, up, time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d samples, %d of up{job=\"self\"}; Prometheus output:\n%s", total, up, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, code := range []string{"400", "413", "415", "429", "500"} {
		if n := testutil.ToFloat64(h.m.requests.WithLabelValues(EndpointRemoteWrite, code)); n != 0 {
			t.Errorf("%v requests answered %s; Prometheus output:\n%s", n, code, out.String())
		}
	}
}
