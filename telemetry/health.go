package telemetry

import (
	"fmt"
	"strconv"
	"time"
)

// Severity says how bad a condition is. Severities are ordered: a larger value is
// worse, so the worst of several is their maximum. The zero value is SeverityOK.
type Severity int

// Severities, least severe first.
const (
	SeverityOK       Severity = iota // nothing wrong; a condition that cleared
	SeverityInfo                     // worth recording, nothing to do
	SeverityWarning                  // degraded or trending bad: watch, deprioritise
	SeverityCritical                 // the GPU or node should take no new work
	SeverityFatal                    // the GPU or node is unusable now
)

var severityNames = [...]string{"ok", "info", "warning", "critical", "fatal"}

// String returns "ok", "info", "warning", "critical" or "fatal".
func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return "severity(" + strconv.Itoa(int(s)) + ")"
	}
	return severityNames[s]
}

// Valid reports whether s is one of the declared severities.
func (s Severity) Valid() bool { return s >= SeverityOK && s <= SeverityFatal }

// Max returns the worse of s and o.
func (s Severity) Max(o Severity) Severity { return max(s, o) }

// ParseSeverity reads a severity's name.
func ParseSeverity(s string) (Severity, error) {
	for i, n := range severityNames {
		if n == s {
			return Severity(i), nil
		}
	}
	return SeverityOK, fmt.Errorf("invalid severity %q: want ok, info, warning, critical or fatal", s)
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("cannot marshal severity %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ConditionKind names a kind of fault or degradation. Kinds are lower-case and
// hyphenated; they are the values of the "condition" label.
type ConditionKind string

// Condition kinds. Each comment says what raises it.
const (
	ConditionXid             ConditionKind = "xid"               // an Xid event (NVML or the kernel log); the Xid catalog gives severity and action
	ConditionGPULost         ConditionKind = "gpu-lost"          // GPU fell off the bus or NVML returns GPU_IS_LOST (Xid 79)
	ConditionGPUCount        ConditionKind = "gpu-count"         // NVML sees fewer GPUs than the PCI bus or the node's remembered inventory, or does not start while GPUs are on the bus
	ConditionECCDBE          ConditionKind = "ecc-dbe"           // a new double-bit (uncorrectable) ECC error
	ConditionECCSBERate      ConditionKind = "ecc-sbe-rate"      // single-bit ECC errors above a rate threshold
	ConditionRowRemapPending ConditionKind = "row-remap-pending" // a row remap waits for a GPU reset
	ConditionRowRemapFailure ConditionKind = "row-remap-failure" // a row remap failed: the GPU needs replacing
	ConditionRetiredPages    ConditionKind = "retired-pages"     // retired or pending-retirement pages above threshold (pre-Ampere)
	ConditionThermalThrottle ConditionKind = "thermal-throttle"  // thermal slowdown or violation time growing
	ConditionPowerThrottle   ConditionKind = "power-throttle"    // power-brake or power-cap violation time growing
	ConditionClockThrottle   ConditionKind = "clock-throttle"    // other clock event reasons (sync boost, board limit, reliability)
	ConditionPCIeReplay      ConditionKind = "pcie-replay"       // PCIe replay counter rising
	ConditionPCIeDegraded    ConditionKind = "pcie-degraded"     // PCIe link below its maximum generation or width
	ConditionNVLinkDown      ConditionKind = "nvlink-down"       // an NVLink that should be up is down
	ConditionNVLinkErrors    ConditionKind = "nvlink-errors"     // NVLink CRC, replay or recovery errors above threshold
	ConditionNVSwitchFatal   ConditionKind = "nvswitch-fatal"    // an NVSwitch fatal error (a fatal SXid in the kernel log)
	ConditionFabricManager   ConditionKind = "fabric-manager"    // the NVSwitch fabric manager is down or the GPU is not in the fabric (NVML's GPU fabric state)
	ConditionIBDown          ConditionKind = "ib-down"           // an InfiniBand port is not ACTIVE / LinkUp
	ConditionIBFlap          ConditionKind = "ib-flap"           // an InfiniBand port went down and up (link_downed delta)
	ConditionIBErrors        ConditionKind = "ib-errors"         // InfiniBand error counters rising since the baseline
	ConditionIBDegraded      ConditionKind = "ib-degraded"       // an InfiniBand port below its expected rate
	ConditionRecoveryAction  ConditionKind = "recovery-action"   // the driver's recovery action field (NVML 230 / DCGM 1523) is not NONE
	ConditionDCGMHealth      ConditionKind = "dcgm-health"       // a DCGM health watch failed (DCGM_FR_* code in the evidence)
	ConditionTelemetryStale  ConditionKind = "telemetry-stale"   // a source has failed or gone silent for too long
	ConditionPersistenceMode ConditionKind = "persistence-mode"  // persistence mode is off on a GPU where the agent's policy requires it
)

// conditionKinds lists every kind with the scope it is usually raised on.
var conditionKinds = []struct {
	kind  ConditionKind
	scope Scope
}{
	{ConditionXid, ScopeGPU},
	{ConditionGPULost, ScopeGPU},
	{ConditionGPUCount, ScopeNode},
	{ConditionECCDBE, ScopeGPU},
	{ConditionECCSBERate, ScopeGPU},
	{ConditionRowRemapPending, ScopeGPU},
	{ConditionRowRemapFailure, ScopeGPU},
	{ConditionRetiredPages, ScopeGPU},
	{ConditionThermalThrottle, ScopeGPU},
	{ConditionPowerThrottle, ScopeGPU},
	{ConditionClockThrottle, ScopeGPU},
	{ConditionPCIeReplay, ScopeGPU},
	{ConditionPCIeDegraded, ScopeGPU},
	{ConditionNVLinkDown, ScopeNVLink},
	{ConditionNVLinkErrors, ScopeNVLink},
	{ConditionNVSwitchFatal, ScopeNVSwitch},
	{ConditionFabricManager, ScopeNode},
	{ConditionIBDown, ScopeIBPort},
	{ConditionIBFlap, ScopeIBPort},
	{ConditionIBErrors, ScopeIBPort},
	{ConditionIBDegraded, ScopeIBPort},
	{ConditionRecoveryAction, ScopeGPU},
	{ConditionDCGMHealth, ScopeGPU},
	{ConditionTelemetryStale, ScopeNode},
	{ConditionPersistenceMode, ScopeGPU},
}

// ConditionKinds returns every declared condition kind.
func ConditionKinds() []ConditionKind {
	out := make([]ConditionKind, len(conditionKinds))
	for i, c := range conditionKinds {
		out[i] = c.kind
	}
	return out
}

// Known reports whether k is a declared condition kind.
func (k ConditionKind) Known() bool { return k.Scope() != "" }

// Scope returns the scope the kind is usually raised on ("" for an unknown kind). A
// condition may be raised higher (an Xid the kernel log cannot tie to a GPU is on the
// node).
func (k ConditionKind) Scope() Scope {
	for _, c := range conditionKinds {
		if c.kind == k {
			return c.scope
		}
	}
	return ""
}

// ParseConditionKind reads a declared condition kind.
func ParseConditionKind(s string) (ConditionKind, error) {
	if k := ConditionKind(s); k.Known() {
		return k, nil
	}
	return "", fmt.Errorf("invalid condition kind %q", s)
}

// Condition is one observed fault or degradation on one target, with what the health
// engine recommends doing about it. Conditions are values: the engine replaces a
// condition to change it.
type Condition struct {
	Kind     ConditionKind `json:"kind"`
	Target   Target        `json:"target"`             // what it is on: node, GPU, NVLink, NVSwitch, IB port
	GPUUUID  string        `json:"gpu_uuid,omitempty"` // for GPU and NVLink targets, when known
	Severity Severity      `json:"severity"`
	Action   Action        `json:"action,omitempty"` // recommended remediation
	Message  string        `json:"message"`          // one line for humans: what happened, in numbers
	Since    time.Time     `json:"since"`            // first observed
	Observed time.Time     `json:"observed"`         // last observed
	// Evidence is what the verdict rests on, as stable lower_snake keys: "xid": "79",
	// "counter": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "delta": "2", "rule": "…".
	Evidence map[string]string `json:"evidence,omitempty"`
}

// Key identifies the condition for deduplication: its kind and target. Two
// observations with the same key are the same condition.
func (c Condition) Key() string { return string(c.Kind) + "@" + c.Target.String() }

// Labels returns the labels of the condition's gpuwatch_health_condition series:
// the target's location labels plus target, condition, severity and action.
func (c Condition) Labels() Labels {
	ls := c.Target.Labels()
	kv := make([]string, 0, 2*(len(ls)+4))
	for _, l := range ls {
		kv = append(kv, l.Name, l.Value)
	}
	kv = append(kv,
		LabelTarget, c.Target.String(),
		LabelCondition, string(c.Kind),
		LabelSeverity, c.Severity.String(),
		LabelAction, string(c.Action),
	)
	return NewLabels(kv...)
}

// Validate checks that the condition has a known kind, a valid target, a valid
// severity and a known action, and that Since is not after Observed.
func (c Condition) Validate() error {
	if !c.Kind.Known() {
		return fmt.Errorf("condition %q on %s: unknown kind", c.Kind, c.Target)
	}
	if err := c.Target.Validate(); err != nil {
		return fmt.Errorf("condition %s: %w", c.Kind, err)
	}
	if !c.Severity.Valid() {
		return fmt.Errorf("condition %s: invalid severity %d", c.Key(), int(c.Severity))
	}
	if !c.Action.Known() {
		return fmt.Errorf("condition %s: unknown action %q", c.Key(), c.Action)
	}
	if !c.Since.IsZero() && !c.Observed.IsZero() && c.Since.After(c.Observed) {
		return fmt.Errorf("condition %s: since %s is after observed %s", c.Key(),
			c.Since.Format(time.RFC3339), c.Observed.Format(time.RFC3339))
	}
	return nil
}

// State is where a GPU or node is in gpuwatch's health state machine:
//
//	healthy → suspect → draining → drained → (external reset or reboot) → probation → healthy
//
// with the short cuts listed in CanTransition. The numeric values are the values of
// the gpuwatch_gpu_health_state and gpuwatch_node_health_state series. The zero value
// is StateHealthy.
type State int

// States, in the order of the usual path.
const (
	StateHealthy   State = iota // schedulable
	StateSuspect                // a warning-level condition: schedulable, scored down
	StateDraining               // no new work; running work finishes or is stopped
	StateDrained                // empty and out of service until reset or repaired
	StateProbation              // back after a reset or reboot; schedulable, watched closely
)

var stateNames = [...]string{"healthy", "suspect", "draining", "drained", "probation"}

// String returns "healthy", "suspect", "draining", "drained" or "probation".
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "state(" + strconv.Itoa(int(s)) + ")"
	}
	return stateNames[s]
}

// Valid reports whether s is one of the declared states.
func (s State) Valid() bool { return s >= StateHealthy && s <= StateProbation }

// ParseState reads a state's name.
func ParseState(s string) (State, error) {
	for i, n := range stateNames {
		if n == s {
			return State(i), nil
		}
	}
	return StateHealthy, fmt.Errorf("invalid health state %q: want healthy, suspect, draining, drained or probation", s)
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("cannot marshal health state %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Schedulable reports whether new work may be placed in state s: healthy, suspect and
// probation are; draining and drained are not.
func (s State) Schedulable() bool {
	return s == StateHealthy || s == StateSuspect || s == StateProbation
}

// transitions lists the allowed moves out of each state.
var transitions = map[State][]State{
	StateHealthy:   {StateSuspect, StateDraining},               // a fatal condition drains at once
	StateSuspect:   {StateHealthy, StateDraining},               // cleared (after the sticky window), or escalated
	StateDraining:  {StateDrained, StateHealthy},                // emptied; or drain cancelled before it took effect
	StateDrained:   {StateProbation},                            // after an external reset, reboot or repair
	StateProbation: {StateHealthy, StateSuspect, StateDraining}, // served probation, or relapsed
}

// CanTransition reports whether the state machine allows moving from s to to. Staying
// in the same state is always allowed.
func (s State) CanTransition(to State) bool {
	if s == to {
		return s.Valid()
	}
	for _, t := range transitions[s] {
		if t == to {
			return true
		}
	}
	return false
}
