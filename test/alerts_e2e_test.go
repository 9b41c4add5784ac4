package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/alerts"
	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// webhook records what Alertmanager's webhook receivers are sent, by
// receiver (the last path element).
type webhook struct {
	mu    sync.Mutex
	notes []webhookNote
}

type webhookNote struct {
	Receiver string `json:"receiver"`
	Status   string `json:"status"`
	Alerts   []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var n webhookNote
	if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.notes = append(w.notes, n)
	w.mu.Unlock()
}

// sent lists the alert names receiver was sent as firing.
func (w *webhook) sent(receiver string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, n := range w.notes {
		if n.Receiver != receiver {
			continue
		}
		for _, a := range n.Alerts {
			if a.Status == "firing" {
				out[a.Labels["alertname"]]++
			}
		}
	}
	return out
}

// amConfig is deploy/alertmanager/alertmanager.yml with its placeholder
// receivers pointed at url/<receiver> and the first notification of a group
// sent after 5 s instead of 30 s.
func amConfig(t *testing.T, url string) string {
	t.Helper()
	b, err := os.ReadFile("../deploy/alertmanager/alertmanager.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := regexp.MustCompile(`http://[a-z]+\.example\.invalid/\S+`).ReplaceAllStringFunc(string(b), func(string) string { return "PLACEHOLDER" })
	// Each receiver's placeholder becomes url/<receiver name>.
	var out []string
	receiver := ""
	for _, line := range strings.Split(cfg, "\n") {
		if m := regexp.MustCompile(`- name: (\S+)`).FindStringSubmatch(line); m != nil {
			receiver = m[1]
		}
		out = append(out, strings.Replace(line, "PLACEHOLDER", url+"/"+receiver, 1))
	}
	cfg = strings.ReplaceAll(strings.Join(out, "\n"), "group_wait: 30s", "group_wait: 5s")
	if strings.Contains(cfg, "example.invalid") || !strings.Contains(cfg, "group_wait: 5s") {
		t.Fatalf("the example configuration changed shape; adapt amConfig:\n%s", cfg)
	}
	return cfg
}

// find returns the alert named name with the given labels, or nil.
func find(as []realstore.AMAlert, name string, labels map[string]string) *realstore.AMAlert {
	for i, a := range as {
		if a.Labels["alertname"] != name {
			continue
		}
		ok := true
		for k, v := range labels {
			ok = ok && a.Labels[k] == v
		}
		if ok {
			return &as[i]
		}
	}
	return nil
}

// TestXidAlertReachesAlertmanager, end to end with Debian's Alertmanager on
// loopback running deploy/alertmanager/alertmanager.yml: a gpuwatch agent on a
// simulated HGX H100 remote-writes to an in-process gpuwatch server that
// evaluates its built-in rules every second. Healthy, nothing but the
// watchdog fires. Xid 79 on GPU 3 (the GPU falls off the bus) reaches
// Alertmanager within 60 s as GpuwatchGPULost with node and GPU labels and its
// runbook link, with the Xid's own alert and the node out of service; the
// inhibitions leave one page for the node. When the GPU recovers (a reset),
// the alert resolves in Alertmanager.
func TestXidAlertReachesAlertmanager(t *testing.T) {
	hook := &webhook{}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	am := realstore.StartAlertmanager(t, amConfig(t, hs.URL))

	srv, err := server.New(server.Options{DataDir: t.TempDir(), Version: "e2e", Rules: &server.RulesOptions{
		Builtin: true, Alertmanagers: []string{am.URL()}, Interval: time.Second, ExternalURL: "http://gpuwatch.test"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; srv.Close(context.Background()) }()
	gs := httptest.NewServer(srv.Handler()) // loopback: writes need no token
	defer gs.Close()

	// One simulated node whose clock follows the wall clock; its agent
	// collects health every 250 ms, everything every second, and ships it all.
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Seed: 5, Root: t.TempDir(), Start: time.Now().Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(0); err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	boot := n.Boot()
	const node = "gpu01"
	a, err := agent.New(agent.Options{
		Node: node, NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, KmsgPoll: 5 * time.Millisecond, BootTime: func() (time.Time, error) { return boot, nil },
		BootID: "e2e", DCGM: n.DCGM(), KubeletSocket: "-", Now: f.Now,
		Interval: time.Second, HealthInterval: 250 * time.Millisecond,
		RemoteWriteURL: gs.URL + "/api/v1/write", QueueDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithCancel(ctx)
	wait := a.Start(actx)
	var fmu sync.Mutex // the fleet: advanced by the loop, injected by the test
	loop := make(chan struct{})
	go func() {
		defer close(loop)
		last := time.Now()
		for i := 0; actx.Err() == nil; i++ {
			now := time.Now()
			fmu.Lock()
			err := f.Advance(now.Sub(last))
			fmu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			last = now
			a.Collect(actx, i%4 == 0)
			time.Sleep(250*time.Millisecond - time.Since(now)%(250*time.Millisecond))
		}
	}()
	defer func() { acancel(); <-loop; wait(); a.Close() }()
	inject := func(fault simhw.Fault) time.Time {
		fmu.Lock()
		defer fmu.Unlock()
		if err := n.Inject(fault); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	alertsNow := func() []realstore.AMAlert {
		as, err := am.Alerts()
		if err != nil {
			t.Fatal(err)
		}
		return as
	}

	// Healthy: the watchdog arrives (rules are evaluated and sent), the
	// agent's series are in the store, and no alert concerns the node.
	realstore.Eventually(t, 30*time.Second, "GpuwatchWatchdog in Alertmanager", func() bool {
		return find(alertsNow(), "GpuwatchWatchdog", nil) != nil
	})
	realstore.Eventually(t, 30*time.Second, "the agent's series in the store", func() bool {
		v, err := srv.Querier().Instant(context.Background(), `gpuwatch_gpu_lost{node="gpu01"}`, time.Now())
		return err == nil && len(v) == 8
	})
	time.Sleep(3 * time.Second) // a few evaluations over healthy data
	for _, al := range alertsNow() {
		if al.Labels["node"] == node {
			t.Errorf("healthy node, yet %s %v in Alertmanager", al.Labels["alertname"], al.Labels)
		}
	}

	// Xid 79: GPU 3 falls off the bus.
	at := inject(simhw.Fault{Kind: simhw.FaultXid, GPU: 3, Xid: 79})
	var lost *realstore.AMAlert
	realstore.Eventually(t, 60*time.Second, "GpuwatchGPULost in Alertmanager", func() bool {
		lost = find(alertsNow(), "GpuwatchGPULost", map[string]string{"node": node, "gpu_index": "3"})
		return lost != nil
	})
	t.Logf("Xid 79 injected → GpuwatchGPULost in Alertmanager after %s", time.Since(at).Round(10*time.Millisecond))
	if lost.Labels["severity"] != "critical" || !strings.HasPrefix(lost.Labels["gpu_uuid"], "GPU-") {
		t.Errorf("GpuwatchGPULost labels: %v", lost.Labels)
	}
	if want := alerts.RunbookBase + "GpuwatchGPULost.md"; lost.Annotations["runbook_url"] != want {
		t.Errorf("runbook_url %q, want %q", lost.Annotations["runbook_url"], want)
	}
	if s := lost.Annotations["summary"]; !strings.Contains(s, node) || !strings.Contains(s, "GPU 3") {
		t.Errorf("summary %q names not the node and GPU", s)
	}
	if !strings.HasPrefix(lost.GeneratorURL, "http://gpuwatch.test/") {
		t.Errorf("generatorURL %q", lost.GeneratorURL)
	}
	// The Xid's own alert (RESTART_BM once the agent labels the counter with
	// the catalog's action, unclassified before) and the node out of service;
	// GpuwatchGPULost is inhibited under the node's page.
	realstore.Eventually(t, 30*time.Second, "the Xid's alert, the node out of service, and the inhibition", func() bool {
		as := alertsNow()
		xid := find(as, "GpuwatchXidRebootNode", map[string]string{"node": node, "gpu_index": "3", "xid": "79"})
		if xid == nil {
			xid = find(as, "GpuwatchXidUnclassified", map[string]string{"node": node, "gpu_index": "3", "xid": "79"})
		}
		oos := find(as, "GpuwatchNodeOutOfService", map[string]string{"node": node})
		l := find(as, "GpuwatchGPULost", map[string]string{"node": node, "gpu_index": "3"})
		return xid != nil && oos != nil && l != nil && len(l.Status.InhibitedBy) > 0 && len(xid.Status.InhibitedBy) > 0
	})
	for _, al := range alertsNow() {
		if al.Labels["node"] == node {
			t.Logf("in Alertmanager: %s %s, %s (inhibited by %d)", al.Labels["alertname"], al.Annotations["summary"], al.Status.State, len(al.Status.InhibitedBy))
		}
	}
	oos := find(alertsNow(), "GpuwatchNodeOutOfService", map[string]string{"node": node})
	if !strings.Contains(oos.Annotations["summary"], "gpu-lost on gpu01/gpu3") {
		t.Errorf("GpuwatchNodeOutOfService does not say why: %q", oos.Annotations["summary"])
	}
	// The pager hears of the node once, not of each consequence.
	realstore.Eventually(t, 30*time.Second, "the node's page", func() bool {
		return hook.sent("gpuwatch-pager")["GpuwatchNodeOutOfService"] > 0
	})
	if got := hook.sent("gpuwatch-pager"); got["GpuwatchGPULost"] > 0 || got["GpuwatchXidRebootNode"] > 0 {
		t.Errorf("the pager was sent inhibited alerts: %v", got)
	}

	// Every built-in rule evaluates on the agent's real series without error
	// (the promtool tests run Prometheus 2.42; the server runs 3.x).
	resp, err := http.Get(gs.URL + "/api/v1/rules")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name      string `json:"name"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&rules)
	resp.Body.Close()
	if err != nil || len(rules.Data.Groups) < 7 {
		t.Errorf("/api/v1/rules: %d groups, %v", len(rules.Data.Groups), err)
	}
	for _, g := range rules.Data.Groups {
		for _, r := range g.Rules {
			if r.LastError != "" {
				t.Errorf("rule %s/%s: %s", g.Name, r.Name, r.LastError)
			}
		}
	}

	// The GPU recovers (a reset): the alert resolves.
	at = inject(simhw.Fault{Kind: simhw.FaultRecover, GPU: 3})
	realstore.Eventually(t, 60*time.Second, "GpuwatchGPULost resolved in Alertmanager", func() bool {
		return find(alertsNow(), "GpuwatchGPULost", map[string]string{"node": node}) == nil
	})
	t.Logf("GPU recovered → GpuwatchGPULost resolved in Alertmanager after %s", time.Since(at).Round(10*time.Millisecond))
	for _, al := range srv.Alerts() {
		if al.Labels["alertname"] == "GpuwatchGPULost" {
			t.Errorf("the server still lists %v", al)
		}
	}
	if t.Failed() {
		for _, al := range alertsNow() {
			t.Logf("in Alertmanager: %s %v %s", al.Labels["alertname"], al.Labels, al.Status.State)
		}
		hook.mu.Lock()
		t.Log(fmt.Sprint(hook.notes))
		hook.mu.Unlock()
	}
}
