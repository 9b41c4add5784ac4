package drain

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Random report sequences, clock jumps, actuator failures, admin drains and
// restarts: automation never exceeds the budget, never resumes (or overwrites) a
// drain it does not own, never repeats a drain that took effect, and moves nodes only
// along allowed transitions.
func TestPropertyBudgetAndOwnership(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pol := DefaultPolicy()
		pol.Hysteresis.Observations = rapid.IntRange(1, 3).Draw(rt, "observations")
		pol.Hysteresis.ClearObservations = rapid.IntRange(1, 3).Draw(rt, "clear_observations")
		pol.Hysteresis.ClearAfter = time.Duration(rapid.IntRange(0, 10).Draw(rt, "clear_after_min")) * time.Minute
		pol.Probation.Duration = time.Duration(rapid.IntRange(0, 20).Draw(rt, "probation_min")) * time.Minute
		pol.Probation.MaxReportGap = time.Hour
		if rapid.Bool().Draw(rt, "count") {
			pol.Budget = Budget{Count: rapid.IntRange(0, 3).Draw(rt, "max"), Window: time.Hour}
		} else {
			pol.Budget = Budget{Share: float64(rapid.IntRange(1, 100).Draw(rt, "pct")) / 100, Count: -1,
				Min: rapid.IntRange(0, 2).Draw(rt, "min"), Window: time.Hour}
		}
		pol.Budget.AutoReset = rapid.Bool().Draw(rt, "auto_reset")
		pol.DryRun = rapid.IntRange(0, 9).Draw(rt, "dry") == 0

		clk := newClock()
		act := newFake(clk.now)
		dir := fastDir(t)
		var open []*Controller
		newCtl := func() *Controller {
			c, err := New(Options{Dir: dir, Policy: pol, Actuator: act, Clock: clk.now})
			if err != nil {
				rt.Fatal(err)
			}
			open = append(open, c)
			return c
		}
		defer func() {
			for _, c := range open {
				c.audit.close()
			}
		}()
		c := newCtl()
		nodes := []string{"p0", "p1", "p2", "p3", "p4"}
		for _, n := range nodes {
			c.Observe(report(n, clk.now()))
		}
		steps := rapid.IntRange(20, 150).Draw(rt, "steps")
		for range steps {
			n := rapid.SampledFrom(nodes).Draw(rt, "node")
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); op {
			case 0, 1, 2, 3:
				var conds []telemetry.Condition
				switch rapid.IntRange(0, 4).Draw(rt, "fault") {
				case 1:
					conds = append(conds, sbe(n, 1))
				case 2:
					conds = append(conds, remapPending(n, 2))
				case 3:
					conds = append(conds, xid79(n, 3))
				case 4:
					conds = append(conds, ibDown(n), sbe(n, 0))
				}
				c.Observe(report(n, clk.now(), conds...))
			case 4:
				clk.add(time.Duration(rapid.IntRange(1, 1200).Draw(rt, "seconds")) * time.Second)
			case 5, 6:
				c.Process(context.Background())
			case 7:
				switch rapid.IntRange(0, 2).Draw(rt, "admin") {
				case 0:
					act.adminDrain(n, "admin: "+n)
				case 1:
					act.mu.Lock()
					if r, ok := act.drained[n]; ok && !Owned(r) {
						delete(act.drained, n) // the admin resumes their own drain
					}
					act.mu.Unlock()
				case 2:
					act.mu.Lock()
					delete(act.drained, n) // a reboot with nextstate=RESUME, or scontrol resume
					act.mu.Unlock()
				}
			case 8:
				m := rapid.SampledFrom([]string{"drain", "reboot", "resume", "state", "evacuate"}).Draw(rt, "fail")
				act.mu.Lock()
				act.failN[m]++
				act.mu.Unlock()
			case 9:
				c = newCtl() // killed: nothing closed, nothing flushed beyond what was saved
			}
			if b := c.Budget(); b.Used > b.Limit {
				rt.Fatalf("budget used %d > limit %d", b.Used, b.Limit)
			}
		}
		act.mu.Lock()
		violations := act.violations
		act.mu.Unlock()
		if len(violations) > 0 {
			rt.Fatalf("violations: %v", violations)
		}
		recs, err := c.Audit(time.Time{}, 0)
		if err != nil {
			rt.Fatal(err)
		}
		for _, r := range recs {
			switch {
			case r.Event == "transition":
				from, _ := telemetry.ParseState(r.From)
				to, _ := telemetry.ParseState(r.To)
				if from == to || !from.CanTransition(to) {
					rt.Fatalf("transition %s → %s", r.From, r.To)
				}
			case r.Event == "decision" && Mode(r.Action).NodeLevel() && !strings.Contains(r.Note, "relapse") &&
				(r.Outcome == OutcomePending || r.Outcome == OutcomeDryRun):
				if r.Budget.Used > r.Budget.Limit {
					rt.Fatalf("decision at %s drained past the budget: %+v", r.Time, r.Budget)
				}
			case r.Event == "actuation" && r.Action == "resume" && r.Outcome == OutcomeAccepted && r.User == "":
				if r.Reason != "" && !Owned(r.Reason) {
					rt.Fatalf("resumed a non-owned drain: %+v", r)
				}
			}
		}
	})
}

// fastDir is a directory on tmpfs where there is one: the property test makes
// thousands of fsync'd writes, which cost seconds on a real disk and prove nothing
// more there.
func fastDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "gpuwatch-drain-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}
