package realstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Kinds of server.
const (
	VictoriaMetrics = "victoria-metrics"
	Prometheus      = "prometheus"
)

// StartTimeout bounds how long Start waits for a server to answer its readiness
// check.
var StartTimeout = 30 * time.Second

// Server is one real store process on a loopback port.
type Server struct {
	t     testing.TB
	kind  string
	bin   string
	dir   string // data directory
	addr  string // 127.0.0.1:port
	args  []string
	ready string // readiness path
	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	logs  *lockedBuffer
}

// StartVictoriaMetrics starts VictoriaMetrics single-node with
// -search.latencyOffset=0 (samples are visible to queries at once) and the
// rollup-result cache off (backfilled samples show up in range queries), and
// registers its stop with t.Cleanup. It skips t when victoria-metrics is absent.
func StartVictoriaMetrics(t testing.TB) *Server {
	t.Helper()
	s := newServer(t, VictoriaMetrics, "GPUWATCH_VICTORIA_METRICS")
	s.args = []string{
		"-storageDataPath", s.dir,
		"-httpListenAddr", s.addr,
		"-search.latencyOffset=0",
		"-search.disableCache",
		"-retentionPeriod=100y",
		"-loggerLevel=WARN",
	}
	s.ready = "/health"
	s.Start()
	return s
}

// StartPrometheus starts Prometheus with the remote-write receiver on, no scrape
// targets and a 2-hour out-of-order window (so samples replayed after an outage
// are accepted), and registers its stop with t.Cleanup. It skips t when
// prometheus is absent.
func StartPrometheus(t testing.TB) *Server {
	t.Helper()
	s := newServer(t, Prometheus, "GPUWATCH_PROMETHEUS")
	cfg := filepath.Join(filepath.Dir(s.dir), "prometheus.yml")
	const config = "global:\n  scrape_interval: 15s\nscrape_configs: []\nstorage:\n  tsdb:\n    out_of_order_time_window: 2h\n"
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	s.args = []string{
		"--config.file=" + cfg,
		"--storage.tsdb.path=" + s.dir,
		"--web.listen-address=" + s.addr,
		"--web.enable-remote-write-receiver",
		"--web.enable-admin-api",
		"--log.level=warn",
	}
	s.ready = "/-/ready"
	s.Start()
	return s
}

func newServer(t testing.TB, kind, env string) *Server {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath(kind); err != nil {
			msg := fmt.Sprintf("realstore: %s is not installed (not on PATH, %s unset); `sudo make test-deps` installs it", kind, env)
			if os.Getenv("GPUWATCH_REQUIRE_REALSTORE") == "1" {
				t.Fatal(msg + " and GPUWATCH_REQUIRE_REALSTORE=1")
			}
			t.Skip(msg)
		}
	}
	root := t.TempDir()
	s := &Server{t: t, kind: kind, bin: bin, dir: filepath.Join(root, "data"), addr: freeAddr(t), logs: &lockedBuffer{}}
	t.Cleanup(s.Stop)
	return s
}

// freeAddr finds a free loopback port: listen on :0, close, reuse.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("realstore: find a free port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// Kind is VictoriaMetrics, Prometheus or Alertmanager.
func (s *Server) Kind() string { return s.kind }

// URL is the server's base URL, "http://127.0.0.1:PORT", where /api/v1/query is.
func (s *Server) URL() string { return "http://" + s.addr }

// RemoteWriteURL is where Prometheus remote write 1.0 goes.
func (s *Server) RemoteWriteURL() string { return s.URL() + "/api/v1/write" }

// ImportURL is VictoriaMetrics's Prometheus text import endpoint; "" for
// Prometheus, which has none.
func (s *Server) ImportURL() string {
	if s.kind != VictoriaMetrics {
		return ""
	}
	return s.URL() + "/api/v1/import/prometheus"
}

// DataDir is the server's data directory, kept across Stop and Start.
func (s *Server) DataDir() string { return s.dir }

// Logs returns what the server has written to stdout and stderr so far.
func (s *Server) Logs() string { return s.logs.String() }

// Running reports whether the process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Start starts the server (again, after Stop: same port, same data) and waits
// until it answers its readiness check; it fails the test when it does not.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout = s.logs
	cmd.Stderr = s.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		s.t.Fatalf("realstore: start %s: %v", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(StartTimeout)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-done:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			s.t.Fatalf("realstore: %s exited during start-up (%s):\n%s", s.kind, cmd.ProcessState, tail(s.Logs()))
		default:
		}
		resp, err := client.Get(s.URL() + s.ready)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("realstore: %s at %s not ready after %s (last: %v):\n%s", s.kind, s.URL(), StartTimeout, err, tail(s.Logs()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server (SIGTERM, SIGKILL after 15 s) and waits for it to exit;
// its data directory stays. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Flush makes everything the server has received visible to queries: it calls
// VictoriaMetrics's /internal/force_flush; Prometheus needs nothing.
func (s *Server) Flush() {
	s.t.Helper()
	if s.kind != VictoriaMetrics {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/internal/force_flush", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("realstore: flush %s: %v", s.kind, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("realstore: flush %s: HTTP %d", s.kind, resp.StatusCode)
	}
}

// ImportText posts Prometheus text exposition lines (with millisecond
// timestamps) to VictoriaMetrics's import endpoint and flushes. New series still
// take up to a second or two to show in queries: poll with Eventually. It fails
// the test on Prometheus, which has no such endpoint.
func (s *Server) ImportText(text string) {
	s.t.Helper()
	if s.kind != VictoriaMetrics {
		s.t.Fatalf("realstore: %s has no text import endpoint; use remote write", s.kind)
	}
	resp, err := http.Post(s.ImportURL(), "text/plain", strings.NewReader(text))
	if err != nil {
		s.t.Fatalf("realstore: import into %s: %v", s.kind, err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("realstore: import into %s: HTTP %d: %s", s.kind, resp.StatusCode, body)
	}
	s.Flush()
}

// Eventually polls cond every 100 ms until it holds, failing the test after
// timeout with what: VictoriaMetrics makes new samples visible within a second or
// two, not at once.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("realstore: %s: not true after %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string) string {
	const n = 4000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
