package jobstats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/jobstats/jobstatstest"
	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

func near(a *float64, b float64) bool {
	return a != nil && math.Abs(*a-b) <= 1e-6*math.Max(1, math.Abs(b))
}

// Window is the synthetic job's t0: on a whole minute, young enough for the
// embedded store's default out-of-order window.
func window() time.Time { return time.Now().Add(-140 * time.Minute).Truncate(time.Minute) }

// CheckJob compares the stats of jobstatstest.Samples with the answers its
// comment derives by hand.
func CheckJob(t *testing.T, r *Result, t0 time.Time) {
	t.Helper()
	if r.Job != jobstatstest.Job || !r.Start.Equal(t0.Add(-time.Minute)) || !r.End.Equal(t0.Add(119*time.Minute)) || r.Account != "vision" || r.User != "alice" {
		t.Errorf("job %q %s to %s account %q user %q, want 4242 t0-1m to t0+119m, vision, alice", r.Job, r.Start, r.End, r.Account, r.User)
	}
	if want := "3 GPUs allocated, 1 did nothing, 1 idle for 30m0s or more; mean activity 34%; 1 Xid"; r.Verdict != want || r.Idle != 1 || math.Abs(r.AllocatedGPU-6) > 1e-9 {
		t.Errorf("verdict %q, idle %d, %g GPU-hours; want %q, 1, 6", r.Verdict, r.Idle, r.AllocatedGPU, want)
	}
	if len(r.GPUs) != 3 {
		t.Fatalf("GPUs %+v, want a0, a1, b0", r.GPUs)
	}
	a0, a1, b0 := r.GPUs[0], r.GPUs[1], r.GPUs[2]
	if a0.UUID != "GPU-a0" || a1.UUID != "GPU-a1" || b0.UUID != "GPU-b0" || a0.Node != "node-a" || b0.Index != "0" || a0.Model != jobstatstest.H100 || b0.Model != jobstatstest.A100 {
		t.Errorf("GPUs %s %s/%s %s, %s, %s %s", a0.UUID, a0.Node, a0.Index, a0.Model, a1.UUID, b0.UUID, b0.Model)
	}
	for _, g := range r.GPUs {
		if g.AllocatedHours != 2 {
			t.Errorf("%s held %g h, want 2", g.UUID, g.AllocatedHours)
		}
	}
	// a0: busy, energy from the counter, one Xid, the node's ib-flap.
	if !near(a0.SMActive, 0.6) || !near(a0.Utilization, 90) || a0.ActivitySource != report.SourceSMActive || !near(a0.MemPeakMiB, 60000) ||
		!near(a0.MemTotalMiB, 81559) || !near(a0.PowerW, 500) || !near(a0.EnergyJ, 3.57e6) || a0.EnergySource != "counter" ||
		a0.IdleSeconds != 0 || a0.DidNothing {
		t.Errorf("a0 %s", js(a0))
	}
	if len(a0.Xids) != 1 || a0.Xids[0].Xid != "13" || a0.Xids[0].Count != 1 || a0.Xids[0].Action != "RESTART_APP" || !a0.Xids[0].First.Equal(t0.Add(50*time.Minute)) {
		t.Errorf("a0 Xids %+v, want one Xid 13 at t0+50m", a0.Xids)
	}
	for _, g := range []GPU{a0, a1} {
		if len(g.Conditions) != 1 || g.Conditions[0].Condition != "ib-flap" || g.Conditions[0].Scope != "node" || !g.Conditions[0].First.Equal(t0.Add(30*time.Minute)) {
			t.Errorf("%s conditions %+v, want the node's ib-flap from t0+30m", g.UUID, g.Conditions)
		}
	}
	// a1: did nothing the whole job; energy from power.
	if !near(a1.SMActive, 0.01) || !near(a1.Utilization, 0) || !near(a1.EnergyJ, 504000) || a1.EnergySource != "power" || !a1.DidNothing ||
		a1.IdleSeconds != 7200 || len(a1.IdleStretches) != 1 || !a1.IdleStretches[0].From.Equal(t0.Add(-time.Minute)) || len(a1.Xids) != 0 {
		t.Errorf("a1 %s", js(a1))
	}
	// b0: utilization only, idle its last hour; the neighbour's condition not here.
	if b0.SMActive != nil || !near(b0.Utilization, 41) || !near(b0.Activity, 0.41) || b0.ActivitySource != report.SourceGPUUtil ||
		!near(b0.MemTotalMiB, 80559) || !near(b0.MemPeakMiB, 20000) || !near(b0.EnergyJ, 2.16e6) || b0.DidNothing || b0.IdleSeconds != 3600 ||
		len(b0.IdleStretches) != 1 || !b0.IdleStretches[0].From.Equal(t0.Add(59*time.Minute)) || !b0.IdleStretches[0].To.Equal(t0.Add(119*time.Minute)) ||
		len(b0.Conditions) != 0 || len(b0.Xids) != 0 {
		t.Errorf("b0 %s", js(b0))
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestSyntheticJob(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := window()
	if err := st.Append(context.Background(), jobstatstest.Samples(t0)); err != nil {
		t.Fatal(err)
	}
	r, err := Compute(context.Background(), st, Options{Job: jobstatstest.Job, From: t0.Add(-time.Hour), To: t0.Add(3 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	CheckJob(t, r, t0)

	// The idle threshold and duration move the stretches: at 1 % nothing of
	// a1 (0.01) or b0 (0.02) is below it; at 90 minutes b0's hour is not a
	// stretch.
	r, err = Compute(context.Background(), st, Options{Job: jobstatstest.Job, From: t0.Add(-time.Hour), To: t0.Add(3 * time.Hour), IdleBelow: 0.01})
	if err != nil || r.Idle != 0 || r.GPUs[1].IdleSeconds != 0 || r.GPUs[2].IdleSeconds != 0 {
		t.Errorf("at 1%%: %v %s", err, js(r))
	}
	r, err = Compute(context.Background(), st, Options{Job: jobstatstest.Job, From: t0.Add(-time.Hour), To: t0.Add(3 * time.Hour), IdleFor: 90 * time.Minute})
	if err != nil || r.Idle != 1 || r.GPUs[1].IdleSeconds != 7200 || r.GPUs[2].IdleSeconds != 0 {
		t.Errorf("for 90m: %v %s", err, js(r))
	}

	// The neighbour is a job of its own.
	r, err = Compute(context.Background(), st, Options{Job: jobstatstest.Other, From: t0.Add(-time.Hour), To: t0.Add(3 * time.Hour)})
	if err != nil || len(r.GPUs) != 1 || r.GPUs[0].UUID != "GPU-b1" || len(r.GPUs[0].Xids) != 1 || r.GPUs[0].Xids[0].Xid != "48" ||
		len(r.GPUs[0].Conditions) != 1 || r.Verdict != "1 GPU allocated; mean activity 100%; 1 Xid" {
		t.Errorf("job 99: %v %s", err, js(r))
	}

	_, err = Compute(context.Background(), st, Options{Job: "nope", From: t0.Add(-time.Hour), To: t0.Add(3 * time.Hour)})
	if !errors.Is(err, ErrNoJob) || !strings.Contains(err.Error(), `job "nope"`) {
		t.Errorf("unknown job: %v", err)
	}
	// A window that ends before the job began does not find it.
	if _, err = Compute(context.Background(), st, Options{Job: jobstatstest.Job, From: t0.Add(-2 * time.Hour), To: t0.Add(-time.Hour)}); !errors.Is(err, ErrNoJob) {
		t.Errorf("window before the job: %v", err)
	}
}

func TestRender(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := window()
	if err := st.Append(context.Background(), jobstatstest.Samples(t0)); err != nil {
		t.Fatal(err)
	}
	r, err := Compute(context.Background(), st, Options{Job: jobstatstest.Job, From: t0.Add(-time.Hour), To: t0.Add(3 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, r, report.FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Job 4242: 3 GPUs allocated, 1 did nothing", "60000/81559 MiB (74%)", "2h0m0s (did nothing)", "13×1", "ib-flap",
		"0.992 kWh", "node-b/0  " + t0.Add(59*time.Minute).UTC().Format(time.RFC3339)} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := Render(&b, r, report.FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Verdict != r.Verdict || len(back.GPUs) != 3 {
		t.Errorf("json: %v %s", err, b.String())
	}
	if _, err := ParseFormat("csv"); err == nil || !strings.Contains(err.Error(), "want one of table, json") {
		t.Errorf("csv: %v", err)
	}
}

func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	name := func(p string) string { return "--" + strings.ReplaceAll(p, "_", "-") }
	o, err := ParseQuery("7", url.Values{}, now, name)
	if err != nil || !o.To.Equal(now) || !o.From.Equal(now.Add(-DefaultSearch)) || o.IdleBelow != 0 {
		t.Errorf("defaults: %+v %v", o, err)
	}
	o, err = ParseQuery("7", url.Values{"idle_below": {"10%"}, "idle_for": {"1h"}, "last": {"48h"}}, now, name)
	if err != nil || o.IdleBelow != 0.1 || o.IdleFor != time.Hour || !o.From.Equal(now.Add(-48*time.Hour)) {
		t.Errorf("set: %+v %v", o, err)
	}
	for _, c := range []struct {
		job  string
		v    url.Values
		want string
	}{
		{"", url.Values{}, "which job"},
		{"7", url.Values{"idle_below": {"120%"}}, "--idle-below"},
		{"7", url.Values{"idle_for": {"-1m"}}, "--idle-for"},
		{"7", url.Values{"last": {"soon"}}, "--last"},
		{"7", url.Values{"from": {"2026-11-02T00:00:00Z"}, "to": {"2026-11-01T00:00:00Z"}}, "empty or reversed"},
	} {
		if _, err := ParseQuery(c.job, c.v, now, name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %v: %v, want %q", c.job, c.v, err, c.want)
		}
	}
}
