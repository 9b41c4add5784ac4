package health

import (
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// cond builds a condition; evidence is alternating keys and values.
func (e *Engine) cond(kind telemetry.ConditionKind, t telemetry.Target, sev telemetry.Severity, a telemetry.Action, msg string, evidence ...string) telemetry.Condition {
	ev := make(map[string]string, len(evidence)/2)
	for i := 0; i+1 < len(evidence); i += 2 {
		ev[evidence[i]] = evidence[i+1]
	}
	return telemetry.Condition{Kind: kind, Target: t, Severity: sev, Action: a, Message: msg, Evidence: ev}
}

// catalogAction is the Xid catalog's action for code, ActionContactSupport when the
// catalog does not list it (it always lists the codes the engine asks for).
func catalogAction(code int) telemetry.Action {
	if x, ok := telemetry.LookupXid(code); ok {
		return x.Action
	}
	return telemetry.ActionContactSupport
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func roundDur(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

// gbps renders an InfiniBand rate in bytes per second as Gb/s, the unit ibstat and
// Azure's check_hw_ib use (400 for NDR).
func gbps(bytesPerSecond float64) string {
	return strconv.FormatFloat(bytesPerSecond*8/1e9, 'f', -1, 64) + " Gb/s"
}

// ibState names an InfiniBand port state id (node_exporter's help text).
func ibState(v float64) string {
	names := []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
	if i := int(v); float64(i) == v && i >= 0 && i < len(names) {
		return names[i]
	}
	return "state" + fmtF(v)
}

// ibPhys names an InfiniBand physical state id.
func ibPhys(v float64) string {
	names := []string{"NOP", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"}
	if i := int(v); float64(i) == v && i >= 0 && i < len(names) {
		return names[i]
	}
	return "phys" + fmtF(v)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// joinShort joins up to four items and says how many more there are.
func joinShort(items []string) string {
	if len(items) <= 4 {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:4], ", ") + ", +" + strconv.Itoa(len(items)-4) + " more"
}
