package telemetry

import (
	"strconv"
	"testing"
)

// TestDiscreteFatal: which conditions act on their first report. The Xid
// list is derived from the catalog's verdicts and NVSentinel's mapping; the
// named ones are the examples and the ones that must not.
func TestDiscreteFatal(t *testing.T) {
	xid := func(code int, a Action) Condition {
		return Condition{Kind: ConditionXid, Action: a, Evidence: map[string]string{"xid": strconv.Itoa(code)}}
	}
	for _, x := range Xids() {
		got := xid(x.Code, x.Action).DiscreteFatal()
		if want := x.Fatal || XidMappingFatal(x.Code); got != want {
			t.Errorf("Xid %d (%s, catalog fatal %v, mapping fatal %v): DiscreteFatal %v", x.Code, x.Action, x.Fatal, XidMappingFatal(x.Code), got)
		}
	}
	for _, code := range []int{48, 64, 79, 95, 119, 120, 140, 108, 160, 162} {
		x, _ := LookupXid(code)
		if !xid(code, x.Action).DiscreteFatal() {
			t.Errorf("Xid %d should act on its first report", code)
		}
	}
	for _, code := range []int{13, 31, 43, 63, 92, 94} {
		x, _ := LookupXid(code)
		if xid(code, x.Action).DiscreteFatal() {
			t.Errorf("Xid %d (%s) should wait for hysteresis", code, x.Action)
		}
	}
	// Xid 74 acts only when its decode is fatal: the condition carries the decoded action.
	if xid(74, ActionRestartApp).DiscreteFatal() || !xid(74, ActionResetGPU).DiscreteFatal() {
		t.Error("Xid 74 follows its decoded action")
	}
	// Xid 45 after 94 is demoted to RESTART_APP by ResolveXids; NVSentinel calls 45 non-fatal.
	if xid(45, ActionRestartApp).DiscreteFatal() {
		t.Error("a demoted Xid 45 acted at once")
	}
	for _, c := range []struct {
		c    Condition
		want bool
	}{
		{Condition{Kind: ConditionGPULost}, true},
		{Condition{Kind: ConditionGPUCount}, true},
		{Condition{Kind: ConditionECCDBE, Action: ActionResetGPU}, true},
		{Condition{Kind: ConditionRowRemapFailure}, true},
		{Condition{Kind: ConditionRecoveryAction, Action: ActionResetGPU}, true},
		{Condition{Kind: ConditionRecoveryAction, Action: ActionRestartBM}, true},
		{Condition{Kind: ConditionRecoveryAction, Action: ActionRestartApp}, false},
		{Condition{Kind: ConditionECCSBERate}, false},
		{Condition{Kind: ConditionThermalThrottle}, false},
		{Condition{Kind: ConditionIBFlap}, false},
		{Condition{Kind: ConditionIBDown}, true},
		{Condition{Kind: ConditionNVLinkErrors}, false},
		{Condition{Kind: ConditionRowRemapPending}, false},
		{Condition{Kind: ConditionNVSwitchFatal, Action: ActionRestartBM}, true},
		{Condition{Kind: ConditionFabricManager, Action: ActionRestartFM}, false},
		{Condition{Kind: ConditionPersistenceMode}, false},
	} {
		if got := c.c.DiscreteFatal(); got != c.want {
			t.Errorf("%s (%s): DiscreteFatal %v, want %v", c.c.Kind, c.c.Action, got, c.want)
		}
	}
}
