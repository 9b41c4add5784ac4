package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/alerts"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// fakeAlertmanager records what arrives at Alertmanager's API v2.
type fakeAlertmanager struct {
	mu     sync.Mutex
	alerts []map[string]any
}

func (f *fakeAlertmanager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v2/alerts" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var as []map[string]any
	json.NewDecoder(r.Body).Decode(&as)
	f.mu.Lock()
	f.alerts = append(f.alerts, as...)
	f.mu.Unlock()
}

func (f *fakeAlertmanager) find(name string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.alerts {
		if l, _ := a["labels"].(map[string]any); l["alertname"] == name {
			return a
		}
	}
	return nil
}

// TestRulesReachAlertmanager: the server evaluates its built-in rules and a
// user's file over the embedded store, writes recording rules back into it,
// sends firing alerts to Alertmanager's API v2 with the runbook link under
// --alerts.runbook-base, tells OnAlert, and lists them at /api/v1/alerts and
// /api/v1/rules.
func TestRulesReachAlertmanager(t *testing.T) {
	am := &fakeAlertmanager{}
	amSrv := httptest.NewServer(am)
	defer amSrv.Close()
	dir := t.TempDir()
	userRules := filepath.Join(dir, "site.rules.yml")
	os.WriteFile(userRules, []byte(`groups:
  - name: site
    interval: 1s
    rules:
      - record: site:gpu_util:sum
        expr: sum(DCGM_FI_DEV_GPU_UTIL)
      - alert: SiteGPUBusy
        expr: site:gpu_util:sum > 100
        labels: {severity: info}
        annotations:
          summary: "busy: {{ $value }}"
          runbook_url: https://example.com/site
`), 0o644)
	var mu sync.Mutex
	var events []AlertEvent
	s, err := New(Options{DataDir: dir + "/data", Rules: &RulesOptions{Builtin: true, Files: []string{filepath.Join(dir, "*.rules.yml")},
		Interval: time.Second, Alertmanagers: []string{amSrv.URL}, ExternalURL: "https://gpuwatch.example", RunbookBase: "https://wiki.example/runbooks",
		OnAlert: func(e AlertEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; s.Close(context.Background()) }()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	// Samples a little in the past and continuing: the sum is 280 > 100.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				s.Appender().Append(context.Background(), samples(time.Now(), 8))
			}
		}
	}()
	defer close(stop)
	deadline := time.Now().Add(20 * time.Second)
	for am.find("SiteGPUBusy") == nil {
		if time.Now().After(deadline) {
			t.Fatalf("SiteGPUBusy did not reach Alertmanager; got %v", am.alerts)
		}
		time.Sleep(100 * time.Millisecond)
	}
	a := am.find("SiteGPUBusy")
	if ann, _ := a["annotations"].(map[string]any); ann["summary"] != "busy: 280" || ann["runbook_url"] != "https://example.com/site" {
		t.Errorf("annotations: %v", a["annotations"])
	}
	// The alert names no node: its link opens the web UI's alerts page with it.
	if g, _ := a["generatorURL"].(string); g != "https://gpuwatch.example/alerts?alert=SiteGPUBusy" {
		t.Errorf("generatorURL %q does not point at the web UI under --web.external-url", g)
	}
	v, err := s.Querier().Instant(context.Background(), "site:gpu_util:sum", time.Now())
	if err != nil || len(v) != 1 || v[0].Value != 280 {
		t.Errorf("recording rule written back: %v %v", v, err)
	}
	resp, err := http.Get(ts.URL + "/api/v1/alerts")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"alertname": "SiteGPUBusy"`) || !strings.Contains(string(body), `"state": "firing"`) {
		t.Errorf("/api/v1/alerts: %s", body)
	}
	resp, _ = http.Get(ts.URL + "/api/v1/rules")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "GpuwatchDrainBudgetExhausted") || !strings.Contains(string(body), "site:gpu_util:sum") {
		t.Errorf("/api/v1/rules lacks the built-in and the site's rules: %.2000s", body)
	}
	if strings.Contains(string(body), alerts.RunbookBase) {
		t.Errorf("/api/v1/rules: a built-in runbook link still points at %s, not --alerts.runbook-base", alerts.RunbookBase)
	}
	// Every built-in alert's runbook link is rewritten to its page under
	// --alerts.runbook-base; the site's own link is left alone.
	var rules struct {
		Data struct {
			Groups []struct {
				File  string `json:"file"`
				Rules []struct {
					Name        string            `json:"name"`
					Type        string            `json:"type"`
					Annotations map[string]string `json:"annotations"`
					LastError   string            `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &rules); err != nil {
		t.Fatalf("/api/v1/rules: %v", err)
	}
	builtin := 0
	for _, g := range rules.Data.Groups {
		for _, r := range g.Rules {
			if r.LastError != "" {
				t.Errorf("/api/v1/rules: %s (%s) failed to evaluate: %s", r.Name, g.File, r.LastError)
			}
			if r.Type != "alerting" {
				continue
			}
			want := "https://wiki.example/runbooks/" + r.Name + ".md"
			if !strings.HasPrefix(g.File, "builtin:") {
				want = "https://example.com/site"
			} else {
				builtin++
			}
			if got := r.Annotations["runbook_url"]; got != want {
				t.Errorf("/api/v1/rules: %s (%s) runbook_url %q, want %q", r.Name, g.File, got, want)
			}
		}
	}
	if builtin < 40 {
		t.Errorf("/api/v1/rules lists %d built-in alerts", builtin)
	}
	mu.Lock()
	heard := false
	for _, e := range events { // the built-in GpuwatchWatchdog fires too
		heard = heard || (e.Name == "SiteGPUBusy" && e.State == "firing")
	}
	if !heard {
		t.Errorf("OnAlert heard %v", events)
	}
	mu.Unlock()
	_ = telemetry.DCGMGPUUtil
}

// TestRulesFileReplacesBuiltinGroup: a file's group named like a built-in
// one replaces it; a broken file is refused at start with its name.
func TestRulesFileReplacesBuiltinGroup(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "mine.yml")
	os.WriteFile(f, []byte("groups:\n  - name: gpuwatch-drain\n    rules:\n      - alert: Mine\n        expr: vector(1)\n"), 0o644)
	s, err := New(Options{DataDir: filepath.Join(dir, "d"), Rules: &RulesOptions{Builtin: true, Files: []string{f}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	var names []string
	for _, g := range s.rules.manager.RuleGroups() {
		for _, r := range g.Rules() {
			names = append(names, g.Name()+"/"+r.Name())
		}
	}
	all := strings.Join(names, " ")
	if !strings.Contains(all, "gpuwatch-drain/Mine") || strings.Contains(all, "GpuwatchDrainBudgetExhausted") {
		t.Errorf("groups after replacing gpuwatch-drain: %s", all)
	}
	os.WriteFile(f, []byte("groups:\n  - name: x\n    rules:\n      - alert: Bad\n        expr: sum(\n"), 0o644)
	if _, err := New(Options{DataDir: filepath.Join(dir, "e"), Rules: &RulesOptions{Builtin: true, Files: []string{f}}}); err == nil || !strings.Contains(err.Error(), f) {
		t.Errorf("a broken rule file: %v", err)
	}
	if _, err := New(Options{DataDir: filepath.Join(dir, "g"), Rules: &RulesOptions{Files: []string{filepath.Join(dir, "nothing-*.yml")}}}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a glob matching nothing: %v", err)
	}
	if len(alerts.Builtin()) == 0 {
		t.Error("no built-in rule files")
	}
}

// TestServerStoresItsOwnMetrics: the server writes its own series (drain
// controller, placement, ingest, rules) into its store with
// job="gpuwatch-server", so the drain and placement alerts evaluate from the
// embedded default without another scraper.
func TestServerStoresItsOwnMetrics(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{DataDir: dir, Instance: "cp-1:9402", SelfInterval: 100 * time.Millisecond,
		Drain:     &DrainOptions{Actuator: drain.NewLogActuator(io.Discard), ActuatorName: "log"},
		Placement: &PlacementOptions{Interval: time.Hour},
		Rules:     &RulesOptions{Builtin: true, Interval: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; s.Close(context.Background()) }()
	for _, q := range []string{`gpuwatch_drain_budget_limit{job="gpuwatch-server",instance="cp-1:9402"}`,
		`gpuwatch_drain_decision_latency_seconds_bucket{job="gpuwatch-server",le="+Inf"}`,
		`prometheus_rule_evaluations_total{job="gpuwatch-server"}`} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			v, err := s.Querier().Instant(context.Background(), q, time.Now())
			if err == nil && len(v) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not in the store after 10 s (%v %v)", q, v, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
