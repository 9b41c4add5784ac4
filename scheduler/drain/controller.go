package drain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/internal/atomicfile"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Options configure a Controller.
type Options struct {
	// Dir holds the state file and the audit log; it is created if missing.
	Dir string
	// Policy; nil is DefaultPolicy.
	Policy *Policy
	// Actuator acts on the scheduler. Required unless Policy.DryRun.
	Actuator Actuator
	// Clock returns the current time (nil: time.Now). Hysteresis, probation,
	// back-off and the budget window all read it, so tests drive time.
	Clock func() time.Time
	// Monotonic is a clock that is never stepped: the time elapsed since any
	// fixed point. The controller compares it with Clock to notice when the
	// wall clock is stepped (NTP, a person, a VM resumed) and moves its timers
	// by the step, so that hysteresis, probation, back-off, verification and
	// the budget window measure elapsed time (see ClockStepMin). Nil: Go's
	// monotonic clock when Clock is nil as well; with a Clock of its own (a
	// simulated one) and no Monotonic, only backward steps are noticed.
	Monotonic func() time.Duration
	// Logger (nil: discard).
	Logger *slog.Logger
	// Workloads names the work to evacuate for modes drain and requeue: the
	// workloads on the given GPUs (UUIDs) of the node, or on the whole node when
	// gpus is nil, as attribution sees them ("namespace/pod" or Slurm job ids).
	// Nil: nothing is evacuated (the drain still happens).
	Workloads func(node string, gpus []string) []string
	// PollInterval is how often Run looks for due actuations (default 1 s).
	PollInterval time.Duration
	// FlushInterval is how often Run saves hysteresis counters (default 10 s);
	// decisions and transitions are saved at once.
	FlushInterval time.Duration
	// CallTimeout bounds one actuator call (default 60 s).
	CallTimeout time.Duration
	// VerifyInterval is how often the worker checks (Actuator.State) that a node
	// gpuwatch holds drained while a drain-rule condition persists is still
	// drained, and re-asserts the drain if it is not: a reboot that resumed the
	// node by itself (Slurm nextstate=RESUME) with the fault still there, or a
	// resume outside gpuwatch (ManualResume is the way to override). Default 5 min.
	VerifyInterval time.Duration
}

// Controller turns health reports into budgeted, audited drains. Observe is safe to
// call from many goroutines; Run (or Process) performs the actuations.
type Controller struct {
	opts  Options
	pol   *Policy
	act   Actuator
	now   func() time.Time     // the wall clock, without Go's monotonic reading
	mono  func() time.Duration // nil: backward steps only
	log   *slog.Logger
	audit *auditLog
	path  string

	wake chan struct{}

	mu      sync.Mutex
	nodes   map[string]*nodeTrack
	budget  budgetState
	nextID  uint64
	dirty   bool // counters changed since the last save
	saveErr error
	actions map[[2]string]float64 // {action, outcome} → count
	// fallbacks counts remedies refused for good and the containment done
	// instead: {action, fallback} → count.
	fallbacks map[[2]string]float64
	latency   prometheus.Histogram
	// The last reading of both clocks, to notice steps (c.mu).
	lastWall time.Time
	lastMono time.Duration
}

// ClockStepMin is the smallest difference between the wall clock's and the
// monotonic clock's progress that the controller takes for a step of the wall
// clock; NTP's slewing stays far below it.
const ClockStepMin = time.Second

// nodeTrack is the controller's view of one node (persisted).
type nodeTrack struct {
	State      telemetry.State       `json:"state"`
	Since      time.Time             `json:"since"`
	LastReport time.Time             `json:"last_report,omitzero"`
	ReportTime time.Time             `json:"report_time,omitzero"` // the agent's time of the last report
	AgentState telemetry.State       `json:"agent_state"`
	GPUCount   int                   `json:"gpu_count"`
	UUIDs      map[int]string        `json:"uuids,omitempty"` // GPU index → UUID
	Warnings   int                   `json:"warnings"`        // conditions at warning or above in the last report
	Conds      map[string]*condTrack `json:"conds,omitempty"` // by Condition.Key
	Incident   *incident             `json:"incident,omitempty"`
	// ProbationSince is when the current probation period started.
	ProbationSince time.Time `json:"probation_since,omitzero"`
	ProbationNote  string    `json:"probation_note,omitempty"`
	WaitingBudget  bool      `json:"waiting_budget,omitempty"`
	// Held is the reason of a drain gpuwatch found and does not own.
	Held string `json:"held,omitempty"`
	// Acked are conditions a person resumed the node over: they do not act again
	// until they clear.
	Acked   map[string]bool `json:"acked,omitempty"`
	Pending *action         `json:"pending,omitempty"`
	// Stuck is the permanent error that stopped the last actuation.
	Stuck string `json:"stuck,omitempty"`
	// Verified is when the worker last checked that the drain is in place.
	Verified time.Time `json:"verified,omitzero"`
}

func (t *nodeTrack) init() {
	if t.Conds == nil {
		t.Conds = map[string]*condTrack{}
	}
	if t.UUIDs == nil {
		t.UUIDs = map[int]string{}
	}
	for k, c := range t.Conds {
		if c == nil {
			delete(t.Conds, k)
		}
	}
}

// condTrack follows one condition a rule matched, for hysteresis.
type condTrack struct {
	Cond telemetry.Condition `json:"cond"`
	Rule string              `json:"rule"`
	Mode Mode                `json:"mode"`
	// First is the start of the current run of consecutive observations.
	First time.Time `json:"first"`
	Seen  int       `json:"seen"` // consecutive reports with it
	// Clean counts consecutive reports without it, since CleanSince.
	Clean      int       `json:"clean,omitempty"`
	CleanSince time.Time `json:"clean_since,omitzero"`
	// Active: it passed hysteresis (a GPU is excluded, or the node may drain).
	Active      bool      `json:"active,omitempty"`
	ActiveSince time.Time `json:"active_since,omitzero"`
}

func (c *condTrack) present() bool { return c.Clean == 0 }

// incident is why a node is out of service.
type incident struct {
	Rule     string                `json:"rule,omitempty"`
	Mode     Mode                  `json:"mode"`
	Reason   string                `json:"reason"`
	Evidence []telemetry.Condition `json:"evidence,omitempty"`
	GPUs     []int                 `json:"gpus,omitempty"`  // indices of the faulty GPUs
	UUIDs    []string              `json:"uuids,omitempty"` // their UUIDs where known
	Decided  time.Time             `json:"decided"`
	// Owned: automation drained the node and may resume it.
	Owned    bool   `json:"owned"`
	Manual   bool   `json:"manual,omitempty"`
	User     string `json:"user,omitempty"`
	GPUCount int    `json:"gpu_count"` // GPUs reported when it was decided
}

// Action kinds.
const (
	kindDrain    = "drain" // cordon, drain, requeue (the Mode says which)
	kindReboot   = "reboot"
	kindEvacuate = "evacuate"
	kindResume   = "resume"
)

// action is one pending actuation (persisted until accepted).
type action struct {
	ID          uint64    `json:"id"`
	Kind        string    `json:"kind"`
	Mode        Mode      `json:"mode,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Rule        string    `json:"rule,omitempty"`
	Manual      bool      `json:"manual,omitempty"`
	User        string    `json:"user,omitempty"`
	ReportTime  time.Time `json:"report_time,omitzero"` // for the latency histogram
	Created     time.Time `json:"created"`
	Attempts    int       `json:"attempts,omitempty"`
	NextAttempt time.Time `json:"next_attempt"`
	LastError   string    `json:"last_error,omitempty"`
}

// actionLabel is the action label of metrics and audit records.
func (a *action) label() string {
	if a.Kind == kindDrain {
		return string(a.Mode)
	}
	return a.Kind
}

// New opens (or creates) the controller's state in opts.Dir. A state file that
// cannot be read is moved aside to *.corrupt and the controller starts empty with
// the budget tripped, so automation drains nothing until a person calls
// ResetBudget.
func New(opts Options) (*Controller, error) {
	if opts.Dir == "" {
		return nil, errors.New("drain controller: no state directory given")
	}
	pol := opts.Policy
	if pol == nil {
		pol = DefaultPolicy()
	}
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	if opts.Actuator == nil && !pol.DryRun {
		return nil, errors.New("drain controller: no actuator given and the policy is not dry-run")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
		if opts.Monotonic == nil {
			start := time.Now()
			opts.Monotonic = func() time.Duration { return time.Since(start) }
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 10 * time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = time.Minute
	}
	if opts.VerifyInterval <= 0 {
		opts.VerifyInterval = 5 * time.Minute
	}
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("cannot create drain state directory: %w", err)
	}
	clock := opts.Clock
	c := &Controller{
		opts: opts, pol: pol, act: opts.Actuator, log: opts.Logger, mono: opts.Monotonic,
		// Round(0) drops the monotonic reading time.Now carries: every
		// difference the controller takes is between wall times, whose steps
		// tick notices and evens out, also across restarts.
		now:     func() time.Time { return clock().Round(0) },
		path:    filepath.Join(opts.Dir, StateFileName),
		wake:    make(chan struct{}, 1),
		nodes:   map[string]*nodeTrack{},
		actions: map[[2]string]float64{}, fallbacks: map[[2]string]float64{},
		nextID: 1,
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuwatch_drain_decision_latency_seconds",
			Help:    "Time from the health report that decided a drain to the actuator accepting it.",
			Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		}),
	}
	audit, err := openAudit(opts.Dir)
	if err != nil {
		return nil, err
	}
	c.audit = audit
	sf, lerr := loadState(c.path)
	now := c.now()
	switch {
	case lerr != nil:
		aside, err := atomicfile.MoveAside(c.path)
		if err != nil {
			audit.close()
			return nil, fmt.Errorf("cannot read drain state %s (%v): %w", c.path, lerr, err)
		}
		c.budget = budgetState{Tripped: true, TrippedAt: now}
		c.log.Error("drain: state file unreadable; moved aside, automation held until ResetBudget", "file", c.path, "err", lerr)
		c.record(AuditRecord{Event: "budget", Action: "trip", Outcome: OutcomeRecorded,
			Note: fmt.Sprintf("state file %s unreadable (%v), moved to %s: automation holds until ResetBudget", c.path, lerr, aside)})
		if err := c.saveLocked(); err != nil {
			audit.close()
			return nil, err
		}
	case sf != nil:
		c.nodes, c.budget, c.nextID = sf.Nodes, sf.Budget, max(sf.NextID, 1)
		// The clock is behind the last save: it was stepped back while the
		// controller was down. Move the timers back with it (the downtime counts
		// as none), or they would wait for the clock to catch up. A clock ahead
		// of the last save cannot be told from downtime and is taken as such.
		if back := now.Sub(sf.Saved); !sf.Saved.IsZero() && back <= -ClockStepMin {
			c.shiftLocked(back, fmt.Sprintf("the wall clock is %s behind the state saved at %s: stepped back while the controller was down",
				-back, sf.Saved.UTC().Format(time.RFC3339)))
			c.saveLocked()
		}
	}
	if n, err := atomicfile.RemoveTemps(c.path); n > 0 || err != nil {
		c.log.Warn("drain: removed temporary state files a crash left", "count", n, "err", err)
	}
	var saved int64 // no state file (or an unreadable one): nothing in the log is in the state
	switch {
	case sf != nil && sf.AuditSize == nil:
		saved = c.audit.opened // written before audit sizes were kept: only a torn line can be told
	case sf != nil:
		saved = *sf.AuditSize
	}
	if c.recoverAudit(saved) {
		c.saveLocked()
	}
	c.lastWall = now
	if c.mono != nil {
		c.lastMono = c.mono()
	}
	return c, nil
}

// recoverAudit audits what a crash left behind, and reports whether it wrote
// anything (New, before anyone else holds c): a torn last line of the audit
// log, and the records written after the last save (from byte saved on). The
// state as saved is the truth: a decision those records tell of and the saved
// state lacks was never acted on (the worker only acts on saved decisions) and
// is made again on the node's next reports; an actuation they tell of and the
// saved state still has pending is tried again, and the worker reads the
// scheduler's state first, so what took effect is not repeated. One recovery
// record per node they mention says what the log last said of it (From) and
// what it was restored to (To), so that replaying the log's transitions and
// recovery records gives the controller's state.
func (c *Controller) recoverAudit(saved int64) bool {
	a := c.audit
	wrote := false
	type seen struct {
		n     int
		last  string
		kinds []string
	}
	per := map[string]*seen{}
	var nodes []string
	others := 0
	switch {
	case a.opened < saved:
		c.record(AuditRecord{Event: "recovery", Outcome: OutcomeRecorded, Note: fmt.Sprintf(
			"the audit log has %d bytes, fewer than the %d it had when the state was saved: it was truncated or replaced outside gpuwatch",
			a.opened, saved)})
		wrote = true
	case a.opened > saved:
		_, err := scanAudit(a.path, saved, a.opened, func(r AuditRecord) {
			if r.Node == "" {
				others++
				return
			}
			sn := per[r.Node]
			if sn == nil {
				sn = &seen{}
				per[r.Node] = sn
				nodes = append(nodes, r.Node)
			}
			sn.n++
			what := r.Event
			switch r.Event {
			case "transition":
				sn.last = r.To
				what += " " + r.From + "→" + r.To
			default:
				if r.Action != "" {
					what += " " + r.Action
				}
				if r.Outcome != "" && r.Outcome != OutcomeRecorded {
					what += " (" + string(r.Outcome) + ")"
				}
			}
			if !slices.Contains(sn.kinds, what) {
				sn.kinds = append(sn.kinds, what)
			}
		})
		if err != nil {
			c.log.Error("drain: cannot read the audit log's records after the last save", "err", err)
		}
	}
	if a.torn > 0 {
		c.log.Warn("drain: the audit log ended in a torn line (a crash in the middle of a write); ended it, readers skip it", "bytes", a.torn)
		c.record(AuditRecord{Event: "recovery", Outcome: OutcomeRecorded, Note: fmt.Sprintf(
			"the audit log ended in a torn line of %d bytes, a write cut short by a crash: it was ended with a newline, and readers skip it", a.torn)})
		wrote = true
	}
	for _, node := range nodes {
		sn := per[node]
		restored := telemetry.StateHealthy
		note := ""
		if t := c.nodes[node]; t != nil {
			restored = t.State
			if t.Pending != nil {
				note = fmt.Sprintf("; %s pending: the scheduler's state is read before it is tried again, so what took effect is not repeated", t.Pending.label())
			}
		}
		c.log.Warn("drain: audit records after the last save: restored from the saved state", "node", node, "records", sn.n, "restored", restored)
		c.record(AuditRecord{Node: node, Event: "recovery", From: sn.last, To: restored.String(), Outcome: OutcomeRecorded, Note: fmt.Sprintf(
			"restart after a crash: %d audit records about %s were written after the last state save (%s); restored as %s from the saved state: a decision not saved is void (automation decides again on the node's next reports; a person asks again)%s",
			sn.n, node, strings.Join(sn.kinds, ", "), restored, note)})
		wrote = true
	}
	if others > 0 {
		c.record(AuditRecord{Event: "recovery", Outcome: OutcomeRecorded, Note: fmt.Sprintf(
			"restart after a crash: %d audit records about no one node (budget, clock) were written after the last state save; the saved state is restored", others)})
		wrote = true
	}
	return wrote
}

// tick reads the clock and, when the wall clock was stepped since the last
// reading, moves every timer by the step (c.mu held). With a monotonic clock a
// step is the difference between the two clocks' progress; without one, only a
// wall clock that went back is a step. Every entry point calls it before it
// reads the time, so windows measure elapsed time whatever the wall clock does.
func (c *Controller) tick() time.Time {
	now := c.now()
	var step time.Duration
	var elapsed string
	if c.mono != nil {
		m := c.mono()
		if !c.lastWall.IsZero() {
			step = now.Sub(c.lastWall) - (m - c.lastMono)
			elapsed = fmt.Sprintf(" while %s passed", (m - c.lastMono).Round(time.Millisecond))
		}
		c.lastMono = m
	} else if now.Before(c.lastWall) {
		step = now.Sub(c.lastWall)
	}
	c.lastWall = now
	if step >= ClockStepMin || step <= -ClockStepMin {
		dir := "forward"
		if step < 0 {
			dir = "back"
		}
		c.shiftLocked(step, fmt.Sprintf("the wall clock stepped %s by %s%s", dir, step.Abs(), elapsed))
		c.saveLocked()
	}
	return now
}

// shiftLocked moves every timer the controller keeps by d, audited (c.mu held):
// what was 5 minutes ago before a step is 5 minutes ago after it.
func (c *Controller) shiftLocked(d time.Duration, why string) {
	mv := func(ts ...*time.Time) {
		for _, t := range ts {
			if !t.IsZero() {
				*t = t.Add(d)
			}
		}
	}
	for _, t := range c.nodes {
		mv(&t.Since, &t.LastReport, &t.ProbationSince, &t.Verified)
		for _, ct := range t.Conds {
			mv(&ct.First, &ct.CleanSince, &ct.ActiveSince)
		}
		if t.Incident != nil {
			mv(&t.Incident.Decided)
		}
		if t.Pending != nil {
			mv(&t.Pending.Created, &t.Pending.NextAttempt)
		}
	}
	for i := range c.budget.Entries {
		mv(&c.budget.Entries[i].At)
	}
	mv(&c.budget.TrippedAt)
	c.log.Warn("drain: clock step; timers moved with it", "step", d, "why", why)
	c.record(AuditRecord{Event: "clock", Outcome: OutcomeRecorded,
		Note: why + ": hysteresis, probation, back-off, verification and budget timers moved with it, so they measure elapsed time"})
}

// Policy returns the policy in force.
func (c *Controller) Policy() *Policy { return c.pol }

// Close saves the state and closes the audit log.
func (c *Controller) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.saveLocked()
	return errors.Join(err, c.audit.close())
}

// record appends an audit record, filling in time and budget (c.mu held).
func (c *Controller) record(r AuditRecord) {
	now := c.now()
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Budget = c.budgetStatusLocked(now)
	r.DryRun = c.pol.DryRun
	if err := c.audit.append(r); err != nil {
		c.log.Error("drain: cannot write audit record", "node", r.Node, "err", err)
	}
}

// count adds one to gpuwatch_drain_actions_total (c.mu held).
func (c *Controller) count(action string, o Outcome) { c.actions[[2]string{action, string(o)}]++ }

// saveLocked writes the state file atomically (c.mu held).
func (c *Controller) saveLocked() error {
	crashPoint("save")
	size := c.audit.size
	sf := stateFile{Version: stateVersion, Saved: c.now(), NextID: c.nextID, Nodes: c.nodes, Budget: c.budget, AuditSize: &size}
	data, err := jsonMarshal(sf)
	if err == nil {
		err = writeState(c.path, data)
	}
	if err != nil {
		err = fmt.Errorf("cannot save drain state: %w", err)
		if c.saveErr == nil {
			c.log.Error("drain: cannot save state", "err", err)
		}
		c.saveErr = err
		return err
	}
	c.saveErr, c.dirty = nil, false
	return nil
}

// setState moves a node along allowed transitions to `to`, auditing each step.
func (c *Controller) setState(node string, t *nodeTrack, to telemetry.State, note string) {
	if t.State == to {
		return
	}
	for _, s := range statePath(t.State, to) {
		c.record(AuditRecord{Node: node, Event: "transition", From: t.State.String(), To: s.String(), Outcome: OutcomeRecorded, Note: note})
		t.State, t.Since = s, c.now()
	}
	if t.State == telemetry.StateProbation {
		t.ProbationSince, t.ProbationNote = c.now(), ""
	}
}

// statePath is the shortest sequence of allowed transitions from → to (excluding from).
func statePath(from, to telemetry.State) []telemetry.State {
	prev := map[telemetry.State]telemetry.State{from: from}
	queue := []telemetry.State{from}
	all := []telemetry.State{telemetry.StateHealthy, telemetry.StateSuspect, telemetry.StateDraining, telemetry.StateDrained, telemetry.StateProbation}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s == to {
			break
		}
		for _, n := range all {
			if _, seen := prev[n]; !seen && s.CanTransition(n) {
				prev[n] = s
				queue = append(queue, n)
			}
		}
	}
	if _, ok := prev[to]; !ok {
		return nil
	}
	var path []telemetry.State
	for s := to; s != from; s = prev[s] {
		path = append(path, s)
	}
	slices.Reverse(path)
	return path
}

// Observe takes one node health report. It is called on every pushed report: without
// a decision it only updates counters in memory; a decision or a state change is
// audited and saved before Observe returns. Actuations happen later, in Run.
//
// A report whose node name fails CheckNodeName is dropped (and logged): no
// actuator could act on that node, and a name such as "gpu[01-04]" or "ALL"
// would reach more than one node if one tried.
func (c *Controller) Observe(r healthreport.Report) {
	if r.Node == "" {
		return
	}
	if err := CheckNodeName(r.Node); err != nil {
		c.log.Warn("drain: health report ignored", "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.tick()
	t, ok := c.nodes[r.Node]
	if !ok {
		t = &nodeTrack{Since: now}
		t.init()
		c.nodes[r.Node] = t
	}
	c.dirty = true
	gap := !t.LastReport.IsZero() && now.Sub(t.LastReport) > c.pol.Probation.MaxReportGap
	t.LastReport, t.ReportTime, t.AgentState, t.GPUCount = now, r.Time, r.State, len(r.GPUs)
	for _, g := range r.GPUs {
		if g.UUID != "" {
			t.UUIDs[g.Index] = g.UUID
		}
	}
	before := c.fingerprint(t)
	changed := c.track(r, t, now)
	changed = c.step(r, t, now, gap) || changed
	if changed || c.fingerprint(t) != before {
		c.saveLocked()
		c.signal()
	}
}

// fingerprint summarises what must be saved at once when it changes.
func (c *Controller) fingerprint(t *nodeTrack) string {
	id := uint64(0)
	if t.Pending != nil {
		id = t.Pending.ID
	}
	return fmt.Sprintf("%d/%d/%v/%q", t.State, id, t.WaitingBudget, t.Held)
}

// track updates the hysteresis of every condition a rule matches and reports
// whether an exclusion started or ended.
func (c *Controller) track(r healthreport.Report, t *nodeTrack, now time.Time) bool {
	h := c.pol.Hysteresis
	changed := false
	seen := map[string]bool{}
	warnings := 0
	for _, cond := range r.AllConditions() {
		if cond.Severity >= telemetry.SeverityWarning {
			warnings++
		}
		rule := c.pol.Match(cond)
		if rule == nil || rule.Mode == ModeIgnore {
			continue
		}
		key := cond.Key()
		seen[key] = true
		ct := t.Conds[key]
		if ct == nil {
			ct = &condTrack{First: now}
			t.Conds[key] = ct
		}
		if !ct.present() {
			ct.First, ct.Seen = now, 0 // a new run of observations
		}
		ct.Cond, ct.Rule, ct.Mode = cond, rule.Name, rule.Mode
		ct.Seen++
		ct.Clean, ct.CleanSince = 0, time.Time{}
		// A discrete fatal event (a lost GPU, a double-bit ECC error, a fatal
		// Xid…) acts on its first report; hysteresis is for rates and thresholds.
		if !ct.Active && (cond.Severity == telemetry.SeverityFatal || cond.DiscreteFatal() || rule.Immediate ||
			ct.Seen >= h.Observations || now.Sub(ct.First) >= h.For) {
			ct.Active, ct.ActiveSince = true, now
			if rule.Mode == ModeExcludeGPU {
				changed = true
				c.record(AuditRecord{Node: r.Node, GPU: gpuName(cond), Event: "decision", Action: string(ModeExcludeGPU),
					Rule: rule.Name, Evidence: []telemetry.Condition{cond}, Outcome: OutcomeRecorded,
					Note: fmt.Sprintf("present in %d reports over %s", ct.Seen, now.Sub(ct.First).Round(time.Second))})
			}
		}
	}
	t.Warnings = warnings
	for key := range t.Acked {
		if !seen[key] {
			delete(t.Acked, key)
		}
	}
	for key, ct := range t.Conds {
		if seen[key] {
			continue
		}
		if ct.present() {
			ct.Seen, ct.Clean, ct.CleanSince = 0, 0, now
		}
		ct.Clean++
		if ct.Clean >= h.ClearObservations && now.Sub(ct.CleanSince) >= h.ClearAfter {
			delete(t.Conds, key)
			if ct.Active && ct.Mode == ModeExcludeGPU {
				changed = true
				c.record(AuditRecord{Node: r.Node, GPU: gpuName(ct.Cond), Event: "decision", Action: "include-gpu",
					Rule: ct.Rule, Outcome: OutcomeRecorded,
					Note: fmt.Sprintf("%s absent from %d reports over %s", ct.Cond.Key(), ct.Clean, now.Sub(ct.CleanSince).Round(time.Second))})
			}
		}
	}
	return changed
}

func gpuName(c telemetry.Condition) string {
	if c.GPUUUID != "" {
		return c.GPUUUID
	}
	if g, ok := c.Target.GPUID(); ok {
		return strconv.Itoa(g.Index)
	}
	return ""
}

// nodeConds returns the tracked node-level conditions: the active ones that are
// present now and not acknowledged, and whether any node-level one is present at all.
func (c *Controller) nodeConds(t *nodeTrack) (active []*condTrack, anyPresent bool) {
	for key, ct := range t.Conds {
		if !ct.Mode.NodeLevel() || !ct.present() {
			continue
		}
		anyPresent = true
		if ct.Active && !t.Acked[key] {
			active = append(active, ct)
		}
	}
	// Strongest mode first, then worst condition, so the reason names the cause.
	slices.SortFunc(active, func(a, b *condTrack) int {
		if x := cmp.Compare(modeRank(b.Mode), modeRank(a.Mode)); x != 0 {
			return x
		}
		if x := cmp.Compare(b.Cond.Severity, a.Cond.Severity); x != 0 {
			return x
		}
		if x := cmp.Compare(b.Cond.Action.Rank(), a.Cond.Action.Rank()); x != 0 {
			return x
		}
		return cmp.Compare(a.Cond.Key(), b.Cond.Key())
	})
	return active, anyPresent
}

func modeRank(m Mode) int {
	switch m {
	case ModeCordon:
		return 1
	case ModeDrain:
		return 2
	case ModeRequeue:
		return 3
	case ModeReboot:
		return 4
	}
	return 0
}

// step moves the node's state machine after a report; it reports whether it decided
// something.
func (c *Controller) step(r healthreport.Report, t *nodeTrack, now time.Time, gap bool) bool {
	active, anyPresent := c.nodeConds(t)
	if !anyPresent {
		t.WaitingBudget = false
	}
	if t.Incident != nil && t.Incident.Manual {
		return false // a person drained it; only ManualResume brings it back
	}
	switch t.State {
	case telemetry.StateHealthy, telemetry.StateSuspect:
		if len(active) > 0 {
			if c.decideDrain(r, t, active, now) {
				return true
			}
		}
		want := telemetry.StateHealthy
		if len(t.Conds) > 0 {
			want = telemetry.StateSuspect
		}
		if want != t.State {
			c.setState(r.Node, t, want, "")
			return true
		}
	case telemetry.StateDrained:
		if !anyPresent && t.Pending == nil {
			c.setState(r.Node, t, telemetry.StateProbation, "no drain-rule condition reported")
			return true
		}
	case telemetry.StateProbation:
		if anyPresent {
			return c.relapse(r, t, now)
		}
		if gap {
			t.ProbationSince, t.ProbationNote = now, ""
			c.record(AuditRecord{Node: r.Node, Event: "decision", Action: "probation", Outcome: OutcomeRecorded,
				Note: fmt.Sprintf("probation restarted: no report for more than %s", c.pol.Probation.MaxReportGap)})
			return true
		}
		if t.Pending != nil || now.Sub(t.ProbationSince) < c.pol.Probation.Duration {
			return false
		}
		if fail := c.probationChecks(t); fail != "" {
			if fail != t.ProbationNote {
				t.ProbationNote = fail
				c.record(AuditRecord{Node: r.Node, Event: "decision", Action: "probation", Outcome: OutcomeRecorded,
					Note: "probation check failed: " + fail})
				return true
			}
			return false
		}
		c.decideResume(r.Node, t, now)
		return true
	}
	return false
}

// probationChecks returns "" when every check passes, else what failed.
func (c *Controller) probationChecks(t *nodeTrack) string {
	for _, ch := range c.pol.Probation.Checks {
		switch ch {
		case CheckGPUCount:
			if t.Incident != nil && t.GPUCount < t.Incident.GPUCount {
				return fmt.Sprintf("%s: %d GPUs reported, %d before the drain", ch, t.GPUCount, t.Incident.GPUCount)
			}
		case CheckNoWarnings:
			if t.Warnings > 0 {
				return fmt.Sprintf("%s: %d conditions at warning or above", ch, t.Warnings)
			}
		case CheckAgentHealthy:
			if t.AgentState != telemetry.StateHealthy {
				return fmt.Sprintf("%s: the agent says %s", ch, t.AgentState)
			}
		}
	}
	return ""
}

// decideDrain takes the node out of service if the budget allows; it reports whether
// the node's state changed.
func (c *Controller) decideDrain(r healthreport.Report, t *nodeTrack, active []*condTrack, now time.Time) bool {
	primary := active[0]
	evidence := make([]telemetry.Condition, len(active))
	gpus := map[int]bool{}
	for i, ct := range active {
		evidence[i] = ct.Cond
		if g, ok := ct.Cond.Target.GPUID(); ok {
			gpus[g.Index] = true
		}
	}
	reason := FormatReason(primary.Cond, len(active)-1)
	mode := primary.Mode
	if ok, why := c.budgetAllows(r.Node, now); !ok {
		if !t.WaitingBudget {
			t.WaitingBudget = true
			c.count(string(mode), OutcomeSkippedBudget)
			c.record(AuditRecord{Node: r.Node, GPU: gpuName(primary.Cond), Event: "decision", Action: string(mode),
				Rule: primary.Rule, Reason: reason, Evidence: evidence, Outcome: OutcomeSkippedBudget,
				Note: "would drain, budget exhausted: " + why})
			c.log.Warn("drain: would drain, budget exhausted", "node", r.Node, "reason", reason, "why", why)
		}
		return false
	}
	t.WaitingBudget = false
	c.budget.Entries = append(c.budget.Entries, budgetEntry{Node: r.Node, At: now})
	inc := &incident{Rule: primary.Rule, Mode: mode, Reason: reason, Evidence: evidence, Decided: now, Owned: true, GPUCount: len(r.GPUs)}
	for _, i := range sortedKeys(gpus) {
		inc.GPUs = append(inc.GPUs, i)
		if u := t.UUIDs[i]; u != "" {
			inc.UUIDs = append(inc.UUIDs, u)
		}
	}
	t.Incident, t.Held, t.Stuck = inc, "", ""
	c.setState(r.Node, t, telemetry.StateDraining, reason)
	rt := r.Time
	if rt.IsZero() {
		rt = now
	}
	kind := kindDrain
	if mode == ModeReboot {
		kind = kindReboot
	}
	c.enqueue(r.Node, t, &action{Kind: kind, Mode: mode, Reason: reason, Rule: primary.Rule, ReportTime: rt},
		AuditRecord{Node: r.Node, GPU: gpuName(primary.Cond), Event: "decision", Action: string(mode), Rule: primary.Rule,
			Reason: reason, Evidence: evidence})
	return true
}

// relapse handles a drain-rule condition during probation: the node is still out of
// service (it was never resumed), so it goes back to drained without new budget.
func (c *Controller) relapse(r healthreport.Report, t *nodeTrack, now time.Time) bool {
	active, _ := c.nodeConds(t)
	var ev []telemetry.Condition
	for _, ct := range active {
		ev = append(ev, ct.Cond)
	}
	reason := ""
	if t.Incident != nil {
		reason = t.Incident.Reason
	}
	if t.Pending != nil && t.Pending.Kind == kindResume {
		t.Pending = nil // the resume has not been accepted: cancel it
	}
	c.setState(r.Node, t, telemetry.StateDraining, "relapse during probation")
	owned := t.Incident == nil || t.Incident.Owned
	if !owned || reason == "" {
		c.setState(r.Node, t, telemetry.StateDrained, "relapse during probation")
		c.record(AuditRecord{Node: r.Node, Event: "decision", Action: "probation", Evidence: ev, Outcome: OutcomeRecorded,
			Note: "relapse during probation; the drain is not gpuwatch's, nothing to re-assert"})
		return true
	}
	c.enqueue(r.Node, t, &action{Kind: kindDrain, Mode: ModeCordon, Reason: reason, Rule: t.Incident.Rule, ReportTime: now},
		AuditRecord{Node: r.Node, Event: "decision", Action: string(ModeCordon), Rule: t.Incident.Rule, Reason: reason, Evidence: ev,
			Note: "relapse during probation: re-assert the drain (no new budget: the node never returned)"})
	return true
}

// decideResume starts the resume of a node that served its probation.
func (c *Controller) decideResume(node string, t *nodeTrack, now time.Time) {
	reason := ""
	if t.Incident != nil {
		reason = t.Incident.Reason
	}
	c.enqueue(node, t, &action{Kind: kindResume, Reason: reason, ReportTime: now},
		AuditRecord{Node: node, Event: "decision", Action: kindResume, Reason: reason,
			Note: fmt.Sprintf("probation of %s served, checks passed", c.pol.Probation.Duration)})
}

// enqueue makes a the node's pending action and audits the decision; in dry-run it
// applies the action's effect at once instead (c.mu held).
func (c *Controller) enqueue(node string, t *nodeTrack, a *action, rec AuditRecord) {
	now := c.now()
	a.ID, a.Created, a.NextAttempt = c.nextID, now, now
	c.nextID++
	if c.pol.DryRun {
		rec.Outcome = OutcomeDryRun
		c.count(a.label(), OutcomeDryRun)
		c.record(rec)
		c.applyAccepted(node, t, a, "dry-run")
		return
	}
	rec.Outcome = OutcomePending
	c.record(rec)
	t.Pending = a
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// signal wakes Run.
func (c *Controller) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// ManualDrain drains a node on a person's word. The reason is theirs and must not
// start with ReasonPrefix: automation never resumes a manual drain, and it does not
// count against the budget. user names who asked (audited).
//
// The node must pass CheckNodeName. The reason and the user are stored as one
// line of printable UTF-8 (see sanitize), the reason cut to MaxReason bytes and
// the user to 100; what is left must not be empty.
func (c *Controller) ManualDrain(node, reason, user string) error {
	reason, user = clean(reason, MaxReason), clean(user, maxUser)
	switch {
	case node == "":
		return errors.New("manual drain: no node given")
	case CheckNodeName(node) != nil:
		return fmt.Errorf("manual drain: node: %w", CheckNodeName(node))
	case user == "":
		return fmt.Errorf("manual drain of %s: no user given (the audit log records who drained)", node)
	case reason == "":
		return fmt.Errorf("manual drain of %s: no reason given", node)
	case Owned(reason):
		return fmt.Errorf("manual drain of %s: the reason must not start with %q, which marks drains automation may undo", node, ReasonPrefix)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.tick()
	t := c.track0(node)
	t.Incident = &incident{Mode: ModeCordon, Reason: reason, Decided: now, Manual: true, User: user, GPUCount: t.GPUCount}
	t.Stuck, t.Held, t.WaitingBudget = "", "", false
	if t.State != telemetry.StateDraining && t.State != telemetry.StateDrained {
		c.setState(node, t, telemetry.StateDraining, "manual drain by "+user)
	}
	c.enqueue(node, t, &action{Kind: kindDrain, Mode: ModeCordon, Reason: reason, Manual: true, User: user},
		AuditRecord{Node: node, Event: "manual", Action: string(ModeCordon), Reason: reason, User: user})
	c.saveLocked()
	c.signal()
	return c.saveErr
}

// ManualResume returns a node to service on a person's word, whoever drained it.
// The conditions active now are acknowledged: they do not drain the node again until
// they clear and come back.
func (c *Controller) ManualResume(node, user string) error {
	user = clean(user, maxUser)
	switch {
	case node == "":
		return errors.New("manual resume: no node given")
	case CheckNodeName(node) != nil:
		return fmt.Errorf("manual resume: node: %w", CheckNodeName(node))
	case user == "":
		return fmt.Errorf("manual resume of %s: no user given (the audit log records who resumed)", node)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick()
	t := c.track0(node)
	if t.Acked == nil {
		t.Acked = map[string]bool{}
	}
	for key, ct := range t.Conds {
		if ct.present() {
			t.Acked[key] = true
		}
	}
	t.Stuck, t.WaitingBudget = "", false
	c.enqueue(node, t, &action{Kind: kindResume, Manual: true, User: user},
		AuditRecord{Node: node, Event: "manual", Action: kindResume, User: user})
	c.saveLocked()
	c.signal()
	return c.saveErr
}

// track0 returns the node's track, creating it (c.mu held).
func (c *Controller) track0(node string) *nodeTrack {
	t, ok := c.nodes[node]
	if !ok {
		t = &nodeTrack{Since: c.now()}
		t.init()
		c.nodes[node] = t
	}
	return t
}

// ResetBudget closes a tripped circuit breaker and empties the window, on a person's
// word (audited): automation may drain again.
func (c *Controller) ResetBudget(user string) error {
	user = clean(user, maxUser)
	if user == "" {
		return errors.New("budget reset: no user given (the audit log records who reset)")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.budgetStatusLocked(c.tick())
	c.budget = budgetState{}
	for _, t := range c.nodes {
		t.WaitingBudget = false
	}
	c.record(AuditRecord{Event: "budget", Action: "budget-reset", User: user, Outcome: OutcomeRecorded,
		Note: fmt.Sprintf("was %d/%d used in %s, tripped=%v", was.Used, was.Limit, was.Window, was.Tripped)})
	c.saveLocked()
	return c.saveErr
}

// Run performs pending actuations until ctx ends, retrying failures with back-off,
// and saves hysteresis counters now and then. It returns ctx's error after saving.
func (c *Controller) Run(ctx context.Context) error {
	poll := time.NewTicker(c.opts.PollInterval)
	defer poll.Stop()
	flush := time.NewTicker(c.opts.FlushInterval)
	defer flush.Stop()
	for {
		c.Process(ctx)
		select {
		case <-ctx.Done():
			c.mu.Lock()
			c.saveLocked()
			c.mu.Unlock()
			return ctx.Err()
		case <-poll.C:
		case <-c.wake:
		case <-flush.C:
			c.mu.Lock()
			if c.dirty {
				c.saveLocked()
			}
			c.mu.Unlock()
		}
	}
}

// Process performs every actuation that is due now and returns how many attempts it
// made. An action that an accepted one leads to (evacuate after drain) runs in the
// same pass. Run calls it; tests call it to step the worker.
func (c *Controller) Process(ctx context.Context) int {
	type due struct {
		node string
		a    action
	}
	c.verify(ctx)
	c.sweep()
	done := map[uint64]bool{}
	total := 0
	for range 4 {
		var work []due
		c.mu.Lock()
		now := c.tick()
		for name, t := range c.nodes {
			if p := t.Pending; p != nil && !p.NextAttempt.After(now) && !done[p.ID] {
				work = append(work, due{name, *p})
			}
		}
		c.mu.Unlock()
		if len(work) == 0 {
			break
		}
		slices.SortFunc(work, func(a, b due) int { return cmp.Compare(a.a.ID, b.a.ID) })
		for _, w := range work {
			if ctx.Err() != nil {
				return total
			}
			done[w.a.ID] = true
			c.execute(ctx, w.node, w.a)
			total++
		}
	}
	return total
}

// sweep ends probations whose period has passed since the last report: agents
// send a report when their verdict changes and otherwise only a heartbeat, so
// the end of a quiet probation is a matter of time, not of a new report. A node
// whose agent has been silent longer than MaxReportGap is left until it reports
// (the gap then restarts its probation).
func (c *Controller) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.tick()
	changed := false
	for name, t := range c.nodes {
		if t.State != telemetry.StateProbation || t.Pending != nil || t.LastReport.IsZero() ||
			now.Sub(t.LastReport) > c.pol.Probation.MaxReportGap {
			continue
		}
		if c.step(healthreport.Report{Node: name, Time: t.ReportTime, State: t.AgentState}, t, now, false) {
			changed = true
		}
	}
	if changed {
		c.saveLocked()
		c.signal()
	}
}

// verify checks, every VerifyInterval, that nodes gpuwatch holds drained while their
// fault persists are still drained, and re-asserts the drain where they are not.
// A node found drained under someone else's reason is left to them.
func (c *Controller) verify(ctx context.Context) {
	if c.pol.DryRun {
		return
	}
	var check []string
	c.mu.Lock()
	now := c.tick()
	for name, t := range c.nodes {
		if t.State != telemetry.StateDrained || t.Pending != nil || t.Stuck != "" || t.Incident == nil ||
			!t.Incident.Owned || t.Incident.Manual || now.Sub(t.Verified) < c.opts.VerifyInterval {
			continue
		}
		if _, present := c.nodeConds(t); present {
			check = append(check, name)
		}
	}
	c.mu.Unlock()
	slices.Sort(check)
	for _, node := range check {
		cctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
		drained, reason, err := c.act.State(cctx, node)
		cancel()
		if err != nil {
			continue // the next pass tries again; a pending actuation would say the same
		}
		c.mu.Lock()
		t := c.nodes[node]
		if t == nil || t.State != telemetry.StateDrained || t.Pending != nil || t.Incident == nil || !t.Incident.Owned {
			c.mu.Unlock()
			continue
		}
		t.Verified = c.tick()
		switch {
		case drained && !Owned(reason):
			t.Incident.Owned, t.Held = false, reason
			c.record(AuditRecord{Node: node, Event: "actuation", Action: "verify", Reason: reason, Outcome: OutcomeSkippedNotOwned,
				Note: fmt.Sprintf("someone else now holds the node (reason %q): gpuwatch will not resume it", reason)})
			c.saveLocked()
		case !drained:
			c.enqueue(node, t, &action{Kind: kindDrain, Mode: ModeCordon, Reason: t.Incident.Reason, Rule: t.Incident.Rule},
				AuditRecord{Node: node, Event: "decision", Action: string(ModeCordon), Rule: t.Incident.Rule, Reason: t.Incident.Reason,
					Note: "re-assert: the node is not drained while its fault persists (resumed by a reboot or outside gpuwatch; use ManualResume to override); no new budget"})
			c.saveLocked()
		default:
			c.dirty = true
		}
		c.mu.Unlock()
	}
}

// result is what one actuation attempt came to.
type result struct {
	outcome Outcome
	err     error
	note    string
	held    string // a non-owned reason found on the node
}

// execute performs one attempt of a, outside the lock, and applies the result.
func (c *Controller) execute(ctx context.Context, node string, a action) {
	res := c.attempt(ctx, node, a)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick() // the call may have taken long enough for the clock to step
	t := c.nodes[node]
	if t == nil || t.Pending == nil || t.Pending.ID != a.ID {
		return // superseded while the call ran
	}
	p := t.Pending
	p.Attempts++
	rec := AuditRecord{Node: node, Event: "actuation", Action: a.label(), Rule: a.Rule, Reason: a.Reason, User: a.User,
		Outcome: res.outcome, Attempt: p.Attempts, Note: res.note}
	if res.err != nil {
		rec.Error = res.err.Error()
	}
	if res.outcome == OutcomeFailed && a.Kind == kindReboot {
		// Containment never depends on the remedy: a reboot the scheduler
		// refuses for good (Slurm without a RebootProgram) falls back to a
		// drain with the same owned reason, never to nothing.
		res.outcome = OutcomeRefused
		rec.Outcome = OutcomeRefused
	}
	c.count(a.label(), res.outcome)
	switch res.outcome {
	case OutcomeRefused:
		why := strings.TrimPrefix(rec.Error, ErrPermanent.Error()+": ")
		var evidence []telemetry.Condition
		if t.Incident != nil {
			evidence = t.Incident.Evidence
		}
		rec.Note = "reboot refused: " + why + "; drained instead"
		c.record(rec)
		c.fallbacks[[2]string{a.label(), string(ModeCordon)}]++
		t.Pending = nil
		c.enqueue(node, t, &action{Kind: kindDrain, Mode: ModeCordon, Reason: a.Reason, Rule: a.Rule, ReportTime: a.ReportTime},
			AuditRecord{Node: node, Event: "decision", Action: string(ModeCordon), Rule: a.Rule, Reason: a.Reason, Evidence: evidence,
				Note: "reboot refused: " + why + "; drained instead (the same incident: no new budget); reboot the node by hand once it is idle"})
		c.log.Error("drain: the scheduler refused the reboot; draining instead", "node", node, "err", res.err)
	case OutcomeRetrying:
		p.LastError = rec.Error
		p.NextAttempt = c.now().Add(c.backoff(p.Attempts))
		rec.Note = "next attempt at " + p.NextAttempt.UTC().Format(time.RFC3339)
		c.record(rec)
		c.log.Warn("drain: actuation failed, will retry", "node", node, "action", a.label(), "attempt", p.Attempts, "err", res.err)
	case OutcomeFailed:
		t.Pending, t.Stuck = nil, rec.Error
		c.record(rec)
		c.log.Error("drain: actuation failed permanently; node held", "node", node, "action", a.label(), "err", res.err)
	case OutcomeSkippedNotOwned:
		c.record(rec)
		t.Pending, t.Held = nil, res.held
		switch a.Kind {
		case kindDrain, kindReboot:
			// Someone else drained it: no drain of ours happened, so it takes no budget.
			c.releaseBudget(node, t.Incident)
			if t.Incident != nil {
				t.Incident.Owned = false
			}
			c.setState(node, t, telemetry.StateDrained, "drained by someone else: "+res.held)
		case kindResume:
			t.Incident = nil
			c.setState(node, t, telemetry.StateHealthy, "drained by someone else, left drained: "+res.held)
		}
	case OutcomeAccepted:
		c.record(rec)
		if !a.Manual && (a.Kind == kindDrain || a.Kind == kindReboot) && t.State == telemetry.StateDraining && !a.ReportTime.IsZero() {
			c.latency.Observe(max(0, c.now().Sub(a.ReportTime).Seconds()))
		}
		t.Pending = nil
		c.applyAccepted(node, t, &a, res.note)
	}
	c.saveLocked()
}

// applyAccepted moves the node once an action took effect (or, in dry-run, was
// decided) (c.mu held).
func (c *Controller) applyAccepted(node string, t *nodeTrack, a *action, note string) {
	switch a.Kind {
	case kindDrain, kindReboot:
		c.setState(node, t, telemetry.StateDrained, a.Reason)
		t.Verified = c.now()
		if !c.pol.DryRun && !a.Manual && (a.Mode == ModeDrain || a.Mode == ModeRequeue) {
			t.Pending = &action{ID: c.nextID, Kind: kindEvacuate, Mode: a.Mode, Rule: a.Rule, Reason: a.Reason,
				Created: c.now(), NextAttempt: c.now()}
			c.nextID++
		}
	case kindResume:
		t.Incident, t.Held, t.ProbationNote = nil, "", ""
		c.setState(node, t, telemetry.StateHealthy, note)
	}
}

// attempt calls the actuator for one action (no lock held).
func (c *Controller) attempt(ctx context.Context, node string, a action) result {
	ctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
	defer cancel()
	fail := func(err error) result {
		if errors.Is(err, ErrPermanent) {
			return result{outcome: OutcomeFailed, err: err}
		}
		return result{outcome: OutcomeRetrying, err: err}
	}
	if a.Kind == kindEvacuate {
		return c.evacuate(ctx, node, a, fail)
	}
	drained, reason, err := c.act.State(ctx, node)
	if err != nil {
		return fail(fmt.Errorf("read state of %s: %w", node, err))
	}
	switch a.Kind {
	case kindDrain, kindReboot:
		switch {
		case drained && a.Manual && reason == a.Reason:
			return result{outcome: OutcomeAccepted, note: "already drained with this reason"}
		case drained && !a.Manual && !Owned(reason):
			return result{outcome: OutcomeSkippedNotOwned, held: reason, note: fmt.Sprintf("node is drained by someone else (reason %q): left alone", reason)}
		case drained && a.Kind == kindDrain && !a.Manual:
			return result{outcome: OutcomeAccepted, note: fmt.Sprintf("already drained by gpuwatch (reason %q): not repeated", reason)}
		case drained && a.Kind == kindReboot && reason == a.Reason:
			return result{outcome: OutcomeAccepted, note: "reboot already requested: not repeated"}
		}
		if a.Kind == kindReboot {
			err = c.act.Reboot(ctx, node, a.Reason)
		} else {
			err = c.act.Drain(ctx, node, a.Reason)
		}
	case kindResume:
		switch {
		case !drained:
			return result{outcome: OutcomeAccepted, note: "node is not drained: nothing to resume"}
		case !a.Manual && !Owned(reason):
			return result{outcome: OutcomeSkippedNotOwned, held: reason, note: fmt.Sprintf("node is drained by someone else (reason %q): never resumed by automation", reason)}
		}
		err = c.act.Resume(ctx, node)
	default:
		return result{outcome: OutcomeFailed, err: fmt.Errorf("unknown action kind %q", a.Kind)}
	}
	if err != nil {
		return fail(err)
	}
	return result{outcome: OutcomeAccepted}
}

func (c *Controller) evacuate(ctx context.Context, node string, a action, fail func(error) result) result {
	ev, ok := c.act.(Evacuator)
	if !ok {
		return result{outcome: OutcomeAccepted, note: "the actuator cannot evacuate work: drained only"}
	}
	if c.opts.Workloads == nil {
		return result{outcome: OutcomeAccepted, note: "no workload source: drained only"}
	}
	var gpus []string
	if a.Mode == ModeDrain {
		c.mu.Lock()
		if t := c.nodes[node]; t != nil && t.Incident != nil {
			gpus = slices.Clone(t.Incident.UUIDs)
		}
		c.mu.Unlock()
		if len(gpus) == 0 {
			return result{outcome: OutcomeAccepted, note: "no faulty GPU known by UUID: drained only"}
		}
	}
	work := c.opts.Workloads(node, gpus)
	if len(work) == 0 {
		return result{outcome: OutcomeAccepted, note: "no work to evacuate"}
	}
	if err := ev.Evacuate(ctx, node, work); err != nil {
		return fail(err)
	}
	return result{outcome: OutcomeAccepted, note: "evacuated " + strings.Join(work, ",")}
}

// backoff is Retry.Initial doubled per failed attempt, capped at Retry.Max.
func (c *Controller) backoff(attempts int) time.Duration {
	d := c.pol.Retry.Initial
	for i := 1; i < attempts && d < c.pol.Retry.Max; i++ {
		d *= 2
	}
	return min(d, c.pol.Retry.Max)
}
