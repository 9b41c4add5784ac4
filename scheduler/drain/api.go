package drain

import (
	"cmp"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// NodeStatus is one node as the controller sees it, ready for JSON.
type NodeStatus struct {
	Node  string          `json:"node"`
	State telemetry.State `json:"state"`
	Since time.Time       `json:"since"`
	// Schedulable is false while gpuwatch holds the node out of service:
	// draining, drained, and probation (a drained node serves its probation still
	// drained).
	Schedulable bool `json:"schedulable"`
	// Owned: automation drained the node and will resume it after probation.
	Owned  bool   `json:"owned"`
	Manual bool   `json:"manual,omitempty"`
	User   string `json:"user,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Mode   Mode   `json:"mode,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Evidence are the conditions the drain rests on.
	Evidence      []telemetry.Condition `json:"evidence,omitempty"`
	ProbationEnds time.Time             `json:"probation_ends,omitzero"`
	ProbationNote string                `json:"probation_note,omitempty"`
	WaitingBudget bool                  `json:"waiting_budget,omitempty"`
	Held          string                `json:"held,omitempty"` // a drain reason gpuwatch does not own
	Stuck         string                `json:"stuck,omitempty"`
	Pending       *PendingStatus        `json:"pending,omitempty"`
	LastReport    time.Time             `json:"last_report,omitzero"`
	GPUs          []GPUStatus           `json:"gpus"`
}

// PendingStatus is an actuation the worker has not finished.
type PendingStatus struct {
	Action      string    `json:"action"`
	Attempts    int       `json:"attempts"`
	NextAttempt time.Time `json:"next_attempt"`
	LastError   string    `json:"last_error,omitempty"`
}

// GPUStatus is one GPU of a node. A GPU's state follows the node's while it is one of
// the faulty GPUs of the node's drain; otherwise it is suspect while a rule tracks a
// condition on it (pending hysteresis or excluded), else healthy.
type GPUStatus struct {
	Index      int             `json:"index"`
	UUID       string          `json:"uuid,omitempty"`
	State      telemetry.State `json:"state"`
	Excluded   bool            `json:"excluded"`
	Conditions []string        `json:"conditions,omitempty"` // tracked condition keys
}

// Exclusion is a GPU (or, with GPU -1, a whole node) gpuwatch's own placement must
// not use.
type Exclusion struct {
	Node   string    `json:"node"`
	GPU    int       `json:"gpu"` // -1: the whole node
	UUID   string    `json:"uuid,omitempty"`
	Rule   string    `json:"rule,omitempty"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// Nodes returns every known node, sorted by name.
func (c *Controller) Nodes() []NodeStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick()
	out := make([]NodeStatus, 0, len(c.nodes))
	for name, t := range c.nodes {
		out = append(out, c.nodeStatus(name, t))
	}
	slices.SortFunc(out, func(a, b NodeStatus) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// Node returns one node's status.
func (c *Controller) Node(name string) (NodeStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick()
	t, ok := c.nodes[name]
	if !ok {
		return NodeStatus{}, false
	}
	return c.nodeStatus(name, t), true
}

func (c *Controller) nodeStatus(name string, t *nodeTrack) NodeStatus {
	held := t.State == telemetry.StateDraining || t.State == telemetry.StateDrained || t.State == telemetry.StateProbation
	s := NodeStatus{Node: name, State: t.State, Since: t.Since, Schedulable: !held && t.Held == "",
		WaitingBudget: t.WaitingBudget, Held: t.Held, Stuck: t.Stuck, LastReport: t.LastReport, GPUs: []GPUStatus{}}
	if inc := t.Incident; inc != nil {
		s.Owned, s.Manual, s.User, s.Rule, s.Mode, s.Reason = inc.Owned, inc.Manual, inc.User, inc.Rule, inc.Mode, inc.Reason
		s.Evidence = slices.Clone(inc.Evidence)
		if inc.Manual {
			s.Schedulable = false
		}
	}
	if t.State == telemetry.StateProbation {
		s.ProbationEnds = t.ProbationSince.Add(c.pol.Probation.Duration)
		s.ProbationNote = t.ProbationNote
	}
	if p := t.Pending; p != nil {
		s.Pending = &PendingStatus{Action: p.label(), Attempts: p.Attempts, NextAttempt: p.NextAttempt, LastError: p.LastError}
	}
	gpus := map[int]*GPUStatus{}
	get := func(i int) *GPUStatus {
		g := gpus[i]
		if g == nil {
			g = &GPUStatus{Index: i, UUID: t.UUIDs[i]}
			gpus[i] = g
		}
		return g
	}
	for i := range t.UUIDs {
		get(i)
	}
	for key, ct := range t.Conds {
		gid, ok := ct.Cond.Target.GPUID()
		if !ok {
			continue
		}
		g := get(gid.Index)
		g.Conditions = append(g.Conditions, key)
		g.State = telemetry.StateSuspect
		if ct.Active && ct.Mode == ModeExcludeGPU {
			g.Excluded = true
		}
	}
	if held && t.Incident != nil {
		for _, i := range t.Incident.GPUs {
			get(i).State = t.State
		}
	}
	for _, g := range gpus {
		slices.Sort(g.Conditions)
		s.GPUs = append(s.GPUs, *g)
	}
	slices.SortFunc(s.GPUs, func(a, b GPUStatus) int { return cmp.Compare(a.Index, b.Index) })
	return s
}

// Exclusions lists what gpuwatch's own placement must avoid: every GPU a rule
// excluded, and every node gpuwatch holds out of service (GPU -1). Sorted by node,
// then GPU.
func (c *Controller) Exclusions() []Exclusion {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick()
	out := []Exclusion{}
	for name, t := range c.nodes {
		if held := t.State == telemetry.StateDraining || t.State == telemetry.StateDrained || t.State == telemetry.StateProbation; held || t.Held != "" {
			e := Exclusion{Node: name, GPU: -1, Reason: t.Held, Since: t.Since}
			if inc := t.Incident; inc != nil {
				e.Rule, e.Reason = inc.Rule, inc.Reason
			}
			out = append(out, e)
		}
		for key, ct := range t.Conds {
			gid, ok := ct.Cond.Target.GPUID()
			if !ok || !ct.Active || ct.Mode != ModeExcludeGPU || t.Acked[key] {
				continue
			}
			out = append(out, Exclusion{Node: name, GPU: gid.Index, UUID: ct.Cond.GPUUUID, Rule: ct.Rule,
				Reason: FormatReason(ct.Cond, 0), Since: ct.ActiveSince})
		}
	}
	slices.SortFunc(out, func(a, b Exclusion) int {
		if x := cmp.Compare(a.Node, b.Node); x != 0 {
			return x
		}
		if x := cmp.Compare(a.GPU, b.GPU); x != 0 {
			return x
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	// One GPU excluded by two conditions is listed once (the first reason).
	return slices.CompactFunc(out, func(a, b Exclusion) bool { return a.Node == b.Node && a.GPU == b.GPU })
}

// Budget returns the circuit breaker's state now.
func (c *Controller) Budget() BudgetStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.budgetStatusLocked(c.tick())
}

// Audit returns the audit records at or after since, oldest first; with limit > 0
// only the latest limit of them. It reads the log file.
func (c *Controller) Audit(since time.Time, limit int) ([]AuditRecord, error) {
	return readAudit(filepath.Join(c.opts.Dir, AuditFileName), since, limit)
}

// Metric descriptions.
var (
	descNodes = prometheus.NewDesc("gpuwatch_drain_nodes",
		"Nodes known to the drain controller, by its state for them.", []string{"state"}, nil)
	descActions = prometheus.NewDesc("gpuwatch_drain_actions_total",
		"Drain controller decisions and actuations, by action and outcome.", []string{"action", "outcome"}, nil)
	descFallbacks = prometheus.NewDesc("gpuwatch_drain_fallbacks_total",
		"Remedies the scheduler refused for good (a reboot without a RebootProgram) and the containment done instead, by action and fallback.", []string{"action", "fallback"}, nil)
	descUsed = prometheus.NewDesc("gpuwatch_drain_budget_used",
		"Distinct nodes drained by automation within the budget window.", nil, nil)
	descLimit = prometheus.NewDesc("gpuwatch_drain_budget_limit",
		"Nodes automation may drain within the budget window.", nil, nil)
	descExhausted = prometheus.NewDesc("gpuwatch_drain_budget_exhausted",
		"1 while the drain circuit breaker is tripped (a drain was refused for budget), else 0.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Controller) Describe(ch chan<- *prometheus.Desc) {
	ch <- descNodes
	ch <- descActions
	ch <- descFallbacks
	ch <- descUsed
	ch <- descLimit
	ch <- descExhausted
	c.latency.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Controller) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	b := c.budgetStatusLocked(c.tick())
	var states [telemetry.StateProbation + 1]int
	for _, t := range c.nodes {
		if t.State.Valid() {
			states[t.State]++
		}
	}
	actions := make(map[[2]string]float64, len(c.actions))
	for k, v := range c.actions {
		actions[k] = v
	}
	fallbacks := make(map[[2]string]float64, len(c.fallbacks))
	for k, v := range c.fallbacks {
		fallbacks[k] = v
	}
	c.mu.Unlock()
	for s, n := range states {
		ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(n), telemetry.State(s).String())
	}
	for k, v := range actions {
		ch <- prometheus.MustNewConstMetric(descActions, prometheus.CounterValue, v, k[0], k[1])
	}
	for k, v := range fallbacks {
		ch <- prometheus.MustNewConstMetric(descFallbacks, prometheus.CounterValue, v, k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(descUsed, prometheus.GaugeValue, float64(b.Used))
	ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, float64(b.Limit))
	exhausted := 0.0
	if b.Tripped {
		exhausted = 1
	}
	ch <- prometheus.MustNewConstMetric(descExhausted, prometheus.GaugeValue, exhausted)
	c.latency.Collect(ch)
}
