// Takeover: a controller that becomes the one acting (a new leader of two
// gpuwatch servers, or one restarted on another disk) reconciles its state
// with the drains the scheduler carries before it acts.

package drain

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// Lister is implemented by actuators that can list the drains gpuwatch set in
// the scheduler, which on takeover is the truth: the Kubernetes actuator reads
// gpuwatch's taint and annotations on the Node objects. OwnedDrains returns
// every node carrying a drain gpuwatch set, automatic (Reason starts with
// ReasonPrefix) or manual (a person's reason, set through ManualDrain), and
// nothing else: a node an administrator cordoned is not listed. It must not
// change anything.
type Lister interface {
	OwnedDrains(ctx context.Context) ([]OwnedDrain, error)
}

// OwnedDrain is one drain gpuwatch set, as the scheduler carries it.
type OwnedDrain struct {
	Node   string
	Reason string
	// Reboot: a reboot was asked for (the node stays drained until resumed).
	Reboot bool
	// Since is when the drain was set, zero when the scheduler does not say.
	Since time.Time
}

// TakeoverResult says what Takeover found and did.
type TakeoverResult struct {
	// Adopted are the nodes the scheduler carries a drain of gpuwatch's on that
	// the state lacked (or held with another reason): now drained in the state.
	Adopted []string
	// Released are the nodes the state held out of service that carry no drain
	// of gpuwatch's: now healthy in the state; nothing was changed on them.
	Released []string
	// Known are the scheduler's drains the state already held.
	Known []string
	// Evacuations are the adopted drains whose evacuation is issued again.
	Evacuations []string
	// Replayed is how many health reports were observed after the reconcile.
	Replayed int
}

// Takeover makes the controller's state, possibly stale (a previous term as
// the one acting) or empty (a new replica), agree with the drains gpuwatch set
// in the scheduler before the controller acts, then observes the latest
// health report of each node, the newest of those it kept as a standby and
// reports (the caller's, which may be nil), and stops being a standby.
// Call it before Run, and never while Run runs.
//
//   - A drain the scheduler carries that the state lacks is adopted: the node
//     becomes drained in the state with the scheduler's reason, owned by
//     automation when the reason is, a person's manual drain otherwise. An
//     adopted automatic drain counts against the budget from Since (now when
//     unknown).
//   - A node the state holds out of service (draining, drained, probation) for
//     gpuwatch that carries no drain of gpuwatch's is released from the state:
//     healthy, its pending action dropped. Nothing is changed on the node.
//   - After the reports are observed, an adopted drain whose conditions ask for
//     evacuation (modes drain and requeue) has its evacuation issued again:
//     work already gone is skipped by the Evacuator, and work still there is
//     what the old actor left behind.
//
// Each adoption, release and re-issued evacuation is one audit record of event
// takeover. An actuator that is not a Lister keeps the saved state as the
// truth (audited). An error listing the drains is returned with nothing
// changed (a standby stays one): the caller retries before it acts.
func (c *Controller) Takeover(ctx context.Context, reports []healthreport.Report) (TakeoverResult, error) {
	var res TakeoverResult
	lister, ok := c.act.(Lister)
	var owned []OwnedDrain
	if ok {
		lctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
		var err error
		owned, err = lister.OwnedDrains(lctx)
		cancel()
		if err != nil {
			return res, fmt.Errorf("takeover: cannot list gpuwatch's drains in the scheduler: %w", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.tick()
	if !ok {
		c.record(AuditRecord{Event: "takeover", Outcome: OutcomeRecorded,
			Note: "taking over; the actuator cannot list its drains in the scheduler: the saved state is kept as the truth"})
	} else {
		res = c.reconcileLocked(owned, now)
	}
	// The reports a standby kept, and the caller's where newer; observed in
	// one go under the lock, so that no report that comes meanwhile is
	// overtaken by an older one.
	latest := c.kept
	for _, r := range reports {
		keepLatest(latest, r)
	}
	c.standby, c.kept = false, map[string]healthreport.Report{}
	nodes := make([]string, 0, len(latest))
	for node := range latest {
		nodes = append(nodes, node)
	}
	slices.Sort(nodes)
	for _, node := range nodes {
		r := latest[node]
		if node == "" || CheckNodeName(node) != nil || !r.State.Valid() {
			continue
		}
		c.observeLocked(r)
		res.Replayed++
	}
	for _, node := range res.Adopted {
		if c.reissueEvacuation(node) {
			res.Evacuations = append(res.Evacuations, node)
		}
	}
	c.record(AuditRecord{Event: "takeover", Outcome: OutcomeRecorded, Note: fmt.Sprintf(
		"took over: %d drains adopted from the scheduler, %d released from a stale state, %d already known; %d health reports replayed, %d evacuations issued again",
		len(res.Adopted), len(res.Released), len(res.Known), res.Replayed, len(res.Evacuations))})
	err := c.saveLocked()
	c.signal()
	if err != nil {
		return res, fmt.Errorf("takeover: %w", err)
	}
	return res, nil
}

// reconcileLocked adopts the scheduler's drains the state lacks and releases
// the state's drains the scheduler lacks (c.mu held).
func (c *Controller) reconcileLocked(owned []OwnedDrain, now time.Time) TakeoverResult {
	var res TakeoverResult
	in := map[string]OwnedDrain{}
	for _, d := range owned {
		if err := CheckNodeName(d.Node); err != nil {
			c.log.Warn("drain: takeover: a drain in the scheduler names no node gpuwatch can act on; left alone", "err", err)
			continue
		}
		d.Reason = clean(d.Reason, MaxReason)
		in[d.Node] = d
	}
	names := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := c.nodes[name]
		if _, ok := in[name]; ok || t.Held != "" || !outOfService(t.State) {
			continue
		}
		reason := ""
		if t.Incident != nil {
			reason = t.Incident.Reason
		}
		note := "the scheduler carries no drain of gpuwatch's on the node: released from this controller's stale state; nothing was changed on the node"
		if p := t.Pending; p != nil {
			note += fmt.Sprintf(" (pending %s dropped: automation decides again on the node's reports)", p.label())
		}
		c.record(AuditRecord{Node: name, Event: "takeover", Action: "release", From: t.State.String(), To: telemetry.StateHealthy.String(),
			Reason: reason, Outcome: OutcomeRecorded, Note: note})
		t.State, t.Since = telemetry.StateHealthy, now
		t.Incident, t.Pending, t.Stuck = nil, nil, ""
		t.ProbationSince, t.ProbationNote, t.Verified = time.Time{}, "", time.Time{}
		res.Released = append(res.Released, name)
	}
	drains := make([]OwnedDrain, 0, len(in))
	for _, d := range in {
		drains = append(drains, d)
	}
	slices.SortFunc(drains, func(a, b OwnedDrain) int { return cmp.Compare(a.Node, b.Node) })
	for _, d := range drains {
		t := c.track0(d.Node)
		if t.Incident != nil && t.Incident.Reason == d.Reason && outOfService(t.State) {
			res.Known = append(res.Known, d.Node)
			continue
		}
		since := d.Since
		if since.IsZero() || since.After(now) {
			since = now
		}
		auto := Owned(d.Reason)
		inc := &incident{Mode: ModeCordon, Reason: d.Reason, Decided: since, Owned: auto, Manual: !auto, GPUCount: t.GPUCount}
		if d.Reboot {
			inc.Mode = ModeReboot
		}
		if !auto {
			inc.User = "unknown (adopted from the scheduler on takeover)"
		}
		from := t.State
		t.Incident, t.Pending, t.Held, t.Stuck, t.WaitingBudget = inc, nil, "", "", false
		t.State, t.Since, t.Verified = telemetry.StateDrained, since, now
		t.ProbationSince, t.ProbationNote = time.Time{}, ""
		note := "a drain of gpuwatch's that this controller's state lacked: adopted as drained, nothing repeated on the node"
		if auto {
			note += "; it counts against the budget from " + since.UTC().Format(time.RFC3339)
			c.addBudgetEntry(d.Node, since)
		} else {
			note += "; a person's drain: only a manual resume ends it"
		}
		c.record(AuditRecord{Node: d.Node, Event: "takeover", Action: "adopt", From: from.String(), To: telemetry.StateDrained.String(),
			Reason: d.Reason, Outcome: OutcomeRecorded, Note: note})
		res.Adopted = append(res.Adopted, d.Node)
	}
	return res
}

// addBudgetEntry counts an adopted drain against the budget, keeping the
// entries oldest first (c.mu held).
func (c *Controller) addBudgetEntry(node string, at time.Time) {
	e := budgetEntry{Node: node, At: at}
	i, _ := slices.BinarySearchFunc(c.budget.Entries, e, func(a, b budgetEntry) int { return a.At.Compare(b.At) })
	c.budget.Entries = slices.Insert(c.budget.Entries, i, e)
}

// reissueEvacuation gives an adopted automatic drain the incident its
// node's reported conditions describe and, for modes drain and requeue,
// queues its evacuation again; it reports whether it did (c.mu held).
func (c *Controller) reissueEvacuation(node string) bool {
	t := c.nodes[node]
	if t == nil || t.State != telemetry.StateDrained || t.Pending != nil || t.Incident == nil || !t.Incident.Owned {
		return false
	}
	active, _ := c.nodeConds(t)
	if len(active) == 0 {
		return false
	}
	inc := t.Incident
	inc.Rule = active[0].Rule
	inc.Evidence, inc.GPUs, inc.UUIDs = t.targets(active)
	if inc.Mode != ModeReboot {
		inc.Mode = active[0].Mode
	}
	if c.pol.DryRun || (inc.Mode != ModeDrain && inc.Mode != ModeRequeue) {
		return false
	}
	c.enqueue(node, t, &action{Kind: kindEvacuate, Mode: inc.Mode, Rule: inc.Rule, Reason: inc.Reason},
		AuditRecord{Node: node, Event: "takeover", Action: kindEvacuate, Rule: inc.Rule, Reason: inc.Reason, Evidence: inc.Evidence,
			Note: "the adopted drain's evacuation is issued again: work already gone is skipped, work still there is what the previous actor left"})
	return true
}

// outOfService reports whether a node in state s is held out of service.
func outOfService(s telemetry.State) bool {
	return s == telemetry.StateDraining || s == telemetry.StateDrained || s == telemetry.StateProbation
}
