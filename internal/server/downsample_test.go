package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
)

// TestReportDownsampled: a server with Options.Downsample summarizes what
// agents wrote while it runs (the hours and five minutes that ended before
// its clock's now, less the delay), says so on /metrics, and the report API
// answers from the summaries what the raw samples give.
func TestReportDownsampled(t *testing.T) {
	t0 := time.Now().Add(-4 * time.Hour).Truncate(time.Hour)
	now := t0.Add(3*time.Hour + 5*time.Minute)
	s, err := New(Options{DataDir: t.TempDir(), Clock: func() time.Time { return now }, Downsample: &report.DownsampleOptions{StartDelay: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, h := range []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)} {
		if err := s.Appender().Append(t.Context(), oneJobHour(h)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(metrics(t, ts.URL), `gpuwatch_report_downsample_samples_total{resolution="1h"}`) {
		if time.Now().After(deadline) {
			t.Fatal("no hourly summary written in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done

	opts := report.Options{From: t0.Add(time.Hour), To: t0.Add(3 * time.Hour), By: report.ByUser}
	raw := opts
	raw.RawOnly = true
	want, err := report.Compute(t.Context(), s.Querier(), raw)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(ts.URL + APIPrefix + "/report?" + opts.Query().Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got report.Report
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Groups) != 1 || got.Groups[0].Allocated != 2 || got.Groups[0].Measured != want.Groups[0].Measured || want.Groups[0].Measured != 1 {
		t.Errorf("report from summaries %+v, from raw samples %+v", got.Groups, want.Groups)
	}
	v, err := s.Querier().Instant(t.Context(), `count_over_time(`+report.MetricSummaries+`{resolution="1h"}[3h])`, now)
	if err != nil || len(v) != 1 || v[0].Value < 2 {
		t.Errorf("hourly markers: %v %v, want at least 2", v, err)
	}
}

func metrics(t *testing.T, base string) string {
	t.Helper()
	return getText(t, base+"/metrics")
}

// TestDownsampleOnLeaderOnly: with an Elector the replicas share one store,
// so only the leader writes the report's summaries: a follower writes none
// however long it runs, and the same server writes them once it leads.
func TestDownsampleOnLeaderOnly(t *testing.T) {
	t0 := time.Now().Add(-4 * time.Hour).Truncate(time.Hour)
	now := t0.Add(3*time.Hour + 5*time.Minute)
	el := &handElector{id: "server-1", leader: "server-0", granted: make(chan struct{}), lost: make(chan struct{})}
	s, err := New(Options{DataDir: t.TempDir(), Clock: func() time.Time { return now }, Elector: el,
		Downsample: &report.DownsampleOptions{StartDelay: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	if err := s.Appender().Append(t.Context(), oneJobHour(t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	summaries := func() float64 {
		v, err := s.Querier().Instant(t.Context(), `count(count_over_time(`+report.MetricSummaries+`[4h]))`, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) == 0 {
			return 0
		}
		return v[0].Value
	}
	// The leader's first pass runs at once (TestReportDownsampled sees it
	// within a moment); a second of following is several of its passes.
	time.Sleep(time.Second)
	if n := summaries(); n != 0 || strings.Contains(metrics(t, ts.URL), `gpuwatch_report_downsample_samples_total{`) {
		t.Fatalf("a follower wrote %v summary markers", n)
	}
	close(el.granted)
	deadline := time.Now().Add(30 * time.Second)
	for summaries() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the leader wrote no summary in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
