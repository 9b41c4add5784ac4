package drain

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

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

// PolicyError is one problem in a policy file, with where it is.
type PolicyError struct {
	File string // the name given to ParsePolicy
	Line int    // 1-based; 0 when the problem is the file as a whole
	Path string // the field, e.g. "rules[2].mode"
	Msg  string
}

func (e *PolicyError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

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

// ParsePolicy reads a policy document; name is used in errors (a file name). Fields
// left out keep DefaultPolicy's values, except rules: a file that has rules replaces
// the default rules as a whole. Every problem found is returned (errors.Join of
// *PolicyError), each naming the file, the line and the field.
func ParsePolicy(name string, data []byte) (*Policy, error) {
	if len(data) > maxPolicy {
		return nil, &PolicyError{File: name, Msg: fmt.Sprintf("file is %d bytes, more than the %d a policy may have", len(data), maxPolicy)}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return DefaultPolicy(), nil // an empty file is the default policy
		}
		return nil, &PolicyError{File: name, Line: yamlErrLine(data, err), Msg: "invalid YAML: " + stripLine(err.Error())}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &PolicyError{File: name, Line: extra.Line, Msg: "more than one YAML document; a policy is one"}
	}
	p := &parser{file: name, pol: DefaultPolicy()}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	p.top(root)
	if len(p.errs) == 0 {
		// Anything the line-aware checks above missed.
		if err := p.pol.Validate(); err != nil {
			p.errs = append(p.errs, &PolicyError{File: name, Msg: err.Error()})
		}
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return p.pol, nil
}

// yamlErrLine finds the line of a yaml.v3 error: the "line N" it gives; for a
// byte its reader refuses (a control character, bad UTF-8), the line of the
// first such byte; for an unknown anchor, the line of its first use. yaml.v3
// leaves the line out of a syntax error exactly when the problem is on the
// first line (its marks count from 0, and 0 means "none"), so such an error is
// on line 1. Errors about the document as a whole (aliasing) have no line (0).
func yamlErrLine(data []byte, err error) int {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		j := i + len("line ")
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if n, err := strconv.Atoi(s[j:k]); err == nil && n > 0 {
			return n
		}
	}
	lineAt := func(off int) int { return 1 + bytes.Count(data[:off], []byte("\n")) }
	switch {
	case strings.Contains(s, "control characters") || strings.Contains(s, "UTF-8") || strings.Contains(s, "UTF-16"):
		for off := 0; off < len(data); {
			r, size := utf8.DecodeRune(data[off:])
			if (r == utf8.RuneError && size <= 1) || !yamlPrintable(r) {
				return lineAt(off)
			}
			off += size
		}
		return 0
	case strings.Contains(s, "unknown anchor '"):
		name := s[strings.Index(s, "unknown anchor '")+len("unknown anchor '"):]
		name, _, _ = strings.Cut(name, "'")
		if off := bytes.Index(data, []byte("*"+name)); off >= 0 {
			return lineAt(off)
		}
		return 0
	case strings.Contains(s, "aliasing") || strings.Contains(s, "contains itself") || strings.Contains(s, "past the end"):
		return 0
	}
	return 1
}

// yamlPrintable is the YAML 1.2 printable set (and the byte-order mark, which
// yaml.v3 skips).
func yamlPrintable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0x7e) || r == 0x85 ||
		(r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || (r >= 0x10000 && r <= 0x10ffff)
}

// stripLine drops yaml.v3's "yaml: line N: " so the line is said once.
func stripLine(s string) string {
	s = strings.TrimPrefix(s, "yaml: ")
	if strings.HasPrefix(s, "line ") {
		if i := strings.Index(s, ": "); i >= 0 {
			return s[i+2:]
		}
	}
	return s
}

// parser walks the YAML tree, so every error can name its line.
type parser struct {
	file string
	pol  *Policy
	errs []error
}

const maxErrors = 20

func (p *parser) fail(n *yaml.Node, path, format string, a ...any) {
	if len(p.errs) >= maxErrors {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &PolicyError{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, a...)})
}

// fields iterates a mapping, reporting keys that are not in allowed and duplicates.
func (p *parser) fields(n *yaml.Node, path string, allowed []string, f func(key string, v *yaml.Node)) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, path, "want a mapping with keys %s, got %s", strings.Join(allowed, ", "), nodeKind(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		sub := joinPath(path, key)
		switch {
		case k.Kind != yaml.ScalarNode:
			p.fail(k, path, "a key must be a plain name")
		case !slices.Contains(allowed, key):
			p.fail(k, sub, "unknown field (want one of %s)", strings.Join(allowed, ", "))
		case seen[key]:
			p.fail(k, sub, "given twice")
		default:
			seen[key] = true
			f(key, v)
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func (p *parser) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.fail(n, path, "want a single value, got %s", nodeKind(n))
		return "", false
	}
	return n.Value, true
}

func (p *parser) boolean(n *yaml.Node, path string, dst *bool) {
	s, ok := p.scalar(n, path)
	if !ok {
		return
	}
	switch s {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		p.fail(n, path, "%q is not true or false", s)
	}
}

func (p *parser) integer(n *yaml.Node, path string, lo int, dst *int) {
	s, ok := p.scalar(n, path)
	if !ok {
		return
	}
	v, err := strconv.Atoi(s)
	switch {
	case err != nil:
		p.fail(n, path, "%q is not a whole number", s)
	case v < lo:
		p.fail(n, path, "%d is below %d", v, lo)
	case v > 1_000_000:
		p.fail(n, path, "%d is implausibly large", v)
	default:
		*dst = v
	}
}

func (p *parser) duration(n *yaml.Node, path string, positive bool, dst *time.Duration) {
	s, ok := p.scalar(n, path)
	if !ok {
		return
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.fail(n, path, "%q is not a duration (write e.g. 30s, 10m, 1h)", s)
	case d < 0, positive && d == 0:
		p.fail(n, path, "%s must be positive", s)
	default:
		*dst = d
	}
}

func (p *parser) list(n *yaml.Node, path string, f func(i int, v *yaml.Node)) {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, path, "want a list, got %s", nodeKind(n))
		return
	}
	for i, v := range n.Content {
		f(i, v)
	}
}

func (p *parser) top(n *yaml.Node) {
	p.fields(n, "", []string{"dry_run", "hysteresis", "budget", "probation", "retry", "rules"}, func(key string, v *yaml.Node) {
		switch key {
		case "dry_run":
			p.boolean(v, key, &p.pol.DryRun)
		case "hysteresis":
			h := &p.pol.Hysteresis
			p.fields(v, key, []string{"observations", "for", "clear_observations", "clear_after"}, func(k string, v *yaml.Node) {
				path := joinPath(key, k)
				switch k {
				case "observations":
					p.integer(v, path, 1, &h.Observations)
				case "for":
					p.duration(v, path, false, &h.For)
				case "clear_observations":
					p.integer(v, path, 1, &h.ClearObservations)
				case "clear_after":
					p.duration(v, path, false, &h.ClearAfter)
				}
			})
		case "budget":
			b := &p.pol.Budget
			p.fields(v, key, []string{"max", "min", "window", "auto_reset"}, func(k string, v *yaml.Node) {
				path := joinPath(key, k)
				switch k {
				case "max":
					p.budgetMax(v, path, b)
				case "min":
					p.integer(v, path, 0, &b.Min)
				case "window":
					p.duration(v, path, true, &b.Window)
				case "auto_reset":
					p.boolean(v, path, &b.AutoReset)
				}
			})
		case "probation":
			pr := &p.pol.Probation
			p.fields(v, key, []string{"duration", "max_report_gap", "checks"}, func(k string, v *yaml.Node) {
				path := joinPath(key, k)
				switch k {
				case "duration":
					p.duration(v, path, false, &pr.Duration)
				case "max_report_gap":
					p.duration(v, path, true, &pr.MaxReportGap)
				case "checks":
					pr.Checks = []Check{}
					p.list(v, path, func(i int, v *yaml.Node) {
						s, ok := p.scalar(v, fmt.Sprintf("%s[%d]", path, i))
						if !ok {
							return
						}
						if !slices.Contains(checks, Check(s)) {
							p.fail(v, fmt.Sprintf("%s[%d]", path, i), "unknown check %q (want %s)", s, joinOr(checks))
							return
						}
						pr.Checks = append(pr.Checks, Check(s))
					})
				}
			})
		case "retry":
			r := &p.pol.Retry
			p.fields(v, key, []string{"initial", "max"}, func(k string, v *yaml.Node) {
				path := joinPath(key, k)
				switch k {
				case "initial":
					p.duration(v, path, true, &r.Initial)
				case "max":
					p.duration(v, path, true, &r.Max)
				}
			})
			if r.Max < r.Initial {
				p.fail(v, key, "max %s is shorter than initial %s", r.Max, r.Initial)
			}
		case "rules":
			p.pol.Rules = []Rule{}
			names := map[string]bool{}
			p.list(v, key, func(i int, v *yaml.Node) {
				r, ok := p.rule(v, fmt.Sprintf("rules[%d]", i))
				if !ok {
					return
				}
				if names[r.Name] {
					p.fail(v, fmt.Sprintf("rules[%d].name", i), "duplicate rule name %q", r.Name)
					return
				}
				names[r.Name] = true
				p.pol.Rules = append(p.pol.Rules, r)
			})
		}
	})
}

func (p *parser) budgetMax(n *yaml.Node, path string, b *Budget) {
	s, ok := p.scalar(n, path)
	if !ok {
		return
	}
	if pct, isPct := strings.CutSuffix(strings.TrimSpace(s), "%"); isPct {
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || math.IsNaN(v) || v <= 0 || v > 100 {
			p.fail(n, path, "%q is not a share in (0%%, 100%%]", s)
			return
		}
		b.Share, b.Count = v/100, -1
		return
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		p.fail(n, path, "%q is neither a share like \"10%%\" nor a count of nodes like 3", s)
		return
	}
	b.Count, b.Share = v, 0
}

func (p *parser) rule(n *yaml.Node, path string) (Rule, bool) {
	var r Rule
	nerr := len(p.errs)
	hasMode := false
	p.fields(n, path, []string{"name", "match", "mode", "immediate"}, func(k string, v *yaml.Node) {
		sub := joinPath(path, k)
		switch k {
		case "name":
			if s, ok := p.scalar(v, sub); ok {
				if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t\n\"") {
					p.fail(v, sub, "%q is not a rule name (no blanks or quotes)", s)
				}
				r.Name = s
			}
		case "mode":
			hasMode = true
			if s, ok := p.scalar(v, sub); ok {
				if !slices.Contains(modes, Mode(s)) {
					p.fail(v, sub, "unknown mode %q (want %s)", s, joinOr(modes))
				}
				r.Mode = Mode(s)
			}
		case "immediate":
			p.boolean(v, sub, &r.Immediate)
		case "match":
			p.match(v, sub, &r)
		}
	})
	if n.Kind != yaml.MappingNode {
		return r, false
	}
	if r.Name == "" {
		p.fail(n, path+".name", "missing: every rule needs a name (it is written in the audit log)")
	}
	if !hasMode {
		p.fail(n, path+".mode", "missing (want %s)", joinOr(modes))
	}
	if r.Mode != ModeIgnore && r.empty() && len(p.errs) == nerr {
		p.fail(n, path+".match", "rule %q matches every condition: give kinds, severities, actions, xids or scopes", r.Name)
	}
	return r, len(p.errs) == nerr
}

func (p *parser) match(n *yaml.Node, path string, r *Rule) {
	p.fields(n, path, []string{"kinds", "severities", "actions", "xids", "scopes"}, func(k string, v *yaml.Node) {
		sub := joinPath(path, k)
		p.list(v, sub, func(i int, v *yaml.Node) {
			at := fmt.Sprintf("%s[%d]", sub, i)
			s, ok := p.scalar(v, at)
			if !ok {
				return
			}
			switch k {
			case "kinds":
				kind, err := telemetry.ParseConditionKind(s)
				if err != nil {
					p.fail(v, at, "unknown condition kind %q (want one of %s)", s, joinOr(telemetry.ConditionKinds()))
					return
				}
				r.Kinds = append(r.Kinds, kind)
			case "severities":
				sev, err := telemetry.ParseSeverity(s)
				if err != nil {
					p.fail(v, at, "%v", err)
					return
				}
				r.Severities = append(r.Severities, sev)
			case "actions":
				a := telemetry.Action(s)
				if !a.Known() || a == telemetry.ActionNone {
					p.fail(v, at, "unknown action %q (want an Xid Catalog action such as RESET_GPU, RESTART_BM, DRAIN_AND_RESET)", s)
					return
				}
				r.Actions = append(r.Actions, a)
			case "xids":
				x, err := strconv.Atoi(s)
				if err != nil || x <= 0 || x > 1_000_000 {
					p.fail(v, at, "%q is not an Xid number", s)
					return
				}
				r.Xids = append(r.Xids, x)
			case "scopes":
				sc := telemetry.Scope(s)
				all := []telemetry.Scope{telemetry.ScopeNode, telemetry.ScopeGPU, telemetry.ScopeNVLink, telemetry.ScopeNVSwitch, telemetry.ScopeIBPort}
				if !slices.Contains(all, sc) {
					p.fail(v, at, "unknown scope %q (want %s)", s, joinOr(all))
					return
				}
				r.Scopes = append(r.Scopes, sc)
			}
		})
	})
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
