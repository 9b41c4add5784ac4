package drain

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

const n1 = "node1"

var (
	H  = telemetry.StateHealthy
	S  = telemetry.StateSuspect
	DG = telemetry.StateDraining
	D  = telemetry.StateDrained
	P  = telemetry.StateProbation
)

// The state machine's cases (hysteresis, flapping, exclusions, probation and
// its checks, relapse) are data: testdata/scenarios, played by TestScenarios.

func countGPU(ex []Exclusion) int {
	n := 0
	for _, e := range ex {
		if e.GPU >= 0 {
			n++
		}
	}
	return n
}

// Faults on 3 of 4 nodes with a 50% budget: exactly 2 drained, the third audited as
// budget-skipped and the gauge at 1.
func TestBudget(t *testing.T) {
	pol := testPolicy()
	pol.Budget = Budget{Share: 0.5, Count: -1, Window: time.Hour}
	h := newHarness(t, pol)
	nodes := []string{"n1", "n2", "n3", "n4"}
	for _, n := range nodes {
		h.observe(n)
	}
	for _, n := range nodes[:3] {
		h.clk.add(time.Second)
		h.observe(n, xid79(n, 0))
		h.process()
	}
	// More reports of the same fault: still one audit record for the refusal.
	for range 5 {
		h.clk.add(time.Minute)
		h.observe("n3", xid79("n3", 0))
		h.process()
	}
	var drained []string
	for _, s := range h.c.Nodes() {
		if s.State == telemetry.StateDrained {
			drained = append(drained, s.Node)
		}
	}
	if !slices.Equal(drained, []string{"n1", "n2"}) {
		t.Fatalf("drained %v, want [n1 n2]", drained)
	}
	if h.act.effective("reboot", "n3") != 0 {
		t.Fatal("n3 was rebooted past the budget")
	}
	skips := h.auditWhere(func(r AuditRecord) bool { return r.Outcome == OutcomeSkippedBudget })
	if len(skips) != 1 || skips[0].Node != "n3" || !strings.Contains(skips[0].Note, "would drain, budget exhausted") ||
		skips[0].Budget.Used != 2 || skips[0].Budget.Limit != 2 || !skips[0].Budget.Tripped || skips[0].Rule != "reboot-node" {
		t.Fatalf("budget skips %+v", skips)
	}
	if s, _ := h.c.Node("n3"); !s.WaitingBudget || s.State != telemetry.StateSuspect {
		t.Fatalf("n3 %+v", s)
	}
	if got := gauge(t, h.c, "gpuwatch_drain_budget_exhausted"); got != 1 {
		t.Fatalf("exhausted gauge %v", got)
	}
	if u, l := gauge(t, h.c, "gpuwatch_drain_budget_used"), gauge(t, h.c, "gpuwatch_drain_budget_limit"); u != 2 || l != 2 {
		t.Fatalf("used %v limit %v", u, l)
	}
	// The window passing does not close the breaker without auto_reset…
	h.clk.add(2 * time.Hour)
	h.observe("n3", xid79("n3", 0))
	h.process()
	if h.state("n3") != telemetry.StateSuspect || gauge(t, h.c, "gpuwatch_drain_budget_exhausted") != 1 {
		t.Fatal("breaker closed by itself")
	}
	// …a person does, and the waiting node drains on its next report.
	if err := h.c.ResetBudget("alice"); err != nil {
		t.Fatal(err)
	}
	h.observe("n3", xid79("n3", 0))
	h.process()
	if h.state("n3") != telemetry.StateDrained || gauge(t, h.c, "gpuwatch_drain_budget_exhausted") != 0 {
		t.Fatalf("after reset: n3 %s", h.state("n3"))
	}
	if r := h.auditWhere(func(r AuditRecord) bool { return r.Action == "budget-reset" }); len(r) != 1 || r[0].User != "alice" {
		t.Fatalf("reset audit %+v", r)
	}
}

func TestBudgetAutoReset(t *testing.T) {
	pol := testPolicy()
	pol.Budget = Budget{Count: 1, Window: time.Hour, AutoReset: true}
	h := newHarness(t, pol)
	h.observe("a", xid79("a", 0))
	h.observe("b", xid79("b", 0))
	h.process()
	if h.state("a") != D || h.state("b") != S || !h.c.Budget().Tripped {
		t.Fatalf("a %s b %s %+v", h.state("a"), h.state("b"), h.c.Budget())
	}
	h.clk.add(61 * time.Minute)
	h.observe("b", xid79("b", 0))
	h.process()
	if h.state("b") != D || h.c.Budget().Tripped {
		t.Fatalf("b %s %+v", h.state("b"), h.c.Budget())
	}
}

func TestBudgetLimit(t *testing.T) {
	for _, tc := range []struct {
		b     Budget
		known int
		want  int
	}{
		{Budget{Share: 0.1, Count: -1, Min: 1}, 4, 1},    // floor(0.4)=0, raised to min 1
		{Budget{Share: 0.1, Count: -1}, 4, 0},            // exact share
		{Budget{Share: 0.1, Count: -1, Min: 1}, 100, 10}, // 10% of 100
		{Budget{Share: 0.5, Count: -1}, 4, 2},
		{Budget{Share: 0.3, Count: -1}, 10, 3}, // 0.3*10 = 2.9999…: no float truncation to 2
		{Budget{Count: 3}, 1000, 3},
		{Budget{Share: 0.1, Count: -1, Min: 5}, 2, 2}, // min never above the fleet
	} {
		if got := tc.b.Limit(tc.known); got != tc.want {
			t.Errorf("%+v.Limit(%d) = %d, want %d", tc.b, tc.known, got, tc.want)
		}
	}
}

func TestAdminDrainNeverResumed(t *testing.T) {
	t.Run("drained before the fault", func(t *testing.T) {
		h := newHarness(t, nil)
		h.act.adminDrain(n1, "bad fan, ticket 4711")
		h.observe(n1, xid79(n1, 1))
		h.process()
		if s, _ := h.c.Node(n1); s.State != D || s.Owned || s.Held != "bad fan, ticket 4711" {
			t.Fatalf("%+v", s)
		}
		if h.c.Budget().Used != 0 {
			t.Fatal("a drain gpuwatch did not make counts against the budget")
		}
		for range 40 { // clears, serves probation, tries to resume
			h.clk.add(time.Minute)
			h.observe(n1)
			h.process()
		}
		if h.act.callCount() != 0 {
			t.Fatalf("actuator called: %+v", h.act.calls)
		}
		if d, r, _ := h.act.State(context.Background(), n1); !d || r != "bad fan, ticket 4711" {
			t.Fatal("admin drain changed")
		}
		if n := len(h.auditWhere(func(r AuditRecord) bool { return r.Outcome == OutcomeSkippedNotOwned })); n != 2 {
			t.Fatalf("%d skipped-not-owned records, want 2 (drain and resume)", n)
		}
		if s, _ := h.c.Node(n1); s.Schedulable {
			t.Fatal("a node held by an admin is listed schedulable")
		}
	})
	t.Run("admin takes over during probation", func(t *testing.T) {
		h := newHarness(t, nil)
		h.observe(n1, xid79(n1, 1))
		h.process()
		h.act.adminDrain(n1, "RMA GPU1")
		for range 40 {
			h.clk.add(time.Minute)
			h.observe(n1)
			h.process()
		}
		if h.act.effective("resume", n1) != 0 {
			t.Fatal("resumed a node whose reason an admin replaced")
		}
	})
}

func TestRetryUntilAccepted(t *testing.T) {
	h := newHarness(t, nil)
	h.act.failN["reboot"] = 3
	h.act.failN["state"] = 1
	h.observe(n1, xid79(n1, 1))
	// Attempt 1: State fails. 2–4: Reboot fails. Back-off 5 s, 10 s, 20 s, 40 s.
	wantWait := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second}
	for i, w := range wantWait {
		if got := h.process(); got != 1 {
			t.Fatalf("attempt %d: %d processed", i+1, got)
		}
		s, _ := h.c.Node(n1)
		if s.Pending == nil || s.Pending.Attempts != i+1 || !s.Pending.NextAttempt.Equal(h.clk.now().Add(w)) {
			t.Fatalf("attempt %d: pending %+v", i+1, s.Pending)
		}
		h.clk.add(w - time.Second)
		if h.process() != 0 {
			t.Fatal("retried before the back-off")
		}
		h.clk.add(time.Second)
	}
	h.process()
	if h.state(n1) != D || h.act.effective("reboot", n1) != 1 {
		t.Fatalf("state %s, reboots %d", h.state(n1), h.act.effective("reboot", n1))
	}
	retrying := h.auditWhere(func(r AuditRecord) bool { return r.Outcome == OutcomeRetrying })
	if len(retrying) != 4 || retrying[3].Attempt != 4 || retrying[0].Error == "" {
		t.Fatalf("retrying records %+v", retrying)
	}
	if acc := h.auditWhere(func(r AuditRecord) bool { return r.Outcome == OutcomeAccepted }); len(acc) != 1 || acc[0].Attempt != 5 {
		t.Fatalf("accepted %+v", acc)
	}
	for range 5 {
		h.clk.add(time.Hour)
		h.observe(n1, xid79(n1, 1))
		h.process()
	}
	if h.act.effective("reboot", n1) != 1 || len(h.act.violations) > 0 {
		t.Fatalf("reboots %d, violations %v", h.act.effective("reboot", n1), h.act.violations)
	}
}

// A Drain that took effect but reported an error is not repeated: State shows it.
func TestNoDuplicateAfterAmbiguousFailure(t *testing.T) {
	h := newHarness(t, nil)
	h.act.effectThenFail = true
	for range 3 {
		h.observe(n1, remapPending(n1, 0))
	}
	h.process()
	if h.state(n1) != DG {
		t.Fatalf("state %s", h.state(n1))
	}
	h.clk.add(5 * time.Second)
	h.process()
	if h.state(n1) != D || h.act.effective("drain", n1) != 1 || len(h.act.violations) > 0 {
		t.Fatalf("state %s drains %d %v", h.state(n1), h.act.effective("drain", n1), h.act.violations)
	}
	acc := h.auditWhere(func(r AuditRecord) bool { return r.Outcome == OutcomeAccepted })
	if len(acc) == 0 || !strings.Contains(acc[0].Note, "not repeated") {
		t.Fatalf("accepted %+v", acc)
	}
}

// Killed in the middle of retrying (no Close), a new controller on the same directory
// continues the same action and drains once.
func TestRestartMidRetry(t *testing.T) {
	h := newHarness(t, nil)
	h.act.failN["drain"] = 2
	for range 3 {
		h.observe(n1, remapPending(n1, 4))
	}
	h.observe("other", nil...)
	h.process()
	h.clk.add(5 * time.Second)
	h.process()
	s, _ := h.c.Node(n1)
	if s.Pending == nil || s.Pending.Attempts != 2 {
		t.Fatalf("pending %+v", s.Pending)
	}
	before := h.c.Budget()
	// "kill": the old controller is dropped without Close.
	h.c = h.open(nil)
	s2, _ := h.c.Node(n1)
	if s2.State != DG || s2.Pending == nil || s2.Pending.Attempts != 2 || s2.Reason != s.Reason || !s2.Owned {
		t.Fatalf("after restart %+v", s2)
	}
	if b := h.c.Budget(); b.Used != before.Used || b.Used != 1 {
		t.Fatalf("budget after restart %+v, before %+v", b, before)
	}
	h.process() // not due yet: back-off 10 s from the second failure
	if h.act.effective("drain", n1) != 0 {
		t.Fatal("retried before the back-off after restart")
	}
	h.clk.add(10 * time.Second)
	h.process()
	h.clk.add(time.Minute)
	h.process()
	h.c = h.open(nil) // and once more, after success
	h.observe(n1, remapPending(n1, 4))
	h.process()
	if h.state(n1) != D || h.act.effective("drain", n1) != 1 || len(h.act.violations) > 0 {
		t.Fatalf("state %s, drains %d, %v", h.state(n1), h.act.effective("drain", n1), h.act.violations)
	}
	if ev := h.act.calls[len(h.act.calls)-1]; ev.Method != "evacuate" && ev.Method != "drain" {
		t.Fatalf("last call %+v", ev)
	}
	h.checkTransitions()
}

// Killed after the state was saved but before anything else: a decision is never
// lost and the worker picks it up.
func TestRestartBeforeFirstAttempt(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(n1, xid79(n1, 2))
	h.c = h.open(nil)
	h.process()
	if h.state(n1) != D || h.act.effective("reboot", n1) != 1 {
		t.Fatalf("state %s", h.state(n1))
	}
}

func TestDryRun(t *testing.T) {
	pol := testPolicy()
	pol.DryRun = true
	h := newHarness(t, pol)
	h.c = func() *Controller {
		c, err := New(Options{Dir: t.TempDir(), Policy: pol, Clock: h.clk.now}) // no actuator at all
		if err != nil {
			t.Fatal(err)
		}
		return c
	}()
	h.observe(n1, xid79(n1, 0))
	h.process()
	if h.state(n1) != D {
		t.Fatalf("state %s", h.state(n1))
	}
	for range 31 {
		h.clk.add(time.Minute)
		h.observe(n1)
		h.process()
	}
	if h.state(n1) != H {
		t.Fatalf("state %s", h.state(n1))
	}
	recs := h.auditWhere(func(r AuditRecord) bool { return r.Event == "decision" })
	if len(recs) != 2 || recs[0].Outcome != OutcomeDryRun || !recs[0].DryRun || recs[0].Action != "reboot" || recs[1].Action != "resume" {
		t.Fatalf("decisions %+v", recs)
	}
	if h.act.callCount() != 0 {
		t.Fatal("dry run called the actuator")
	}
	if _, err := New(Options{Dir: t.TempDir(), Policy: testPolicy()}); err == nil {
		t.Fatal("New without actuator and without dry run succeeded")
	}
}

func TestManualDrainAndResume(t *testing.T) {
	pol := testPolicy()
	pol.Budget = Budget{Count: 0, Window: time.Hour} // automation may drain nothing
	h := newHarness(t, pol)
	if err := h.c.ManualDrain(n1, "gpuwatch: looks owned", "bob"); err == nil {
		t.Fatal("manual drain with an owned reason accepted")
	}
	if err := h.c.ManualDrain(n1, "swap PSU", ""); err == nil {
		t.Fatal("manual drain without a user accepted")
	}
	if err := h.c.ManualDrain(n1, "swap PSU", "bob"); err != nil {
		t.Fatal(err)
	}
	h.process()
	if s, _ := h.c.Node(n1); s.State != D || s.Owned || !s.Manual || s.User != "bob" || h.c.Budget().Used != 0 {
		t.Fatalf("%+v %+v", s, h.c.Budget())
	}
	for range 40 { // healthy reports never resume a manual drain
		h.clk.add(time.Minute)
		h.observe(n1)
		h.process()
	}
	if h.state(n1) != D || h.act.effective("resume", n1) != 0 {
		t.Fatalf("state %s", h.state(n1))
	}
	// A fault during the manual drain: no automated action either.
	for range 3 {
		h.observe(n1, remapPending(n1, 0))
	}
	h.process()
	if err := h.c.ManualResume(n1, "GPU reseated, INC-7", "bob"); err != nil {
		t.Fatal(err)
	}
	h.process()
	if recs := h.audit(); !slices.ContainsFunc(recs, func(r AuditRecord) bool {
		return r.Event == "manual" && r.Action == kindResume && r.Reason == "GPU reseated, INC-7" && r.User == "bob"
	}) {
		t.Errorf("no audit record of bob's resume with its reason: %+v", recs)
	}
	if h.state(n1) != H || h.act.effective("resume", n1) != 1 || h.act.effective("drain", n1) != 1 {
		t.Fatalf("state %s, calls %+v", h.state(n1), h.act.calls)
	}
	// The acknowledged fault does not drain the node again while it persists.
	for range 5 {
		h.observe(n1, remapPending(n1, 0))
		h.process()
	}
	if h.state(n1) == DG || h.state(n1) == D || h.c.Budget().Tripped {
		t.Fatalf("acked fault acted: %s %+v", h.state(n1), h.c.Budget())
	}
	recs := h.auditWhere(func(r AuditRecord) bool { return r.Event == "manual" })
	if len(recs) != 2 || recs[0].User != "bob" || recs[0].Reason != "swap PSU" {
		t.Fatalf("manual records %+v", recs)
	}
	h.checkTransitions()
}

func TestEvacuate(t *testing.T) {
	h := newHarness(t, nil)
	var asked [][]string
	h.c.opts.Workloads = func(node string, gpus []string) []string {
		asked = append(asked, gpus)
		return []string{"team-a/train-0"}
	}
	h.act.failN["evacuate"] = 1 // a PodDisruptionBudget says no once
	for range 3 {
		h.observe(n1, remapPending(n1, 6))
	}
	h.process() // drain
	h.process() // evacuate: 429
	h.clk.add(5 * time.Second)
	h.process() // evacuate: accepted
	if h.act.effective("evacuate", n1) != 1 || len(asked) != 2 || !slices.Equal(asked[0], []string{uuid(6)}) {
		t.Fatalf("evacuations %+v asked %v", h.act.calls, asked)
	}
	if s, _ := h.c.Node(n1); s.Pending != nil || s.State != D {
		t.Fatalf("%+v", s)
	}
}

// TestRebootRefusedDrainsInstead: the 3 a.m. case. Slurm without a
// RebootProgram refuses `scontrol reboot` for good; the node must not stay in
// service: it is drained with the same owned reason, audited as "reboot
// refused: …; drained instead", counted, and not retried as a reboot.
func TestRebootRefusedDrainsInstead(t *testing.T) {
	h := newHarness(t, nil)
	h.c.act = permanentAct{h.act}
	h.observe(n1, xid79(n1, 0))
	h.process() // the reboot, refused
	h.process() // the drain instead
	s, _ := h.c.Node(n1)
	if s.State != D || s.Stuck != "" || s.Pending != nil || !s.Owned {
		t.Fatalf("after a refused reboot: %+v", s)
	}
	drained, reason, _ := h.act.State(context.Background(), n1)
	if !drained || reason != "gpuwatch: xid79 gpu="+uuid(0)+" action=RESTART_BM" {
		t.Fatalf("the node is not drained with the owned reason: %v %q", drained, reason)
	}
	refused := h.auditWhere(func(r AuditRecord) bool { return r.Outcome == OutcomeRefused })
	if len(refused) != 1 || !strings.HasPrefix(refused[0].Note, "reboot refused: ") || !strings.HasSuffix(refused[0].Note, "; drained instead") {
		t.Fatalf("audit of the refusal: %+v", refused)
	}
	if got := h.c.fallbacks[[2]string{"reboot", "cordon"}]; got != 1 {
		t.Errorf("fallbacks counted %g, want 1", got)
	}
	if h.process() != 0 {
		t.Fatal("a permanent refusal was retried")
	}
	if b := h.c.Budget(); b.Used != 1 {
		t.Errorf("budget used %d: the fallback is the same incident, want 1", b.Used)
	}
	h.checkTransitions()
}

type permanentAct struct{ *fakeActuator }

func (p permanentAct) Reboot(context.Context, string, string) error {
	return Permanent(errors.New("scontrol reboot gpu01: RebootProgram is not set in slurm.conf"))
}

// TestPermanentDrainFailureHoldsNode: with nothing weaker than a drain to fall
// back to, a permanent refusal holds the node, audited, and is not retried.
func TestPermanentDrainFailureHoldsNode(t *testing.T) {
	h := newHarness(t, nil)
	h.c.act = permanentDrainAct{h.act}
	for range 3 {
		h.observe(n1, remapPending(n1, 0))
	}
	h.process()
	s, _ := h.c.Node(n1)
	if s.State != DG || s.Stuck == "" || s.Pending != nil {
		t.Fatalf("%+v", s)
	}
	if h.process() != 0 {
		t.Fatal("a permanent failure was retried")
	}
}

type permanentDrainAct struct{ *fakeActuator }

func (p permanentDrainAct) Drain(context.Context, string, string) error {
	return Permanent(os.ErrPermission)
}

// TestDiscreteFatalActsOnFirstReport: an Xid 48 or 95 (critical, not fatal
// severity, but a discrete fatal event in NVIDIA's catalog and mapping) and a
// double-bit ECC error drain on their first report; a rate condition waits.
func TestDiscreteFatalActsOnFirstReport(t *testing.T) {
	xid := func(node string, gpu, code int) telemetry.Condition {
		return telemetry.Condition{Kind: telemetry.ConditionXid, Target: telemetry.GPUTarget(telemetry.GPUID{Node: telemetry.NodeID(node), Index: gpu}),
			GPUUUID: uuid(gpu), Severity: telemetry.SeverityCritical, Action: telemetry.ActionResetGPU, Evidence: map[string]string{"xid": strconv.Itoa(code)}}
	}
	for _, c := range []telemetry.Condition{xid(n1, 1, 48), xid(n1, 2, 95), xid(n1, 3, 119), dbe(n1, 4), ibDown(n1)} {
		h := newHarness(t, nil)
		h.observe(n1, c)
		h.process()
		if st := h.state(n1); st != D {
			t.Errorf("%s %s: state %s after its first report, want drained", c.Kind, c.Evidence["xid"], st)
		}
	}
	h := newHarness(t, nil)
	h.observe(n1, remapPending(n1, 0))
	h.process()
	if st := h.state(n1); st != S {
		t.Errorf("row-remap-pending after one report: %s, want suspect (hysteresis)", st)
	}
}

func TestCorruptStateHoldsAutomation(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(n1)
	if err := os.WriteFile(filepath.Join(h.dir, StateFileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.c = h.open(nil)
	if _, err := os.Stat(filepath.Join(h.dir, StateFileName+".corrupt")); err != nil {
		t.Fatal("corrupt state not moved aside")
	}
	if !h.c.Budget().Tripped {
		t.Fatal("automation not held after losing its state")
	}
	h.observe(n1, xid79(n1, 0))
	h.process()
	if h.act.callCount() != 0 {
		t.Fatal("acted without state")
	}
}

func TestAuditTornLine(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(n1, xid79(n1, 0))
	h.c.audit.close()
	f, err := os.OpenFile(filepath.Join(h.dir, AuditFileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-03-01T03:00:00Z","node":"torn`)
	f.Close()
	h.c = h.open(nil)
	h.process()
	recs := h.audit()
	last := recs[len(recs)-1]
	if last.Event != "transition" || last.To != "drained" {
		t.Fatalf("last record %+v", last)
	}
	if got, _ := h.c.Audit(time.Time{}, 2); len(got) != 2 || !got[1].Time.Equal(recs[len(recs)-1].Time) || got[1].To != recs[len(recs)-1].To {
		t.Fatalf("limit: %+v", got)
	}
	if got, _ := h.c.Audit(t0.Add(time.Hour), 0); len(got) != 0 {
		t.Fatalf("since: %+v", got)
	}
}

func TestNodesAndExclusionsJSON(t *testing.T) {
	h := newHarness(t, nil)
	for range 3 {
		h.observe("a", sbe("a", 2))
	}
	h.observe("b", xid79("b", 5))
	ex := h.c.Exclusions()
	if len(ex) != 2 || ex[0].Node != "a" || ex[0].GPU != 2 || ex[0].UUID != uuid(2) || ex[1].Node != "b" || ex[1].GPU != -1 {
		t.Fatalf("exclusions %+v", ex)
	}
	nodes := h.c.Nodes()
	if len(nodes) != 2 || nodes[1].State != DG || nodes[1].Pending == nil || nodes[1].Schedulable {
		t.Fatalf("nodes %+v", nodes)
	}
	if g := nodes[1].GPUs[5]; g.State != DG || g.UUID != uuid(5) {
		t.Fatalf("gpu 5 %+v", g)
	}
	if g := nodes[0].GPUs[2]; g.State != S || !g.Excluded {
		t.Fatalf("gpu 2 %+v", g)
	}
	b, err := json.Marshal(nodes)
	if err != nil || !strings.Contains(string(b), `"state":"draining"`) || !strings.Contains(string(b), `"excluded":true`) {
		t.Fatalf("%s %v", b, err)
	}
}

func TestMetrics(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(n1, xid79(n1, 0))
	h.process()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(h.c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"gpuwatch_drain_nodes", "gpuwatch_drain_actions_total", "gpuwatch_drain_budget_used",
		"gpuwatch_drain_budget_limit", "gpuwatch_drain_budget_exhausted", "gpuwatch_drain_decision_latency_seconds"} {
		if !names[n] {
			t.Errorf("missing %s", n)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
	if v := metricValue(mfs, "gpuwatch_drain_nodes", "state", "drained"); v != 1 {
		t.Fatalf("drained nodes %v", v)
	}
	if v := metricValue(mfs, "gpuwatch_drain_actions_total", "outcome", "accepted"); v != 1 {
		t.Fatalf("accepted actions %v", v)
	}
	for _, mf := range mfs {
		if mf.GetName() == "gpuwatch_drain_decision_latency_seconds" && mf.Metric[0].Histogram.GetSampleCount() != 1 {
			t.Fatalf("latency samples %v", mf.Metric[0].Histogram.GetSampleCount())
		}
	}
}

func gauge(t *testing.T, c prometheus.Collector, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return metricValue(mfs, name, "", "")
}

func metricValue(mfs []*dto.MetricFamily, name, label, value string) float64 {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			ok := label == ""
			for _, lp := range m.Label {
				if lp.GetName() == label && lp.GetValue() == value {
					ok = true
				}
			}
			if !ok {
				continue
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
		}
	}
	return -1
}

func TestStatePath(t *testing.T) {
	all := []telemetry.State{H, S, DG, D, P}
	for _, from := range all {
		for _, to := range all {
			p := statePath(from, to)
			cur := from
			for _, s := range p {
				if !cur.CanTransition(s) {
					t.Fatalf("%s → %s: step %s → %s not allowed", from, to, cur, s)
				}
				cur = s
			}
			if cur != to {
				t.Fatalf("%s → %s: path %v ends at %s", from, to, p, cur)
			}
		}
	}
}

func TestFormatReason(t *testing.T) {
	c := xid79(n1, 3)
	if got, want := FormatReason(c, 2), "gpuwatch: xid79 gpu="+uuid(3)+" action=RESTART_BM +2 more"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	c.GPUUUID = strings.Repeat("é", 300) + "\nx"
	r := FormatReason(c, 1)
	if len(r) > MaxReason || !Owned(r) || strings.ContainsAny(r, "\n") || !strings.HasSuffix(r, " +1 more") || !utf8Valid(r) {
		t.Fatalf("%d bytes %q", len(r), r)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestLogActuator(t *testing.T) {
	var b strings.Builder
	a := NewLogActuator(&b)
	var calls []LogCall
	a.OnCall(func(c LogCall) { calls = append(calls, c) })
	ctx := context.Background()
	a.Drain(ctx, n1, "gpuwatch: xid79")
	if d, r, _ := a.State(ctx, n1); !d || r != "gpuwatch: xid79" {
		t.Fatal("state after drain")
	}
	a.Evacuate(ctx, n1, []string{"b/p", "a/p"})
	a.Resume(ctx, n1)
	a.Reboot(ctx, "n2", "gpuwatch: x")
	want := "drain node1 reason=\"gpuwatch: xid79\"\nevacuate node1 work=a/p,b/p\nresume node1\nreboot n2 reason=\"gpuwatch: x\" (then resume)\n"
	if b.String() != want {
		t.Fatalf("%q", b.String())
	}
	wantCalls := []LogCall{{Action: "drain", Node: n1, Reason: "gpuwatch: xid79"}, {Action: "evacuate", Node: n1, Work: []string{"a/p", "b/p"}},
		{Action: "resume", Node: n1}, {Action: "reboot", Node: "n2", Reason: "gpuwatch: x"}}
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Fatalf("OnCall saw %+v, want %+v", calls, wantCalls)
	}
	var lines strings.Builder
	for _, c := range calls {
		lines.WriteString(c.String() + "\n")
	}
	if lines.String() != want {
		t.Fatalf("LogCall.String: %q, want the lines written", lines.String())
	}
	if d, _, _ := a.State(ctx, n1); d {
		t.Fatal("state after resume")
	}
	var _ Evacuator = a
}

// Run actuates in the background while reports arrive from many goroutines, and
// saves on the way out.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	act := newFake(time.Now)
	c, err := New(Options{Dir: dir, Actuator: act, PollInterval: 5 * time.Millisecond, FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	for i := range 4 {
		go func() {
			for range 50 {
				c.Observe(report("w"+string(rune('0'+i)), time.Now()))
			}
		}()
	}
	c.Observe(report(n1, time.Now(), xid79(n1, 0)))
	deadline := time.Now().Add(10 * time.Second)
	for act.effective("reboot", n1) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run returned %v", err)
	}
	if act.effective("reboot", n1) != 1 {
		t.Fatal("Run did not actuate")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := New(Options{Dir: dir, Actuator: act})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if s, ok := c2.Node(n1); !ok || s.State != telemetry.StateDrained {
		t.Fatalf("after reopen %+v", s)
	}
}

// A reboot that resumes the node by itself (Slurm's nextstate=RESUME) while the
// fault persists: the worker finds the drain gone and re-asserts it once, as a
// cordon, without rebooting again and without new budget.
func TestVerifyReassertsDrain(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(n1, xid79(n1, 3))
	h.process()
	reason := h.act.calls[0].Reason
	h.act.mu.Lock()
	delete(h.act.drained, n1) // rebooted and resumed, fault still there
	h.act.mu.Unlock()
	for range 4 { // within VerifyInterval: nothing yet
		h.clk.add(time.Minute)
		h.observe(n1, xid79(n1, 3))
		h.process()
	}
	if h.act.effective("drain", n1) != 0 {
		t.Fatal("verified before the interval")
	}
	for range 10 {
		h.clk.add(time.Minute)
		h.observe(n1, xid79(n1, 3))
		h.process()
	}
	if h.act.effective("drain", n1) != 1 || h.act.effective("reboot", n1) != 1 || h.state(n1) != D || h.c.Budget().Used != 1 {
		t.Fatalf("calls %+v state %s budget %+v", h.act.calls, h.state(n1), h.c.Budget())
	}
	if d, r, _ := h.act.State(context.Background(), n1); !d || r != reason {
		t.Fatalf("drain not re-asserted with the incident's reason: %v %q", d, r)
	}
	if len(h.auditWhere(func(r AuditRecord) bool { return strings.HasPrefix(r.Note, "re-assert") })) != 1 {
		t.Fatal("re-assert not audited once")
	}
	h.checkTransitions()
	// Resumed outside gpuwatch with the fault gone: no re-assert, probation as usual.
	h2 := newHarness(t, nil)
	h2.observe(n1, xid79(n1, 3))
	h2.process()
	h2.act.mu.Lock()
	delete(h2.act.drained, n1)
	h2.act.mu.Unlock()
	for range 40 {
		h2.clk.add(time.Minute)
		h2.observe(n1)
		h2.process()
	}
	if h2.act.effective("drain", n1) != 0 || h2.state(n1) != H {
		t.Fatalf("state %s calls %+v", h2.state(n1), h2.act.calls)
	}
}
