package healthreport

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

const testNode = telemetry.NodeID("node-01")

// TestSummaryCutsLongNames: long device names are cut, the count of the rest
// kept, within MaxSummary.
func TestSummaryCutsLongNames(t *testing.T) {
	long := Report{Conditions: []telemetry.Condition{
		{Kind: telemetry.ConditionIBDown, Severity: telemetry.SeverityCritical, Action: telemetry.ActionCheckMechanicals,
			Target: telemetry.IBPortTarget(telemetry.IBPortID{Node: testNode, Device: strings.Repeat("m", 300), Port: 1})},
		{Kind: telemetry.ConditionIBDown, Severity: telemetry.SeverityCritical, Target: telemetry.NodeTarget(testNode)},
	}}
	if s := long.Summary(); len(s) > MaxSummary || !strings.HasPrefix(s, "gpuwatch: ib-down port=mmm") || !strings.HasSuffix(s, "… +1 more") {
		t.Fatalf("long summary %d bytes: %q", len(s), s)
	}
}
