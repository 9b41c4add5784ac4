package health

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// maxIncidents bounds the Xid incidents remembered per GPU.
const maxIncidents = 256

// incident is one or more occurrences of one Xid on one GPU, each within
// Rules.XidIncidentGap of the previous: a burst of identical faults is one incident.
type incident struct {
	Xid     int              `json:"xid"`
	First   time.Time        `json:"first"`
	Last    time.Time        `json:"last"`
	Count   int              `json:"count"`
	Message string           `json:"message,omitempty"`
	Origin  string           `json:"origin,omitempty"`
	Action  telemetry.Action `json:"action,omitempty"` // this Xid's own action: the catalog's, the NVLink5 decode's, or Xid 154's message
	Decoded string           `json:"decoded,omitempty"`
	Unknown bool             `json:"unknown,omitempty"` // not in the catalog
}

// sticky reports whether the incident lasts until the GPU is reset: its action takes
// the GPU out of service (the catalog's Fatal verdict), or it is not in the catalog.
func (in incident) sticky() bool {
	return in.Unknown || in.Action.Rank() > telemetry.ActionRestartApp.Rank()
}

// unknownXidAction is what an Xid missing from the catalog (a code from a newer
// driver) recommends: CONTACT_SUPPORT, as telemetry.ResolveXids says ("nobody should
// automate what they do not understand"). Its severity is only unknownXidSeverity,
// warning: the GPU becomes suspect (scored down, still schedulable) rather than
// drained, so a driver upgrade that adds codes cannot drain a fleet; repeats escalate
// it like any other Xid, and it stays until the GPU is reset.
const (
	unknownXidAction   = telemetry.ActionContactSupport
	unknownXidSeverity = telemetry.SeverityWarning
)

// classify returns an Xid's own action and, for NVLink5 Xids 144–150, the decode of
// its registers (telemetry.ClassifyXid, with the node's driver branch).
func (e *Engine) classify(code int, msg string) (a telemetry.Action, decoded string, unknown bool) {
	a, decoded, known := telemetry.ClassifyXid(code, msg, telemetry.DriverMajor(e.driver))
	if !known {
		return unknownXidAction, "", true
	}
	return a, decoded, false
}

// ingestXids files the events received since the last cycle as incidents.
func (e *Engine) ingestXids(events []collector.XidEvent, inv *collector.Inventory, now time.Time) {
	for _, ev := range events {
		if ev.Xid <= 0 {
			continue
		}
		idx := ev.GPUIndex
		if idx < 0 {
			if g, ok := inv.ByUUID(ev.UUID); ok {
				idx = g.Index
			} else if g, ok := inv.ByPCI(ev.PCIBusID); ok {
				idx = g.Index
			}
		}
		if idx < 0 || idx > maxGPUIndex {
			idx = -1
		}
		t := ev.Time
		if t.IsZero() {
			t = now
		}
		gs := e.gpu(idx)
		if idx >= 0 {
			gs.known = true
		}
		if !gs.resetAt.IsZero() && !t.After(gs.resetAt) {
			continue // from before the GPU's reset: the kernel log replayed
		}
		if ev.Origin == collector.OriginKmsg {
			if t.Before(gs.lastKmsg) {
				continue // read again after an agent restart
			}
			gs.lastKmsg = t
		}
		a, decoded, unknown := e.classify(ev.Xid, ev.Message)
		if ev.Xid == 154 {
			if _, to, err := telemetry.ParseXid154(ev.Message); err == nil {
				if to == telemetry.XidRecoveryNone {
					gs.override, gs.overrideTx, gs.overrideAt = "", "", time.Time{}
				} else {
					gs.override, gs.overrideTx, gs.overrideAt = to.Action(), to.String(), t
				}
			}
		}
		e.dirty = true
		merged := false
		for j := len(gs.xids) - 1; j >= 0; j-- {
			in := &gs.xids[j]
			if in.Xid != ev.Xid {
				continue
			}
			if t.Sub(in.Last) < e.rules.XidIncidentGap && !t.Before(in.First.Add(-e.rules.XidIncidentGap)) {
				in.Count++
				if t.After(in.Last) {
					in.Last = t
				}
				in.Message, in.Origin = ev.Message, ev.Origin
				in.Action = in.Action.Max(a)
				if decoded != "" {
					in.Decoded = decoded
				}
				merged = true
			}
			break
		}
		if !merged {
			gs.xids = append(gs.xids, incident{Xid: ev.Xid, First: t, Last: t, Count: 1, Message: ev.Message,
				Origin: ev.Origin, Action: a, Decoded: decoded, Unknown: unknown})
			if len(gs.xids) > maxIncidents {
				gs.xids = slices.Delete(gs.xids, 0, len(gs.xids)-maxIncidents)
			}
		}
	}
}

// judgeXids raises one xid condition per GPU (and one on the node for Xids no GPU
// could be matched to) from the incidents that are still active.
func (e *Engine) judgeXids(now time.Time) {
	r := &e.rules
	keep := max(r.RepeatWindow, r.XidSticky, r.XidWindow)
	repeatStart := now.Add(-r.RepeatWindow)
	gpusWith := map[int]int{}
	for i, gs := range e.gpus {
		n := 0
		for _, in := range gs.xids {
			if (in.sticky() && in.First.After(gs.resetAt)) || !in.Last.Before(now.Add(-keep)) {
				gs.xids[n] = in
				n++
			}
		}
		if n != len(gs.xids) {
			gs.xids = gs.xids[:n]
			e.dirty = true
		}
		if i < 0 {
			continue
		}
		seen := map[int]bool{}
		for _, in := range gs.xids {
			if !in.Last.Before(repeatStart) && !seen[in.Xid] {
				seen[in.Xid] = true
				gpusWith[in.Xid]++
			}
		}
	}
	for i, gs := range e.gpus {
		e.judgeGPUXids(i, gs, gpusWith, now)
	}
}

func (e *Engine) judgeGPUXids(i int, gs *gpuState, gpusWith map[int]int, now time.Time) {
	r := &e.rules
	stickyStart := now.Add(-r.XidSticky)
	var act []incident
	for _, in := range gs.xids {
		if in.sticky() || !in.Last.Before(stickyStart) {
			act = append(act, in)
		}
	}
	if len(act) == 0 {
		gs.xidMax, gs.xidSevMax = "", telemetry.SeverityOK
		return
	}

	// The catalog's verdict: each Xid with the Xids seen within XidWindow of it
	// (ResolveXids applies the workflows that combine codes); decoded NVLink5
	// Xids bring their decoded action; unknown ones CONTACT_SUPPORT.
	known := telemetry.ActionNone
	anyKnown, anyUnknown := false, false
	for _, in := range act {
		switch {
		case in.Xid == 154:
			continue
		case in.Unknown:
			anyUnknown = true
			continue
		case in.Decoded != "":
			anyKnown = true
			known = known.Max(in.Action)
			continue
		}
		anyKnown = true
		codes := []int{in.Xid}
		lo, hi := in.First.Add(-r.XidWindow), in.Last.Add(r.XidWindow)
		for _, o := range gs.xids {
			if o.Xid != in.Xid && o.Xid != 154 && !o.Unknown && o.Decoded == "" && !o.Last.Before(lo) && !o.First.After(hi) {
				codes = append(codes, o.Xid)
			}
		}
		known = known.Max(telemetry.ResolveXids(codes))
	}
	a := known
	sev := telemetry.SeverityOK
	if anyKnown {
		sev = SeverityForAction(known)
	}
	if anyUnknown {
		a = a.Max(unknownXidAction)
		sev = sev.Max(unknownXidSeverity)
	}
	if !anyKnown && !anyUnknown {
		sev = telemetry.SeverityInfo // Xid 154 alone
	}
	catalog := a
	// While the condition lasts it keeps the strongest verdict it has had: 48 with
	// 63 stays DRAIN_AND_RESET after 63 leaves the window.
	a, sev = a.Max(gs.xidMax), sev.Max(gs.xidSevMax)
	gs.xidMax, gs.xidSevMax = a, sev

	ev := map[string]string{"rule": "xid_catalog", "catalog_action": string(catalog)}
	// The driver knows better than the catalog: its recovery action overrides.
	if i >= 0 && i < len(e.gcyc) {
		if v := e.gcyc[i].recovery; v == v && v != 0 {
			ra := telemetry.XidRecoveryAction(int(v))
			a, sev = ra.Action(), SeverityForAction(ra.Action())
			ev["override"] = "recovery_action_field"
			ev["recovery_action"] = ra.String()
		}
	}
	if ev["override"] == "" && gs.override != "" {
		a, sev = gs.override, SeverityForAction(gs.override)
		ev["override"] = "xid154"
		ev["recovery_action"] = gs.overrideTx
	}

	// Repeat offenders: one step up, once.
	var why string
	for _, in := range act {
		if in.Xid == 154 || in.Action.Rank() < telemetry.ActionRestartApp.Rank() {
			continue
		}
		n := 0
		for _, o := range gs.xids {
			if o.Xid == in.Xid && !o.Last.Before(now.Add(-r.RepeatWindow)) {
				n++
			}
		}
		switch {
		case n >= r.RepeatCount:
			why = fmt.Sprintf("xid%d %d times in %s", in.Xid, n, r.RepeatWindow)
		case i >= 0 && gpusWith[in.Xid] >= r.RepeatGPUs:
			why = fmt.Sprintf("xid%d on %d GPUs in %s", in.Xid, gpusWith[in.Xid], r.RepeatWindow)
		}
		if why != "" {
			break
		}
	}
	if why != "" {
		a, sev = EscalateAction(a), escalateSeverity(sev)
		ev["escalated"] = why
	}

	// One entry per Xid code, in the order first seen: occurrences and incidents.
	type tally struct{ n, incidents int }
	var order []int
	tallies := map[int]*tally{}
	var decodes []string
	for _, in := range act {
		tl := tallies[in.Xid]
		if tl == nil {
			tl = &tally{}
			tallies[in.Xid] = tl
			order = append(order, in.Xid)
		}
		tl.n += in.Count
		tl.incidents++
		if in.Decoded != "" {
			decodes = append(decodes, fmt.Sprintf("xid%d: %s", in.Xid, in.Decoded))
		}
	}
	codes := make([]string, 0, len(order))
	parts := make([]string, 0, len(order))
	for _, x := range order {
		codes = append(codes, strconv.Itoa(x))
		name := "unknown Xid"
		if info, ok := telemetry.LookupXid(x); ok {
			name, _, _ = strings.Cut(info.Mnemonic, " /")
		}
		p := fmt.Sprintf("Xid %d (%s)", x, name)
		if tl := tallies[x]; tl.incidents > 1 {
			p += fmt.Sprintf(" x%d in %d incidents", tl.n, tl.incidents)
		} else if tl.n > 1 {
			p += fmt.Sprintf(" x%d", tl.n)
		}
		parts = append(parts, p)
	}
	ev["xid"] = strings.Join(codes, ",")
	msg := joinShort(parts) + " → " + string(a)
	if len(decodes) > 0 {
		ev["decoded"] = strings.Join(decodes, "; ")
		msg += " [" + ev["decoded"] + "]"
	}
	if o := ev["override"]; o != "" {
		msg += " (driver: " + ev["recovery_action"] + ")"
	}
	if why != "" {
		msg += " (escalated: " + why + ")"
	}
	c := e.cond(telemetry.ConditionXid, e.gpuTarget(i), sev, a, msg)
	c.Evidence = ev
	e.observe(c, policyOwned)
}
