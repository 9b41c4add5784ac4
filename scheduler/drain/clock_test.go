package drain

import (
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// The wall clock stepped forward and back, by minutes and by an hour, while
// the monotonic clock runs on: every window the controller keeps must measure
// elapsed time, so that nothing acts early on a forward step and nothing
// waits for the clock to catch up after a backward one.
var clockSteps = []time.Duration{5 * time.Minute, -5 * time.Minute, time.Hour, -time.Hour}

func stepName(d time.Duration) string {
	if d > 0 {
		return "forward " + d.String()
	}
	return "back " + (-d).String()
}

// checkClockAudited fails unless the step was audited once.
func (h *harness) checkClockAudited(step time.Duration) {
	h.t.Helper()
	recs := h.auditWhere(func(r AuditRecord) bool { return r.Event == "clock" })
	if len(recs) != 1 {
		h.t.Fatalf("%d clock records after one step, want 1: %+v", len(recs), recs)
	}
	h.checkTransitions()
}

// Hysteresis: a critical condition acts after 30 s of reports (the count is
// set out of reach). A step between two reports is not 30 s.
func TestClockStepHysteresis(t *testing.T) {
	for _, step := range clockSteps {
		t.Run(stepName(step), func(t *testing.T) {
			pol := testPolicy()
			pol.Hysteresis.Observations = 100
			h := newHarness(t, pol)
			h.observe(n1, remapPending(n1, 0))
			h.clk.step(step)
			acted := time.Duration(-1)
			for elapsed := 5 * time.Second; elapsed <= 2*time.Minute && acted < 0; elapsed += 5 * time.Second {
				h.clk.add(5 * time.Second)
				h.observe(n1, remapPending(n1, 0))
				if h.state(n1) == telemetry.StateDraining {
					acted = elapsed
				}
			}
			if acted != 30*time.Second {
				t.Fatalf("the condition acted %s after it was first reported, want 30s (-1: not within 2m)", acted)
			}
			h.checkClockAudited(step)
		})
	}
}

// Clearing: an excluded GPU is included again after 5 clean reports and 10
// minutes without the warning.
func TestClockStepClear(t *testing.T) {
	for _, step := range clockSteps {
		t.Run(stepName(step), func(t *testing.T) {
			h := newHarness(t, nil)
			for range 3 {
				h.observe(n1, sbe(n1, 2))
			}
			if countGPU(h.c.Exclusions()) != 1 {
				t.Fatal("warning did not exclude the GPU")
			}
			cleared := time.Duration(-1)
			for m := 1; m <= 90 && cleared < 0; m++ {
				h.clk.add(time.Minute)
				if m == 3 {
					h.clk.step(step)
				}
				h.observe(n1)
				if countGPU(h.c.Exclusions()) == 0 {
					cleared = time.Duration(m) * time.Minute
				}
			}
			// The first clean report (minute 1) starts the 10 minutes.
			if cleared != 11*time.Minute {
				t.Fatalf("GPU included again %s after the warning's last report, want 11m", cleared)
			}
			h.checkClockAudited(step)
		})
	}
}

// drainedInProbation drains n1 for Xid 79 and sends the first clean report:
// probation starts now.
func (h *harness) drainedInProbation() {
	h.t.Helper()
	h.observe(n1, xid79(n1, 3))
	h.process()
	h.clk.add(time.Second)
	h.observe(n1)
	h.process()
	if h.state(n1) != telemetry.StateProbation {
		h.t.Fatalf("%s, want probation", h.state(n1))
	}
}

// resumedAfter sends a heartbeat every minute (stepping the clock by step
// after stepAt minutes) and returns when the node was resumed, or -1.
func (h *harness) resumedAfter(step time.Duration, stepAt int) time.Duration {
	h.t.Helper()
	for m := 1; m <= 150; m++ {
		h.clk.add(time.Minute)
		if m == stepAt {
			h.clk.step(step)
		}
		h.observe(n1)
		h.process()
		if h.state(n1) == telemetry.StateHealthy {
			return time.Duration(m) * time.Minute
		}
	}
	return -1
}

// Probation: 30 minutes of clean reports, no gap over 5 minutes. A step of
// less than the gap bound must not shorten it (nor lengthen it); an hour's
// step must neither end it nor make it wait an hour more.
func TestClockStepProbation(t *testing.T) {
	for _, step := range append(clockSteps, 4*time.Minute, -4*time.Minute) {
		t.Run(stepName(step), func(t *testing.T) {
			h := newHarness(t, nil)
			h.drainedInProbation()
			if got := h.resumedAfter(step, 10); got != 30*time.Minute {
				t.Fatalf("resumed %s into a 30m probation (-1: not within 150m)", got)
			}
			if h.act.effective("resume", n1) != 1 {
				t.Fatalf("resumed %d times", h.act.effective("resume", n1))
			}
			h.checkClockAudited(step)
		})
	}
}

// Budget: one automatic drain per hour. A forward step must not empty the
// window (two drains within a minute), a backward one must not keep the
// drain in it for an hour more.
func TestClockStepBudget(t *testing.T) {
	for _, step := range clockSteps {
		t.Run(stepName(step), func(t *testing.T) {
			pol := testPolicy()
			pol.Budget = Budget{Count: 1, Window: time.Hour, AutoReset: true}
			h := newHarness(t, pol)
			h.observe("a", xid79("a", 0))
			h.process()
			h.clk.step(step)
			drainedB := time.Duration(-1)
			for m := 1; m <= 150 && drainedB < 0; m++ {
				h.clk.add(time.Minute)
				h.observe("b", xid79("b", 0))
				h.process()
				if h.act.effective("reboot", "b") > 0 {
					drainedB = time.Duration(m) * time.Minute
				}
				if b := h.c.Budget(); b.Used > b.Limit {
					t.Fatalf("budget %+v", b)
				}
			}
			if drainedB != time.Hour {
				t.Fatalf("b drained %s after a (budget: 1 per 1h), want 1h (-1: not within 150m)", drainedB)
			}
			h.checkClockAudited(step)
		})
	}
}

// Back-off: a failed drain is retried 5 s later, not 5 s plus a backward
// step, nor at once after a forward one.
func TestClockStepRetry(t *testing.T) {
	for _, step := range clockSteps {
		t.Run(stepName(step), func(t *testing.T) {
			h := newHarness(t, nil)
			h.act.failN["reboot"] = 1
			h.observe(n1, xid79(n1, 0))
			h.process()
			h.clk.step(step)
			retried := time.Duration(-1)
			for s := 1; s <= 120 && retried < 0; s++ {
				h.clk.add(time.Second)
				h.process()
				if h.act.effective("reboot", n1) == 1 {
					retried = time.Duration(s) * time.Second
				}
			}
			if retried != 5*time.Second {
				t.Fatalf("retried %s after the failure, want 5s (-1: not within 2m)", retried)
			}
			h.checkClockAudited(step)
		})
	}
}

// Verification: a node resumed outside gpuwatch while its fault persists is
// drained again at the next check, VerifyInterval (5 minutes) after the
// drain: not at once on a forward step, not an hour late on a backward one.
func TestClockStepVerify(t *testing.T) {
	for _, step := range clockSteps {
		t.Run(stepName(step), func(t *testing.T) {
			h := newHarness(t, nil)
			h.observe(n1, xid79(n1, 3))
			h.process()
			h.act.mu.Lock()
			delete(h.act.drained, n1) // resumed by a reboot, the fault still there
			h.act.mu.Unlock()
			reasserted := time.Duration(-1)
			for m := 1; m <= 90 && reasserted < 0; m++ {
				h.clk.add(time.Minute)
				if m == 1 {
					h.clk.step(step)
				}
				h.observe(n1, xid79(n1, 3))
				h.process()
				if h.act.effective("drain", n1) == 1 {
					reasserted = time.Duration(m) * time.Minute
				}
			}
			if reasserted != 5*time.Minute {
				t.Fatalf("drain re-asserted %s after it was accepted, want 5m (-1: not within 90m)", reasserted)
			}
			h.checkClockAudited(step)
		})
	}
}

// A step while the controller is down: the monotonic clock starts anew with
// the process, so only the state file's save time tells. A clock behind it
// was stepped back, and the timers move back with it; a clock ahead of it
// cannot be told from downtime: the first report is a gap, and probation
// starts over (late, never early).
func TestClockStepWhileDown(t *testing.T) {
	for _, tc := range []struct {
		step time.Duration
		want time.Duration // resumed this long after probation started
		clk  int           // clock records
	}{
		{-time.Hour, 30 * time.Minute, 1},
		{-5 * time.Minute, 30 * time.Minute, 1},
		{time.Hour, 11*time.Minute + 30*time.Minute, 0}, // restarted at the first report after the restart
	} {
		t.Run(stepName(tc.step), func(t *testing.T) {
			h := newHarness(t, nil)
			h.drainedInProbation()
			for range 10 {
				h.clk.add(time.Minute)
				h.observe(n1)
				h.process()
			}
			h.c.Close()
			h.clk.step(tc.step)
			h.clk.mu.Lock()
			h.clk.mono = 0 // a new process
			h.clk.mu.Unlock()
			h.c = h.open(nil)
			got := h.resumedAfter(0, 0)
			if got >= 0 {
				got += 10 * time.Minute
			}
			if got != tc.want {
				t.Fatalf("resumed %s after probation started, want %s", got, tc.want)
			}
			if n := len(h.auditWhere(func(r AuditRecord) bool { return r.Event == "clock" })); n != tc.clk {
				t.Fatalf("%d clock records, want %d", n, tc.clk)
			}
			h.checkTransitions()
		})
	}
}

// Without a monotonic clock (a simulated one, as gpuwatch demo's), only a
// clock that goes back is known to have stepped: the timers move back with it,
// losing the time between the last reading before the step and the step (the
// minute of heartbeat here): late by that, never early.
func TestClockStepBackWithoutMonotonic(t *testing.T) {
	clk := newClock()
	act := newFake(clk.now)
	c, err := New(Options{Dir: t.TempDir(), Actuator: act, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := &harness{t: t, clk: clk, act: act, c: c, dir: c.opts.Dir}
	h.drainedInProbation()
	if got := h.resumedAfter(-time.Hour, 10); got != 31*time.Minute {
		t.Fatalf("resumed %s into a 30m probation, want 31m", got)
	}
	h.checkClockAudited(-time.Hour)
}

// Steps below ClockStepMin (NTP slewing, scheduling jitter between the two
// clock reads) are not steps.
func TestClockJitterIsNoStep(t *testing.T) {
	h := newHarness(t, nil)
	for i := range 100 {
		h.clk.add(time.Second)
		h.clk.step(time.Duration(i%3-1) * 300 * time.Millisecond)
		h.observe(n1)
		h.process()
	}
	if recs := h.auditWhere(func(r AuditRecord) bool { return r.Event == "clock" }); len(recs) != 0 {
		t.Fatalf("jitter taken for steps: %+v", recs)
	}
}
