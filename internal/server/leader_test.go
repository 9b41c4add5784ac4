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
	s, ts, runErr := running(t, Options{DataDir: t.TempDir(), Elector: el,
		Drain: &DrainOptions{Policy: pol, Actuator: act, ActuatorName: "log", PollInterval: 20 * time.Millisecond}})

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

// running is a server built from o, serving on loopback and running its
// loops (Run's result on the channel) until the test ends.
func running(t *testing.T, o Options) (*Server, *httptest.Server, <-chan error) {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()
	return s, ts, runErr
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
	for _, l := range strings.Split(getText(t, base+"/metrics"), "\n") {
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

// handLeaderService is a LeaderService that fails its first failures
// publications and counts the ones that succeeded.
type handLeaderService struct {
	mu        sync.Mutex
	failures  int
	calls     int
	published int
}

func (l *handLeaderService) Publish(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.calls <= l.failures {
		return errors.New("endpointslices is forbidden")
	}
	l.published++
	return nil
}

func (l *handLeaderService) Name() string { return "gpuwatch-server-leader.gpuwatch.svc" }

func (l *handLeaderService) counts() (calls, published int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls, l.published
}

// TestLeaderService: a follower never publishes the leader Service and names
// it in its 503, its leader status and its UI footer; once it leads and acts
// it publishes itself, and a failure to (the first two attempts) neither
// stops it acting nor goes unseen: it is counted, retried within seconds, and
// the published gauge says 1 only once a publication succeeded. Then it
// keeps publishing every interval while it leads.
func TestLeaderService(t *testing.T) {
	el := &handElector{id: "server-1", leader: "server-0", granted: make(chan struct{}), lost: make(chan struct{})}
	ls := &handLeaderService{failures: 2}
	s, ts, runErr := running(t, Options{DataDir: t.TempDir(), Elector: el, LeaderService: ls, LeaderServiceInterval: 300 * time.Millisecond,
		Drain: &DrainOptions{Policy: drain.DefaultPolicy(), Actuator: drain.NewLogActuator(io.Discard), ActuatorName: "log", PollInterval: 20 * time.Millisecond}})

	manual, _ := json.Marshal(drain.ManualRequest{Node: "gpu-08", Reason: "PSU swap", User: "alice"})
	resp := post(t, ts.URL+APIPrefix+"/drain", "application/json", manual, nil)
	var refusal struct {
		Error         string `json:"error"`
		Leader        string `json:"leader"`
		LeaderService string `json:"leader_service"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&refusal); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || refusal.Leader != "server-0" || refusal.LeaderService != ls.Name() ||
		!strings.Contains(refusal.Error, "server-0") || !strings.Contains(refusal.Error, "leader Service gpuwatch-server-leader.gpuwatch.svc") {
		t.Errorf("drain on the follower: %d %+v; want 503 naming server-0 and the leader Service", resp.StatusCode, refusal)
	}
	var st LeaderStatus
	getJSON(t, ts.URL+APIPrefix+"/leader", &st)
	if st.Service != ls.Name() || st.Acting {
		t.Errorf("follower's leader status %+v", st)
	}
	if page := getText(t, ts.URL+"/"); !strings.Contains(page, "through gpuwatch-server-leader.gpuwatch.svc") {
		t.Errorf("the follower's index page does not name the leader Service:\n%.2000s", page)
	}
	time.Sleep(100 * time.Millisecond)
	if calls, _ := ls.counts(); calls != 0 {
		t.Errorf("the follower published the leader Service %d times", calls)
	}
	if v := metricValue(t, ts.URL, "gpuwatch_server_leader_service_published"); v != "0" {
		t.Errorf("published gauge on the follower = %s", v)
	}

	close(el.granted)
	deadline := time.Now().Add(10 * time.Second)
	for !s.Leader().Acting && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !s.Leader().Acting {
		t.Fatal("the leader does not act")
	}
	// Acting while the first publications fail: control requests are taken.
	if resp := post(t, ts.URL+APIPrefix+"/drain", "application/json", manual, nil); resp.StatusCode != http.StatusAccepted {
		t.Errorf("POST /drain on the leader: %d", resp.StatusCode)
	}
	for time.Now().Before(deadline) && metricValue(t, ts.URL, "gpuwatch_server_leader_service_published") != "1" {
		time.Sleep(20 * time.Millisecond)
	}
	if v := metricValue(t, ts.URL, "gpuwatch_server_leader_service_published"); v != "1" {
		t.Fatalf("published gauge on the leader = %s after %d failures", v, ls.failures)
	}
	if v := metricValue(t, ts.URL, "gpuwatch_server_leader_service_errors_total"); v != "2" {
		t.Errorf("gpuwatch_server_leader_service_errors_total = %s, want 2", v)
	}
	calls, published := ls.counts()
	if calls != 3 || published != 1 {
		t.Errorf("after the first success: %d calls, %d published; want 3 and 1", calls, published)
	}
	time.Sleep(1 * time.Second) // three intervals
	if _, p := ls.counts(); p < 3 {
		t.Errorf("%d publications in 1 s at a 300 ms interval: the leader does not keep the Service pointed at it", p)
	}

	close(el.lost)
	if err := <-runErr; !errors.Is(err, errLost) {
		t.Errorf("Run after the lead was lost = %v", err)
	}
	if v := metricValue(t, ts.URL, "gpuwatch_server_leader_service_published"); v != "0" {
		t.Errorf("published gauge after the lead was lost = %s", v)
	}
	if _, err := New(Options{DataDir: t.TempDir(), LeaderService: ls}); err == nil {
		t.Error("a leader Service without an Elector accepted")
	}
}
