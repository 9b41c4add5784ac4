package drain

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/atomicfile"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// The controller killed (SIGKILL) at every point where a crash leaves
// something half done, then restarted on the same directory.
//
// The controller runs in a child process: this test binary, re-executed to run
// TestCrashChild with crashEnv set. Its scheduler is fileActuator, whose state
// (which node is drained, with what reason) and call log live in files the
// parent reads after the kill, as Slurm's would survive gpuwatch. At the
// chosen point the child prints crashMarker and blocks; the parent kills it
// there, restarts the controller in-process on the same directory, lets it
// finish, and checks:
//
//   - the audit log decodes, line by line (one torn line when the test tore
//     one, reported by a recovery record);
//   - replaying the log's transitions and recovery records gives the node's
//     state as the controller has it, each transition starting where the last
//     one ended;
//   - the scheduler saw exactly one effective call of the action (drain,
//     reboot or resume): a restart after the call took effect reads the
//     scheduler's state and records the action accepted ("already drained …:
//     not repeated") instead of calling again. Evacuation, which the actuator
//     contract makes idempotent, may run twice when the kill comes after it;
//   - the node ends where it should (drained with gpuwatch's reason, or the
//     person's, or resumed), nothing pending or stuck; the budget counts an
//     automatic drain once, a manual one not at all;
//   - no temporary state file is left behind.
//
// Points: "decided" (the decision's audit records written, the state not yet
// saved), "calling" (the actuator called, nothing done yet), "applied" (the
// scheduler changed, the call not yet returned), "audited" (the actuation's
// records written, the state not yet saved), "renaming" (the new state file
// written under its temporary name, not yet renamed), "evacuating" (after
// the work was stopped, before the call returned).

const (
	crashEnv    = "GPUWATCH_DRAIN_CRASH_CHILD"
	crashMarker = "CRASH-POINT-REACHED"
	crashNode   = "gpu07"
)

type crashCase struct {
	Scenario string // reboot (Xid 79), drain (a DBE: drain and evacuate), resume, manual
	Point    string
	Dir      string
	Torn     bool // the parent tears the audit log's last line after the kill
}

func TestCrashAndRestart(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	var cases []crashCase
	for _, sc := range []string{"reboot", "drain", "resume", "manual"} {
		for _, pt := range []string{"decided", "calling", "applied", "audited", "renaming"} {
			cases = append(cases, crashCase{Scenario: sc, Point: pt})
		}
	}
	cases = append(cases,
		crashCase{Scenario: "drain", Point: "evacuating"},
		crashCase{Scenario: "reboot", Point: "audited", Torn: true},
		crashCase{Scenario: "resume", Point: "decided", Torn: true},
	)
	for _, tc := range cases {
		name := tc.Scenario + "/" + tc.Point
		if tc.Torn {
			name += "+torn"
		}
		t.Run(name, func(t *testing.T) {
			tc.Dir = fastDir(t)
			runCrashChild(t, tc)
			if tc.Torn {
				f, err := os.OpenFile(filepath.Join(tc.Dir, "drain", AuditFileName), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(`{"time":"2026-03-01T03:00:00Z","node":"gpu07","event":"actu`)
				f.Close()
			}
			checkAfterCrash(t, tc)
		})
	}
}

// runCrashChild runs the scenario in a child process and SIGKILLs it at the
// point.
func runCrashChild(t *testing.T, tc crashCase) {
	t.Helper()
	spec, _ := json.Marshal(tc)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+string(spec))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reached := make(chan bool, 1)
	var lines []string
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if sc.Text() == crashMarker {
				reached <- true
				return
			}
		}
		reached <- false
	}()
	select {
	case ok := <-reached:
		if !ok {
			cmd.Wait()
			t.Fatalf("the child ended without reaching %q:\n%s\n%s", tc.Point, strings.Join(lines, "\n"), stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child did not reach %q in 20s", tc.Point)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: nothing runs after it
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Fatalf("the child was not killed: %v", err)
	}
}

// crashPolicy: probation ends at once, so the resume scenario is quick.
func crashPolicy() *Policy {
	p := DefaultPolicy()
	p.Probation.Duration = 0
	p.Budget = Budget{Count: 2, Window: time.Hour}
	return p
}

func crashOptions(dir string, act *fileActuator) Options {
	return Options{Dir: filepath.Join(dir, "drain"), Policy: crashPolicy(), Actuator: act,
		Workloads: func(string, []string) []string { return []string{"job-1"} }}
}

// TestCrashChild is the child's side of TestCrashAndRestart.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		t.Skip("only run by TestCrashAndRestart")
	}
	var tc crashCase
	if err := json.Unmarshal([]byte(spec), &tc); err != nil {
		t.Fatal(err)
	}
	var armed sync.Mutex
	arm := false
	stop := func() {
		fmt.Println(crashMarker)
		os.Stdout.Sync()
		select {} // wait for SIGKILL
	}
	act := &fileActuator{dir: tc.Dir, hook: func(point string) {
		if point == tc.Point {
			stop()
		}
	}}
	crashHook = func(point string) {
		armed.Lock()
		on := arm
		armed.Unlock()
		if on && ((point == "save" && (tc.Point == "decided" || tc.Point == "audited")) || (point == "rename" && tc.Point == "renaming")) {
			stop()
		}
	}
	setArm := func(v bool) {
		armed.Lock()
		arm = v
		armed.Unlock()
	}
	c, err := New(crashOptions(tc.Dir, act))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	decideActs := tc.Point == "decided" || tc.Point == "renaming"
	switch tc.Scenario {
	case "reboot":
		setArm(decideActs)
		c.Observe(report(crashNode, now, xid79(crashNode, 3)))
		setArm(true)
		c.Process(ctx)
	case "drain":
		c.Observe(report(crashNode, now, remapPending(crashNode, 3)))
		c.Observe(report(crashNode, now, remapPending(crashNode, 3)))
		setArm(decideActs)
		c.Observe(report(crashNode, now, remapPending(crashNode, 3))) // the third report decides
		setArm(tc.Point != "evacuating")
		c.Process(ctx)
		setArm(true)
		c.Process(ctx)
	case "resume":
		act.hook = nil
		c.Observe(report(crashNode, now, xid79(crashNode, 3)))
		c.Process(ctx)
		c.Observe(report(crashNode, now)) // clean: probation, which is 0 long
		act.hook = func(point string) {
			if point == tc.Point {
				stop()
			}
		}
		setArm(decideActs)
		c.Observe(report(crashNode, now)) // decides the resume
		setArm(true)
		c.Process(ctx)
	case "manual":
		setArm(decideActs)
		if err := c.ManualDrain(crashNode, "replacing the fan tray", "alice"); err != nil {
			t.Fatal(err)
		}
		setArm(true)
		c.Process(ctx)
	}
	t.Fatalf("%s: point %q not reached", tc.Scenario, tc.Point)
}

// checkAfterCrash restarts the controller on the killed one's directory, lets
// it finish what it was doing, and checks what TestCrashAndRestart promises.
func checkAfterCrash(t *testing.T, tc crashCase) {
	t.Helper()
	act := &fileActuator{dir: tc.Dir}
	c, err := New(crashOptions(tc.Dir, act))
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer c.Close()
	ctx := context.Background()
	now := time.Now()
	// The agent goes on reporting what it reported before the crash; the
	// person whose drain request died with the server asks again.
	switch tc.Scenario {
	case "reboot":
		c.Observe(report(crashNode, now, xid79(crashNode, 3)))
	case "drain":
		for range 3 {
			c.Observe(report(crashNode, now, remapPending(crashNode, 3)))
		}
	case "resume":
		c.Observe(report(crashNode, now))
	case "manual":
		if n, ok := c.Node(crashNode); !ok || !n.Manual {
			if err := c.ManualDrain(crashNode, "replacing the fan tray", "alice"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 5 {
		c.Process(ctx)
		c.Observe(report(crashNode, now, map[string][]telemetry.Condition{
			"reboot": {xid79(crashNode, 3)}, "drain": {remapPending(crashNode, 3)}}[tc.Scenario]...))
	}
	c.Process(ctx)

	dir := filepath.Join(tc.Dir, "drain")
	recs, bad := auditLines(t, dir)
	wantBad := 0
	if tc.Torn {
		wantBad = 1
	}
	if bad != wantBad {
		t.Errorf("%d audit lines do not decode, want %d", bad, wantBad)
	}
	recovery := 0
	for _, r := range recs {
		if r.Event == "recovery" {
			recovery++
			t.Logf("recovery: %s %s→%s %s", r.Node, r.From, r.To, r.Note)
		}
	}
	// Records after the last save exist exactly when the kill came between
	// writing them and saving (or a torn line was left).
	if wantRecovery := tc.Point == "decided" || tc.Point == "audited" || tc.Point == "renaming" || tc.Torn; (recovery > 0) != wantRecovery {
		t.Errorf("%d recovery records; want some: %v", recovery, wantRecovery)
	}

	// Replay.
	st, ok := c.Node(crashNode)
	if !ok {
		t.Fatal("node unknown after the restart")
	}
	cur := telemetry.StateHealthy
	for _, r := range recs {
		if r.Node != crashNode {
			continue
		}
		switch r.Event {
		case "transition":
			from, _ := telemetry.ParseState(r.From)
			to, _ := telemetry.ParseState(r.To)
			if from != cur || !from.CanTransition(to) {
				t.Errorf("transition %s→%s while the log had the node %s:\n%s", r.From, r.To, cur, dumpAudit(recs))
			}
			cur = to
		case "recovery":
			if r.To != "" {
				if r.From != "" && r.From != cur.String() {
					t.Errorf("recovery from %s while the log had the node %s", r.From, cur)
				}
				cur, _ = telemetry.ParseState(r.To)
			}
		}
	}
	if cur != st.State {
		t.Errorf("the audit log replays to %s; the controller has %s:\n%s", cur, st.State, dumpAudit(recs))
	}

	// Exactly once.
	calls := act.calls(t)
	count := func(method string) int {
		n := 0
		for _, cl := range calls {
			if cl[0] == method && cl[1] == crashNode {
				n++
			}
		}
		return n
	}
	drained, reason := act.state(crashNode)
	var want telemetry.State
	switch tc.Scenario {
	case "reboot":
		want = telemetry.StateDrained
		if count("reboot") != 1 || count("drain") != 0 || !drained || !Owned(reason) {
			t.Errorf("calls %v, scheduler drained=%v %q: want one reboot with gpuwatch's reason", calls, drained, reason)
		}
	case "drain":
		want = telemetry.StateDrained
		if count("drain") != 1 || !drained || !Owned(reason) {
			t.Errorf("calls %v, scheduler drained=%v %q: want one drain with gpuwatch's reason", calls, drained, reason)
		}
		if n := count("evacuate"); n < 1 || n > 2 || (n == 2 && tc.Point != "evacuating") {
			t.Errorf("evacuated %d times: %v", n, calls)
		}
	case "resume":
		want = telemetry.StateSuspect // back in service; the Xid is remembered until it has been clean 10 minutes
		if count("reboot") != 1 || count("resume") != 1 || drained {
			t.Errorf("calls %v, scheduler drained=%v: want one reboot, one resume", calls, drained)
		}
	case "manual":
		want = telemetry.StateDrained
		if count("drain") != 1 || !drained || reason != "replacing the fan tray" {
			t.Errorf("calls %v, scheduler drained=%v %q: want one drain with the person's reason", calls, drained, reason)
		}
	}
	if st.State != want || st.Pending != nil || st.Stuck != "" {
		t.Errorf("node after the restart %+v, want %s, nothing pending", st, want)
	}
	accepted := 0
	for _, r := range recs {
		if r.Node == crashNode && r.Event == "actuation" && r.Outcome == OutcomeAccepted && r.Action != "evacuate" {
			accepted++
		}
	}
	wantAccepted := map[string]int{"reboot": 1, "drain": 1, "resume": 2, "manual": 1}[tc.Scenario]
	if accepted != wantAccepted && !(tc.Point == "audited" && accepted == wantAccepted+1 && recovery > 0) {
		t.Errorf("%d accepted actuations audited, want %d (one more only after a recovery record):\n%s", accepted, wantAccepted, dumpAudit(recs))
	}
	b := c.Budget()
	if wantUsed := map[bool]int{true: 0, false: 1}[tc.Scenario == "manual"]; b.Used != wantUsed {
		t.Errorf("budget used %d, want %d", b.Used, wantUsed)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, StateFileName+atomicfile.TempSuffix+"*")); len(tmps) != 0 {
		t.Errorf("temporary state files left: %v", tmps)
	}
}

func dumpAudit(recs []AuditRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s %s %s %s→%s %s %q\n", r.Node, r.Event, r.Action, r.From, r.To, r.Outcome, r.Note)
	}
	return b.String()
}

// fileActuator is a scheduler whose state outlives the controller's process:
// sched/NODE holds the reason of a drained node, calls.log one line per call
// that changed something (method, node, reason), both written before the call
// returns. hook, when set, is called at "calling" (before anything changes)
// and "applied" (after, before the call returns), and at "evacuating".
type fileActuator struct {
	dir  string
	hook func(point string)
	mu   sync.Mutex
}

func (a *fileActuator) point(p string) {
	if a.hook != nil {
		a.hook(p)
	}
}

func (a *fileActuator) log(method, node, reason string) error {
	f, err := os.OpenFile(filepath.Join(a.dir, "calls.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	b, _ := json.Marshal([]string{method, node, reason})
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	return f.Sync()
}

func (a *fileActuator) set(node, reason string, drained bool) error {
	os.MkdirAll(filepath.Join(a.dir, "sched"), 0o700)
	path := filepath.Join(a.dir, "sched", node)
	if !drained {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(path, []byte(reason), 0o600) // not writeState: its crash point is the controller's
}

func (a *fileActuator) state(node string) (bool, string) {
	b, err := os.ReadFile(filepath.Join(a.dir, "sched", node))
	if err != nil {
		return false, ""
	}
	return true, string(b)
}

func (a *fileActuator) change(method, node, reason string, drained bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.point("calling")
	if err := a.set(node, reason, drained); err != nil {
		return err
	}
	if err := a.log(method, node, reason); err != nil {
		return err
	}
	a.point("applied")
	return nil
}

func (a *fileActuator) Drain(_ context.Context, node, reason string) error {
	return a.change("drain", node, reason, true)
}

func (a *fileActuator) Reboot(_ context.Context, node, reason string) error {
	return a.change("reboot", node, reason, true)
}

func (a *fileActuator) Resume(_ context.Context, node string) error {
	return a.change("resume", node, "", false)
}

func (a *fileActuator) Evacuate(_ context.Context, node string, work []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.log("evacuate", node, strings.Join(work, ",")); err != nil {
		return err
	}
	a.point("evacuating")
	return nil
}

func (a *fileActuator) State(_ context.Context, node string) (bool, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, r := a.state(node)
	return d, r, nil
}

// calls reads calls.log.
func (a *fileActuator) calls(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(a.dir, "calls.log"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out [][]string
	for line := range strings.Lines(string(data)) {
		var c []string
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("calls.log: %q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

// A state file written before the audit log's size was kept: nothing tells
// which records came after the save, and none is taken for lost. An audit
// log shorter than the state says was cut outside gpuwatch: said once.
func TestRecoveryEdges(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(n1, xid79(n1, 3))
	h.process()
	h.c.Close()
	path := filepath.Join(h.dir, StateFileName)
	var sf map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &sf); err != nil || sf["audit_size"] == nil {
		t.Fatalf("state file without audit_size: %v", err)
	}
	delete(sf, "audit_size")
	data, _ = json.Marshal(sf)
	os.WriteFile(path, data, 0o600)
	h.c = h.open(nil)
	if recs := h.auditWhere(func(r AuditRecord) bool { return r.Event == "recovery" }); len(recs) != 0 {
		t.Fatalf("recovery from an old state file: %+v", recs)
	}
	h.c.Close()
	os.Truncate(filepath.Join(h.dir, AuditFileName), 0)
	h.c = h.open(nil)
	recs := h.auditWhere(func(r AuditRecord) bool { return r.Event == "recovery" })
	if len(recs) != 1 || !strings.Contains(recs[0].Note, "truncated or replaced outside gpuwatch") {
		t.Fatalf("recovery after the log was cut: %+v", recs)
	}
	h.c.Close()
	h.c = h.open(nil) // said once: the state now records the new size
	if n := len(h.auditWhere(func(r AuditRecord) bool { return r.Event == "recovery" })); n != 1 {
		t.Fatalf("%d recovery records after a clean restart", n)
	}
	if s, _ := h.c.Node(n1); s.State != telemetry.StateDrained {
		t.Fatalf("state %s", s.State)
	}
}
