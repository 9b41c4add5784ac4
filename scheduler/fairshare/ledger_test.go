package fairshare

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestLedger(t *testing.T, opts LedgerOptions) *Ledger {
	t.Helper()
	if opts.Policy.Charge == "" {
		opts.Policy = Policy{Charge: ChargeMeasured, IdleFloor: 0.1}
	}
	l, err := NewLedger(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// sample is a whole-GPU sample of job j on gpu g, [start, start+d).
func sample(j, acct, user, g string, start time.Duration, d time.Duration, src ActivitySource, act float64) Sample {
	return Sample{Time: t0.Add(start), Duration: d, Job: j, Account: acct, User: user, GPU: g, Fraction: 1, Activity: act, ActivitySource: src}
}

// TestChargeFor derives each charge by hand: allocated = seconds × fraction,
// measured = allocated × max(activity, floor 0.1).
func TestChargeFor(t *testing.T) {
	base := sample("1", "a", "u", "GPU-0", 0, 100*time.Second, SourceDCGMSMActive, 0.6)
	mig := base
	mig.Fraction, mig.Activity = 0.25, 0.8
	tests := []struct {
		name string
		s    Sample
		want Charge
	}{
		{"dcgm 0.6: 100 × 0.6", base, Charge{Allocated: 100, Measured: 60}},
		{"nvml 30%: 100 × 0.30", withActivity(base, SourceNVMLGPUUtil, 30), Charge{Allocated: 100, Measured: 30}},
		{"idle 0.02 below floor: 100 × 0.1", withActivity(base, SourceDCGMSMActive, 0.02), Charge{Allocated: 100, Measured: 10}},
		{"unmeasured: charged as used", withActivity(base, SourceNone, 0), Charge{Allocated: 100, Measured: 100, Unmeasured: 100}},
		{"quarter MIG slice at 0.8: 100 × 0.25 = 25, × 0.8 = 20", mig, Charge{Allocated: 25, Measured: 20}},
		{"full activity: 100", withActivity(base, SourceNVMLGPUUtil, 100), Charge{Allocated: 100, Measured: 100}},
	}
	for _, tc := range tests {
		got := ChargeFor(tc.s, 0.1)
		if !near(got.Allocated, tc.want.Allocated, 1e-9) || !near(got.Measured, tc.want.Measured, 1e-9) || got.Unmeasured != tc.want.Unmeasured {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func withActivity(s Sample, src ActivitySource, a float64) Sample {
	s.ActivitySource, s.Activity = src, a
	return s
}

func TestPickActivity(t *testing.T) {
	if a, src := PickActivity(0.4, true, 90, true); a != 0.4 || src != SourceDCGMSMActive {
		t.Errorf("with DCGM: %v %v, want DCGM's 0.4", a, src)
	}
	if a, src := PickActivity(0, false, 90, true); a != 90 || src != SourceNVMLGPUUtil {
		t.Errorf("without DCGM: %v %v, want NVML's 90", a, src)
	}
	if _, src := PickActivity(0, false, 0, false); src != SourceNone {
		t.Errorf("with neither: %v, want none", src)
	}
}

// TestLedgerPolicies charges one sample (100 GPU-s allocated, 60 measured)
// under each policy. Tests that ignore decay use a 1e6 h half-life: over
// minutes it changes values by less than 1e-7 relative, well inside 1e-4.
func TestLedgerPolicies(t *testing.T) {
	s := sample("1", "a", "u", "GPU-0", 0, 100*time.Second, SourceDCGMSMActive, 0.6)
	tests := []struct {
		policy Policy
		want   float64
	}{
		{Policy{Charge: ChargeAllocation, IdleFloor: 0.1}, 100},
		{Policy{Charge: ChargeMeasured, IdleFloor: 0.1}, 60},
		// 0.25 × 60 + 0.75 × 100 = 90
		{Policy{Charge: ChargeBlend, BlendWeight: 0.25, IdleFloor: 0.1}, 90},
	}
	for _, tc := range tests {
		l := newTestLedger(t, LedgerOptions{Policy: tc.policy, HalfLife: 1e6 * time.Hour})
		if _, err := l.Record(s.End(), []Sample{s}); err != nil {
			t.Fatal(err)
		}
		u, err := l.Usage(s.End())
		if err != nil {
			t.Fatal(err)
		}
		e := u.Entries[Assoc{Account: "a", User: "u"}]
		if !near(e.Charged, tc.want, 1e-4) || !near(e.Allocated, 100, 1e-4) || !near(e.Measured, 60, 1e-4) {
			t.Errorf("%s: %+v, want charged %v (measured 60, allocated 100)", tc.policy.Charge, e, tc.want)
		}
	}
}

// TestLedgerDecay: half-life 1 h. A 3600 GPU-s sample ending at 1 h and
// another ending at 2 h: at 2 h the first has decayed one half-life, so
// 1800 + 3600 = 5400; at 3 h both halve again: 2700. Recording the later batch
// first (the earlier sample arrives late) gives the same numbers.
func TestLedgerDecay(t *testing.T) {
	a := sample("1", "a", "u", "GPU-0", 0, time.Hour, SourceNone, 0)
	b := sample("2", "a", "u", "GPU-1", time.Hour, time.Hour, SourceNone, 0)
	for _, order := range [][]Sample{{a, b}, {b, a}} {
		l := newTestLedger(t, LedgerOptions{HalfLife: time.Hour, StaleAfter: 24 * time.Hour})
		for _, s := range order {
			if _, err := l.Record(t0.Add(2*time.Hour), []Sample{s}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			at   time.Duration
			want float64
		}{{2 * time.Hour, 5400}, {3 * time.Hour, 2700}, {2*time.Hour + 7*24*time.Hour, 5400 * math.Exp2(-7*24)}} {
			u, _ := l.Usage(t0.Add(c.at)) // stale after a week; the numbers still hold
			if got := u.Entries[Assoc{Account: "a", User: "u"}].Allocated; !near(got, c.want, 1e-9*math.Max(1, c.want)) {
				t.Errorf("order %s,%s at %v: %v, want %v", order[0].Job, order[1].Job, c.at, got, c.want)
			}
		}
	}
}

// TestLedgerDefaultHalfLife: with Slurm's default 7 days, a week halves usage.
func TestLedgerDefaultHalfLife(t *testing.T) {
	l := newTestLedger(t, LedgerOptions{StaleAfter: 30 * 24 * time.Hour})
	if l.Options().HalfLife != 7*24*time.Hour {
		t.Fatalf("default half-life %v, want 168h", l.Options().HalfLife)
	}
	s := sample("1", "a", "u", "GPU-0", 0, 1000*time.Second, SourceNone, 0)
	if _, err := l.Record(s.End(), []Sample{s}); err != nil {
		t.Fatal(err)
	}
	u, _ := l.Usage(s.End().Add(7 * 24 * time.Hour))
	if got := u.Entries[Assoc{Account: "a", User: "u"}].Allocated; !near(got, 500, 1e-9) {
		t.Errorf("after one week: %v, want 500", got)
	}
}

// TestLedgerNoDoubleCount: replays are duplicates, overlaps are trimmed.
func TestLedgerNoDoubleCount(t *testing.T) {
	l := newTestLedger(t, LedgerOptions{HalfLife: 1e6 * time.Hour})
	a := sample("1", "a", "u", "GPU-0", 0, 100*time.Second, SourceNone, 0)
	through := t0.Add(200 * time.Second)
	res, err := l.Record(through, []Sample{a})
	if err != nil || res.Charged != 1 {
		t.Fatalf("first: %+v %v", res, err)
	}
	// The same sample again (an agent replaying its buffer): nothing charged.
	res, err = l.Record(through, []Sample{a, a})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicates != 2 || res.Charged != 0 {
		t.Errorf("replay: %+v, want 2 duplicates", res)
	}
	// [50 s, 150 s) overlaps the charged [0, 100 s): only 50 s are new.
	b := sample("1", "a", "u", "GPU-0", 50*time.Second, 100*time.Second, SourceNone, 0)
	res, err = l.Record(through, []Sample{b})
	if err != nil || res.Trimmed != 1 {
		t.Fatalf("overlap: %+v %v", res, err)
	}
	u, _ := l.Usage(through)
	if got := u.Entries[Assoc{Account: "a", User: "u"}].Allocated; !near(got, 150, 1e-4) {
		t.Errorf("allocated %v, want 100 + 50 = 150", got)
	}
	// Another job on the same GPU is a different consumer.
	c := sample("2", "a", "u", "GPU-0", 150*time.Second, 50*time.Second, SourceNone, 0)
	if res, err := l.Record(through, []Sample{c}); err != nil || res.Charged != 1 {
		t.Fatalf("other job: %+v %v", res, err)
	}
}

// TestLedgerTooOld: with a 1 h dedup window, a sample ending 2 h before the
// newest input cannot be told from a replay and is dropped.
func TestLedgerTooOld(t *testing.T) {
	l := newTestLedger(t, LedgerOptions{DedupWindow: time.Hour})
	if _, err := l.Record(t0.Add(3*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	s := sample("1", "a", "u", "GPU-0", 0, time.Hour, SourceNone, 0)
	res, err := l.Record(t0.Add(3*time.Hour), []Sample{s})
	if err != nil || res.TooOld != 1 || res.Charged != 0 {
		t.Fatalf("%+v %v, want 1 too old", res, err)
	}
}

// TestLedgerSharedGPU: fractions on one GPU may sum to 1, not more.
func TestLedgerSharedGPU(t *testing.T) {
	mk := func(job, slice string, frac float64, start, d time.Duration, act float64) Sample {
		s := sample(job, "a", "u"+job, "GPU-0", start, d, SourceDCGMSMActive, act)
		s.Slice, s.Fraction = slice, frac
		return s
	}
	l := newTestLedger(t, LedgerOptions{HalfLife: 1e6 * time.Hour})
	// Four quarter slices for 100 s, activities 1, 0.5, 0.05 (floor 0.1), 0:
	// measured 25 + 12.5 + 2.5 + 2.5 = 42.5 ≤ allocated 100 = the GPU-seconds.
	batch := []Sample{
		mk("1", "MIG-a", 0.25, 0, 100*time.Second, 1),
		mk("2", "MIG-b", 0.25, 0, 100*time.Second, 0.5),
		mk("3", "MIG-c", 0.25, 0, 100*time.Second, 0.05),
		mk("4", "MIG-d", 0.25, 0, 100*time.Second, 0),
	}
	if _, err := l.Record(t0.Add(100*time.Second), batch); err != nil {
		t.Fatal(err)
	}
	u, _ := l.Usage(t0.Add(100 * time.Second))
	var m, a float64
	for _, e := range u.Entries {
		m += e.Measured
		a += e.Allocated
	}
	if !near(m, 42.5, 1e-4) || !near(a, 100, 1e-4) {
		t.Errorf("measured %v allocated %v, want 42.5 and 100", m, a)
	}
	// 0.6 + 0.5 overlapping on one GPU is more than the GPU.
	_, err := l.Record(t0.Add(300*time.Second), []Sample{
		mk("5", "", 0.6, 200*time.Second, 100*time.Second, 1),
		mk("6", "", 0.5, 250*time.Second, 50*time.Second, 1),
	})
	if err == nil || !strings.Contains(err.Error(), `gpu "GPU-0"`) || !strings.Contains(err.Error(), "1.1 > 1") {
		t.Errorf("oversubscribed GPU: %v, want an error naming the GPU and the sum", err)
	}
	// Back to back whole-GPU jobs do not overlap; the same job twice is one consumer.
	if _, err := l.Record(t0.Add(500*time.Second), []Sample{
		mk("7", "", 1, 300*time.Second, 100*time.Second, 1),
		mk("8", "", 1, 400*time.Second, 100*time.Second, 1),
		mk("8", "", 1, 400*time.Second, 100*time.Second, 1),
	}); err != nil {
		t.Errorf("sequential and replayed samples: %v", err)
	}
}

func TestLedgerRejectsBadBatches(t *testing.T) {
	good := sample("1", "a", "u", "GPU-0", 0, 100*time.Second, SourceDCGMSMActive, 0.5)
	through := t0.Add(time.Hour)
	mut := func(f func(*Sample)) Sample { s := good; f(&s); return s }
	tests := []struct {
		name string
		s    Sample
		want string
	}{
		{"zero fraction", mut(func(s *Sample) { s.Fraction = 0 }), "fraction 0"},
		{"fraction above 1", mut(func(s *Sample) { s.Fraction = 1.5 }), "fraction 1.5"},
		{"dcgm above 1", mut(func(s *Sample) { s.Activity = 1.5 }), "activity 1.5 out of range [0,1]"},
		{"nvml above 100", mut(func(s *Sample) { s.ActivitySource, s.Activity = SourceNVMLGPUUtil, 101 }), "activity 101 out of range [0,100]"},
		{"NaN activity", mut(func(s *Sample) { s.Activity = math.NaN() }), "activity NaN"},
		{"unknown source", mut(func(s *Sample) { s.ActivitySource = "tpu" }), `activity source "tpu"`},
		{"activity without source", mut(func(s *Sample) { s.ActivitySource = SourceNone }), "no activity source"},
		{"no job", mut(func(s *Sample) { s.Job = "" }), "job is empty"},
		{"no gpu", mut(func(s *Sample) { s.GPU = "" }), "gpu is empty"},
		{"bad user", mut(func(s *Sample) { s.User = "a b" }), "user: name"},
		{"negative duration", mut(func(s *Sample) { s.Duration = -time.Second }), "duration -1s"},
		{"no time", mut(func(s *Sample) { s.Time = time.Time{} }), "time is not set"},
		{"after through", mut(func(s *Sample) { s.Time = through }), "after the batch time"},
	}
	for _, tc := range tests {
		l := newTestLedger(t, LedgerOptions{})
		_, err := l.Record(through, []Sample{good, tc.s})
		if err == nil || !strings.Contains(err.Error(), "sample 1") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about sample 1 containing %q", tc.name, err, tc.want)
			continue
		}
		// All or nothing: the good sample was not charged either.
		if u, _ := l.Usage(through); len(u.Entries) != 0 {
			t.Errorf("%s: rejected batch charged %v", tc.name, u.Entries)
		}
	}
	l := newTestLedger(t, LedgerOptions{})
	if _, err := l.Record(time.Time{}, nil); err == nil {
		t.Error("zero batch time accepted")
	}
	if _, err := NewLedger(LedgerOptions{Policy: Policy{Charge: "free"}}); err == nil || !strings.Contains(err.Error(), `charge "free"`) {
		t.Errorf("bad policy: %v", err)
	}
}

// TestLedgerStaleness: the last good usage comes back with ErrStale past the
// bound, and AllocationFallback flags the allocation-based substitute.
func TestLedgerStaleness(t *testing.T) {
	l := newTestLedger(t, LedgerOptions{StaleAfter: 5 * time.Minute, HalfLife: 1e6 * time.Hour})
	if _, err := l.Usage(t0); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "no input yet") {
		t.Errorf("new ledger: %v, want ErrStale (no input yet)", err)
	}
	s := sample("1", "a", "u", "GPU-0", 0, 100*time.Second, SourceDCGMSMActive, 0.2)
	if _, err := l.Record(s.End(), []Sample{s}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Usage(s.End().Add(4 * time.Minute)); err != nil {
		t.Errorf("4 min old: %v, want fresh", err)
	}
	u, err := l.Usage(s.End().Add(6 * time.Minute))
	var se *StaleError
	if !errors.Is(err, ErrStale) || !errors.As(err, &se) || !se.LastInput.Equal(s.End()) || se.Bound != 5*time.Minute {
		t.Fatalf("6 min old: %v, want *StaleError from %v", err, s.End())
	}
	e := u.Entries[Assoc{Account: "a", User: "u"}]
	if !near(e.Charged, 20, 1e-4) {
		t.Errorf("stale usage %+v, want the last good measured 20", e)
	}
	fb := AllocationFallback(u)
	if fe := fb.Entries[Assoc{Account: "a", User: "u"}]; !fb.Fallback || !near(fe.Charged, 100, 1e-4) || !near(fe.Measured, 20, 1e-4) {
		t.Errorf("fallback %+v (flag %v), want charged = allocated 100, flagged", fe, fb.Fallback)
	}
	if u.Fallback || u.Entries[Assoc{Account: "a", User: "u"}].Charged != e.Charged {
		t.Error("AllocationFallback modified its input")
	}
	// An empty batch (idle cluster) keeps the ledger fresh.
	if _, err := l.Record(s.End().Add(10*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Usage(s.End().Add(12 * time.Minute)); err != nil {
		t.Errorf("after an empty batch: %v, want fresh", err)
	}
}

// TestLedgerConcurrent records, reads, saves and exports at once; run with
// -race it checks the locking.
func TestLedgerConcurrent(t *testing.T) {
	tree, l, through := scenario(t)
	c := NewCollector(func() time.Time { return through })
	path := t.TempDir() + "/ledger.json"
	done := make(chan error, 4)
	go func() {
		for i := range 50 {
			s := sample("9", "ml", "bob", "GPU-b9", time.Hour+time.Duration(i)*time.Second, time.Second, SourceNone, 0)
			if _, err := l.Record(s.End(), []Sample{s}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for range 50 {
			u, err := l.Usage(through)
			c.Update(NewStanding(tree, u, err, StandingOptions{}))
		}
		done <- nil
	}()
	go func() {
		for range 10 {
			if err := l.Save(path); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for range 50 {
			_ = testutilCount(c)
		}
		done <- nil
	}()
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	u, _ := l.Usage(through.Add(50 * time.Second))
	if got := u.Entries[Assoc{Account: "ml", User: "bob"}].Allocated; got < 3600+49 {
		t.Errorf("bob's allocation %v after 50 more seconds, want about 3650", got)
	}
}
