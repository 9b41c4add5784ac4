package drain

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/internal/atomicfile"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
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
	// Standby starts the controller as a standby (the follower of two gpuwatch
	// servers): Observe keeps each node's latest report and decides nothing,
	// manual requests fail with ErrStandby, and Process acts on nothing, until
	// Takeover reconciles the state with the scheduler and makes it the one
	// acting.
	Standby bool
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
	// standby: Options.Standby until Takeover; kept is each node's latest
	// report observed meanwhile (c.mu).
	standby bool
	kept    map[string]healthreport.Report
}

// ErrStandby is what a manual request to a standby controller fails with: the
// controller that acts (the leader) takes it.
var ErrStandby = errors.New("this drain controller is a standby: the leader acts")

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
		nextID: 1, standby: opts.Standby, kept: map[string]healthreport.Report{},
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

// Standby reports whether the controller is a standby (Options.Standby, until
// Takeover).
func (c *Controller) Standby() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.standby
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
