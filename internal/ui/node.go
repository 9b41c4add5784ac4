package ui

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// nodeView is the node page's data.
type nodeView struct {
	Node      string
	Highlight int // the GPU an alert link points at; -1 none
	Report    *healthreport.Report
	Drain     *drain.NodeStatus
	GPUs      []gpuRow
	NodeConds []condView
	NVLink    []linkRow
	IB        []ibRow
	Xids      []xidEvent
	XidStrip  *chart
	Window    time.Duration
	History   []drain.AuditRecord
	Excl      []drain.Exclusion
	Alerts    []alertView
	Grafana   string
	Errors    []string
	Now       time.Time
	Known     bool // anything at all is known about the node
}

type gpuRow struct {
	Index                       int
	UUID, Model, PCI, Serial    string
	Driver                      string
	State                       telemetry.State
	Agent                       telemetry.State // the agent's verdict
	HasAgent                    bool
	Drain                       telemetry.State
	HasDrain                    bool
	Temp, Power, Util, SMClock  float64
	MemUsed, MemTotal           float64
	DBE, RemapUnc, RemapPending float64
	Throttle                    float64
	Conds                       []condView
	Jobs                        []jobView
	Excluded                    string
	LinksUp, LinksTotal         int
	Grafana                     string
	Highlight                   bool
	Lost                        bool
	Severity                    telemetry.Severity
	Action                      telemetry.Action
	ThrottleReasons             string
	LinksDown                   []int
}

type condView struct {
	telemetry.Condition
	Meaning string
	Ev      []kv
	Runbook string
}

type kv struct{ K, V string }

type jobView struct{ Job, Account, User, Pod, Namespace string }

type linkRow struct {
	GPU, Link int
	Up        bool
	CRC       float64
}

type ibRow struct {
	Device, Port     string
	State, Phys      string
	Active           bool
	RateGbps         float64
	Downed, SymErr   float64
	HasDowned, HasSE bool
}

type xidEvent struct {
	At          time.Time
	GPU         int
	Xid         int
	Action      string
	Count       float64
	Mnemonic    string
	Description string
}

// instant evaluates expr at now, collecting the error for the page.
func (u *UI) instant(ctx context.Context, expr string, now time.Time, errs *[]string) store.Vector {
	v, err := u.opts.Querier.Instant(ctx, expr, now)
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("%s: %v", expr, err))
	}
	return v
}

// gpuIndex is a sample's GPU index: gpuwatch's gpu_index, dcgm-exporter's gpu.
func gpuIndex(ls telemetry.Labels) (int, bool) {
	for _, k := range []string{telemetry.LabelGPUIndex, "gpu"} {
		if v := ls.Get(k); v != "" {
			i, err := strconv.Atoi(v)
			return i, err == nil
		}
	}
	return 0, false
}

func sel(metric, node string) string {
	return metric + `{node=` + strconv.Quote(node) + `}`
}

func (u *UI) handleNode(w http.ResponseWriter, r *http.Request) {
	node := r.PathValue("node")
	if !nodeName.MatchString(node) {
		u.fail(w, r, http.StatusBadRequest, "No such node", fmt.Sprintf("node %q: not a node name (letters, digits, . _ : -)", node))
		return
	}
	ctx, cancel := u.ctx(r)
	defer cancel()
	now := u.opts.Now()
	v := &nodeView{Node: node, Highlight: -1, Now: now, Window: 6 * time.Hour}
	if g, err := strconv.Atoi(r.URL.Query().Get("gpu")); err == nil {
		v.Highlight = g
	}
	rows := map[int]*gpuRow{}
	row := func(i int) *gpuRow {
		g := rows[i]
		if g == nil {
			nan := math.NaN()
			g = &gpuRow{Index: i, Temp: nan, Power: nan, Util: nan, SMClock: nan, MemUsed: nan, MemTotal: nan, DBE: nan,
				RemapUnc: nan, RemapPending: nan, Throttle: nan}
			rows[i] = g
		}
		return g
	}
	// Identity.
	for _, s := range u.instant(ctx, "last_over_time("+sel(telemetry.MetricGPUInfo, node)+"[15m])", now, &v.Errors) {
		if i, ok := gpuIndex(s.Labels); ok {
			g := row(i)
			g.UUID, g.Model, g.PCI = s.Labels.Get(telemetry.LabelGPUUUID), s.Labels.Get(telemetry.LabelModel), s.Labels.Get(telemetry.LabelPCIBusID)
			g.Serial, g.Driver = s.Labels.Get(telemetry.LabelSerial), s.Labels.Get(telemetry.LabelDriverVersion)
		}
	}
	// Key gauges.
	gauges := []struct {
		metric string
		set    func(g *gpuRow, v float64)
	}{
		{telemetry.DCGMGPUTemp, func(g *gpuRow, x float64) { g.Temp = x }},
		{telemetry.DCGMPowerUsage, func(g *gpuRow, x float64) { g.Power = x }},
		{telemetry.DCGMGPUUtil, func(g *gpuRow, x float64) { g.Util = x }},
		{telemetry.DCGMSMClock, func(g *gpuRow, x float64) { g.SMClock = x }},
		{telemetry.DCGMFBUsed, func(g *gpuRow, x float64) { g.MemUsed = x }},
		{telemetry.DCGMFBTotal, func(g *gpuRow, x float64) { g.MemTotal = x }},
		{telemetry.DCGMECCDBEVolTotal, func(g *gpuRow, x float64) { g.DBE = x }},
		{telemetry.DCGMUncorrectableRemappedRows, func(g *gpuRow, x float64) { g.RemapUnc = x }},
		{telemetry.DCGMRowRemapPending, func(g *gpuRow, x float64) { g.RemapPending = x }},
		{telemetry.DCGMClockThrottleReasons, func(g *gpuRow, x float64) { g.Throttle = x }},
		{telemetry.MetricGPULost, func(g *gpuRow, x float64) { g.Lost = x == 1 }},
		{telemetry.MetricGPUHealthState, func(g *gpuRow, x float64) { g.Agent, g.HasAgent = telemetry.State(x), true }},
	}
	for _, m := range gauges {
		for _, s := range u.instant(ctx, "last_over_time("+sel(m.metric, node)+"[2m])", now, &v.Errors) {
			if i, ok := gpuIndex(s.Labels); ok {
				m.set(row(i), s.Value)
			}
		}
	}
	// The latest health report: states, conditions with their evidence.
	if u.opts.Report != nil {
		if rep, ok := u.opts.Report(node); ok {
			v.Report = &rep
			for _, gr := range rep.GPUs {
				g := row(gr.Index)
				g.Agent, g.HasAgent, g.Severity, g.Action = gr.State, true, gr.Severity, gr.Action
				if g.UUID == "" {
					g.UUID = gr.UUID
				}
				for _, c := range gr.Conditions {
					g.Conds = append(g.Conds, u.condView(c))
				}
			}
			for _, c := range rep.Conditions {
				v.NodeConds = append(v.NodeConds, u.condView(c))
			}
		}
	}
	if v.Report == nil {
		// No pushed report (no drain controller): the store's condition series,
		// without their evidence.
		for _, s := range u.instant(ctx, "last_over_time("+sel(telemetry.MetricHealthCondition, node)+"[2m])", now, &v.Errors) {
			sev, _ := telemetry.ParseSeverity(s.Labels.Get(telemetry.LabelSeverity))
			c := telemetry.Condition{Kind: telemetry.ConditionKind(s.Labels.Get(telemetry.LabelCondition)), Severity: sev,
				Action: telemetry.Action(s.Labels.Get(telemetry.LabelAction)), Message: "target " + s.Labels.Get(telemetry.LabelTarget), Observed: s.Time}
			if i, ok := gpuIndex(s.Labels); ok {
				row(i).Conds = append(row(i).Conds, u.condView(c))
			} else {
				v.NodeConds = append(v.NodeConds, u.condView(c))
			}
		}
	}
	// The drain controller's view, its history and exclusions.
	if c := u.opts.Drain; c != nil {
		if ns, ok := c.Node(node); ok {
			v.Drain = &ns
			for _, gs := range ns.GPUs {
				g := row(gs.Index)
				g.Drain, g.HasDrain = gs.State, true
				if g.UUID == "" {
					g.UUID = gs.UUID
				}
			}
		}
		for _, e := range c.Exclusions() {
			if e.Node != node {
				continue
			}
			v.Excl = append(v.Excl, e)
			if e.GPU >= 0 {
				row(e.GPU).Excluded = e.Reason
			}
		}
		recs, err := c.Audit(time.Time{}, 0)
		if err != nil {
			v.Errors = append(v.Errors, "drain audit log: "+err.Error())
		}
		for i := len(recs) - 1; i >= 0 && len(v.History) < 200; i-- {
			if recs[i].Node == node {
				v.History = append(v.History, recs[i])
			}
		}
	}
	// Jobs and pods per GPU.
	for _, s := range u.instant(ctx, "last_over_time("+sel(telemetry.MetricGPUAllocationInfo, node)+"[1m])", now, &v.Errors) {
		if i, ok := gpuIndex(s.Labels); ok {
			g := row(i)
			g.Jobs = append(g.Jobs, jobView{Job: s.Labels.Get(telemetry.LabelJobID), Account: s.Labels.Get(telemetry.LabelAccount),
				User: s.Labels.Get(telemetry.LabelUser), Pod: s.Labels.Get(telemetry.LabelPod), Namespace: s.Labels.Get(telemetry.LabelNamespace)})
		}
	}
	// NVLink and InfiniBand ports.
	for _, s := range u.instant(ctx, "last_over_time("+sel(telemetry.MetricNVLinkUp, node)+"[2m])", now, &v.Errors) {
		i, ok := gpuIndex(s.Labels)
		link, err := strconv.Atoi(s.Labels.Get(telemetry.LabelLink))
		if !ok || err != nil {
			continue
		}
		g := row(i)
		g.LinksTotal++
		if s.Value == 1 {
			g.LinksUp++
		} else {
			g.LinksDown = append(g.LinksDown, link)
			v.NVLink = append(v.NVLink, linkRow{GPU: i, Link: link})
		}
	}
	v.IB = u.ibPorts(ctx, node, now, &v.Errors)
	v.Xids, v.XidStrip = u.xidTimeline(ctx, node, now, v.Window, &v.Errors)
	v.Alerts = u.alertViews(node)
	if u.opts.GrafanaURL != "" {
		v.Grafana = u.opts.GrafanaURL + "/d/gpuwatch-node/?var-node=" + url.QueryEscape(node)
	}
	idx := make([]int, 0, len(rows))
	for i := range rows {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		g := rows[i]
		g.State = g.Agent
		if !g.HasAgent {
			g.State = telemetry.State(-1)
		}
		if g.HasDrain {
			if !g.HasAgent || severityRank[fromState(g.Drain)] > severityRank[fromState(g.State)] {
				g.State = g.Drain
			}
		}
		g.Highlight = i == v.Highlight
		g.ThrottleReasons = throttleReasons(g.Throttle)
		if u.opts.GrafanaURL != "" {
			g.Grafana = u.opts.GrafanaURL + "/d/gpuwatch-gpu/?var-node=" + url.QueryEscape(node) + "&var-gpu=" + strconv.Itoa(i)
		}
		v.GPUs = append(v.GPUs, *g)
	}
	v.Known = len(v.GPUs) > 0 || v.Drain != nil || v.Report != nil || len(v.IB) > 0
	status := http.StatusOK
	if !v.Known {
		status = http.StatusNotFound
	}
	u.render(w, r, status, "node", u.page(r, node, "fleet", v))
}

// condView adds the catalog's words and the evidence in key order.
func (u *UI) condView(c telemetry.Condition) condView {
	cv := condView{Condition: c, Meaning: actionMeaning(c.Action)}
	ks := make([]string, 0, len(c.Evidence))
	for k := range c.Evidence {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		cv.Ev = append(cv.Ev, kv{k, c.Evidence[k]})
	}
	return cv
}

// ibState names InfiniBand port states (node_exporter's state_id and
// physical_state_id, the kernel's numbering).
var ibState = map[float64]string{1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
var ibPhys = map[float64]string{1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp", 6: "LinkErrorRecovery", 7: "PhyTest"}

func (u *UI) ibPorts(ctx context.Context, node string, now time.Time, errs *[]string) []ibRow {
	ports := map[string]*ibRow{}
	get := func(s telemetry.Sample) *ibRow {
		d, p := s.Labels.Get("device"), s.Labels.Get("port")
		if d == "" {
			d, p = s.Labels.Get(telemetry.LabelIBDevice), s.Labels.Get(telemetry.LabelIBPort)
		}
		k := d + "/" + p
		if ports[k] == nil {
			ports[k] = &ibRow{Device: d, Port: p, RateGbps: math.NaN()}
		}
		return ports[k]
	}
	for _, s := range u.instant(ctx, "last_over_time("+sel(telemetry.NodeIBStateID, node)+"[2m])", now, errs) {
		p := get(s)
		p.State, p.Active = ibState[s.Value], s.Value == 4
		if p.State == "" {
			p.State = strconv.FormatFloat(s.Value, 'f', -1, 64)
		}
	}
	for _, s := range u.instant(ctx, "last_over_time("+sel(telemetry.NodeIBPhysicalStateID, node)+"[2m])", now, errs) {
		get(s).Phys = ibPhys[s.Value]
	}
	for _, s := range u.instant(ctx, "last_over_time("+sel(telemetry.NodeIBRateBytesPerSecond, node)+"[2m])", now, errs) {
		get(s).RateGbps = s.Value * 8 / 1e9
	}
	for _, s := range u.instant(ctx, "increase("+sel(telemetry.NodeIBLinkDownedTotal, node)+"[1h])", now, errs) {
		p := get(s)
		p.Downed, p.HasDowned = s.Value, true
	}
	for _, s := range u.instant(ctx, "increase("+sel(telemetry.MetricIBSymbolErrorsTotal, node)+"[1h])", now, errs) {
		p := get(s)
		p.SymErr, p.HasSE = s.Value, true
	}
	out := make([]ibRow, 0, len(ports))
	for _, p := range ports {
		out = append(out, *p)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Device != out[b].Device {
			return naturalLess(out[a].Device, out[b].Device)
		}
		return out[a].Port < out[b].Port
	})
	return out
}

// xidTimeline finds the node's Xid events in the window from the counters
// (a counter born at its first event counts its whole first value).
func (u *UI) xidTimeline(ctx context.Context, node string, now time.Time, window time.Duration, errs *[]string) ([]xidEvent, *chart) {
	step := max(window/720, 10*time.Second)
	m, err := u.opts.Querier.Range(ctx, sel(telemetry.MetricXidErrorsTotal, node), store.Range{Start: now.Add(-window), End: now, Step: step})
	if err != nil {
		*errs = append(*errs, "Xid timeline: "+err.Error())
		return nil, nil
	}
	var evs []xidEvent
	for _, s := range m {
		gpu, ok := gpuIndex(s.Labels)
		if !ok {
			gpu = -1
		}
		x, _ := strconv.Atoi(s.Labels.Get(telemetry.LabelXid))
		prev := 0.0
		for i, p := range s.Points {
			d := p.V - prev
			if i > 0 && p.V < prev { // a counter reset (agent restart)
				d = p.V
			}
			prev = p.V
			if d <= 0 {
				continue
			}
			e := xidEvent{At: p.T, GPU: gpu, Xid: x, Action: s.Labels.Get(telemetry.LabelAction), Count: d}
			if info, ok := telemetry.LookupXid(x); ok {
				e.Mnemonic, e.Description = firstLine(info.Mnemonic), firstLine(info.Description)
			}
			evs = append(evs, e)
		}
	}
	sort.Slice(evs, func(a, b int) bool { return evs[a].At.After(evs[b].At) })
	return evs, xidStrip(evs, now.Add(-window), now)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "/"))
}

// throttleReasons spells NVML's clock event reasons bitmask.
func throttleReasons(v float64) string {
	if math.IsNaN(v) || v == 0 {
		return ""
	}
	bits := uint64(v)
	names := []struct {
		bit  uint64
		name string
	}{{0x1, "GPU idle"}, {0x2, "applications clocks"}, {0x4, "SW power cap"}, {0x8, "HW slowdown"}, {0x10, "sync boost"},
		{0x20, "SW thermal"}, {0x40, "HW thermal"}, {0x80, "HW power brake"}, {0x100, "display clocks"}}
	var out []string
	for _, n := range names {
		if bits&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return strings.Join(out, ", ")
}

// naturalLess orders mlx5_2 before mlx5_10.
func naturalLess(a, b string) bool {
	ta, na := splitNum(a)
	tb, nb := splitNum(b)
	if ta != tb {
		return ta < tb
	}
	return na < nb
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(s[i:])
	return s[:i], n
}
