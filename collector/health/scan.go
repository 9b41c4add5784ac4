package health

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// gpuCycle holds one GPU's gauges of the current cycle; NaN is "not reported".
type gpuCycle struct {
	seen                        bool
	lost, recovery              float64
	remapPending, remapFailure  float64
	retiredPending, remappedUnc float64
	retiredSBE, retiredDBE      float64
	genCur, genMax              float64
	widthCur, widthMax          float64
	util, procs, reasons        float64
	fabricState, fabricStatus   float64
	persistence                 float64
	volReset                    bool
}

var nan = math.NaN()

func (g *gpuCycle) reset() {
	*g = gpuCycle{lost: nan, recovery: nan, remapPending: nan, remapFailure: nan,
		retiredPending: nan, remappedUnc: nan, retiredSBE: nan, retiredDBE: nan,
		genCur: nan, genMax: nan, widthCur: nan, widthMax: nan, util: nan, procs: nan, reasons: nan,
		fabricState: nan, fabricStatus: nan, persistence: nan}
}

// portCycle holds one InfiniBand port's gauges of the current cycle.
type portCycle struct {
	seen              bool
	state, phys, rate float64
}

func itoa(i int) string { return strconv.Itoa(i) }

// labelInt reads an index label; -1 when absent or not a small non-negative number.
func labelInt(ls telemetry.Labels, name string) int {
	v := ls.Get(name)
	if v == "" || len(v) > 4 {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// gpuOf returns the scratch of the sample's GPU, or nil for a sample without a
// usable gpu_index.
func (e *Engine) gpuOf(s *telemetry.Sample) (int, *gpuCycle) {
	i := labelInt(s.Labels, telemetry.LabelGPUIndex)
	if i < 0 || i > maxGPUIndex {
		return -1, nil
	}
	for len(e.gcyc) <= i {
		var g gpuCycle
		g.reset()
		e.gcyc = append(e.gcyc, g)
	}
	g := &e.gcyc[i]
	g.seen = true
	return i, g
}

// portOf returns the scratch of an InfiniBand sample's port. node_exporter's series
// label it device/port, gpuwatch's ib_device/ib_port.
func (e *Engine) portOf(s *telemetry.Sample, devLabel, portLabel string) (portKey, *portCycle) {
	k := portKey{dev: s.Labels.Get(devLabel), port: labelInt(s.Labels, portLabel)}
	if k.dev == "" || k.port < 1 {
		return k, nil
	}
	p := e.pcyc[k]
	if p == nil {
		p = &portCycle{}
		e.pcyc[k] = p
	}
	if !p.seen {
		*p = portCycle{seen: true, state: nan, phys: nan, rate: nan}
	}
	return k, p
}

// count feeds a counter sample to its series' memory.
func (e *Engine) count(k seriesKey, s *telemetry.Sample, now time.Time, window time.Duration) counterStep {
	if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) || s.Value < 0 {
		return counterStep{} // a counter has no such value: ignore the reading
	}
	c := e.counters[k]
	isNew := c == nil
	if isNew {
		c = &counter{}
		e.counters[k] = c
		e.dirty = true
	}
	if c.seen == e.cycle {
		// The same series from two sources in one cycle: judge it once.
		return counterStep{}
	}
	c.seen = e.cycle
	return c.observe(now, s.Value, window, isNew)
}

// scan reads every sample once, through the rule its metric has in sampleRules:
// counters are stepped, gauges collected into the per-GPU and per-port scratch,
// per-link and per-port rate rules judged at once.
func (e *Engine) scan(snap *collector.Snapshot, now time.Time) {
	for i := range e.gcyc {
		e.gcyc[i].reset()
	}
	for _, p := range e.pcyc {
		p.seen = false
	}
	for i := range snap.Samples {
		s := &snap.Samples[i]
		if rule := sampleRules[s.Name]; rule != nil {
			rule(e, s, now)
		}
	}
}

// A sampleRule reads one sample of the metric it is registered for.
type sampleRule func(e *Engine, s *telemetry.Sample, now time.Time)

// sampleRules is every metric the engine reads, and what it does with it. Gauges
// are collected here and judged once the cycle is read (judgeGPUs, judgePorts);
// counters are judged here.
var sampleRules = map[string]sampleRule{
	// GPU gauges.
	telemetry.MetricGPULost:                 gpuGauge(func(g *gpuCycle) *float64 { return &g.lost }),
	telemetry.DCGMGPURecoveryAction:         gpuGauge(func(g *gpuCycle) *float64 { return &g.recovery }),
	telemetry.DCGMRowRemapPending:           gpuGauge(func(g *gpuCycle) *float64 { return &g.remapPending }),
	telemetry.DCGMRowRemapFailure:           gpuGauge(func(g *gpuCycle) *float64 { return &g.remapFailure }),
	telemetry.DCGMRetiredPending:            gpuGauge(func(g *gpuCycle) *float64 { return &g.retiredPending }),
	telemetry.DCGMUncorrectableRemappedRows: gpuGauge(func(g *gpuCycle) *float64 { return &g.remappedUnc }),
	telemetry.DCGMPCIeLinkGen:               gpuGauge(func(g *gpuCycle) *float64 { return &g.genCur }),
	telemetry.DCGMPCIeMaxLinkGen:            gpuGauge(func(g *gpuCycle) *float64 { return &g.genMax }),
	telemetry.DCGMPCIeLinkWidth:             gpuGauge(func(g *gpuCycle) *float64 { return &g.widthCur }),
	telemetry.DCGMPCIeMaxLinkWidth:          gpuGauge(func(g *gpuCycle) *float64 { return &g.widthMax }),
	telemetry.DCGMGPUUtil:                   gpuGauge(func(g *gpuCycle) *float64 { return &g.util }),
	telemetry.MetricGPUProcesses:            gpuGauge(func(g *gpuCycle) *float64 { return &g.procs }),
	telemetry.DCGMClockThrottleReasons:      gpuGauge(func(g *gpuCycle) *float64 { return &g.reasons }),
	telemetry.MetricGPUFabricState:          gpuGauge(func(g *gpuCycle) *float64 { return &g.fabricState }),
	telemetry.MetricGPUFabricStatus:         gpuGauge(func(g *gpuCycle) *float64 { return &g.fabricStatus }),
	telemetry.DCGMPersistenceMode:           gpuGauge(func(g *gpuCycle) *float64 { return &g.persistence }),

	// GPU counters.
	telemetry.DCGMRetiredSBE:     retiredPages(func(g *gpuCycle) *float64 { return &g.retiredSBE }),
	telemetry.DCGMRetiredDBE:     retiredPages(func(g *gpuCycle) *float64 { return &g.retiredDBE }),
	telemetry.DCGMECCDBEVolTotal: doubleBitECC,
	telemetry.DCGMECCDBEAggTotal: doubleBitECC,
	telemetry.DCGMECCSBEVolTotal: gpuDelta(&deltaRule{
		kind: telemetry.ConditionECCSBERate, rule: "sbe_per_hour", what: "single-bit ECC errors", unit: "/h",
		window: func(*Rules) time.Duration { return time.Hour },
		limit:  func(r *Rules) float64 { return r.SBEPerHour },
	}),
	telemetry.DCGMPCIeReplayCounter: gpuDelta(&deltaRule{
		kind: telemetry.ConditionPCIeReplay, rule: "pcie_replay_delta", what: "PCIe replays",
		window: func(r *Rules) time.Duration { return r.PCIeWindow },
		limit:  func(r *Rules) float64 { return r.PCIeReplayDelta },
	}),
	telemetry.DCGMThermalViolation: throttled(telemetry.ConditionThermalThrottle, telemetry.SeverityWarning, "thermal_fraction",
		func(r *Rules) float64 { return r.ThermalFraction }),
	telemetry.DCGMPowerViolation: throttled(telemetry.ConditionPowerThrottle, telemetry.SeverityInfo, "power_fraction",
		func(r *Rules) float64 { return r.PowerFraction }),

	// NVLink, per link.
	telemetry.MetricNVLinkUp:                  (*Engine).judgeNVLinkUp,
	telemetry.MetricNVLinkCRCFlitErrorsTotal:  linkDelta(nvlinkCRC),
	telemetry.MetricNVLinkCRCDataErrorsTotal:  linkDelta(nvlinkCRC),
	telemetry.MetricNVLinkReplayErrorsTotal:   linkDelta(nvlinkDelta(func(r *Rules) float64 { return r.NVLinkReplayDelta })),
	telemetry.MetricNVLinkRecoveryErrorsTotal: linkDelta(nvlinkDelta(func(r *Rules) float64 { return r.NVLinkRecoveryDelta })),

	// InfiniBand: node_exporter's series label their port device/port,
	// gpuwatch's ib_device/ib_port.
	telemetry.NodeIBStateID:                             portGauge(func(p *portCycle) *float64 { return &p.state }),
	telemetry.NodeIBPhysicalStateID:                     portGauge(func(p *portCycle) *float64 { return &p.phys }),
	telemetry.NodeIBRateBytesPerSecond:                  portGauge(func(p *portCycle) *float64 { return &p.rate }),
	telemetry.NodeIBLinkDownedTotal:                     ibLinkDowned,
	telemetry.NodeIBPortErrorsReceivedTotal:             portDelta(telemetry.NodeExpLabelDevice, telemetry.NodeExpLabelPort, ibErrors),
	telemetry.NodeIBLinkErrorRecoveryTotal:              portDelta(telemetry.NodeExpLabelDevice, telemetry.NodeExpLabelPort, ibRecovery),
	telemetry.MetricIBSymbolErrorsTotal:                 portDelta(telemetry.LabelIBDevice, telemetry.LabelIBPort, ibErrors),
	telemetry.MetricIBLocalLinkIntegrityErrorsTotal:     portDelta(telemetry.LabelIBDevice, telemetry.LabelIBPort, ibErrors),
	telemetry.MetricIBExcessiveBufferOverrunErrorsTotal: portDelta(telemetry.LabelIBDevice, telemetry.LabelIBPort, ibErrors),
	telemetry.MetricIBRemotePhysicalErrorsTotal:         portDelta(telemetry.LabelIBDevice, telemetry.LabelIBPort, ibErrors),
}

// The windowed error-delta rules of NVLink and InfiniBand.
var (
	nvlinkCRC  = nvlinkDelta(func(r *Rules) float64 { return r.NVLinkCRCDelta })
	ibErrors   = ibDelta(func(r *Rules) float64 { return r.IBErrorDelta })
	ibRecovery = ibDelta(func(r *Rules) float64 { return r.IBRecoveryDelta })
)

// nvlinkDelta: NVLink errors raise nvlink-errors once they reach the limit.
func nvlinkDelta(limit func(*Rules) float64) *deltaRule {
	return &deltaRule{kind: telemetry.ConditionNVLinkErrors, rule: "nvlink_error_delta", atLimit: true,
		window: func(r *Rules) time.Duration { return r.NVLinkWindow }, limit: limit}
}

// ibDelta: InfiniBand port errors raise ib-errors above the limit.
func ibDelta(limit func(*Rules) float64) *deltaRule {
	return &deltaRule{kind: telemetry.ConditionIBErrors, rule: "ib_error_delta",
		window: func(r *Rules) time.Duration { return r.IBWindow }, limit: limit}
}

// gpuGauge keeps a GPU gauge's value for judgeGPUs.
func gpuGauge(field func(*gpuCycle) *float64) sampleRule {
	return func(e *Engine, s *telemetry.Sample, _ time.Time) {
		if _, g := e.gpuOf(s); g != nil {
			*field(g) = s.Value
		}
	}
}

// portGauge keeps an InfiniBand port gauge's value (node_exporter's series) for
// judgePorts.
func portGauge(field func(*portCycle) *float64) sampleRule {
	return func(e *Engine, s *telemetry.Sample, _ time.Time) {
		if _, p := e.portOf(s, telemetry.NodeExpLabelDevice, telemetry.NodeExpLabelPort); p != nil {
			*field(p) = s.Value
		}
	}
}

// retiredPages keeps the retired-pages total for judgeGPUs and raises
// retired-pages (warning) for every new page.
func retiredPages(field func(*gpuCycle) *float64) sampleRule {
	return func(e *Engine, s *telemetry.Sample, now time.Time) {
		idx, g := e.gpuOf(s)
		if g == nil {
			return
		}
		*field(g) = s.Value
		st := e.count(seriesKey{s.Name, idx, -1, "", -1}, s, now, e.rules.ClearAfter)
		if st.delta > 0 {
			e.observe(e.cond(telemetry.ConditionRetiredPages, e.gpuTarget(idx), telemetry.SeverityWarning, telemetry.ActionNone,
				fmt.Sprintf("%g new pages retired (%s), %g since baseline", st.delta, s.Name, st.sinceBase),
				"counter", s.Name, "delta", fmtF(st.delta), "since_baseline", fmtF(st.sinceBase), "rule", "retired_pages_delta"), policyQuiet)
		}
	}
}

// doubleBitECC remembers a GPU's first new double-bit ECC error until a reset
// (judgeGPUs raises ecc-dbe from it); the volatile counter going down is a reset.
func doubleBitECC(e *Engine, s *telemetry.Sample, now time.Time) {
	idx, g := e.gpuOf(s)
	if g == nil {
		return
	}
	st := e.count(seriesKey{s.Name, idx, -1, "", -1}, s, now, e.rules.ClearAfter)
	if st.reset && s.Name == telemetry.DCGMECCDBEVolTotal {
		g.volReset = true
	}
	if st.delta > 0 {
		if gs := e.gpu(idx); gs.dbe == nil {
			gs.dbe = &dbeEvent{At: now, Counter: s.Name, Delta: st.delta}
			e.dirty = true
		}
	}
}

// throttled raises kind when the violation counter (nanoseconds throttled) grew
// by more than a share of the wall time of ThrottleWindow.
func throttled(kind telemetry.ConditionKind, sev telemetry.Severity, rule string, limit func(*Rules) float64) sampleRule {
	return func(e *Engine, s *telemetry.Sample, now time.Time) {
		idx, g := e.gpuOf(s)
		if g == nil {
			return
		}
		r := &e.rules
		st := e.count(seriesKey{s.Name, idx, -1, "", -1}, s, now, r.ThrottleWindow)
		if st.winSpan < r.ThrottleWindow/10 || st.winSpan <= 0 {
			return
		}
		share, limit := st.winDelta/float64(st.winSpan.Nanoseconds()), limit(r)
		if share > limit {
			e.observe(e.cond(kind, e.gpuTarget(idx), sev, telemetry.ActionNone,
				fmt.Sprintf("throttled %.0f%% of the last %s (threshold %.0f%%)", 100*share, roundDur(st.winSpan), 100*limit),
				"counter", s.Name, "share", fmtF(share), "window", roundDur(st.winSpan).String(), "threshold", fmtF(limit), "rule", rule), policyQuiet)
		}
	}
}

// ibLinkDowned counts a port's flaps for judgePorts: each link_downed increment
// is one.
func ibLinkDowned(e *Engine, s *telemetry.Sample, now time.Time) {
	k, p := e.portOf(s, telemetry.NodeExpLabelDevice, telemetry.NodeExpLabelPort)
	if p == nil {
		return
	}
	st := e.count(seriesKey{s.Name, -1, -1, k.dev, k.port}, s, now, e.rules.IBFlapWindow)
	if st.delta > 0 {
		e.flaps[k] = append(e.flaps[k], now)
		e.dirty = true
	}
}

// A deltaRule raises its condition (a warning, no action) when a counter grew by
// more than its limit within its window (by the limit or more with atLimit); a
// negative limit switches it off. The message reads "%g <what> in <window>
// (threshold <limit><unit>)", what defaulting to "new <counter>" and naming the
// InfiniBand port the counter is of.
type deltaRule struct {
	kind       telemetry.ConditionKind
	rule       string // the rule's name in the evidence
	what, unit string
	atLimit    bool
	window     func(*Rules) time.Duration
	limit      func(*Rules) float64
}

// gpuDelta applies d to a GPU counter: the volatile ECC counters going down is a
// reset.
func gpuDelta(d *deltaRule) sampleRule {
	return func(e *Engine, s *telemetry.Sample, now time.Time) {
		if idx, g := e.gpuOf(s); g != nil {
			if st := e.judgeDelta(d, seriesKey{s.Name, idx, -1, "", -1}, s, now); st.reset && s.Name == telemetry.DCGMECCSBEVolTotal {
				g.volReset = true
			}
		}
	}
}

// linkDelta applies d to an NVLink counter, per link.
func linkDelta(d *deltaRule) sampleRule {
	return func(e *Engine, s *telemetry.Sample, now time.Time) {
		idx, g := e.gpuOf(s)
		if link := labelInt(s.Labels, telemetry.LabelLink); g != nil && link >= 0 {
			e.judgeDelta(d, seriesKey{s.Name, idx, link, "", -1}, s, now)
		}
	}
}

// portDelta applies d to an InfiniBand counter whose port the labels dev and
// port name.
func portDelta(dev, port string, d *deltaRule) sampleRule {
	return func(e *Engine, s *telemetry.Sample, now time.Time) {
		if k, p := e.portOf(s, dev, port); p != nil {
			e.judgeDelta(d, seriesKey{s.Name, -1, -1, k.dev, k.port}, s, now)
		}
	}
}

// judgeDelta steps the counter k and applies d to its growth within d's window,
// on the port, link or GPU k names.
func (e *Engine) judgeDelta(d *deltaRule, k seriesKey, s *telemetry.Sample, now time.Time) counterStep {
	st := e.count(k, s, now, d.window(&e.rules))
	limit := d.limit(&e.rules)
	raise := st.winDelta > limit
	if d.atLimit {
		raise = st.winDelta >= limit && st.winDelta > 0
	}
	if limit < 0 || !raise {
		return st
	}
	what := d.what
	if what == "" {
		what = "new " + s.Name
	}
	var t telemetry.Target
	switch {
	case k.dev != "":
		what += fmt.Sprintf(" on %s port %d", k.dev, k.port)
		t = e.portTarget(portKey{dev: k.dev, port: k.port})
	case k.link >= 0:
		t = e.linkTarget(k.gpu, k.link)
	default:
		t = e.gpuTarget(k.gpu)
	}
	e.observe(e.cond(d.kind, t, telemetry.SeverityWarning, telemetry.ActionNone,
		fmt.Sprintf("%g %s in %s (threshold %g%s)", st.winDelta, what, roundDur(st.winSpan), limit, d.unit),
		"counter", s.Name, "delta", fmtF(st.winDelta), "window", roundDur(st.winSpan).String(), "threshold", fmtF(limit), "rule", d.rule), policyQuiet)
	return st
}

func (e *Engine) linkTarget(gpu, link int) telemetry.Target {
	return telemetry.NVLinkTarget(telemetry.NVLinkID{GPU: telemetry.GPUID{Node: e.node, Index: gpu}, Link: link})
}

func (e *Engine) portTarget(k portKey) telemetry.Target {
	return telemetry.IBPortTarget(telemetry.IBPortID{Node: e.node, Device: k.dev, Port: k.port})
}

// judgeNVLinkUp: a link that was up when first seen (its baseline) and is down now.
// A link never seen up is not judged: products and partitions leave links unused.
func (e *Engine) judgeNVLinkUp(s *telemetry.Sample, _ time.Time) {
	idx, g := e.gpuOf(s)
	link := labelInt(s.Labels, telemetry.LabelLink)
	if g == nil || link < 0 || math.IsNaN(s.Value) {
		return
	}
	k := seriesKey{s.Name, idx, link, "", -1}
	base, ok := e.gauges[k]
	if !ok || (base != 1 && s.Value == 1) {
		// First sight, or a link that came up later: up is its baseline now.
		e.gauges[k] = s.Value
		e.dirty = true
		base = s.Value
	}
	t := e.linkTarget(idx, link)
	if base == 1 && s.Value != 1 {
		e.observe(e.cond(telemetry.ConditionNVLinkDown, t, telemetry.SeverityCritical, telemetry.ActionResetGPU,
			fmt.Sprintf("NVLink %d of GPU %d is down; it was up at baseline", link, idx),
			"series", s.Name, "value", fmtF(s.Value), "baseline", "1", "rule", "nvlink_up_at_baseline"), policyState)
		return
	}
	e.good(telemetry.ConditionNVLinkDown, t)
}

// judgePorts applies the state, rate and flap rules to every InfiniBand port.
func (e *Engine) judgePorts(now time.Time) {
	r := &e.rules
	for k, p := range e.pcyc {
		t := e.portTarget(k)
		if p.seen && p.state == p.state && p.phys == p.phys {
			up := p.state == 4 && p.phys == 5
			bk := seriesKey{telemetry.NodeIBStateID, -1, -1, k.dev, k.port}
			base, ok := e.gauges[bk]
			if !ok || (base != 1 && up) {
				base = b2f(up)
				e.gauges[bk] = base
				e.dirty = true
			}
			if base == 1 && !up {
				e.observe(e.cond(telemetry.ConditionIBDown, t, telemetry.SeverityCritical, telemetry.ActionCheckMechanicals,
					fmt.Sprintf("%s port %d is %s/%s, was ACTIVE/LinkUp at baseline", k.dev, k.port, ibState(p.state), ibPhys(p.phys)),
					"state_id", fmtF(p.state), "physical_state_id", fmtF(p.phys), "rule", "ib_up_at_baseline"), policyState)
			} else {
				e.good(telemetry.ConditionIBDown, t)
			}
		}
		if p.seen && p.rate == p.rate && p.rate > 0 {
			rk := seriesKey{telemetry.NodeIBRateBytesPerSecond, -1, -1, k.dev, k.port}
			base, ok := e.gauges[rk]
			if !ok || p.rate > base {
				e.gauges[rk] = p.rate
				e.dirty = e.dirty || !ok
				base = p.rate
			}
			if p.rate < base {
				e.observe(e.cond(telemetry.ConditionIBDegraded, t, telemetry.SeverityWarning, telemetry.ActionCheckMechanicals,
					fmt.Sprintf("%s port %d runs at %s, %s at baseline", k.dev, k.port, gbps(p.rate), gbps(base)),
					"rate_bytes_per_second", fmtF(p.rate), "baseline", fmtF(base), "rule", "ib_rate_below_baseline"), policyState)
			} else {
				e.good(telemetry.ConditionIBDegraded, t)
			}
		}
	}
	// Flaps: each link_downed increment is one; keep those within the window.
	for k, ts := range e.flaps {
		start := now.Add(-r.IBFlapWindow)
		n := 0
		for _, f := range ts {
			if f.After(start) {
				ts[n] = f
				n++
			}
		}
		if n == 0 {
			delete(e.flaps, k)
			e.dirty = true
			continue
		}
		e.flaps[k] = ts[:n]
		sev := telemetry.SeverityWarning
		if n >= r.IBFlapCount {
			sev = telemetry.SeverityCritical
		}
		e.observe(e.cond(telemetry.ConditionIBFlap, e.portTarget(k), sev, telemetry.ActionCheckMechanicals,
			fmt.Sprintf("%s port %d went down %d time(s) in %s (critical at %d)", k.dev, k.port, n, r.IBFlapWindow, r.IBFlapCount),
			"counter", telemetry.NodeIBLinkDownedTotal, "flaps", itoa(n), "window", r.IBFlapWindow.String(), "rule", "ib_flap"), policyQuiet)
	}
}

// judgeGPUs applies the per-GPU gauge rules, finds resets, and raises the conditions
// that wait for one.
func (e *Engine) judgeGPUs(now time.Time) {
	r := &e.rules
	anyLost := false
	for i := range e.gcyc {
		if e.gcyc[i].lost == e.gcyc[i].lost {
			anyLost = true
		}
	}
	xid79 := catalogAction(79)
	for i := range e.gcyc {
		g := &e.gcyc[i]
		gs := e.gpus[i]
		if !g.seen && gs == nil {
			continue
		}
		gs = e.gpu(i)
		gs.known = true
		t := e.gpuTarget(i)

		// Presence and resets.
		switch {
		case g.lost == 1:
			gs.gone = true
			e.observe(e.cond(telemetry.ConditionGPULost, t, telemetry.SeverityFatal, xid79,
				fmt.Sprintf("GPU %d is lost (fallen off the bus or NVML GPU_IS_LOST)", i),
				"series", telemetry.MetricGPULost, "value", "1", "rule", "gpu_lost", "xid", "79"), policyState)
		case g.lost == 0:
			e.good(telemetry.ConditionGPULost, t)
			if gs.gone {
				gs.gone = false
				e.resetGPU(i, now, "the GPU came back")
			}
		case anyLost && g.lost != g.lost:
			// Its peers report and it does not: it is gone from NVML.
			gs.gone = true
		}
		if g.volReset {
			e.resetGPU(i, now, "volatile ECC counters went down")
		}

		if gs.dbe != nil {
			e.observe(e.cond(telemetry.ConditionECCDBE, t, telemetry.SeverityCritical, telemetry.ActionResetGPU,
				fmt.Sprintf("%g new double-bit ECC error(s) since %s; waiting for a GPU reset", gs.dbe.Delta, gs.dbe.At.UTC().Format(time.RFC3339)),
				"counter", gs.dbe.Counter, "delta", fmtF(gs.dbe.Delta), "rule", "ecc_dbe_delta"), policyOwned)
		}
		if v := g.recovery; v == v {
			if v != 0 {
				ra := telemetry.XidRecoveryAction(int(v))
				e.observe(e.cond(telemetry.ConditionRecoveryAction, t, SeverityForAction(ra.Action()).Max(telemetry.SeverityCritical), ra.Action(),
					fmt.Sprintf("driver recovery action is %d (%s)", int(v), ra),
					"series", telemetry.DCGMGPURecoveryAction, "value", fmtF(v), "rule", "recovery_action"), policyState)
			} else {
				e.good(telemetry.ConditionRecoveryAction, t)
			}
		}
		if v := g.remapPending; v == v {
			if v > 0 {
				e.observe(e.cond(telemetry.ConditionRowRemapPending, t, telemetry.SeverityCritical, telemetry.ActionResetGPU,
					"a row remap is pending: reset the GPU to activate it",
					"series", telemetry.DCGMRowRemapPending, "value", fmtF(v), "rule", "row_remap_pending"), policyState)
			} else {
				e.good(telemetry.ConditionRowRemapPending, t)
			}
		}
		remapBad := false
		if v := g.remapFailure; v == v && v > 0 {
			remapBad = true
			e.observe(e.cond(telemetry.ConditionRowRemapFailure, t, telemetry.SeverityCritical, telemetry.ActionContactSupport,
				"row remapping failed: the GPU needs replacing",
				"series", telemetry.DCGMRowRemapFailure, "value", fmtF(v), "rule", "row_remap_failure"), policyState)
		}
		if v := g.remappedUnc; v == v && v > r.RemappedRowsMax {
			remapBad = true
			e.observe(e.cond(telemetry.ConditionRowRemapFailure, t, telemetry.SeverityCritical, telemetry.ActionContactSupport,
				fmt.Sprintf("%g rows remapped for uncorrectable errors (limit %g)", v, r.RemappedRowsMax),
				"series", telemetry.DCGMUncorrectableRemappedRows, "value", fmtF(v), "threshold", fmtF(r.RemappedRowsMax), "rule", "remapped_rows_max"), policyState)
		}
		if !remapBad && (g.remapFailure == g.remapFailure || g.remappedUnc == g.remappedUnc) {
			e.good(telemetry.ConditionRowRemapFailure, t)
		}
		retiredBad := false
		if v := g.retiredPending; v == v && v > 0 {
			retiredBad = true
			e.observe(e.cond(telemetry.ConditionRetiredPages, t, telemetry.SeverityWarning, telemetry.ActionResetGPU,
				fmt.Sprintf("%g page(s) pending retirement: retired at the next GPU reset", v),
				"series", telemetry.DCGMRetiredPending, "value", fmtF(v), "rule", "retired_pending"), policyState)
		}
		if tot := g.retiredSBE + g.retiredDBE; tot == tot && tot >= r.RetiredPagesMax {
			retiredBad = true
			e.observe(e.cond(telemetry.ConditionRetiredPages, t, telemetry.SeverityCritical, telemetry.ActionContactSupport,
				fmt.Sprintf("%g pages retired (limit %g): the retirement table is nearly full", tot, r.RetiredPagesMax),
				"retired_sbe", fmtF(g.retiredSBE), "retired_dbe", fmtF(g.retiredDBE), "threshold", fmtF(r.RetiredPagesMax), "rule", "retired_pages_max"), policyState)
		}
		if !retiredBad && g.retiredPending == g.retiredPending {
			e.good(telemetry.ConditionRetiredPages, t)
		}

		// PCIe link. The width is judged always; the generation only while the
		// GPU is busy, because GPUs drop to a low generation when idle to save
		// power, and a low generation at idle is no fault.
		if g.widthCur == g.widthCur && g.widthMax == g.widthMax && g.genCur == g.genCur && g.genMax == g.genMax {
			narrow := g.widthCur > 0 && g.widthCur < g.widthMax
			slow := g.genCur > 0 && g.genCur < g.genMax && g.util == g.util && g.util > 0
			if narrow || slow {
				e.observe(e.cond(telemetry.ConditionPCIeDegraded, t, telemetry.SeverityWarning, telemetry.ActionCheckMechanicals,
					fmt.Sprintf("PCIe link is Gen%g x%g, max Gen%g x%g", g.genCur, g.widthCur, g.genMax, g.widthMax),
					"link_gen", fmtF(g.genCur), "max_link_gen", fmtF(g.genMax), "link_width", fmtF(g.widthCur), "max_link_width", fmtF(g.widthMax),
					"rule", "pcie_below_max"), policyState)
			} else {
				e.good(telemetry.ConditionPCIeDegraded, t)
			}
		}

		// Clock event reasons (NVML's nvmlClocksEventReason* bits), as Azure's
		// check_gpu_clock_throttling reads them: idle, application clocks, SW
		// power cap and sync boost are normal operation.
		if v := g.reasons; v == v && v >= 0 {
			bits := uint64(v)
			const (
				hwSlowdown     = 0x8
				swThermal      = 0x20
				hwThermal      = 0x40
				hwPowerBrake   = 0x80
				reasonsEvident = "clock_throttle_reasons"
			)
			ev := func(kind telemetry.ConditionKind, mask uint64, what string) {
				if bits&mask != 0 {
					e.observe(e.cond(kind, t, telemetry.SeverityWarning, telemetry.ActionNone,
						fmt.Sprintf("clocks held down: %s (reasons 0x%x)", what, bits),
						"series", telemetry.DCGMClockThrottleReasons, "value", "0x"+strconv.FormatUint(bits, 16), "rule", reasonsEvident), policyState)
				} else {
					e.good(kind, t)
				}
			}
			ev(telemetry.ConditionThermalThrottle, swThermal|hwThermal, "thermal slowdown")
			ev(telemetry.ConditionPowerThrottle, hwPowerBrake, "power brake")
			ev(telemetry.ConditionClockThrottle, hwSlowdown, "hardware slowdown")
		}
	}
}

// judgeSources raises telemetry-stale for sources down or silent beyond StaleAfter.
func (e *Engine) judgeSources(snap *collector.Snapshot, now time.Time) {
	if len(snap.Sources) == 0 {
		return
	}
	var stale []string
	for _, st := range snap.Sources {
		if st.Name == e.Name() {
			continue
		}
		tr := e.sources[st.Name]
		if tr == nil {
			tr = &sourceTrack{}
			e.sources[st.Name] = tr
		}
		if st.Up {
			tr.everUp, tr.downSince = true, time.Time{}
		} else if tr.downSince.IsZero() {
			tr.downSince = now
		}
		// A source that failed in part (one unreadable file) but still delivers
		// data is not silent: its up=0 says enough.
		heard := st.LastSuccess
		if st.LastData.After(heard) {
			heard = st.LastData
		}
		var silent time.Duration
		switch {
		case st.Up:
			// Its last collection worked, however long ago its time says: a
			// source read only in full cycles is a full interval old at the end
			// of one, and looks minutes old after the clock stepped forward.
		case !heard.IsZero():
			silent = now.Sub(heard)
		default:
			silent = now.Sub(tr.downSince)
		}
		required := false
		for _, n := range e.rules.RequiredSources {
			required = required || n == st.Name
		}
		if silent > e.rules.StaleAfter && (required || tr.everUp || !st.LastSuccess.IsZero()) {
			msg := st.Name + " silent " + roundDur(silent).String()
			if st.Err != "" {
				msg += " (" + truncate(st.Err, 80) + ")"
			}
			stale = append(stale, msg)
		}
	}
	t := telemetry.NodeTarget(e.node)
	if len(stale) == 0 {
		e.good(telemetry.ConditionTelemetryStale, t)
		return
	}
	e.observe(e.cond(telemetry.ConditionTelemetryStale, t, telemetry.SeverityWarning, telemetry.ActionNone,
		fmt.Sprintf("telemetry stale: %s", joinShort(stale)),
		"sources", joinShort(stale), "threshold", e.rules.StaleAfter.String(), "rule", "stale_source"), policyState)
}

// resetGPU forgets what a GPU reset clears: its Xids, the driver's override and a
// pending double-bit error.
func (e *Engine) resetGPU(i int, now time.Time, why string) {
	gs := e.gpu(i)
	gs.resetAt = now
	gs.xids = nil
	gs.override, gs.overrideTx, gs.overrideAt = "", "", time.Time{}
	gs.xidMax, gs.xidSevMax = "", telemetry.SeverityOK
	gs.dbe = nil
	e.dirty = true
	e.log.Info("health: GPU reset detected", "gpu_index", i, "why", why)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
