package report

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// weekStart is the synthetic week's first instant.
var weekStart = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

const stepsPerDay = 8640 // 10 s steps

// weekSamples is what four GPUs' agents ship in steps [from, to) of the
// synthetic week, step s's samples 3 s into (weekStart+10s·s, +10 s]:
//
//   - GPU-A (node-a, SM activity): jobs of 2,600 steps (7h13m20s) every 2,707
//     (17m50s free between them), so they start and end inside five-minute
//     intervals, accounts vision, nlp, speech in turn. Each job is idle (1 %)
//     for its first 290 steps (48m20s: an idle stretch across intervals and
//     an hour boundary), busy, idle again for 150 steps (25 minutes: too short),
//     busy to the end. Framebuffer used and total.
//   - GPU-B (node-a, utilization only): job 2000 (nlp) all week, and every day
//     its agent silent for 20 minutes from 13:05:10 (a gap inside an
//     interval), 25 idle minutes on either side of it (they do not join across
//     the gap: no idle), a 3-hour idle stretch from 15:33:20, and silent again
//     from 20:55 to 21:10 (across an hour), idle for 35 minutes before that
//     and 40 after.
//   - GPU-C (node-b, SM activity): pod nlp/p0 all week, time-shared with pod
//     nlp/p1 (user pat: a filter can keep one of the two) for 1,000 steps in
//     every 3,000; idle (3 %) 2,000 steps in every
//     10,000. Framebuffer used, free and reserved, no total.
//   - GPU-D (node-b): job 3000 (speech) unmeasured (no activity series) 5,000
//     steps in every 10,000, utilization 60 % otherwise, ending at day 5 + 77
//     steps; job 3001 (vision) from day 5 + 200 steps.
func weekSamples(from, to int) []telemetry.Sample {
	var out []telemetry.Sample
	dcgm := func(name, node, uuid string) telemetry.Labels {
		return telemetry.NewLabels(telemetry.DCGMLabelUUID, uuid, telemetry.DCGMLabelHostname, node, telemetry.DCGMLabelModelName, "NVIDIA H100 80GB HBM3")
	}
	allocLabels := func(node, uuid string, kv ...string) telemetry.Labels {
		return telemetry.NewLabels(append([]string{telemetry.LabelNode, node, telemetry.LabelGPUUUID, uuid}, kv...)...)
	}
	for s := from; s < to; s++ {
		at := weekStart.Add(time.Duration(s)*10*time.Second + 3*time.Second)
		add := func(name string, ls telemetry.Labels, v float64) {
			out = append(out, telemetry.Sample{Name: name, Labels: ls, Value: v, Time: at})
		}
		// GPU-A
		if j, o := s/2707, s%2707; o < 2600 {
			accounts := []string{"vision", "nlp", "speech"}
			add(metricAllocation, allocLabels("node-a", "GPU-A", telemetry.LabelJobID, fmt.Sprint(1000+j),
				telemetry.LabelAccount, accounts[j%3], telemetry.LabelUser, fmt.Sprintf("u%d", j%4)), 1)
			act := 0.2 + 0.6*float64((o*37)%100)/100
			if o < 290 || (o >= 1500 && o < 1650) {
				act = 0.01
			}
			add(metricSMActive, dcgm(metricSMActive, "node-a", "GPU-A"), act)
			add(metricFBUsed, dcgm(metricFBUsed, "node-a", "GPU-A"), float64(10000+(o*13)%7000))
			add(metricFBTotal, dcgm(metricFBTotal, "node-a", "GPU-A"), 81559)
		}
		// GPU-B
		if d := s % stepsPerDay; (d < 4711 || d >= 4831) && (d < 7530 || d >= 7620) {
			add(metricAllocation, allocLabels("node-a", "GPU-B", telemetry.LabelJobID, "2000", telemetry.LabelAccount, "nlp", telemetry.LabelUser, "bob"), 1)
			util := float64(40 + s%13)
			switch {
			case d >= 4561 && d < 4711, d >= 4831 && d < 4981:
				util = 1
			case d >= 5600 && d < 5600+1080:
				util = 0
			case d >= 7320 && d < 7530, d >= 7620 && d < 7860:
				util = 2
			}
			add(metricGPUUtil, dcgm(metricGPUUtil, "node-a", "GPU-B"), util)
		}
		// GPU-C
		add(metricAllocation, allocLabels("node-b", "GPU-C", telemetry.LabelNamespace, "nlp", telemetry.LabelPod, "p0"), 1)
		if (s/1000)%3 == 0 {
			add(metricAllocation, allocLabels("node-b", "GPU-C", telemetry.LabelNamespace, "nlp", telemetry.LabelPod, "p1", telemetry.LabelUser, "pat"), 1)
		}
		sm := 0.3 + 0.01*float64(s%7)
		if (s/2000)%5 == 1 {
			sm = 0.03
		}
		add(metricSMActive, dcgm(metricSMActive, "node-b", "GPU-C"), sm)
		add(metricFBUsed, dcgm(metricFBUsed, "node-b", "GPU-C"), float64(20000+s%1000))
		add(metricFBFree, dcgm(metricFBFree, "node-b", "GPU-C"), float64(61000-s%1000))
		add(metricFBReserved, dcgm(metricFBReserved, "node-b", "GPU-C"), 559)
		// GPU-D
		switch day5 := 5 * stepsPerDay; {
		case s < day5+77:
			add(metricAllocation, allocLabels("node-b", "GPU-D", telemetry.LabelJobID, "3000", telemetry.LabelAccount, "speech", telemetry.LabelUser, "dan"), 1)
		case s >= day5+200:
			add(metricAllocation, allocLabels("node-b", "GPU-D", telemetry.LabelJobID, "3001", telemetry.LabelAccount, "vision", telemetry.LabelUser, "eve"), 1)
		}
		if (s/5000)%2 == 1 {
			add(metricGPUUtil, dcgm(metricGPUUtil, "node-b", "GPU-D"), 60)
		}
	}
	return out
}

// countingQuerier counts the range queries by what they read.
type countingQuerier struct {
	store.Querier
	mu     sync.Mutex
	counts map[string]int
}

func (c *countingQuerier) Samples(ctx context.Context, selector string, from, to time.Time) (store.Matrix, error) {
	c.mu.Lock()
	switch {
	case strings.Contains(selector, MetricSummaryMeasured) && strings.Contains(selector, `resolution="1h"`):
		c.counts["1h"]++
	case strings.Contains(selector, MetricSummaryMeasured):
		c.counts["5m"]++
	}
	c.mu.Unlock()
	return c.Querier.(store.SampleReader).Samples(ctx, selector, from, to)
}

// rangeOnly is a store without store.SampleReader: the report reads the
// summaries by range queries.
type rangeOnly struct{ store.Querier }

func (c *countingQuerier) Range(ctx context.Context, expr string, r store.Range) (store.Matrix, error) {
	c.mu.Lock()
	switch {
	case strings.Contains(expr, MetricSummaryMeasured) && strings.Contains(expr, `resolution="1h"`):
		c.counts["1h"]++
	case strings.Contains(expr, MetricSummaryMeasured):
		c.counts["5m"]++
	case strings.Contains(expr, "count_over_time("+metricAllocation):
		c.counts["raw"] += int(r.End.Sub(r.Start)/r.Step) + 1 // steps
	}
	c.mu.Unlock()
	return c.Querier.Range(ctx, expr, r)
}

// TestDownsampledEqualsRaw: a week of four GPUs written into the embedded
// store five minutes at a time while a Downsampler summarizes it as the
// server does; reports over it read from the summaries (and raw samples at
// the windows' edges) equal the reports read from the raw samples alone.
//
// Tolerance: both sides add the same per-step terms (each at most 10 s of
// one GPU), only grouped differently (a step at a time, or a summary of 30
// or 360 steps at a time), and the store keeps float64 values exactly; a
// week is 60,480 steps, so the sums differ by at most about 60,480 × 2⁻⁵³
// relative (7e-12). 1e-9 leaves room and still catches a single step counted
// wrong (1/60,480 of a GPU-week).
func TestDownsampledEqualsRaw(t *testing.T) {
	if testing.Short() {
		t.Skip("a week of data")
	}
	st := embeddedtest.Open(t, embedded.Options{Retention: 30 * 24 * time.Hour})
	ctx := t.Context()
	now := weekStart
	ds, err := NewDownsampler(st, st, DownsampleOptions{Now: func() time.Time { return now }, CatchUp: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const steps = 7 * stepsPerDay
	var intervals, allocations int
	for s := 0; s < steps; s += 30 {
		if err := st.Append(ctx, weekSamples(s, s+30)); err != nil {
			t.Fatal(err)
		}
		now = weekStart.Add(time.Duration(s+30) * 10 * time.Second)
		done, err := ds.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range done {
			intervals++
			allocations += d.Allocations
		}
	}
	now = now.Add(time.Hour)
	done, err := ds.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	intervals += len(done)
	// 2,016 five-minute intervals and 168 hours, and the catch-up's empty
	// interval before the week.
	if want := 2016 + 168; intervals < want {
		t.Fatalf("%d intervals summarized, want at least %d", intervals, want)
	}
	t.Logf("%d intervals summarized, %d allocation summaries", intervals, allocations)

	end := weekStart.Add(7 * 24 * time.Hour)
	for _, c := range []struct {
		name     string
		opts     Options
		wantRead []string // what the summarized report must read
	}{
		{"week by account", Options{From: weekStart, To: end, By: ByAccount}, []string{"1h"}},
		{"unaligned by job, previous period", Options{From: weekStart.Add(3*24*time.Hour + 1234*time.Second), To: end.Add(-777 * time.Second), By: ByJob}, []string{"1h", "5m", "raw"}},
		{"unaligned by user", Options{From: weekStart.Add(26*time.Hour + 5*time.Minute), To: weekStart.Add(101*time.Hour + 7*time.Minute + 10*time.Second), By: ByUser}, []string{"1h", "5m", "raw"}},
		{"by node", Options{From: weekStart.Add(2 * time.Hour), To: end, By: ByNode}, []string{"1h"}},
		{"idle for 10m: five-minute summaries", Options{From: weekStart, To: end, By: ByNamespace, IdleFor: 10 * time.Minute}, []string{"5m"}},
		{"idle for 2h: five-minute summaries", Options{From: weekStart, To: end, By: ByAccount, IdleFor: 2 * time.Hour}, []string{"5m"}},
		{"idle below 10%: raw", Options{From: weekStart, To: end, By: ByAccount, IdleBelow: 0.1}, []string{"raw"}},
		{"step 5m: raw", Options{From: weekStart, To: end, By: ByModel, Step: 5 * time.Minute}, []string{"raw"}},
		// Filtered: the same allocations kept on both paths, the previous
		// period with them.
		{"account nlp by user, unaligned", Options{From: weekStart.Add(26*time.Hour + 5*time.Minute), To: weekStart.Add(101*time.Hour + 7*time.Minute + 10*time.Second), By: ByUser,
			Filter: Filter{Accounts: []string{"nlp"}}}, []string{"1h", "5m", "raw"}},
		{"user pat by job: half a shared GPU", Options{From: weekStart.Add(3 * 24 * time.Hour), To: end, By: ByJob,
			Filter: Filter{Users: []string{"pat"}}}, []string{"1h"}},
		{"accounts and users by account", Options{From: weekStart.Add(3*24*time.Hour + 1234*time.Second), To: end.Add(-777 * time.Second), By: ByAccount,
			Filter: Filter{Accounts: []string{"vision", "speech"}, Users: []string{"u1", "u2", "dan", "eve"}}}, []string{"1h", "5m", "raw"}},
		{"namespace (none) by account", Options{From: weekStart.Add(3 * 24 * time.Hour), To: end, By: ByAccount,
			Filter: Filter{Namespaces: []string{None}}}, []string{"1h"}},
		{"namespace nlp by user, idle for 10m", Options{From: weekStart.Add(3 * 24 * time.Hour), To: end, By: ByUser, IdleFor: 10 * time.Minute,
			Filter: Filter{Namespaces: []string{"nlp"}}}, []string{"5m"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rawOpts := c.opts
			rawOpts.RawOnly = true
			raw, err := Compute(ctx, st, rawOpts)
			if err != nil {
				t.Fatal(err)
			}
			cq := &countingQuerier{Querier: st, counts: map[string]int{}}
			sum, err := Compute(ctx, cq, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			// The same by range queries, on a store that does not read
			// stored samples.
			rq := &countingQuerier{Querier: st, counts: map[string]int{}}
			byRange, err := Compute(ctx, rangeOnly{rq}, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rq.counts) != fmt.Sprint(cq.counts) && rq.counts["1h"]+rq.counts["5m"] <= cq.counts["1h"]+cq.counts["5m"] {
				t.Errorf("by range queries read %v, directly %v", rq.counts, cq.counts)
			}
			sameReport(t, byRange, raw)
			for _, w := range c.wantRead {
				if cq.counts[w] == 0 {
					t.Errorf("read no %s data: %v", w, cq.counts)
				}
			}
			if want := []string{"raw"}; fmt.Sprint(c.wantRead) == fmt.Sprint(want) && (cq.counts["1h"] > 0 || cq.counts["5m"] > 0) {
				t.Errorf("read summaries made with other parameters: %v", cq.counts)
			}
			t.Logf("read %v", cq.counts)
			sameReport(t, sum, raw)
			if !c.opts.Filter.IsZero() {
				checkFiltered(t, ctx, st, c.opts, raw)
			}
		})
	}

	// Not vacuous: the week has idle stretches, gaps, unmeasured time, shared
	// GPUs and both sources.
	raw, err := Compute(ctx, st, Options{From: weekStart, To: end, By: ByAccount, RawOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	tot := raw.Total
	if tot.Idle < 10 || tot.Gaps < 2 || tot.Unmeasured < 10 || tot.MeasuredBy != SourceMixed || len(raw.Groups) != 3 {
		t.Errorf("the week lacks a case: idle %.2f h, gaps %.2f h, unmeasured %.2f h, measured by %s, %d groups", tot.Idle, tot.Gaps, tot.Unmeasured, tot.MeasuredBy, len(raw.Groups))
	}
}

// checkFiltered holds a filtered report to the unfiltered one: it says its
// filter; its rows are the unfiltered rows of the kept keys where the filter
// is on the report's own dimension, and no more than them otherwise; the
// previous period is filtered too.
func checkFiltered(t *testing.T, ctx context.Context, st store.Querier, opts Options, got *Report) {
	t.Helper()
	if !reflect.DeepEqual(got.Filter, opts.Filter) {
		t.Errorf("the report says filter %+v, want %+v", got.Filter, opts.Filter)
	}
	all := opts
	all.Filter, all.RawOnly = Filter{}, true
	full, err := Compute(ctx, st, all)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]Group{}
	for _, g := range full.Groups {
		byKey[g.Key] = g
	}
	own := map[By][]string{ByAccount: opts.Filter.Accounts, ByUser: opts.Filter.Users, ByNamespace: opts.Filter.Namespaces}
	only := 0
	for _, vals := range own {
		if len(vals) > 0 {
			only++
		}
	}
	// A job belongs to one account, user and namespace: its row is whole.
	exact := only == 1 && len(own[opts.By]) > 0 || opts.By == ByJob
	if len(got.Groups) == 0 {
		t.Errorf("the filter kept no group")
	}
	var sum, prev float64
	for _, g := range got.Groups {
		w, ok := byKey[g.Key]
		switch {
		case !ok:
			t.Errorf("group %s is not in the unfiltered report", g.Key)
		case exact:
			same := *full
			same.Groups, same.Total, same.TopIdleJobs = []Group{w}, w, nil
			part := *got
			part.Groups, part.Total, part.TopIdleJobs = []Group{g}, g, nil
			sameReport(t, &part, &same)
		case g.Allocated > w.Allocated*(1+1e-9):
			t.Errorf("group %s: %.6g GPU-hours filtered, %.6g without", g.Key, g.Allocated, w.Allocated)
		}
		sum += g.Allocated
		if g.Previous != nil {
			prev += g.Previous.Allocated
		}
	}
	if math.Abs(sum-got.Total.Allocated) > 1e-9*math.Max(1, sum) {
		t.Errorf("total %.12g GPU-hours, the groups add up to %.12g", got.Total.Allocated, sum)
	}
	if got.Total.Previous != nil && math.Abs(prev-got.Total.Previous.Allocated) > 1e-9*math.Max(1, prev) {
		t.Errorf("previous total %.12g GPU-hours, the groups' previous add up to %.12g", got.Total.Previous.Allocated, prev)
	}
	if got.Total.Allocated >= full.Total.Allocated {
		t.Errorf("total %.6g GPU-hours filtered, %.6g without", got.Total.Allocated, full.Total.Allocated)
	}
	for _, j := range got.TopIdleJobs {
		a := Filter{Accounts: opts.Filter.Accounts, Users: opts.Filter.Users}
		if (len(a.Accounts) > 0 && !slices.Contains(a.Accounts, j.Account)) || (len(a.Users) > 0 && !slices.Contains(a.Users, j.User)) {
			t.Errorf("top idle job %+v is not the filter's", j)
		}
	}
}

func sameReport(t *testing.T, got, want *Report) {
	t.Helper()
	eq := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	ptr := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	eqp := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || eq(*a, *b)) }
	check := func(where string, g, w Group) {
		if g.Key != w.Key || g.GPUs != w.GPUs || g.Jobs != w.Jobs || g.MeasuredBy != w.MeasuredBy || fmt.Sprint(g.Owners) != fmt.Sprint(w.Owners) {
			t.Errorf("%s: %s %d GPUs %d jobs %s %v, want %s %d GPUs %d jobs %s %v", where, g.Key, g.GPUs, g.Jobs, g.MeasuredBy, g.Owners, w.Key, w.GPUs, w.Jobs, w.MeasuredBy, w.Owners)
		}
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"allocated", g.Allocated, w.Allocated}, {"measured", g.Measured, w.Measured}, {"unmeasured", g.Unmeasured, w.Unmeasured},
			{"idle", g.Idle, w.Idle}, {"gaps", g.Gaps, w.Gaps}, {"mem peak", g.MemPeakMiB, w.MemPeakMiB}, {"mem total", g.MemTotalMiB, w.MemTotalMiB}} {
			if !eq(f.got, f.want) {
				t.Errorf("%s %s: %s %.12g, want %.12g", where, g.Key, f.name, f.got, f.want)
			}
		}
		if !eqp(g.Efficiency, w.Efficiency) || !eqp(g.MemHeadroom, w.MemHeadroom) {
			t.Errorf("%s %s: efficiency %g headroom %g, want %g %g", where, g.Key, ptr(g.Efficiency), ptr(g.MemHeadroom), ptr(w.Efficiency), ptr(w.MemHeadroom))
		}
		if (g.Previous == nil) != (w.Previous == nil) {
			t.Errorf("%s %s: previous %+v, want %+v", where, g.Key, g.Previous, w.Previous)
		} else if g.Previous != nil && (!eq(g.Previous.Allocated, w.Previous.Allocated) || !eq(g.Previous.Measured, w.Previous.Measured) || !eqp(g.Previous.Efficiency, w.Previous.Efficiency)) {
			t.Errorf("%s %s: previous %+v, want %+v", where, g.Key, *g.Previous, *w.Previous)
		}
	}
	if len(got.Groups) != len(want.Groups) {
		t.Fatalf("%d groups, want %d", len(got.Groups), len(want.Groups))
	}
	for i := range want.Groups {
		check("group", got.Groups[i], want.Groups[i])
	}
	check("total", got.Total, want.Total)
	if len(got.TopIdleJobs) != len(want.TopIdleJobs) {
		t.Fatalf("%d top idle jobs, want %d", len(got.TopIdleJobs), len(want.TopIdleJobs))
	}
	for i, w := range want.TopIdleJobs {
		if g := got.TopIdleJobs[i]; g.Job != w.Job || g.GPUs != w.GPUs || !eq(g.Idle, w.Idle) || !eq(g.Allocated, w.Allocated) {
			t.Errorf("top idle job %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestDownsamplerCatchUpWaits: a starting Downsampler summarizes the
// intervals that end after it started at once, and the ones before (its
// catch-up) only after StartDelay, so that agents' replays land first: an
// hour of samples that arrives five minutes after the start is in the
// catch-up's summaries.
func TestDownsamplerCatchUpWaits(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{Retention: 30 * 24 * time.Hour})
	ctx := t.Context()
	start := weekStart.Add(2 * time.Hour)
	now := start
	ds, err := NewDownsampler(st, st, DownsampleOptions{Now: func() time.Time { return now }, CatchUp: 50 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	steps := func(from, to time.Time) (int, int) {
		return int(from.Sub(weekStart) / (10 * time.Second)), int(to.Sub(weekStart) / (10 * time.Second))
	}
	ends := func(done []IntervalStats) []string {
		var out []string
		for _, d := range done {
			out = append(out, fmt.Sprintf("%s@%s", formatDuration(d.Resolution), d.End.Format("15:04")))
		}
		return out
	}
	// Started at 02:00: nothing has ended since (less the 2-minute delay).
	done, err := ds.Step(ctx)
	if err != nil || len(done) != 0 {
		t.Fatalf("first step: %v %v", ends(done), err)
	}
	// 02:08: the agents replay 01:00–02:08; the intervals that were not due
	// at the start (ending 02:00 and 02:05) are summarized, those due before
	// and the hour that began before the start wait.
	a, b := steps(weekStart.Add(time.Hour), start.Add(8*time.Minute))
	if err := st.Append(ctx, weekSamples(a, b)); err != nil {
		t.Fatal(err)
	}
	now = start.Add(8 * time.Minute)
	if done, err = ds.Step(ctx); err != nil || fmt.Sprint(ends(done)) != "[5m@02:00 5m@02:05]" {
		t.Fatalf("at 02:08: %v %v, want [5m@02:00 5m@02:05]", ends(done), err)
	}
	// 02:11: the start delay is over; the catch-up hour is summarized, with
	// the replayed samples.
	now = start.Add(11 * time.Minute)
	done, err = ds.Step(ctx)
	allocs := map[string]int{}
	for _, d := range done {
		allocs[fmt.Sprintf("%s@%s", formatDuration(d.Resolution), d.End.Format("15:04"))] = d.Allocations
	}
	// The catch-up reaches back to the hour before the start (50 minutes
	// before 01:55): the replayed five minutes from 01:05 and the hour to
	// 02:00.
	if err != nil || len(done) != 12 || allocs["5m@01:05"] == 0 || allocs["1h@02:00"] == 0 {
		t.Fatalf("at 02:11: %v %v, want eleven five minutes from 01:05 and the hour to 02:00, with allocations", ends(done), err)
	}
}
