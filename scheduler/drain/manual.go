// Manual operations: a person drains, resumes or resets the budget.

package drain

import (
	"errors"
	"fmt"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

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
	if c.standby {
		return fmt.Errorf("manual drain of %s: %w", node, ErrStandby)
	}
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
func (c *Controller) ManualResume(node, reason, user string) error {
	reason, user = clean(reason, MaxReason), clean(user, maxUser)
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
	if c.standby {
		return fmt.Errorf("manual resume of %s: %w", node, ErrStandby)
	}
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
		AuditRecord{Node: node, Event: "manual", Action: kindResume, Reason: reason, User: user})
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
	if c.standby {
		return fmt.Errorf("budget reset: %w", ErrStandby)
	}
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
