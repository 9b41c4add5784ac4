package feed

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// fleet writes what agents would ship for one minute, every 10 s, into st:
//   - GPU-A: Slurm job 101 (account busy, user alice), GPU_UTIL 90;
//   - GPU-B: Slurm job 102 (account idle, user bob), GPU_UTIL 10, SM_ACTIVE 0.05;
//   - GPU-C: two pods of namespace ml time-sliced, SM_ACTIVE 0.5;
//   - GPU-D: job 104 (account busy, user carol) with no activity series;
//   - GPU-E: used by nobody, GPU_UTIL 100.
//
// Job 102 is seen only in the last 30 s of the minute.
func fleet(t *testing.T, st *embedded.Store, start time.Time) {
	t.Helper()
	var batch []telemetry.Sample
	alloc := func(at time.Time, uuid string, kv ...string) {
		ls := append([]string{telemetry.LabelNode, "gpu01", telemetry.LabelGPUUUID, uuid, telemetry.LabelGPUIndex, "0"}, kv...)
		batch = append(batch, telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Labels: telemetry.NewLabels(ls...), Value: 1, Time: at})
	}
	dcgm := func(at time.Time, name, uuid string, v float64) {
		batch = append(batch, telemetry.Sample{Name: name, Labels: telemetry.NewLabels(telemetry.DCGMLabelUUID, uuid,
			telemetry.DCGMLabelGPU, "0", telemetry.DCGMLabelHostname, "gpu01", telemetry.LabelNode, "gpu01"), Value: v, Time: at})
	}
	for i := range 6 {
		at := start.Add(time.Duration(i)*10*time.Second + 5*time.Second)
		alloc(at, "GPU-A", telemetry.LabelJobID, "101", telemetry.LabelAccount, "busy", telemetry.LabelUser, "alice")
		dcgm(at, metricGPUUtil, "GPU-A", 90)
		if i >= 3 {
			alloc(at, "GPU-B", telemetry.LabelJobID, "102", telemetry.LabelAccount, "idle", telemetry.LabelUser, "bob")
		}
		dcgm(at, metricGPUUtil, "GPU-B", 10)
		dcgm(at, metricSMActive, "GPU-B", 0.05)
		alloc(at, "GPU-C", telemetry.LabelNamespace, "ml", telemetry.LabelPod, "train-0")
		alloc(at, "GPU-C", telemetry.LabelNamespace, "ml", telemetry.LabelPod, "train-1")
		dcgm(at, metricSMActive, "GPU-C", 0.5)
		alloc(at, "GPU-D", telemetry.LabelJobID, "104", telemetry.LabelAccount, "busy", telemetry.LabelUser, "carol")
		dcgm(at, metricGPUUtil, "GPU-E", 100)
	}
	if err := st.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
}

func TestReadFromTheStore(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	start := time.Now().Add(-5 * time.Minute).Truncate(time.Minute)
	fleet(t, st, start)
	to := start.Add(time.Minute)
	got, err := Read(context.Background(), st, start, to, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fairshare.Sample{
		"101":        {Job: "101", Account: "busy", User: "alice", GPU: "GPU-A", Fraction: 1, Activity: 90, ActivitySource: fairshare.SourceNVMLGPUUtil, Duration: time.Minute},
		"102":        {Job: "102", Account: "idle", User: "bob", GPU: "GPU-B", Fraction: 1, Activity: 0.05, ActivitySource: fairshare.SourceDCGMSMActive, Duration: 30 * time.Second},
		"ml/train-0": {Job: "ml/train-0", Account: "ml", User: "ml", GPU: "GPU-C", Fraction: 0.5, Activity: 0.5, ActivitySource: fairshare.SourceDCGMSMActive, Duration: time.Minute},
		"ml/train-1": {Job: "ml/train-1", Account: "ml", User: "ml", GPU: "GPU-C", Fraction: 0.5, Activity: 0.5, ActivitySource: fairshare.SourceDCGMSMActive, Duration: time.Minute},
		"104":        {Job: "104", Account: "busy", User: "carol", GPU: "GPU-D", Fraction: 1, Activity: 0, ActivitySource: fairshare.SourceNone, Duration: time.Minute},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d samples, want %d: %+v", len(got), len(want), got)
	}
	for _, s := range got {
		w, ok := want[s.Job]
		if !ok {
			t.Errorf("unexpected sample %+v", s)
			continue
		}
		w.Time = to.Add(-w.Duration)
		if s.Account != w.Account || s.User != w.User || s.GPU != w.GPU || s.Fraction != w.Fraction ||
			math.Abs(s.Activity-w.Activity) > 1e-9 || s.ActivitySource != w.ActivitySource || s.Duration != w.Duration || !s.Time.Equal(w.Time) {
			t.Errorf("job %s:\n got %+v\nwant %+v", s.Job, s, w)
		}
	}
	if _, err := Read(context.Background(), st, to, to, ReadOptions{}); err == nil {
		t.Error("an empty interval was accepted")
	}
}

const config = `
charge: measured
idle_floor: 0.05
half_life: 168h
stale_after: 10m
accounts:
  - {name: busy, shares: 1, users: [{name: alice}, {name: carol}]}
  - {name: idle, shares: 1, users: [{name: bob}]}
  - {name: ml, shares: 1, users: [{name: ml}]}
`

// TestFeederChargesMeasuredUse: one interval through the feeder, the ledger
// and the standing: the busy account is charged its GPUs' use (and carol's
// unmeasured GPU in full), the idle one its floor-clamped SM activity.
func TestFeederChargesMeasuredUse(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	start := time.Now().Add(-5 * time.Minute).Truncate(time.Minute)
	fleet(t, st, start)
	cfg, err := fairshare.ParseConfig("fairshare.yaml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(t.TempDir(), "ledger.json")
	now := start.Add(time.Minute + 15*time.Second)
	var updates int
	f, err := New(Options{Querier: st, Config: cfg, LedgerPath: ledger, Interval: time.Minute,
		Now: func() time.Time { return now }, OnUpdate: func(*fairshare.Standing) { updates++ }})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := f.Standing()
	if err != nil || s == nil {
		t.Fatalf("standing %v, %v", s, err)
	}
	rows := map[string]fairshare.StandingRow{}
	for _, r := range s.Associations {
		rows[r.Account+"/"+r.User] = r
	}
	// alice: 60 s × 0.9; carol: 60 s unmeasured, charged 60; bob: 30 s × max(0.05, 0.05);
	// ml: two halves of 60 s × 0.5. Decay from each sample's end (now-15 s) over
	// 15 s of a 7-day half-life is below 1e-4 relative.
	for key, want := range map[string]float64{"busy/alice": 54, "busy/carol": 60, "idle/bob": 1.5, "ml/ml": 30} {
		got := rows[key].UsageCharged
		if math.Abs(got-want) > want*1e-3 {
			t.Errorf("%s charged %.4f GPU-seconds, want %.1f", key, got, want)
		}
	}
	if a := rows["busy/alice"].UsageAllocated; math.Abs(a-60) > 0.01 {
		t.Errorf("alice allocated %.3f GPU-seconds, want 60", a)
	}
	if !(s.Factor(rows["idle/bob"]) > s.Factor(rows["busy/alice"])) {
		t.Errorf("bob (idle, charged 1.5) factor %v is not above alice's (busy, 54) %v", s.Factor(rows["idle/bob"]), s.Factor(rows["busy/alice"]))
	}
	if !rows["busy/carol"].Fallback {
		t.Error("carol's unmeasured GPU is not flagged")
	}
	if updates != 2 { // New publishes the empty standing, Step the new one
		t.Errorf("OnUpdate called %d times, want 2", updates)
	}
	// A restart reloads the ledger: the same interval read again charges nothing more.
	f2, err := New(Options{Querier: st, Config: cfg, LedgerPath: ledger, Interval: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := f2.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2, _ := f2.Standing()
	for _, r := range s2.Associations {
		if r.User == "alice" && math.Abs(r.UsageCharged-54) > 0.1 {
			t.Errorf("after a restart alice is charged %.3f, want still 54", r.UsageCharged)
		}
	}
}

// TestRebuildFromTheStore: with no ledger, the feeder rebuilds usage from the
// store's history (three hours of one job here) in hour-long windows, and a
// second step charges nothing twice.
func TestRebuildFromTheStore(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: 24 * time.Hour})
	now := time.Now().Truncate(time.Second)
	start := now.Add(-3 * time.Hour)
	var batch []telemetry.Sample
	for at := start; at.Before(now.Add(-20 * time.Second)); at = at.Add(10 * time.Second) {
		batch = append(batch,
			telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Labels: telemetry.NewLabels(telemetry.LabelNode, "gpu01",
				telemetry.LabelGPUUUID, "GPU-A", telemetry.LabelJobID, "101", telemetry.LabelAccount, "busy", telemetry.LabelUser, "alice"), Value: 1, Time: at},
			telemetry.Sample{Name: metricGPUUtil, Labels: telemetry.NewLabels(telemetry.DCGMLabelUUID, "GPU-A", telemetry.LabelNode, "gpu01"), Value: 50, Time: at})
	}
	if err := st.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	cfg, err := fairshare.ParseConfig("fairshare.yaml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Options{Querier: st, Config: cfg, Rebuild: 4 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	alice := func() fairshare.StandingRow {
		s, _ := f.Standing()
		for _, r := range s.Associations {
			if r.User == "alice" {
				return r
			}
		}
		t.Fatal("no row for alice")
		return fairshare.StandingRow{}
	}
	// About 3 h − 35 s of allocation (the last samples are inside the 15 s
	// delay), decayed over at most 3 h of a 7-day half-life (≥ 0.987).
	a := alice()
	if a.UsageAllocated < 0.985*(3*3600-40) || a.UsageAllocated > 3*3600 {
		t.Errorf("rebuilt allocation %.0f GPU-seconds, want about 10,760", a.UsageAllocated)
	}
	if r := a.UsageCharged / a.UsageAllocated; r < 0.499 || r > 0.501 {
		t.Errorf("charged/allocated %.4f, want 0.5 (50%% utilization)", r)
	}
	before := a.UsageAllocated
	if err := f.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := alice().UsageAllocated; after > before+0.001 {
		t.Errorf("a second step charged again: %.3f → %.3f", before, after)
	}
}
