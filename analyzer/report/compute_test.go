package report

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

const fbTotal = 81559 // MiB, an H100 80GB HBM3

// syntheticFleet is two hours of what agents ship every 10 s (at :05, :15, …,
// so no sample sits on a step boundary) from t0, plus the two hours before it:
//
//	GPU-A (gpu01) job 1, vision/alice: SM activity 0.8 for an hour, then 0.02
//	      for an hour; framebuffer 40,000 MiB used.
//	GPU-B (gpu01) job 2, vision/bob: the first hour only, utilization 50 %
//	      (no DCGM profiling); its agent ships nothing from 0:20 to 0:40.
//	GPU-C (gpu02) pods nlp/p0 and nlp/p1 time-sliced, no account label,
//	      utilization 30 %, 20,000 MiB used.
//	GPU-D (gpu02) job 4, nlp/carol: no activity series at all.
//	GPU-E (gpu02) job 5, vision/alice: the first hour, SM activity 0.01, 0.9,
//	      0.01 for 20 minutes each (idle stretches shorter than 30 minutes);
//	      60,000 MiB used at one sample.
//
// The previous two hours: GPU-A job 0, vision/alice, SM activity 0.5.
func syntheticFleet(t0 time.Time) []telemetry.Sample {
	var out []telemetry.Sample
	alloc := func(at time.Time, node, uuid string, kv ...string) {
		ls := append([]string{telemetry.LabelNode, node, telemetry.LabelGPUUUID, uuid, telemetry.LabelGPUIndex, "0"}, kv...)
		out = append(out, telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Labels: telemetry.NewLabels(ls...), Value: 1, Time: at})
	}
	dcgm := func(at time.Time, name, node, uuid string, v float64) {
		out = append(out, telemetry.Sample{Name: name, Labels: telemetry.NewLabels(telemetry.DCGMLabelUUID, uuid,
			telemetry.DCGMLabelGPU, "0", telemetry.DCGMLabelHostname, node, telemetry.DCGMLabelModelName, "NVIDIA H100 80GB HBM3"), Value: v, Time: at})
	}
	job := func(id, account, user string) []string {
		return []string{telemetry.LabelJobID, id, telemetry.LabelAccount, account, telemetry.LabelUser, user}
	}
	for i := -720; i < 720; i++ {
		at := t0.Add(time.Duration(i)*10*time.Second + 5*time.Second)
		for _, g := range []struct{ node, uuid string }{{"gpu01", "GPU-A"}, {"gpu01", "GPU-B"}, {"gpu02", "GPU-C"}, {"gpu02", "GPU-D"}, {"gpu02", "GPU-E"}} {
			if g.uuid == "GPU-B" && i >= 120 && i < 240 {
				continue // the agent of GPU-B is silent
			}
			dcgm(at, telemetry.DCGMFBTotal, g.node, g.uuid, fbTotal)
		}
		if i < 0 {
			alloc(at, "gpu01", "GPU-A", job("0", "vision", "alice")...)
			dcgm(at, telemetry.DCGMProfSMActive, "gpu01", "GPU-A", 0.5)
			continue
		}
		alloc(at, "gpu01", "GPU-A", job("1", "vision", "alice")...)
		dcgm(at, telemetry.DCGMProfSMActive, "gpu01", "GPU-A", map[bool]float64{true: 0.8, false: 0.02}[i < 360])
		dcgm(at, telemetry.DCGMFBUsed, "gpu01", "GPU-A", 40000)
		if i < 360 && (i < 120 || i >= 240) {
			alloc(at, "gpu01", "GPU-B", job("2", "vision", "bob")...)
			dcgm(at, telemetry.DCGMGPUUtil, "gpu01", "GPU-B", 50)
		}
		alloc(at, "gpu02", "GPU-C", telemetry.LabelNamespace, "nlp", telemetry.LabelPod, "p0")
		alloc(at, "gpu02", "GPU-C", telemetry.LabelNamespace, "nlp", telemetry.LabelPod, "p1")
		dcgm(at, telemetry.DCGMGPUUtil, "gpu02", "GPU-C", 30)
		dcgm(at, telemetry.DCGMFBUsed, "gpu02", "GPU-C", 20000)
		alloc(at, "gpu02", "GPU-D", job("4", "nlp", "carol")...)
		if i < 360 {
			alloc(at, "gpu02", "GPU-E", job("5", "vision", "alice")...)
			sm := 0.01
			if i >= 120 && i < 240 {
				sm = 0.9
			}
			dcgm(at, telemetry.DCGMProfSMActive, "gpu02", "GPU-E", sm)
			if i == 200 {
				dcgm(at, telemetry.DCGMFBUsed, "gpu02", "GPU-E", 60000)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// want is the report by account of the synthetic fleet, derived by hand:
//
//	vision: allocated A 2 h + B 40 min + E 1 h = 3.6667 h;
//	        measured A 0.8 + 0.02, B 0.6667 × 0.5 = 0.3333, E (20·0.01 + 20·0.9
//	        + 20·0.01)/60 = 0.30667: 1.46 h; efficiency 1.46 / 3.6667 = 0.39818;
//	        idle: A's second hour (E's idle stretches are 20 minutes): 1 h;
//	        gaps: B's 20 minutes = 0.3333 h; SM activity on A and E, utilization
//	        on B: both; memory peak 60,000 of 81,559 MiB (E): headroom 0.26434;
//	        previous period: job 0, 2 h allocated, 1 h measured, efficiency 0.5.
//	nlp:    allocated C 1 h + 1 h (two pods share it), D 2 h = 4 h; measured
//	        C 2 × 0.3 = 0.6 h; unmeasured D 2 h; efficiency 0.6 / (4 − 2) = 0.3;
//	        no idle (30 %); utilization only; headroom 1 − 20,000/81,559 = 0.75478;
//	        no previous period.
type wantGroup struct {
	key                                              string
	allocated, measured, unmeasured, idle, gaps, eff float64
	headroom                                         float64
	by                                               string
	gpus, jobs                                       int
	prev                                             *Previous
}

var wantByAccount = []wantGroup{
	{key: "nlp", allocated: 4, measured: 0.6, unmeasured: 2, eff: 0.3, headroom: 1 - 20000.0/fbTotal, by: SourceGPUUtil, gpus: 2, jobs: 3},
	{key: "vision", allocated: 2 + 2.0/3 + 1, measured: 0.82 + 1.0/3 + 18.4/60, idle: 1, gaps: 1.0 / 3, eff: (0.82 + 1.0/3 + 18.4/60) / (2 + 2.0/3 + 1),
		headroom: 1 - 60000.0/fbTotal, by: SourceMixed, gpus: 3, jobs: 3, prev: &Previous{Allocated: 2, Measured: 1}},
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func checkGroups(t *testing.T, r *Report, want []wantGroup) {
	t.Helper()
	if len(r.Groups) != len(want) {
		t.Fatalf("%d groups, want %d: %+v", len(r.Groups), len(want), r.Groups)
	}
	for i, w := range want {
		g := r.Groups[i]
		if g.Key != w.key {
			t.Errorf("group %d is %q, want %q", i, g.Key, w.key)
			continue
		}
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"allocated", g.Allocated, w.allocated}, {"measured", g.Measured, w.measured}, {"unmeasured", g.Unmeasured, w.unmeasured},
			{"idle", g.Idle, w.idle}, {"gaps", g.Gaps, w.gaps}, {"efficiency", deref(g.Efficiency), w.eff}, {"headroom", deref(g.MemHeadroom), w.headroom},
		} {
			if !near(c.got, c.want) {
				t.Errorf("%s: %s = %.6f, want %.6f", w.key, c.what, c.got, c.want)
			}
		}
		if g.MeasuredBy != w.by || g.GPUs != w.gpus || g.Jobs != w.jobs {
			t.Errorf("%s: measured by %s, %d GPUs, %d jobs; want %s, %d, %d", w.key, g.MeasuredBy, g.GPUs, g.Jobs, w.by, w.gpus, w.jobs)
		}
		switch {
		case (g.Previous == nil) != (w.prev == nil):
			t.Errorf("%s: previous %+v, want %+v", w.key, g.Previous, w.prev)
		case w.prev != nil && (!near(g.Previous.Allocated, w.prev.Allocated) || !near(g.Previous.Measured, w.prev.Measured)):
			t.Errorf("%s: previous %+v, want %+v", w.key, *g.Previous, *w.prev)
		}
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// syntheticWindow is the synthetic fleet's report window: two whole hours
// ending at the last full hour at least an hour ago.
func syntheticWindow() time.Time {
	return time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
}

func checkSynthetic(t *testing.T, q store.Querier, t0 time.Time) {
	t.Helper()
	r, err := Compute(context.Background(), q, Options{From: t0, To: t0.Add(2 * time.Hour), By: ByAccount})
	if err != nil {
		t.Fatal(err)
	}
	checkGroups(t, r, wantByAccount)
	if len(r.TopIdleJobs) != 1 || r.TopIdleJobs[0].Job != "1" || r.TopIdleJobs[0].User != "alice" || !near(r.TopIdleJobs[0].Idle, 1) {
		t.Errorf("top idle jobs %+v, want job 1 (vision/alice) with 1 h", r.TopIdleJobs)
	}
	if !near(r.Total.Allocated, 4+2+2.0/3+1) {
		t.Errorf("total allocated %.4f", r.Total.Allocated)
	}
	// The same data by job, node and model.
	byJob, err := Compute(context.Background(), q, Options{From: t0, To: t0.Add(2 * time.Hour), By: ByJob, NoPrevious: true})
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]Group{}
	for _, g := range byJob.Groups {
		jobs[g.Key] = g
	}
	if g := jobs["nlp/p0"]; !near(g.Allocated, 1) || !near(g.Measured, 0.3) || strings.Join(g.Owners, ",") != "nlp" {
		t.Errorf("pod nlp/p0: %+v", g)
	}
	if g := jobs["4"]; g.Efficiency != nil || g.MeasuredBy != SourceNone {
		t.Errorf("job 4 has no activity series, yet efficiency %v measured by %s", g.Efficiency, g.MeasuredBy)
	}
	byNode, err := Compute(context.Background(), q, Options{From: t0, To: t0.Add(2 * time.Hour), By: ByNode, NoPrevious: true})
	if err != nil {
		t.Fatal(err)
	}
	// gpu02: C 2 h + D 2 h + E 1 h; gpu01: A 2 h + B 40 min.
	if len(byNode.Groups) != 2 || byNode.Groups[0].Key != "gpu02" || !near(byNode.Groups[0].Allocated, 5) || !near(byNode.Groups[1].Allocated, 2+2.0/3) {
		t.Errorf("by node: %+v", byNode.Groups)
	}
	byModel, err := Compute(context.Background(), q, Options{From: t0, To: t0.Add(2 * time.Hour), By: ByModel, NoPrevious: true})
	if err != nil {
		t.Fatal(err)
	}
	// GPU-D has no DCGM series but FB_TOTAL, which names the model too.
	if len(byModel.Groups) != 1 || byModel.Groups[0].Key != "NVIDIA H100 80GB HBM3" {
		t.Errorf("by model: %+v", byModel.Groups)
	}
}

func TestSyntheticEmbedded(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := syntheticWindow()
	if err := st.Append(context.Background(), syntheticFleet(t0)); err != nil {
		t.Fatal(err)
	}
	checkSynthetic(t, st, t0)
}

func TestIdleThresholdAndDuration(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := syntheticWindow()
	if err := st.Append(context.Background(), syntheticFleet(t0)); err != nil {
		t.Fatal(err)
	}
	// At 15 minutes E's 20-minute stretches at 0.01 count: 40 minutes of
	// vision's idle more. At a 1 % threshold nothing of E is below it, and
	// A's 0.02 is not either.
	for _, c := range []struct {
		below float64
		for_  time.Duration
		want  float64
	}{{0.05, 15 * time.Minute, 1 + 40.0/60}, {0.01, 15 * time.Minute, 0}, {0.05, 2 * time.Hour, 0}} {
		r, err := Compute(context.Background(), st, Options{From: t0, To: t0.Add(2 * time.Hour), IdleBelow: c.below, IdleFor: c.for_, NoPrevious: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range r.Groups {
			if g.Key == "vision" && !near(g.Idle, c.want) {
				t.Errorf("idle below %g for %s: %.4f h, want %.4f", c.below, c.for_, g.Idle, c.want)
			}
		}
	}
}

func TestCoarseStepKeepsTheTotals(t *testing.T) {
	// At a 5-minute step every allocation sample still weighs 10 s: the
	// totals do not move (the window is whole steps, samples are regular).
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := syntheticWindow()
	if err := st.Append(context.Background(), syntheticFleet(t0)); err != nil {
		t.Fatal(err)
	}
	r, err := Compute(context.Background(), st, Options{From: t0, To: t0.Add(2 * time.Hour), Step: 5 * time.Minute, NoPrevious: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []wantGroup{wantByAccount[0], wantByAccount[1]}
	want[1].prev = nil
	checkGroups(t, r, want)
}

func TestBadInput(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := syntheticWindow()
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"reversed", Options{From: t0, To: t0.Add(-time.Hour)}, "empty or reversed"},
		{"empty", Options{From: t0, To: t0}, "empty or reversed"},
		{"unknown by", Options{From: t0, To: t0.Add(time.Hour), By: "team"}, `unknown grouping "team"`},
		{"idle for below step", Options{From: t0, To: t0.Add(time.Hour), Step: time.Hour, IdleFor: time.Minute}, "shorter than the step"},
		{"no data", Options{From: t0, To: t0.Add(time.Hour)}, "no GPU was seen allocated"},
	} {
		_, err := Compute(context.Background(), st, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
		if c.name == "no data" && !errors.Is(err, ErrNoData) {
			t.Errorf("no data: %v is not ErrNoData", err)
		}
	}
}
