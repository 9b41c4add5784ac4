package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSeverity(t *testing.T) {
	order := []struct {
		s    Severity
		name string
	}{
		{SeverityOK, "ok"},
		{SeverityInfo, "info"},
		{SeverityWarning, "warning"},
		{SeverityCritical, "critical"},
		{SeverityFatal, "fatal"},
	}
	for i, tc := range order {
		if tc.s.String() != tc.name {
			t.Errorf("%d.String() = %q, want %q", int(tc.s), tc.s, tc.name)
		}
		got, err := ParseSeverity(tc.name)
		if err != nil || got != tc.s {
			t.Errorf("ParseSeverity(%q) = %v, %v", tc.name, got, err)
		}
		if i > 0 && !(order[i-1].s < tc.s) {
			t.Errorf("%s is not above %s", tc.s, order[i-1].s)
		}
	}
	if got := SeverityWarning.Max(SeverityCritical); got != SeverityCritical {
		t.Errorf("Max = %s", got)
	}
	if got := SeverityFatal.Max(SeverityInfo); got != SeverityFatal {
		t.Errorf("Max = %s", got)
	}
	var zero Severity
	if zero != SeverityOK {
		t.Error("zero Severity is not ok")
	}
	for _, bad := range []string{"", "OK", "error", "severe"} {
		if _, err := ParseSeverity(bad); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("ParseSeverity(%q) error = %v", bad, err)
		}
	}
	if _, err := json.Marshal(Severity(9)); err == nil {
		t.Error("marshalling Severity(9) succeeded")
	}
	if Severity(9).Valid() || Severity(-1).String() != "severity(-1)" {
		t.Error("out-of-range severity looks valid")
	}
}

func TestConditionKinds(t *testing.T) {
	// The kinds the brief names, spelled as label values.
	want := []string{"xid", "gpu-lost", "ecc-dbe", "ecc-sbe-rate", "row-remap-pending", "row-remap-failure",
		"retired-pages", "thermal-throttle", "power-throttle", "nvlink-down", "nvlink-errors", "ib-down",
		"ib-flap", "ib-errors", "recovery-action", "clock-throttle", "pcie-replay", "dcgm-health"}
	known := map[ConditionKind]bool{}
	for _, k := range ConditionKinds() {
		if known[k] {
			t.Errorf("kind %s listed twice", k)
		}
		known[k] = true
		if k.Scope() == "" {
			t.Errorf("kind %s has no scope", k)
		}
		// Lower-case, hyphenated: lower_snake with hyphens for underscores.
		if !IsLowerSnake(strings.ReplaceAll(string(k), "-", "_")) {
			t.Errorf("kind %q is not lower-case and hyphenated", k)
		}
		if got, err := ParseConditionKind(string(k)); err != nil || got != k {
			t.Errorf("ParseConditionKind(%q) = %v, %v", k, got, err)
		}
	}
	for _, w := range want {
		if !known[ConditionKind(w)] {
			t.Errorf("kind %q missing", w)
		}
	}
	scopes := []struct {
		k     ConditionKind
		scope Scope
	}{
		{ConditionXid, ScopeGPU},
		{ConditionNVLinkDown, ScopeNVLink},
		{ConditionIBFlap, ScopeIBPort},
		{ConditionGPUCount, ScopeNode},
		{ConditionNVSwitchFatal, ScopeNVSwitch},
	}
	for _, tc := range scopes {
		if tc.k.Scope() != tc.scope {
			t.Errorf("%s.Scope() = %s, want %s", tc.k, tc.k.Scope(), tc.scope)
		}
	}
	if ConditionKind("gpu_lost").Known() {
		t.Error("gpu_lost (underscore) is known")
	}
	if _, err := ParseConditionKind("overheating"); err == nil {
		t.Error("ParseConditionKind(overheating) succeeded")
	}
}

func TestCondition(t *testing.T) {
	since := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c := Condition{
		Kind:     ConditionXid,
		Target:   GPUTarget(GPUID{"node1", 3}),
		GPUUUID:  "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e",
		Severity: SeverityFatal,
		Action:   ActionRestartBM,
		Message:  "Xid 79: GPU has fallen off the bus",
		Since:    since,
		Observed: since.Add(30 * time.Second),
		Evidence: map[string]string{"xid": "79", "source": "kmsg"},
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Key(), "xid@node1/gpu3"; got != want {
		t.Errorf("Key() = %q, want %q", got, want)
	}
	wantLabels := `{action="RESTART_BM",condition="xid",gpu_index="3",node="node1",severity="fatal",target="node1/gpu3"}`
	if got := c.Labels().String(); got != wantLabels {
		t.Errorf("Labels() = %s\nwant %s", got, wantLabels)
	}
	for _, l := range c.Labels() {
		if d, _ := LookupMetric(MetricHealthCondition); !containsString(d.Labels, l.Name) {
			t.Errorf("label %s is not declared on %s", l.Name, MetricHealthCondition)
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"xid","target":"node1/gpu3","gpu_uuid":"GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e","severity":"fatal","action":"RESTART_BM","message":"Xid 79: GPU has fallen off the bus","since":"2025-03-01T12:00:00Z","observed":"2025-03-01T12:00:30Z","evidence":{"source":"kmsg","xid":"79"}}`
	if string(b) != want {
		t.Errorf("json = %s\nwant %s", b, want)
	}
	var back Condition
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Key() != c.Key() || back.Severity != c.Severity || back.Action != c.Action || !back.Observed.Equal(c.Observed) || back.Evidence["xid"] != "79" {
		t.Errorf("json round trip = %+v", back)
	}

	bad := []struct {
		name    string
		edit    func(*Condition)
		wantErr string
	}{
		{"unknown kind", func(c *Condition) { c.Kind = "overheating" }, `condition "overheating" on node1/gpu3: unknown kind`},
		{"no target", func(c *Condition) { c.Target = Target{} }, "condition xid: target has no scope"},
		{"bad severity", func(c *Condition) { c.Severity = 7 }, "condition xid@node1/gpu3: invalid severity 7"},
		{"unknown action", func(c *Condition) { c.Action = "PRAY" }, `condition xid@node1/gpu3: unknown action "PRAY"`},
		{"since after observed", func(c *Condition) { c.Since = c.Observed.Add(time.Minute) }, "since 2025-03-01T12:01:30Z is after observed"},
	}
	for _, tc := range bad {
		c2 := c
		tc.edit(&c2)
		err := c2.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	// A node-level condition has no GPU labels.
	n := Condition{Kind: ConditionGPUCount, Target: NodeTarget("node1"), Severity: SeverityCritical, Action: ActionRestartBM}
	if got := n.Labels().Get(LabelGPUIndex); got != "" {
		t.Errorf("node condition has gpu_index %q", got)
	}
	if err := n.Validate(); err != nil {
		t.Errorf("node condition: %v", err)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestState(t *testing.T) {
	names := []struct {
		s           State
		name        string
		schedulable bool
	}{
		{StateHealthy, "healthy", true},
		{StateSuspect, "suspect", true},
		{StateDraining, "draining", false},
		{StateDrained, "drained", false},
		{StateProbation, "probation", true},
	}
	for i, tc := range names {
		if int(tc.s) != i {
			t.Errorf("%s = %d, want %d (the value of gpuwatch_gpu_health_state)", tc.name, int(tc.s), i)
		}
		if tc.s.String() != tc.name {
			t.Errorf("%d.String() = %q, want %q", int(tc.s), tc.s, tc.name)
		}
		if got, err := ParseState(tc.name); err != nil || got != tc.s {
			t.Errorf("ParseState(%q) = %v, %v", tc.name, got, err)
		}
		if tc.s.Schedulable() != tc.schedulable {
			t.Errorf("%s.Schedulable() = %v", tc.s, !tc.schedulable)
		}
		b, err := json.Marshal(tc.s)
		if err != nil || string(b) != `"`+tc.name+`"` {
			t.Errorf("json(%s) = %s, %v", tc.s, b, err)
		}
	}
	if d, _ := LookupMetric(MetricGPUHealthState); !strings.Contains(d.Help, "0 healthy, 1 suspect, 2 draining, 3 drained, 4 probation") {
		t.Errorf("%s help %q does not list the state values", MetricGPUHealthState, d.Help)
	}
	for _, bad := range []string{"", "Healthy", "dead"} {
		if _, err := ParseState(bad); err == nil {
			t.Errorf("ParseState(%q) succeeded", bad)
		}
	}
	if _, err := json.Marshal(State(9)); err == nil {
		t.Error("marshalling State(9) succeeded")
	}
}

func TestStateTransitions(t *testing.T) {
	// The health model: healthy → suspect → draining → drained → (reset) → probation →
	// healthy, with the short cuts below. Everything not listed is refused.
	allowed := map[[2]State]bool{
		{StateHealthy, StateSuspect}:    true,
		{StateHealthy, StateDraining}:   true, // fatal condition
		{StateSuspect, StateHealthy}:    true, // cleared
		{StateSuspect, StateDraining}:   true,
		{StateDraining, StateDrained}:   true,
		{StateDraining, StateHealthy}:   true, // drain cancelled
		{StateDrained, StateProbation}:  true, // after reset or reboot
		{StateProbation, StateHealthy}:  true,
		{StateProbation, StateSuspect}:  true, // relapse
		{StateProbation, StateDraining}: true,
	}
	all := []State{StateHealthy, StateSuspect, StateDraining, StateDrained, StateProbation}
	for _, from := range all {
		for _, to := range all {
			want := from == to || allowed[[2]State{from, to}]
			if got := from.CanTransition(to); got != want {
				t.Errorf("%s → %s: CanTransition = %v, want %v", from, to, got, want)
			}
		}
	}
	if State(9).CanTransition(State(9)) {
		t.Error("an invalid state may stay")
	}
	// Drained never jumps straight back to healthy: it must serve probation.
	if StateDrained.CanTransition(StateHealthy) {
		t.Error("drained → healthy allowed")
	}
}
