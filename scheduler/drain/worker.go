// The actuation worker: performs queued drains, reboots, evacuations and
// resumes through the Actuator, reading the scheduler's state first, retrying
// with back-off, and verifying what it did.

package drain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// signal wakes Run.
func (c *Controller) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
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
//
// A standby controller (Options.Standby, until Takeover) acts on nothing.
func (c *Controller) Process(ctx context.Context) int {
	type due struct {
		node string
		a    action
	}
	if c.Standby() {
		return 0
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
