package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// handElector is an Elector a test drives: grant starts the lead, lose ends it
// as a lost lease would.
type handElector struct {
	id      string
	mu      sync.Mutex
	leader  string
	granted chan struct{}
	lost    chan struct{}
}

var errLost = errors.New("lease lost")

func (e *handElector) Run(ctx context.Context, lead func(context.Context)) error {
	select {
	case <-ctx.Done():
		return nil
	case <-e.granted:
	}
	e.mu.Lock()
	e.leader = e.id
	e.mu.Unlock()
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { lead(lctx); close(done) }()
	select {
	case <-ctx.Done():
		cancel()
		<-done
		return nil
	case <-e.lost:
		cancel()
		<-done
		return errLost
	}
}

func (e *handElector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader
}

func (e *handElector) Identity() string { return e.id }

// TestFollowerNeverActsThenTakesOver: a follower takes health reports (202)
// and answers reads, refuses control requests 503 naming the leader, exports
// gpuwatch_server_leader 0 and actuates nothing, however bad the reports; once
// it leads, its drain controller takes over, replays the report it kept and
// drains; a lost lead makes Run return the error.
func TestFollowerNeverActsThenTakesOver(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	act := drain.NewLogActuator(&lockedWriter{w: &out, mu: &mu})
	el := &handElector{id: "server-1", leader: "server-0", granted: make(chan struct{}), lost: make(chan struct{})}
	pol := drain.DefaultPolicy()
	pol.Budget.Count, pol.Budget.Min = 10, 0
	s, err := New(Options{DataDir: t.TempDir(), Elector: el,
		Drain: &DrainOptions{Policy: pol, Actuator: act, ActuatorName: "log", PollInterval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()

	cond := telemetry.Condition{Kind: telemetry.ConditionGPULost, Target: telemetry.GPUTarget(telemetry.GPUID{Node: "gpu-07", Index: 3}),
		GPUUUID: "GPU-3", Severity: telemetry.SeverityFatal, Action: telemetry.ActionRestartBM, Message: "GPU lost"}
	rep := healthreport.Report{Node: "gpu-07", Time: time.Now(), State: telemetry.StateDraining, Severity: telemetry.SeverityFatal,
		GPUs: []healthreport.GPUReport{{Index: 3, UUID: "GPU-3", State: telemetry.StateDraining, Conditions: []telemetry.Condition{cond}}}}
	body, _ := json.Marshal(rep)
	if resp := post(t, ts.URL+APIPrefix+"/health", "application/json", body, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("health report to the follower: %d", resp.StatusCode)
	}
	var st LeaderStatus
	getJSON(t, ts.URL+APIPrefix+"/leader", &st)
	if st != (LeaderStatus{Election: true, Acting: false, Identity: "server-1", Leader: "server-0"}) {
		t.Errorf("leader status %+v", st)
	}
	manual, _ := json.Marshal(drain.ManualRequest{Node: "gpu-08", Reason: "PSU swap", User: "alice"})
	for _, p := range []string{"/drain", "/resume", "/budget/reset", "/place", "/release"} {
		resp := post(t, ts.URL+APIPrefix+p, "application/json", manual, nil)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "server-0") || resp.Header.Get("Retry-After") == "" {
			t.Errorf("POST %s on the follower: %d %s; want 503 naming the leader server-0", p, resp.StatusCode, b)
		}
	}
	if page := getText(t, ts.URL+"/"); !strings.Contains(page, "follower server-1 of leader server-0") {
		t.Errorf("the index page does not say follower of server-0:\n%.2000s", page)
	}
	if v := metricValue(t, ts.URL, "gpuwatch_server_leader"); v != "0" {
		t.Errorf("gpuwatch_server_leader on the follower = %s", v)
	}
	time.Sleep(200 * time.Millisecond) // ten poll intervals: nothing may happen
	mu.Lock()
	acted := out.String()
	mu.Unlock()
	if acted != "" {
		t.Fatalf("the follower actuated:\n%s", acted)
	}
	if n, ok := s.Drain().Node("gpu-07"); ok && n.State != telemetry.StateHealthy {
		t.Errorf("the follower's controller decided: %+v", n)
	}

	close(el.granted)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(lockedString(&out, &mu), "reboot gpu-07") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := lockedString(&out, &mu); !strings.Contains(got, "reboot gpu-07") {
		t.Fatalf("the leader did not act on the report the follower kept: %q", got)
	}
	if page := getText(t, ts.URL+"/"); !strings.Contains(page, "leader server-1") {
		t.Errorf("the index page does not say leader:\n%.2000s", page)
	}
	if v := metricValue(t, ts.URL, "gpuwatch_server_leader"); v != "1" {
		t.Errorf("gpuwatch_server_leader on the leader = %s", v)
	}
	if resp := post(t, ts.URL+APIPrefix+"/drain", "application/json", manual, nil); resp.StatusCode != http.StatusAccepted {
		t.Errorf("POST /drain on the leader: %d", resp.StatusCode)
	}
	recs, err := s.Drain().Audit(time.Time{}, 0)
	if err != nil || len(recs) == 0 {
		t.Fatal(recs, err)
	}
	var takeover bool
	for _, r := range recs {
		takeover = takeover || r.Event == "takeover"
	}
	if !takeover {
		t.Error("no takeover record in the new leader's audit log")
	}

	close(el.lost)
	select {
	case err := <-runErr:
		if !errors.Is(err, errLost) {
			t.Errorf("Run after the lead was lost = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when the lead was lost")
	}
	if s.Leader().Acting {
		t.Error("still acting after the lead was lost")
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func lockedString(b *bytes.Buffer, mu *sync.Mutex) string {
	mu.Lock()
	defer mu.Unlock()
	return b.String()
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// metricValue is the value of the unlabelled series name on /metrics.
func metricValue(t *testing.T, base, name string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return "absent"
}

func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
