package drain

import (
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestProbationEndsOnTime: agents report on a change of verdict and otherwise
// only every heartbeat, so a quiet node's probation must end when its period
// has passed, not at its next report. A node whose last report is older than
// max_report_gap is not resumed by time alone.
func TestProbationEndsOnTime(t *testing.T) {
	pol := testPolicy()
	pol.Probation.Duration, pol.Probation.MaxReportGap = 10*time.Minute, 5*time.Minute
	pol.Budget.Count, pol.Budget.Share = 5, 0
	h := newHarness(t, pol)
	for _, n := range []string{"quiet", "silent"} {
		h.observe(n, xid79(n, 3))
		h.process()
	}
	h.clk.add(time.Second)
	for _, n := range []string{"quiet", "silent"} {
		h.observe(n) // clean: probation starts
		h.process()
		if st := h.state(n); st != telemetry.StateProbation {
			t.Fatalf("%s is %s after a clean report, want probation", n, st)
		}
	}
	// quiet sends a heartbeat every 3 minutes, the last 9 minutes in; silent
	// never reports again.
	for range 3 {
		h.clk.add(3 * time.Minute)
		h.observe("quiet")
		h.process()
	}
	h.clk.add(2 * time.Minute) // 11 minutes in, no report since the heartbeat
	h.process()
	if st := h.state("quiet"); st != telemetry.StateHealthy {
		t.Errorf("quiet is %s 11 minutes into a 10-minute probation with reports 2 minutes old, want healthy (resumed)", st)
	}
	if st := h.state("silent"); st != telemetry.StateProbation {
		t.Errorf("silent is %s; its last report is 11 minutes old (gap bound 5 m): a node that says nothing must not be resumed", st)
	}
	if n := h.act.effective("resume", "quiet"); n != 1 {
		t.Errorf("quiet resumed %d times, want 1", n)
	}
	if n := h.act.effective("resume", "silent"); n != 0 {
		t.Errorf("silent resumed %d times, want 0", n)
	}
	h.checkTransitions()
}
