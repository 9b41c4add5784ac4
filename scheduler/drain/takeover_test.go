package drain

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// listingFake is the in-memory scheduler with Lister: every drain it holds
// that an administrator did not set (adminDrain) is gpuwatch's.
type listingFake struct {
	*fakeActuator
	admin map[string]bool
}

func (f listingFake) OwnedDrains(context.Context) ([]OwnedDrain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []OwnedDrain
	for node, reason := range f.drained {
		if !f.admin[node] {
			out = append(out, OwnedDrain{Node: node, Reason: reason})
		}
	}
	return out, nil
}

// evacuatingPolicy drains (and evacuates the faulty GPU's work) on a critical
// or fatal condition at once.
func evacuatingPolicy() *Policy {
	p := DefaultPolicy()
	p.Budget.Count, p.Budget.Min = 10, 0
	p.Rules = []Rule{{Name: "drain-critical", Severities: []telemetry.Severity{telemetry.SeverityCritical, telemetry.SeverityFatal}, Mode: ModeDrain}}
	return p
}

// TestTakeoverAdoptsReleasesAndEvacuatesOnce: controller A drains n1 and is
// stopped while the evacuation is refused (a disruption budget). Controller
// B, whose own state is stale (it drained n2 in an earlier term, since
// resumed by A), takes over with the latest reports: it adopts n1 (audited,
// counted against the budget), releases n2 without touching it, leaves an
// administrator's drain of n3 alone, issues n1's evacuation again, and never
// drains n1 a second time.
func TestTakeoverAdoptsReleasesAndEvacuatesOnce(t *testing.T) {
	clk := newClock()
	fake := newFake(clk.now)
	sched := listingFake{fakeActuator: fake, admin: map[string]bool{"n3": true}}
	work := func(node string, gpus []string) []string {
		if node == "n1" && slices.Contains(gpus, uuid(3)) {
			return []string{"ns/on-gpu-3"}
		}
		return nil
	}
	open := func(dir string, standby bool) *Controller {
		c, err := New(Options{Dir: dir, Policy: evacuatingPolicy(), Actuator: sched, Clock: clk.now, Monotonic: clk.monotonic,
			Workloads: work, Standby: standby})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	dirB := t.TempDir()

	// B's earlier term: it drained n2, then lost the lead; A resumed n2.
	b := open(dirB, false)
	b.Observe(report("n2", clk.now(), xid79("n2", 0)))
	b.Process(ctx)
	b.Close()
	if err := fake.Resume(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	// B restarts as the standby; A leads.
	a, b := open(t.TempDir(), false), open(dirB, true)
	fake.adminDrain("n3", "rack 7 maintenance")

	// A drains n1; the evacuation is refused.
	clk.add(time.Minute)
	fake.failN["evacuate"] = 1
	bad := report("n1", clk.now(), xid79("n1", 3))
	a.Observe(bad)
	a.Process(ctx)
	if s, _ := a.Node("n1"); s.State != telemetry.StateDrained || s.Pending == nil || s.Pending.Action != "evacuate" || s.Pending.LastError == "" {
		t.Fatalf("A: n1 = %+v, want drained with its evacuation retrying", s)
	}
	// The standby B got the same reports and did nothing with them.
	b.Observe(bad)
	b.Observe(report("n2", clk.now()))
	if err := b.ManualResume("n1", "", "alice"); !errors.Is(err, ErrStandby) {
		t.Errorf("ManualResume on the standby: %v, want ErrStandby", err)
	}
	if n := b.Process(ctx); n != 0 || !b.Standby() {
		t.Errorf("the standby processed %d actions", n)
	}
	if s, _ := b.Node("n1"); s.State != telemetry.StateHealthy && s.Node != "" {
		t.Errorf("the standby tracked n1: %+v", s)
	}
	a.Close() // A is gone mid-drain

	clk.add(10 * time.Second)
	// The caller's report of n1 is newer than the one B kept.
	res, err := b.Takeover(ctx, []healthreport.Report{report("n1", clk.now(), xid79("n1", 3))})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Adopted, []string{"n1"}) || !slices.Equal(res.Released, []string{"n2"}) ||
		!slices.Equal(res.Evacuations, []string{"n1"}) || res.Replayed != 2 || len(res.Known) != 0 {
		t.Fatalf("takeover = %+v; want n1 adopted with its evacuation, n2 released, 2 reports replayed", res)
	}
	s, _ := b.Node("n1")
	if s.State != telemetry.StateDrained || !s.Owned || s.Mode != ModeDrain || s.Rule != "drain-critical" || s.Pending == nil || s.Pending.Action != "evacuate" {
		t.Errorf("B: n1 = %+v, want drained, owned, mode drain, evacuation pending", s)
	}
	// n2 is back in service in B's state (suspect while its old condition
	// clears by hysteresis), with nothing pending.
	if s2, _ := b.Node("n2"); !s2.Schedulable || s2.Pending != nil || s2.Reason != "" {
		t.Errorf("B: n2 = %+v, want in service with nothing pending", s2)
	}
	// n1 adopted counts against the budget, besides n2 drained by B itself in
	// the window: 2.
	if u := b.Budget().Used; u != 2 {
		t.Errorf("budget used %d, want 2 (n1 adopted, n2 drained by B in the window)", u)
	}
	b.Process(ctx)
	if n := fake.effective("evacuate", "n1"); n != 1 {
		t.Errorf("n1 evacuated %d times, want 1 (the re-issued one; A's was refused)", n)
	}
	if n := fake.effective("drain", "n1"); n != 1 {
		t.Errorf("n1 drained %d times, want 1", n)
	}
	if calls := fake.calls; slices.ContainsFunc(calls, func(c call) bool { return c.Node == "n3" || (c.Node == "n2" && c.At.After(t0)) }) {
		t.Errorf("the takeover touched n2 or n3: %+v", calls)
	}
	if len(fake.violations) > 0 {
		t.Errorf("violations: %v", fake.violations)
	}
	recs, err := b.Audit(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Event == "takeover" && r.Node != "" {
			got = append(got, r.Node+" "+r.Action+" "+r.From+"→"+r.To)
		}
	}
	want := []string{"n2 release drained→healthy", "n1 adopt healthy→drained", "n1 evacuate →"}
	if !slices.Equal(got, want) {
		t.Errorf("takeover records %q, want %q", got, want)
	}

	if b.Standby() {
		t.Error("B is still a standby after Takeover")
	}
	// A healthy report afterwards sends n1 to probation: the adopted drain is
	// B's own from now on.
	clk.add(time.Minute)
	b.Observe(report("n1", clk.now()))
	if st, _ := b.Node("n1"); st.State != telemetry.StateProbation {
		t.Errorf("n1 after a clean report: %s, want probation", st.State)
	}
}

// TestTakeoverKnownAndManual: a drain the state already holds is left as it
// is; a person's drain set through gpuwatch is adopted as manual (no budget,
// no automatic resume); an actuator that cannot list keeps the saved state.
func TestTakeoverKnownAndManual(t *testing.T) {
	h := newHarness(t, evacuatingPolicy())
	sched := listingFake{fakeActuator: h.act, admin: map[string]bool{}}
	c, err := New(Options{Dir: h.dir, Policy: evacuatingPolicy(), Actuator: sched, Clock: h.clk.now, Monotonic: h.clk.monotonic})
	if err != nil {
		t.Fatal(err)
	}
	h.c.Close()
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	c.Observe(report("n1", h.clk.now(), dbe("n1", 2)))
	c.Process(ctx)
	h.act.adminDrain("n4", "replace PSU (alice)") // as ManualDrain through another server sets it
	res, err := c.Takeover(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Known, []string{"n1"}) || !slices.Equal(res.Adopted, []string{"n4"}) || len(res.Released) != 0 {
		t.Fatalf("takeover = %+v, want n1 known, n4 adopted", res)
	}
	s, _ := c.Node("n4")
	if s.State != telemetry.StateDrained || !s.Manual || s.Owned || s.Schedulable {
		t.Errorf("n4 = %+v, want a manual drain held", s)
	}
	if u := c.Budget().Used; u != 1 {
		t.Errorf("budget used %d, want 1 (n1; a manual drain takes none)", u)
	}

	// Without Lister: nothing changes, and the audit log says why.
	plain, err := New(Options{Dir: t.TempDir(), Policy: evacuatingPolicy(), Actuator: h.act, Clock: h.clk.now, Monotonic: h.clk.monotonic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	if res, err := plain.Takeover(ctx, nil); err != nil || len(res.Adopted)+len(res.Released)+len(res.Known) != 0 {
		t.Errorf("takeover without a Lister = %+v, %v", res, err)
	}
	recs, _ := plain.Audit(time.Time{}, 0)
	if len(recs) == 0 || recs[0].Event != "takeover" {
		t.Errorf("audit without a Lister: %+v", recs)
	}
}
