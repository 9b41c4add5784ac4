package drain

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/yamlfile"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Mode is what a rule does when its condition has persisted (or at once when it is
// fatal).
type Mode string

// Modes. The first four act on the whole node through the Actuator and count against
// the budget; exclude-gpu only keeps gpuwatch's own placement off one GPU; ignore
// matches a condition so that later rules do not.
const (
	ModeCordon     Mode = "cordon"      // no new work; running work finishes
	ModeDrain      Mode = "drain"       // cordon, then evacuate the work on the faulty GPUs
	ModeRequeue    Mode = "requeue"     // cordon, then evacuate all work on the node
	ModeReboot     Mode = "reboot"      // drain and reboot as soon as the node is idle, then resume
	ModeExcludeGPU Mode = "exclude-gpu" // keep gpuwatch's placement off the GPU; the node stays in service
	ModeIgnore     Mode = "ignore"      // nothing
)

var modes = []Mode{ModeCordon, ModeDrain, ModeRequeue, ModeReboot, ModeExcludeGPU, ModeIgnore}

// NodeLevel reports whether the mode takes the whole node out of service.
func (m Mode) NodeLevel() bool {
	return m == ModeCordon || m == ModeDrain || m == ModeRequeue || m == ModeReboot
}

// Check is a probation check: one more thing that must hold, besides the probation
// period without a drain-rule condition, before gpuwatch resumes a node it drained.
type Check string

// Probation checks.
const (
	// CheckGPUCount: the latest report lists at least as many GPUs as the report
	// that drained the node.
	CheckGPUCount Check = "gpu-count"
	// CheckNoWarnings: the latest report has no condition at warning or above.
	CheckNoWarnings Check = "no-warnings"
	// CheckAgentHealthy: the agent's own verdict (Report.State) is healthy, i.e.
	// the agent has also left its own probation.
	CheckAgentHealthy Check = "agent-healthy"
)

var checks = []Check{CheckGPUCount, CheckNoWarnings, CheckAgentHealthy}

// Policy says which conditions drain a node or exclude a GPU, how long they must
// persist first, how much of the fleet automation may take out, and when a node comes
// back. Build one with DefaultPolicy or ParsePolicy; a Policy built by hand must pass
// Validate.
type Policy struct {
	// DryRun decides and audits but never calls the actuator.
	DryRun     bool
	Hysteresis Hysteresis
	Budget     Budget
	Probation  Probation
	Retry      Retry
	// Rules are tried in order; the first whose match fits a condition decides
	// what the condition does. A condition no rule matches is ignored.
	Rules []Rule
}

// Hysteresis keeps a flapping signal from flapping nodes.
type Hysteresis struct {
	// A condition acts once it has been present in Observations consecutive
	// reports, or continuously for For (whichever comes first), unless it is
	// fatal or its rule is Immediate.
	Observations int
	For          time.Duration
	// A condition gpuwatch is tracking is forgotten (an exclusion lifted, a
	// suspect node healthy again) only after it has been absent from
	// ClearObservations consecutive reports and for at least ClearAfter.
	ClearObservations int
	ClearAfter        time.Duration
}

// Budget is the circuit breaker on automatic drains.
type Budget struct {
	// Share of the known nodes (0 < Share ≤ 1) that automation may drain within
	// Window; used when Count is negative.
	Share float64
	// Count is an absolute limit; negative means "use Share".
	Count int
	// Min is the smallest limit a Share gives (so that a small fleet can still
	// drain one node); 0 keeps the share exact.
	Min int
	// Window is the sliding window drains are counted in.
	Window time.Duration
	// AutoReset closes a tripped breaker by itself once the window has room again.
	// Without it (the default, as NVSentinel does) a tripped breaker stays open
	// until ResetBudget.
	AutoReset bool
}

// Limit returns how many distinct nodes automation may drain within the window when
// known nodes are known.
func (b Budget) Limit(known int) int {
	if b.Count >= 0 {
		return b.Count
	}
	n := int(math.Floor(b.Share*float64(known) + 1e-9))
	return max(n, min(b.Min, known))
}

// String writes the limit as it is written in the policy ("10%" or "3").
func (b Budget) String() string {
	if b.Count >= 0 {
		return strconv.Itoa(b.Count)
	}
	return strconv.FormatFloat(b.Share*100, 'f', -1, 64) + "%"
}

// Probation says when a node gpuwatch drained may return.
type Probation struct {
	// Duration is how long the node must report without a drain-rule condition.
	Duration time.Duration
	// MaxReportGap: a gap between two reports longer than this restarts the
	// probation period (a node that says nothing is not healthy).
	MaxReportGap time.Duration
	// Checks must all pass on the latest report once Duration has passed.
	Checks []Check
}

// Retry is the back-off of failed actuations: Initial, doubling up to Max.
type Retry struct {
	Initial time.Duration
	Max     time.Duration
}

// Rule maps conditions to a mode. Every non-empty criterion must match (an empty one
// matches anything); within a criterion any listed value matches.
type Rule struct {
	Name       string
	Kinds      []telemetry.ConditionKind
	Severities []telemetry.Severity
	Actions    []telemetry.Action
	Xids       []int
	Scopes     []telemetry.Scope
	Mode       Mode
	// Immediate acts on the first observation, as a fatal condition always does.
	Immediate bool
}

// Matches reports whether the condition fits every criterion of the rule.
func (r *Rule) Matches(c telemetry.Condition) bool {
	if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, c.Kind) {
		return false
	}
	if len(r.Severities) > 0 && !slices.Contains(r.Severities, c.Severity) {
		return false
	}
	if len(r.Actions) > 0 && !slices.Contains(r.Actions, c.Action) {
		return false
	}
	if len(r.Scopes) > 0 && !slices.Contains(r.Scopes, c.Target.Scope) {
		return false
	}
	if len(r.Xids) > 0 {
		x, err := strconv.Atoi(c.Evidence["xid"])
		if err != nil || !slices.Contains(r.Xids, x) {
			return false
		}
	}
	return true
}

func (r *Rule) empty() bool {
	return len(r.Kinds) == 0 && len(r.Severities) == 0 && len(r.Actions) == 0 && len(r.Xids) == 0 && len(r.Scopes) == 0
}

// Match returns the first rule that matches c, or nil.
func (p *Policy) Match(c telemetry.Condition) *Rule {
	for i := range p.Rules {
		if p.Rules[i].Matches(c) {
			return &p.Rules[i]
		}
	}
	return nil
}

// DefaultPolicy is the policy without a file:
//
//   - a critical or fatal condition whose action is RESTART_BM reboots the node;
//   - one whose action is RESET_GPU, RESTART_VM, RESTART_FM, DRAIN_AND_RESET,
//     CHECK_MECHANICALS, UPDATE_SWFW or CONTACT_SUPPORT drains it;
//   - any other critical or fatal condition cordons it;
//   - a warning on a GPU or NVLink excludes the GPU from gpuwatch's placement.
//
// Conditions act after 3 consecutive reports or 30 s (fatal ones at once) and clear
// after 5 clean reports and 10 min; automation drains at most 10% of the known nodes
// (at least 1) per hour; a node returns after 30 min of reports without a drain-rule
// condition, no gap over 5 min, all its GPUs back and no warning left.
func DefaultPolicy() *Policy {
	crit := []telemetry.Severity{telemetry.SeverityCritical, telemetry.SeverityFatal}
	return &Policy{
		Hysteresis: Hysteresis{Observations: 3, For: 30 * time.Second, ClearObservations: 5, ClearAfter: 10 * time.Minute},
		Budget:     Budget{Share: 0.10, Count: -1, Min: 1, Window: time.Hour},
		Probation:  Probation{Duration: 30 * time.Minute, MaxReportGap: 5 * time.Minute, Checks: []Check{CheckGPUCount, CheckNoWarnings}},
		Retry:      Retry{Initial: 5 * time.Second, Max: 5 * time.Minute},
		Rules: []Rule{
			{Name: "reboot-node", Severities: crit, Actions: []telemetry.Action{telemetry.ActionRestartBM}, Mode: ModeReboot},
			{Name: "drain-node", Severities: crit, Actions: []telemetry.Action{
				telemetry.ActionResetGPU, telemetry.ActionRestartVM, telemetry.ActionRestartFM, telemetry.ActionDrainAndReset,
				telemetry.ActionCheckMechanicals, telemetry.ActionUpdateSWFW, telemetry.ActionContactSupport,
			}, Mode: ModeDrain},
			{Name: "cordon-critical", Severities: crit, Mode: ModeCordon},
			{Name: "exclude-gpu-warning", Severities: []telemetry.Severity{telemetry.SeverityWarning},
				Scopes: []telemetry.Scope{telemetry.ScopeGPU, telemetry.ScopeNVLink}, Mode: ModeExcludeGPU},
		},
	}
}

// Validate checks a policy built in Go (ParsePolicy checks files with line numbers).
func (p *Policy) Validate() error {
	var errs []error
	add := func(path, format string, a ...any) {
		errs = append(errs, fmt.Errorf("drain policy: %s: %s", path, fmt.Sprintf(format, a...)))
	}
	h := p.Hysteresis
	if h.Observations < 1 {
		add("hysteresis.observations", "%d is below 1", h.Observations)
	}
	if h.ClearObservations < 1 {
		add("hysteresis.clear_observations", "%d is below 1", h.ClearObservations)
	}
	if h.For < 0 || h.ClearAfter < 0 {
		add("hysteresis", "negative duration")
	}
	b := p.Budget
	switch {
	case b.Count < 0 && (b.Share <= 0 || b.Share > 1 || math.IsNaN(b.Share)):
		add("budget.max", "share %v is not in (0%%, 100%%]", b.Share*100)
	case b.Min < 0:
		add("budget.min", "%d is negative", b.Min)
	case b.Window <= 0:
		add("budget.window", "%s is not positive", b.Window)
	}
	if p.Probation.Duration < 0 {
		add("probation.duration", "%s is negative", p.Probation.Duration)
	}
	if p.Probation.MaxReportGap <= 0 {
		add("probation.max_report_gap", "%s is not positive", p.Probation.MaxReportGap)
	}
	for _, c := range p.Probation.Checks {
		if !slices.Contains(checks, c) {
			add("probation.checks", "unknown check %q (want %s)", c, joinOr(checks))
		}
	}
	if p.Retry.Initial <= 0 || p.Retry.Max < p.Retry.Initial {
		add("retry", "want 0 < initial (%s) <= max (%s)", p.Retry.Initial, p.Retry.Max)
	}
	names := map[string]bool{}
	for i, r := range p.Rules {
		path := fmt.Sprintf("rules[%d]", i)
		switch {
		case r.Name == "":
			add(path+".name", "missing")
		case names[r.Name]:
			add(path+".name", "duplicate rule name %q", r.Name)
		}
		names[r.Name] = true
		if !slices.Contains(modes, r.Mode) {
			add(path+".mode", "unknown mode %q (want %s)", r.Mode, joinOr(modes))
		}
		if r.Mode != ModeIgnore && r.empty() {
			add(path+".match", "rule %q matches every condition: name kinds, severities, actions, xids or scopes", r.Name)
		}
		for _, k := range r.Kinds {
			if !k.Known() {
				add(path+".match.kinds", "unknown condition kind %q", k)
			}
		}
		for _, s := range r.Severities {
			if !s.Valid() {
				add(path+".match.severities", "invalid severity %d", int(s))
			}
		}
		for _, a := range r.Actions {
			if !a.Known() || a == telemetry.ActionNone {
				add(path+".match.actions", "unknown action %q", a)
			}
		}
	}
	return errors.Join(errs...)
}

// PolicyError is one problem in a policy file, with where it is
// (FILE:LINE: FIELD: problem).
type PolicyError = yamlfile.Error

// LoadPolicy reads and validates a policy file.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read drain policy: %w", err)
	}
	return ParsePolicy(path, data)
}

// maxPolicy bounds a policy file.
const maxPolicy = 1 << 20

// policyFile is the policy as written (internal/yamlfile decodes it).
type policyFile struct {
	DryRun     bool `yaml:"dry_run"`
	Hysteresis struct {
		Observations      int           `yaml:"observations"`
		For               time.Duration `yaml:"for"`
		ClearObservations int           `yaml:"clear_observations"`
		ClearAfter        time.Duration `yaml:"clear_after"`
	} `yaml:"hysteresis"`
	Budget struct {
		Max       budgetMax     `yaml:"max"`
		Min       int           `yaml:"min"`
		Window    time.Duration `yaml:"window"`
		AutoReset bool          `yaml:"auto_reset"`
	} `yaml:"budget"`
	Probation struct {
		Duration     time.Duration `yaml:"duration"`
		MaxReportGap time.Duration `yaml:"max_report_gap"`
		Checks       []Check       `yaml:"checks"`
	} `yaml:"probation"`
	Retry struct {
		Initial time.Duration `yaml:"initial"`
		Max     time.Duration `yaml:"max"`
	} `yaml:"retry"`
	Rules []ruleFile `yaml:"rules"`
}

type ruleFile struct {
	Name  string `yaml:"name"`
	Match struct {
		Kinds      []telemetry.ConditionKind `yaml:"kinds"`
		Severities []telemetry.Severity      `yaml:"severities"`
		Actions    []telemetry.Action        `yaml:"actions"`
		Xids       []xidNumber               `yaml:"xids"`
		Scopes     []telemetry.Scope         `yaml:"scopes"`
	} `yaml:"match"`
	Mode      Mode `yaml:"mode"`
	Immediate bool `yaml:"immediate"`
}

// budgetMax is budget.max: a share ("10%") or a count of nodes (3).
type budgetMax struct {
	share float64
	count int // -1: the share
}

func (b *budgetMax) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want a share like \"10%\" or a count of nodes like 3")
	}
	s := n.Value
	if pct, isPct := strings.CutSuffix(strings.TrimSpace(s), "%"); isPct {
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || math.IsNaN(v) || v <= 0 || v > 100 {
			return fmt.Errorf("%q is not a share in (0%%, 100%%]", s)
		}
		b.share, b.count = v/100, -1
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is neither a share like \"10%%\" nor a count of nodes like 3", s)
	}
	b.count, b.share = v, 0
	return nil
}

// xidNumber is an Xid in a rule's match.
type xidNumber int

func (x *xidNumber) UnmarshalYAML(n *yaml.Node) error {
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || v <= 0 || v > 1_000_000 {
		return fmt.Errorf("%q is not an Xid number", n.Value)
	}
	*x = xidNumber(v)
	return nil
}

// ParsePolicy reads a policy document; name is used in errors (a file name). Fields
// left out keep DefaultPolicy's values, except rules: a file that has rules replaces
// the default rules as a whole. Every problem found is returned (errors.Join of
// *PolicyError), each naming the file, the line and the field.
func ParsePolicy(name string, data []byte) (*Policy, error) {
	doc, err := yamlfile.Parse(name, data, maxPolicy)
	if err != nil {
		return nil, err
	}
	def := DefaultPolicy()
	var f policyFile
	f.DryRun = def.DryRun
	f.Hysteresis.Observations, f.Hysteresis.For = def.Hysteresis.Observations, def.Hysteresis.For
	f.Hysteresis.ClearObservations, f.Hysteresis.ClearAfter = def.Hysteresis.ClearObservations, def.Hysteresis.ClearAfter
	f.Budget.Max = budgetMax{share: def.Budget.Share, count: def.Budget.Count}
	f.Budget.Min, f.Budget.Window, f.Budget.AutoReset = def.Budget.Min, def.Budget.Window, def.Budget.AutoReset
	f.Probation.Duration, f.Probation.MaxReportGap, f.Probation.Checks = def.Probation.Duration, def.Probation.MaxReportGap, def.Probation.Checks
	f.Retry.Initial, f.Retry.Max = def.Retry.Initial, def.Retry.Max
	doc.Decode(&f)
	if doc.Empty() {
		return def, nil // an empty file is the default policy
	}
	pol := &Policy{
		DryRun: f.DryRun,
		Hysteresis: Hysteresis{Observations: f.Hysteresis.Observations, For: f.Hysteresis.For,
			ClearObservations: f.Hysteresis.ClearObservations, ClearAfter: f.Hysteresis.ClearAfter},
		Budget: Budget{Share: f.Budget.Max.share, Count: f.Budget.Max.count, Min: f.Budget.Min, Window: f.Budget.Window,
			AutoReset: f.Budget.AutoReset},
		Probation: Probation{Duration: f.Probation.Duration, MaxReportGap: f.Probation.MaxReportGap, Checks: f.Probation.Checks},
		Retry:     Retry{Initial: f.Retry.Initial, Max: f.Retry.Max},
		Rules:     def.Rules,
	}
	checkPolicyFile(doc, &f)
	if f.Rules != nil {
		pol.Rules = []Rule{}
		names := map[string]bool{}
		for i, rf := range f.Rules {
			r, ok := checkRule(doc, fmt.Sprintf("rules[%d]", i), rf)
			if !ok {
				continue
			}
			if names[r.Name] {
				doc.Errorf(fmt.Sprintf("rules[%d].name", i), "duplicate rule name %q", r.Name)
				continue
			}
			names[r.Name] = true
			pol.Rules = append(pol.Rules, r)
		}
	}
	if doc.Err() == nil {
		// Anything the line-aware checks above missed.
		if err := pol.Validate(); err != nil {
			return nil, &PolicyError{File: name, Msg: err.Error()}
		}
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return pol, nil
}

// checkPolicyFile checks the settings of a decoded policy file, each problem
// at its line.
func checkPolicyFile(doc *yamlfile.Doc, f *policyFile) {
	atLeast := func(path string, v, lo int) {
		switch {
		case v < lo:
			doc.Errorf(path, "%d is below %d", v, lo)
		case v > 1_000_000:
			doc.Errorf(path, "%d is implausibly large", v)
		}
	}
	nonNegative := func(path string, d time.Duration, positive bool) {
		if d < 0 || positive && d == 0 {
			doc.Errorf(path, "%s must be positive", cmp.Or(doc.Value(path), d.String()))
		}
	}
	atLeast("hysteresis.observations", f.Hysteresis.Observations, 1)
	nonNegative("hysteresis.for", f.Hysteresis.For, false)
	atLeast("hysteresis.clear_observations", f.Hysteresis.ClearObservations, 1)
	nonNegative("hysteresis.clear_after", f.Hysteresis.ClearAfter, false)
	atLeast("budget.min", f.Budget.Min, 0)
	nonNegative("budget.window", f.Budget.Window, true)
	nonNegative("probation.duration", f.Probation.Duration, false)
	nonNegative("probation.max_report_gap", f.Probation.MaxReportGap, true)
	for i, c := range f.Probation.Checks {
		if !slices.Contains(checks, c) {
			doc.Errorf(fmt.Sprintf("probation.checks[%d]", i), "unknown check %q (want %s)", c, joinOr(checks))
		}
	}
	nonNegative("retry.initial", f.Retry.Initial, true)
	nonNegative("retry.max", f.Retry.Max, true)
	if f.Retry.Max < f.Retry.Initial {
		doc.Errorf("retry", "max %s is shorter than initial %s", f.Retry.Max, f.Retry.Initial)
	}
}

// checkRule checks one rule as written and converts it; false when it has a
// problem (recorded in doc at its line).
func checkRule(doc *yamlfile.Doc, path string, rf ruleFile) (Rule, bool) {
	before := doc.Len()
	r := Rule{Name: rf.Name, Kinds: rf.Match.Kinds, Severities: rf.Match.Severities, Actions: rf.Match.Actions,
		Scopes: rf.Match.Scopes, Mode: rf.Mode, Immediate: rf.Immediate}
	for _, x := range rf.Match.Xids {
		r.Xids = append(r.Xids, int(x))
	}
	switch {
	case r.Name == "":
		doc.Errorf(path+".name", "missing: every rule needs a name (it is written in the audit log)")
	case strings.TrimSpace(r.Name) == "" || strings.ContainsAny(r.Name, " \t\n\""):
		doc.Errorf(path+".name", "%q is not a rule name (no blanks or quotes)", r.Name)
	}
	switch {
	case r.Mode == "":
		doc.Errorf(path+".mode", "missing (want %s)", joinOr(modes))
	case !slices.Contains(modes, r.Mode):
		doc.Errorf(path+".mode", "unknown mode %q (want %s)", r.Mode, joinOr(modes))
	}
	for i, k := range r.Kinds {
		if !k.Known() {
			doc.Errorf(fmt.Sprintf("%s.match.kinds[%d]", path, i), "unknown condition kind %q (want one of %s)", k, joinOr(telemetry.ConditionKinds()))
		}
	}
	for i, a := range r.Actions {
		if !a.Known() || a == telemetry.ActionNone {
			doc.Errorf(fmt.Sprintf("%s.match.actions[%d]", path, i), "unknown action %q (want an Xid Catalog action such as RESET_GPU, RESTART_BM, DRAIN_AND_RESET)", a)
		}
	}
	all := []telemetry.Scope{telemetry.ScopeNode, telemetry.ScopeGPU, telemetry.ScopeNVLink, telemetry.ScopeNVSwitch, telemetry.ScopeIBPort}
	for i, sc := range r.Scopes {
		if !slices.Contains(all, sc) {
			doc.Errorf(fmt.Sprintf("%s.match.scopes[%d]", path, i), "unknown scope %q (want %s)", sc, joinOr(all))
		}
	}
	if r.Mode != ModeIgnore && r.empty() && doc.Len() == before {
		doc.Errorf(path+".match", "rule %q matches every condition: give kinds, severities, actions, xids or scopes", r.Name)
	}
	return r, doc.Len() == before
}

func joinOr[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
