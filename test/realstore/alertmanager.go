package realstore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Alertmanager is Debian's binary name for Prometheus's Alertmanager.
const Alertmanager = "prometheus-alertmanager"

// StartAlertmanager starts Alertmanager with the configuration config (YAML
// text), its storage under the test's temp dir, clustering off, on a loopback
// port, and registers its stop with t.Cleanup. It skips t when
// prometheus-alertmanager is absent (fails under GPUWATCH_REQUIRE_REALSTORE=1);
// GPUWATCH_ALERTMANAGER overrides the binary's path. URL() is what `gpuwatch
// server --alertmanager.url` takes; Alerts reads its API v2.
func StartAlertmanager(t testing.TB, config string) *Server {
	t.Helper()
	s := newServer(t, Alertmanager, "GPUWATCH_ALERTMANAGER")
	cfg := filepath.Join(filepath.Dir(s.dir), "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	s.args = []string{
		"--config.file=" + cfg,
		"--storage.path=" + s.dir,
		"--web.listen-address=" + s.addr,
		"--cluster.listen-address=",
		"--log.level=warn",
	}
	s.ready = "/-/ready"
	s.Start()
	return s
}

// AMAlert is one alert as Alertmanager's API v2 lists it.
type AMAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
	Receivers    []struct {
		Name string `json:"name"`
	} `json:"receivers"`
	Status struct {
		State       string   `json:"state"` // active, suppressed, unprocessed
		InhibitedBy []string `json:"inhibitedBy"`
		SilencedBy  []string `json:"silencedBy"`
	} `json:"status"`
}

// Alerts returns what GET /api/v2/alerts answers: the alerts Alertmanager
// holds that have not resolved, inhibited and silenced ones included.
func (s *Server) Alerts() ([]AMAlert, error) {
	if s.kind != Alertmanager {
		return nil, fmt.Errorf("realstore: %s has no Alertmanager API", s.kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/api/v2/alerts", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v2/alerts: HTTP %d: %s", resp.StatusCode, body)
	}
	var out []AMAlert
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET /api/v2/alerts: %w", err)
	}
	return out, nil
}
