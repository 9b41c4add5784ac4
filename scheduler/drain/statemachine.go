// The state machine: health reports in, per-node and per-GPU condition tracks
// with hysteresis, drain and resume decisions queued for the worker.

package drain

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

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
// A standby controller (Options.Standby) only keeps each node's latest report
// for Takeover.
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
	if c.standby {
		keepLatest(c.kept, r)
		return
	}
	c.observeLocked(r)
}

// keepLatest keeps r in m unless m holds a newer report of its node.
func keepLatest(m map[string]healthreport.Report, r healthreport.Report) {
	if k, ok := m[r.Node]; !ok || !r.Time.Before(k.Time) {
		m[r.Node] = r
	}
}

// observeLocked is Observe of a checked report (c.mu held).
func (c *Controller) observeLocked(r healthreport.Report) {
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
	evidence, gpus, uuids := t.targets(active)
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
	inc := &incident{Rule: primary.Rule, Mode: mode, Reason: reason, Evidence: evidence, GPUs: gpus, UUIDs: uuids, Decided: now, Owned: true, GPUCount: len(r.GPUs)}
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

// targets is what the active conditions (strongest first) name: their
// conditions as evidence, the GPUs they are on in index order, and those
// GPUs' UUIDs where known.
func (t *nodeTrack) targets(active []*condTrack) (evidence []telemetry.Condition, gpus []int, uuids []string) {
	evidence = make([]telemetry.Condition, len(active))
	on := map[int]bool{}
	for i, ct := range active {
		evidence[i] = ct.Cond
		if g, ok := ct.Cond.Target.GPUID(); ok {
			on[g.Index] = true
		}
	}
	for _, i := range sortedKeys(on) {
		gpus = append(gpus, i)
		if u := t.UUIDs[i]; u != "" {
			uuids = append(uuids, u)
		}
	}
	return evidence, gpus, uuids
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
