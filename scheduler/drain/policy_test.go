package drain

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    telemetry.Condition
		mode Mode
	}{
		{xid79(n1, 0), ModeReboot},
		{dbe(n1, 0), ModeDrain},
		{ibDown(n1), ModeDrain}, // CHECK_MECHANICALS
		{sbe(n1, 0), ModeExcludeGPU},
		{telemetry.Condition{Kind: telemetry.ConditionXid, Severity: telemetry.SeverityFatal, Action: telemetry.ActionDrainAndReset,
			Target: telemetry.GPUTarget(telemetry.GPUID{Node: n1})}, ModeDrain},
		{telemetry.Condition{Kind: telemetry.ConditionGPUCount, Severity: telemetry.SeverityCritical,
			Target: telemetry.NodeTarget(n1)}, ModeCordon}, // critical without a listed action
		{telemetry.Condition{Kind: telemetry.ConditionIBErrors, Severity: telemetry.SeverityWarning,
			Target: telemetry.IBPortTarget(telemetry.IBPortID{Node: n1, Device: "mlx5_0", Port: 1})}, ""}, // a warning off any GPU
	} {
		r := p.Match(tc.c)
		got := Mode("")
		if r != nil {
			got = r.Mode
		}
		if got != tc.mode {
			t.Errorf("%s %s %s: mode %q, want %q", tc.c.Kind, tc.c.Severity, tc.c.Action, got, tc.mode)
		}
	}
}

const fullPolicy = `# site policy
dry_run: true
hysteresis:
  observations: 2
  for: 1m
  clear_observations: 3
  clear_after: 5m
budget:
  max: "25%"
  min: 0
  window: 30m
  auto_reset: true
probation:
  duration: 1h
  max_report_gap: 2m
  checks: [gpu-count, agent-healthy]
retry:
  initial: 1s
  max: 1m
rules:
  - name: xid79-reboot
    match:
      kinds: [xid, gpu-lost]
      xids: [79]
    mode: reboot
    immediate: true
  - name: ib
    match:
      scopes: [ib_port]
      severities: [critical]
    mode: requeue
`

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy("site.yaml", []byte(fullPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if !p.DryRun || p.Hysteresis != (Hysteresis{2, time.Minute, 3, 5 * time.Minute}) ||
		p.Budget != (Budget{Share: 0.25, Count: -1, Min: 0, Window: 30 * time.Minute, AutoReset: true}) ||
		p.Probation.Duration != time.Hour || len(p.Probation.Checks) != 2 || p.Retry != (Retry{time.Second, time.Minute}) {
		t.Fatalf("%+v", p)
	}
	if len(p.Rules) != 2 || p.Rules[0].Mode != ModeReboot || !p.Rules[0].Immediate || p.Rules[0].Xids[0] != 79 || p.Rules[1].Scopes[0] != telemetry.ScopeIBPort {
		t.Fatalf("rules %+v", p.Rules)
	}
	if r := p.Match(xid79(n1, 1)); r == nil || r.Name != "xid79-reboot" {
		t.Fatalf("match %+v", r)
	}
	if r := p.Match(dbe(n1, 1)); r != nil {
		t.Fatalf("the file's rules replace the defaults, yet %q matched", r.Name)
	}
	// A partial file keeps the defaults.
	p, err = ParsePolicy("p.yaml", []byte("budget:\n  max: 3\n"))
	if err != nil || p.Budget.Count != 3 || len(p.Rules) != 4 || p.Hysteresis.Observations != 3 {
		t.Fatalf("%+v %v", p, err)
	}
	for _, empty := range []string{"", "# nothing\n", "null\n", "{}\n"} {
		if p, err := ParsePolicy("e.yaml", []byte(empty)); err != nil || len(p.Rules) != 4 {
			t.Fatalf("%q: %v", empty, err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "drain.yaml")
	os.WriteFile(path, []byte(fullPolicy), 0o600)
	if _, err := LoadPolicy(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPolicy(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown top field", "budgett:\n  max: 1\n", `p.yaml:1: budgett: unknown field, did you mean "budget"? (want one of dry_run, hysteresis, budget, probation, retry, rules)`},
		{"bad duration", "hysteresis:\n  for: 30 seconds\n", `p.yaml:2: hysteresis.for: "30 seconds" is not a duration (write e.g. 30s, 10m, 1h)`},
		{"negative duration", "probation:\n  duration: -1m\n", `p.yaml:2: probation.duration: -1m must be positive`},
		{"zero observations", "hysteresis:\n  observations: 0\n", `p.yaml:2: hysteresis.observations: 0 is below 1`},
		{"bad share", "budget:\n  max: 150%\n", `p.yaml:2: budget.max: "150%" is not a share in (0%, 100%]`},
		{"bad count", "budget:\n  max: lots\n", `p.yaml:2: budget.max: "lots" is neither a share like "10%" nor a count of nodes like 3`},
		{"zero window", "budget:\n  window: 0s\n", `p.yaml:2: budget.window: 0s must be positive`},
		{"bad check", "probation:\n  checks: [gpu-count, vibes]\n", `p.yaml:2: probation.checks[1]: unknown check "vibes" (want gpu-count, no-warnings or agent-healthy)`},
		{"retry max below initial", "retry:\n  initial: 1m\n  max: 1s\n", `p.yaml:2: retry: max 1s is shorter than initial 1m0s`},
		{"bad mode", "rules:\n  - name: r\n    match: {severities: [fatal]}\n    mode: evict\n", `p.yaml:4: rules[0].mode: unknown mode "evict" (want cordon, drain, requeue, reboot, exclude-gpu or ignore)`},
		{"missing mode", "rules:\n  - name: r\n    match: {severities: [fatal]}\n", `p.yaml:2: rules[0].mode: missing`},
		{"missing name", "rules:\n  - mode: cordon\n    match: {severities: [fatal]}\n", `p.yaml:2: rules[0].name: missing`},
		{"catch-all", "rules:\n  - name: all\n    mode: drain\n", `p.yaml:2: rules[0].match: rule "all" matches every condition`},
		{"duplicate names", "rules:\n  - {name: a, mode: cordon, match: {xids: [79]}}\n  - {name: a, mode: cordon, match: {xids: [48]}}\n", `p.yaml:3: rules[1].name: duplicate rule name "a"`},
		{"bad kind", "rules:\n  - name: r\n    mode: cordon\n    match:\n      kinds: [xid, gpu-on-fire]\n", `p.yaml:5: rules[0].match.kinds[1]: unknown condition kind "gpu-on-fire"`},
		{"bad severity", "rules:\n  - name: r\n    mode: cordon\n    match:\n      severities: [bad]\n", `p.yaml:5: rules[0].match.severities[0]: invalid severity "bad"`},
		{"bad action", "rules:\n  - name: r\n    mode: cordon\n    match:\n      actions: [REBOOT]\n", `p.yaml:5: rules[0].match.actions[0]: unknown action "REBOOT"`},
		{"bad xid", "rules:\n  - name: r\n    mode: cordon\n    match:\n      xids: [x79]\n", `p.yaml:5: rules[0].match.xids[0]: "x79" is not an Xid number`},
		{"unknown rule field", "rules:\n  - name: r\n    mode: cordon\n    when: now\n", `p.yaml:4: rules[0].when: unknown field (want one of name, match, mode, immediate)`},
		{"list not mapping", "rules: {a: b}\n", `p.yaml:1: rules: want a list, got a mapping`},
		{"bad bool", "dry_run: maybe\n", `p.yaml:1: dry_run: "maybe" is not true or false`},
		{"twice", "dry_run: true\ndry_run: false\n", `p.yaml:2: dry_run: given twice`},
		{"bad yaml", "budget:\n  max: [1\n", `p.yaml:`},
		{"unterminated quote on line 1", "dry_run: \"true", `p.yaml:1: invalid YAML: found unexpected end of stream`},
		{"control character", "dry_run: true\nbudget: {max: \"1\x01\"}\n", `p.yaml:2: invalid YAML: control characters are not allowed`},
		{"bad UTF-8", "dry_run: true\n\nbudget: \xff\n", `p.yaml:3: invalid YAML: invalid leading UTF-8 octet`},
		{"unknown anchor", "dry_run: true\nbudget: *b\n", `p.yaml:2: invalid YAML: unknown anchor 'b' referenced`},
		{"two documents", "dry_run: true\n---\ndry_run: false\n", `more than one YAML document`},
		{"not a mapping", "- 1\n- 2\n", `p.yaml:1: want a mapping`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy("p.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n %q\nwant it to contain\n %q", err, tc.want)
			}
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.File != "p.yaml" {
				t.Fatalf("not a *PolicyError naming the file: %T", err)
			}
		})
	}
	// All problems at once, each with its line.
	_, err := ParsePolicy("p.yaml", []byte("hysteresis:\n  observations: 0\nbudget:\n  window: -1h\n"))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:2:") || !strings.Contains(err.Error(), "p.yaml:4:") {
		t.Fatalf("%v", err)
	}
}

func TestValidateGoPolicy(t *testing.T) {
	p := DefaultPolicy()
	p.Rules = append(p.Rules, Rule{Name: "x", Mode: ModeDrain})
	p.Budget.Window = 0
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "rules[4].match") || !strings.Contains(err.Error(), "budget.window") {
		t.Fatalf("%v", err)
	}
}

// FuzzParsePolicy: any input either parses into a policy that validates and
// survives a round trip (written back as YAML and parsed again, it is the same
// policy), or fails with errors that are each a *PolicyError naming the file,
// and the line and field wherever the YAML parser gave a line: only an input
// YAML itself refuses without a line, or one over the size limit, may lack
// one. The line-aware checks catch everything Validate would: its catch-all
// message, which has no line, never appears. Nothing panics. Seeded with the
// policies the repository ships and documents.
func FuzzParsePolicy(f *testing.F) {
	for _, doc := range examplePolicies(f) {
		f.Add([]byte(doc))
	}
	f.Add([]byte(fullPolicy))
	f.Add([]byte("budget:\n  max: \"10%\"\n"))
	f.Add([]byte("rules:\n  - name: r\n    match: {xids: [79], severities: [fatal]}\n    mode: reboot\n"))
	f.Add([]byte("probation: {checks: [no-warnings]}\n"))
	f.Add([]byte("rules: []\nprobation: {checks: []}\n"))
	f.Add([]byte("rules:\n  - {name: \"a:b#c\", mode: ignore}\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("budget: {max: 1e309%}"))
	f.Add([]byte("dry_run: true\n---\n"))
	f.Add([]byte("\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy("fuzz.yaml", data)
		if err != nil {
			checkPolicyError(t, err)
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed policy does not validate: %v", err)
		}
		if p.Budget.Limit(10) < 0 {
			t.Fatal("negative limit")
		}
		again, err := ParsePolicy("again.yaml", policyYAML(t, p))
		if err != nil {
			t.Fatalf("the policy written back does not parse: %v\n%s", err, policyYAML(t, p))
		}
		if !samePolicy(p, again) {
			t.Fatalf("round trip changed the policy:\n %+v\n %+v\n%s", p, again, policyYAML(t, p))
		}
	})
}

// checkPolicyError: every error is a *PolicyError naming the file; one without
// a line is a whole-file problem.
func checkPolicyError(t *testing.T, err error) {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	if len(errs) == 0 {
		t.Fatal("empty error")
	}
	for _, e := range errs {
		var pe *PolicyError
		if !errors.As(e, &pe) || pe.File != "fuzz.yaml" || !strings.HasPrefix(e.Error(), "fuzz.yaml") {
			t.Fatalf("error %q is not a PolicyError naming the file", e)
		}
		if strings.HasPrefix(pe.Msg, "drain policy: ") {
			t.Fatalf("a problem only Validate saw, without a line: %q", e)
		}
		if pe.Line == 0 && !strings.HasPrefix(pe.Msg, "file is") && !containsAny(pe.Msg, "aliasing", "contains itself", "past the end") {
			t.Fatalf("error %q has no line", e)
		}
		if pe.Line > 0 && !strings.HasPrefix(e.Error(), fmt.Sprintf("fuzz.yaml:%d: ", pe.Line)) {
			t.Fatalf("error %q does not start with file:line", e)
		}
	}
}

// policyYAML writes p as a policy file.
func policyYAML(t *testing.T, p *Policy) []byte {
	t.Helper()
	type match struct {
		Kinds      []string `yaml:"kinds,omitempty"`
		Severities []string `yaml:"severities,omitempty"`
		Actions    []string `yaml:"actions,omitempty"`
		Xids       []int    `yaml:"xids,omitempty"`
		Scopes     []string `yaml:"scopes,omitempty"`
	}
	type rule struct {
		Name      string `yaml:"name"`
		Match     *match `yaml:"match,omitempty"`
		Mode      string `yaml:"mode"`
		Immediate bool   `yaml:"immediate"`
	}
	strs := func(n int, f func(i int) string) []string {
		var out []string
		for i := range n {
			out = append(out, f(i))
		}
		return out
	}
	doc := map[string]any{
		"dry_run": p.DryRun,
		"hysteresis": map[string]any{"observations": p.Hysteresis.Observations, "for": p.Hysteresis.For.String(),
			"clear_observations": p.Hysteresis.ClearObservations, "clear_after": p.Hysteresis.ClearAfter.String()},
		"budget": map[string]any{"max": p.Budget.String(), "min": p.Budget.Min, "window": p.Budget.Window.String(),
			"auto_reset": p.Budget.AutoReset},
		"probation": map[string]any{"duration": p.Probation.Duration.String(), "max_report_gap": p.Probation.MaxReportGap.String(),
			"checks": strs(len(p.Probation.Checks), func(i int) string { return string(p.Probation.Checks[i]) })},
		"retry": map[string]any{"initial": p.Retry.Initial.String(), "max": p.Retry.Max.String()},
	}
	rules := []rule{}
	for _, r := range p.Rules {
		m := &match{
			Kinds:      strs(len(r.Kinds), func(i int) string { return string(r.Kinds[i]) }),
			Severities: strs(len(r.Severities), func(i int) string { return r.Severities[i].String() }),
			Actions:    strs(len(r.Actions), func(i int) string { return string(r.Actions[i]) }),
			Xids:       r.Xids,
			Scopes:     strs(len(r.Scopes), func(i int) string { return string(r.Scopes[i]) }),
		}
		if r.empty() {
			m = nil
		}
		rules = append(rules, rule{Name: r.Name, Match: m, Mode: string(r.Mode), Immediate: r.Immediate})
	}
	doc["rules"] = rules
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// samePolicy compares two policies; a budget share may differ in its last bits
// (it is written as a percentage).
func samePolicy(a, b *Policy) bool {
	x, y := *a, *b
	if math.Abs(x.Budget.Share-y.Budget.Share) > 1e-12*math.Max(1, x.Budget.Share) {
		return false
	}
	x.Budget.Share, y.Budget.Share = 0, 0
	return reflect.DeepEqual(x, y)
}

// examplePolicies are the policy files the repository ships and documents: the
// demo's, the YAML blocks of docs/drain.md, and the one in the package
// documentation.
func examplePolicies(f *testing.F) []string {
	f.Helper()
	var out []string
	demo, err := os.ReadFile("../../internal/demo/drain-policy.yaml")
	if err != nil {
		f.Fatal(err)
	}
	out = append(out, string(demo))
	md, err := os.ReadFile("../../docs/drain.md")
	if err != nil {
		f.Fatal(err)
	}
	blocks := markdownBlocks(string(md), "yaml")
	if len(blocks) == 0 {
		f.Fatal("no yaml block in docs/drain.md")
	}
	out = append(out, blocks...)
	src, err := os.ReadFile("doc.go")
	if err != nil {
		f.Fatal(err)
	}
	_, after, ok := strings.Cut(string(src), "// # Policy file\n//\n")
	if !ok {
		f.Fatal("doc.go has no policy file section")
	}
	var b strings.Builder
	for line := range strings.Lines(after) {
		body, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			break
		}
		b.WriteString(body)
	}
	out = append(out, b.String())
	for _, doc := range out {
		if _, err := ParsePolicy("example.yaml", []byte(doc)); err != nil {
			f.Errorf("an example policy does not parse: %v\n%s", err, doc)
		}
	}
	return out
}

// markdownBlocks returns the fenced code blocks of md in language lang.
func markdownBlocks(md, lang string) []string {
	var out []string
	var b strings.Builder
	in := false
	for line := range strings.Lines(md) {
		switch {
		case !in && strings.TrimSpace(line) == "```"+lang:
			in = true
			b.Reset()
		case in && strings.TrimSpace(line) == "```":
			in = false
			out = append(out, b.String())
		case in:
			b.WriteString(line)
		}
	}
	return out
}
