package drain

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

var t0 = time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)

// clock is a wall clock and a monotonic one: add moves both (time passes),
// step only the wall clock (NTP or a person set it).
type clock struct {
	mu   sync.Mutex
	t    time.Time
	mono time.Duration
}

func newClock() *clock { return &clock{t: t0} }
func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *clock) monotonic() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mono += d
	c.mu.Unlock()
}
func (c *clock) step(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func uuid(i int) string { return fmt.Sprintf("GPU-%08d-1111-2222-3333-444444444444", i) }

// Conditions as the agent's health engine raises them.
func xid79(node string, gpu int) telemetry.Condition {
	return telemetry.Condition{Kind: telemetry.ConditionXid, Target: telemetry.GPUTarget(telemetry.GPUID{Node: telemetry.NodeID(node), Index: gpu}),
		GPUUUID: uuid(gpu), Severity: telemetry.SeverityFatal, Action: telemetry.ActionRestartBM,
		Message: "GPU has fallen off the bus", Evidence: map[string]string{"xid": "79"}}
}

func dbe(node string, gpu int) telemetry.Condition {
	return telemetry.Condition{Kind: telemetry.ConditionECCDBE, Target: telemetry.GPUTarget(telemetry.GPUID{Node: telemetry.NodeID(node), Index: gpu}),
		GPUUUID: uuid(gpu), Severity: telemetry.SeverityCritical, Action: telemetry.ActionResetGPU, Message: "1 new double-bit ECC error"}
}

// remapPending is a critical condition that is a state, not a discrete fatal
// event: it waits for the policy's hysteresis.
func remapPending(node string, gpu int) telemetry.Condition {
	return telemetry.Condition{Kind: telemetry.ConditionRowRemapPending, Target: telemetry.GPUTarget(telemetry.GPUID{Node: telemetry.NodeID(node), Index: gpu}),
		GPUUUID: uuid(gpu), Severity: telemetry.SeverityCritical, Action: telemetry.ActionResetGPU, Message: "a row remap is pending"}
}

func sbe(node string, gpu int) telemetry.Condition {
	return telemetry.Condition{Kind: telemetry.ConditionECCSBERate, Target: telemetry.GPUTarget(telemetry.GPUID{Node: telemetry.NodeID(node), Index: gpu}),
		GPUUUID: uuid(gpu), Severity: telemetry.SeverityWarning, Message: "12 single-bit ECC errors in 1h"}
}

func ibDown(node string) telemetry.Condition {
	return telemetry.Condition{Kind: telemetry.ConditionIBDown, Target: telemetry.IBPortTarget(telemetry.IBPortID{Node: telemetry.NodeID(node), Device: "mlx5_0", Port: 1}),
		Severity: telemetry.SeverityCritical, Action: telemetry.ActionCheckMechanicals, Message: "mlx5_0 port 1 is DOWN"}
}

// report builds an 8-GPU report carrying the conditions where the engine puts them.
func report(node string, at time.Time, conds ...telemetry.Condition) healthreport.Report {
	return reportN(node, at, 8, conds...)
}

func reportN(node string, at time.Time, gpus int, conds ...telemetry.Condition) healthreport.Report {
	r := healthreport.Report{Node: node, Time: at, Conditions: []telemetry.Condition{}, GPUs: []healthreport.GPUReport{}}
	for i := range gpus {
		r.GPUs = append(r.GPUs, healthreport.GPUReport{Index: i, UUID: uuid(i), Conditions: []telemetry.Condition{}})
	}
	for _, c := range conds {
		r.Severity = r.Severity.Max(c.Severity)
		r.Action = r.Action.Max(c.Action)
		if g, ok := c.Target.GPUID(); ok && g.Index < gpus {
			r.GPUs[g.Index].Conditions = append(r.GPUs[g.Index].Conditions, c)
			continue
		}
		r.Conditions = append(r.Conditions, c)
	}
	switch {
	case r.Severity >= telemetry.SeverityCritical:
		r.State = telemetry.StateDraining
	case r.Severity == telemetry.SeverityWarning:
		r.State = telemetry.StateSuspect
	}
	return r
}

// fakeActuator is a scheduler in memory. It fails the next failN[method] calls,
// counts every call, and records violations of the controller's promises.
type fakeActuator struct {
	mu      sync.Mutex
	drained map[string]string // node → reason
	failN   map[string]int    // method → failures left
	// effectThenFail: the next Drain takes effect but returns an error, as a call
	// that timed out after slurmctld applied it.
	effectThenFail bool
	// manual: a person may resume any drain (ManualResume); off, resuming a
	// non-owned drain is a violation.
	manual     bool
	calls      []call
	violations []string
	now        func() time.Time
}

type call struct {
	At     time.Time
	Method string
	Node   string
	Reason string
	Work   []string
	Failed bool
}

func newFake(now func() time.Time) *fakeActuator {
	return &fakeActuator{drained: map[string]string{}, failN: map[string]int{}, now: now}
}

var errDown = errors.New("slurmctld is not responding")

func (f *fakeActuator) fail(method string) bool {
	if f.failN[method] > 0 {
		f.failN[method]--
		return true
	}
	return false
}

func (f *fakeActuator) record(method, node, reason string, work []string, failed bool) {
	f.calls = append(f.calls, call{At: f.now(), Method: method, Node: node, Reason: reason, Work: work, Failed: failed})
}

func (f *fakeActuator) Drain(_ context.Context, node, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail("drain") {
		f.record("drain", node, reason, nil, true)
		return errDown
	}
	if cur, ok := f.drained[node]; ok && Owned(cur) && Owned(reason) {
		f.violations = append(f.violations, fmt.Sprintf("duplicate drain of %s (already %q)", node, cur))
	}
	if cur, ok := f.drained[node]; ok && !Owned(cur) && Owned(reason) {
		f.violations = append(f.violations, fmt.Sprintf("automation overwrote %s's reason %q", node, cur))
	}
	f.drained[node] = reason
	f.record("drain", node, reason, nil, false)
	if f.effectThenFail {
		f.effectThenFail = false
		return errors.New("scontrol timed out")
	}
	return nil
}

func (f *fakeActuator) Reboot(_ context.Context, node, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail("reboot") {
		f.record("reboot", node, reason, nil, true)
		return errDown
	}
	if cur, ok := f.drained[node]; ok && cur == reason {
		f.violations = append(f.violations, fmt.Sprintf("duplicate reboot of %s", node))
	}
	if cur, ok := f.drained[node]; ok && !Owned(cur) {
		f.violations = append(f.violations, fmt.Sprintf("automation rebooted %s drained by someone else (%q)", node, cur))
	}
	f.drained[node] = reason
	f.record("reboot", node, reason, nil, false)
	return nil
}

func (f *fakeActuator) Resume(_ context.Context, node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail("resume") {
		f.record("resume", node, "", nil, true)
		return errDown
	}
	if cur, ok := f.drained[node]; ok && !Owned(cur) && !f.manual {
		f.violations = append(f.violations, fmt.Sprintf("resumed %s drained by someone else (%q)", node, cur))
	}
	f.record("resume", node, f.drained[node], nil, false)
	delete(f.drained, node)
	return nil
}

func (f *fakeActuator) Evacuate(_ context.Context, node string, work []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail("evacuate") {
		f.record("evacuate", node, "", work, true)
		return errors.New("429: disruption budget")
	}
	f.record("evacuate", node, "", work, false)
	return nil
}

func (f *fakeActuator) State(_ context.Context, node string) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail("state") {
		return false, "", errDown
	}
	r, ok := f.drained[node]
	return ok, r, nil
}

// adminDrain drains a node the way a person at sinfo would.
func (f *fakeActuator) adminDrain(node, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drained[node] = reason
}

// effective counts successful calls of a method on a node.
func (f *fakeActuator) effective(method, node string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.Method == method && c.Node == node && !c.Failed {
			n++
		}
	}
	return n
}

func (f *fakeActuator) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// testPolicy is the default policy; tests change what they need.
func testPolicy() *Policy { return DefaultPolicy() }

type harness struct {
	t   testing.TB
	clk *clock
	act *fakeActuator
	c   *Controller
	dir string
}

func newHarness(t testing.TB, pol *Policy) *harness {
	t.Helper()
	h := &harness{t: t, clk: newClock(), dir: t.TempDir()}
	h.act = newFake(h.clk.now)
	h.c = h.open(pol)
	return h
}

func (h *harness) open(pol *Policy) *Controller {
	h.t.Helper()
	if pol == nil {
		pol = testPolicy()
	}
	c, err := New(Options{Dir: h.dir, Policy: pol, Actuator: h.act, Clock: h.clk.now, Monotonic: h.clk.monotonic})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.audit.close() })
	return c
}

func (h *harness) observe(node string, conds ...telemetry.Condition) {
	h.c.Observe(report(node, h.clk.now(), conds...))
}

func (h *harness) process() int { return h.c.Process(context.Background()) }

func (h *harness) state(node string) telemetry.State {
	h.t.Helper()
	s, ok := h.c.Node(node)
	if !ok {
		h.t.Fatalf("node %s unknown", node)
	}
	return s.State
}

func (h *harness) audit() []AuditRecord {
	h.t.Helper()
	recs, err := h.c.Audit(time.Time{}, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return recs
}

func (h *harness) auditWhere(f func(AuditRecord) bool) []AuditRecord {
	var out []AuditRecord
	for _, r := range h.audit() {
		if f(r) {
			out = append(out, r)
		}
	}
	return out
}

// checkTransitions fails the test if any audited transition is not allowed.
func (h *harness) checkTransitions() {
	h.t.Helper()
	for _, r := range h.audit() {
		if r.Event != "transition" {
			continue
		}
		from, err1 := telemetry.ParseState(r.From)
		to, err2 := telemetry.ParseState(r.To)
		if err1 != nil || err2 != nil || !from.CanTransition(to) || from == to {
			h.t.Fatalf("audited transition %s → %s of %s is not allowed", r.From, r.To, r.Node)
		}
	}
}
