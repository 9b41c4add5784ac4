package healthpush

import (
	"context"
	"encoding/json"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

type server struct {
	mu      sync.Mutex
	got     []healthreport.Report
	failing int // answer 503 to this many requests first
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != Path || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
		return
	}
	var rep healthreport.Report
	if err := json.NewDecoder(r.Body).Decode(&rep); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing > 0 {
		s.failing--
		http.Error(w, "controller busy", http.StatusServiceUnavailable)
		return
	}
	s.got = append(s.got, rep)
	w.WriteHeader(http.StatusAccepted)
}

func (s *server) reports() []healthreport.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]healthreport.Report(nil), s.got...)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func report(at time.Time, xid79 bool) healthreport.Report {
	r := healthreport.Report{Node: "gpu02", Time: at, State: telemetry.StateHealthy,
		GPUs: []healthreport.GPUReport{{Index: 3, UUID: "GPU-3", State: telemetry.StateHealthy}}}
	if xid79 {
		c := telemetry.Condition{Kind: telemetry.ConditionGPULost, Target: telemetry.GPUTarget(telemetry.GPUID{Node: "gpu02", Index: 3}), GPUUUID: "GPU-3",
			Severity: telemetry.SeverityFatal, Action: telemetry.ActionRestartBM, Message: "Xid 79", Since: at, Observed: at,
			Evidence: map[string]string{"xid": "79"}}
		r.State, r.Severity, r.Action = telemetry.StateDraining, telemetry.SeverityFatal, telemetry.ActionRestartBM
		r.GPUs[0].State, r.GPUs[0].Severity, r.GPUs[0].Action = telemetry.StateDraining, telemetry.SeverityFatal, telemetry.ActionRestartBM
		r.GPUs[0].Conditions = []telemetry.Condition{c}
	}
	return r
}

// TestSendsChangesAtOnceAndHeartbeats: the first report and every change of
// verdict go out at once; a report that only aged waits for the heartbeat.
func TestSendsChangesAtOnceAndHeartbeats(t *testing.T) {
	srv := &server{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	p, err := New(Options{Server: hs.URL + "/", Heartbeat: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	t0 := time.Unix(1_700_000_000, 0)
	p.Offer(report(t0, false))
	waitFor(t, "the first report", func() bool { return len(srv.reports()) == 1 })
	p.Offer(report(t0.Add(time.Second), false)) // only older: no send before the heartbeat
	time.Sleep(100 * time.Millisecond)
	if n := len(srv.reports()); n != 1 {
		t.Fatalf("an unchanged report was sent before the heartbeat: %d reports", n)
	}
	sent := time.Now()
	p.Offer(report(t0.Add(2*time.Second), true))
	waitFor(t, "the changed report", func() bool { return len(srv.reports()) == 2 })
	if d := time.Since(sent); d > 200*time.Millisecond {
		t.Errorf("a changed verdict took %s to send", d)
	}
	got := srv.reports()[1]
	if got.State != telemetry.StateDraining || len(got.AllConditions()) != 1 || got.AllConditions()[0].Evidence["xid"] != "79" {
		t.Errorf("server got %+v, want the draining report with the Xid 79 condition", got)
	}
	waitFor(t, "a heartbeat", func() bool { return len(srv.reports()) >= 3 })
	if hb := srv.reports()[2]; Verdict(hb) != Verdict(got) {
		t.Errorf("heartbeat carries a different verdict: %s", Verdict(hb))
	}
	if st := p.Stats(); st.Sent < 3 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestRetriesTheLatest: while the server refuses, newer reports replace older
// ones; once it accepts, the latest is what it gets, and nothing older after it.
func TestRetriesTheLatest(t *testing.T) {
	srv := &server{failing: 3}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	p, err := New(Options{Server: hs.URL, Heartbeat: time.Hour, BackoffMin: 20 * time.Millisecond, BackoffMax: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	t0 := time.Unix(1_700_000_000, 0)
	p.Offer(report(t0, false))
	time.Sleep(30 * time.Millisecond)
	p.Offer(report(t0.Add(time.Second), true))
	waitFor(t, "an accepted report", func() bool { return len(srv.reports()) >= 1 })
	time.Sleep(100 * time.Millisecond)
	got := srv.reports()
	if last := got[len(got)-1]; last.State != telemetry.StateDraining {
		t.Errorf("the server's last report is %s, want the latest (draining)", last.State)
	}
	if st := p.Stats(); st.Errors != 3 || st.LastError == "" {
		t.Errorf("stats %+v, want 3 errors and the last one's text", st)
	}
}

func TestBadServerURL(t *testing.T) {
	for _, u := range []string{"", "gpuwatch:9402", "ftp://x"} {
		if _, err := New(Options{Server: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}
