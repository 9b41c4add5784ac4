package drain

import (
	"encoding/json"
	"fmt"
	"time"
)

// budgetState is the circuit breaker's memory (persisted).
type budgetState struct {
	// Entries are automatic drain decisions, oldest first.
	Entries   []budgetEntry `json:"entries,omitempty"`
	Tripped   bool          `json:"tripped,omitempty"`
	TrippedAt time.Time     `json:"tripped_at,omitzero"`
}

type budgetEntry struct {
	Node string    `json:"node"`
	At   time.Time `json:"at"`
}

// BudgetStatus is the circuit breaker as the audit log, the API and the metrics show
// it.
type BudgetStatus struct {
	Used    int    `json:"used"`    // distinct nodes drained by automation within the window
	Limit   int    `json:"limit"`   // how many the policy allows now
	Known   int    `json:"known"`   // nodes the controller has heard of
	Max     string `json:"max"`     // the policy's limit as written: "10%" or "3"
	Window  string `json:"window"`  // the sliding window
	Tripped bool   `json:"tripped"` // a drain was refused; automation holds
}

// prune drops entries that left the window (c.mu held).
func (c *Controller) pruneBudget(now time.Time) {
	cut := now.Add(-c.pol.Budget.Window)
	i := 0
	for i < len(c.budget.Entries) && !c.budget.Entries[i].At.After(cut) {
		i++
	}
	if i > 0 {
		c.budget.Entries = append([]budgetEntry(nil), c.budget.Entries[i:]...)
	}
}

// usedLocked counts distinct nodes in the window (c.mu held, pruned).
func (c *Controller) usedLocked() (int, map[string]bool) {
	nodes := map[string]bool{}
	for _, e := range c.budget.Entries {
		nodes[e.Node] = true
	}
	return len(nodes), nodes
}

func (c *Controller) budgetStatusLocked(now time.Time) BudgetStatus {
	c.pruneBudget(now)
	used, _ := c.usedLocked()
	return BudgetStatus{
		Used: used, Limit: c.pol.Budget.Limit(len(c.nodes)), Known: len(c.nodes),
		Max: c.pol.Budget.String(), Window: c.pol.Budget.Window.String(), Tripped: c.budget.Tripped,
	}
}

// budgetAllows says whether automation may drain node now; when it may not, it trips
// the breaker and says why (c.mu held).
func (c *Controller) budgetAllows(node string, now time.Time) (bool, string) {
	c.pruneBudget(now)
	used, in := c.usedLocked()
	limit := c.pol.Budget.Limit(len(c.nodes))
	if c.budget.Tripped {
		if !c.pol.Budget.AutoReset || used >= limit {
			return false, fmt.Sprintf("circuit breaker tripped at %s (%d/%d nodes in %s); ResetBudget to go on",
				c.budget.TrippedAt.UTC().Format(time.RFC3339), used, limit, c.pol.Budget.Window)
		}
		c.budget.Tripped = false
		c.record(AuditRecord{Event: "budget", Action: "budget-reset", Outcome: OutcomeRecorded,
			Note: fmt.Sprintf("auto reset: %d/%d nodes in %s", used, limit, c.pol.Budget.Window)})
	}
	if in[node] {
		return true, "" // the node already counts in this window
	}
	if used+1 > limit {
		if !c.budget.Tripped {
			c.budget.Tripped, c.budget.TrippedAt = true, now
			c.log.Error("drain: budget exhausted, circuit breaker tripped", "used", used, "limit", limit, "window", c.pol.Budget.Window)
		}
		return false, fmt.Sprintf("%d of %d nodes already drained by automation in %s (max %s of %d known)",
			used, limit, c.pol.Budget.Window, c.pol.Budget.String(), len(c.nodes))
	}
	return true, ""
}

// releaseBudget removes the node's entry for an incident that turned out not to be
// gpuwatch's drain (c.mu held).
func (c *Controller) releaseBudget(node string, inc *incident) {
	if inc == nil || inc.Manual {
		return
	}
	out := c.budget.Entries[:0]
	for _, e := range c.budget.Entries {
		if e.Node == node && e.At.Equal(inc.Decided) {
			continue
		}
		out = append(out, e)
	}
	c.budget.Entries = out
}

func jsonMarshal(v any) ([]byte, error) { return json.MarshalIndent(v, "", " ") }
