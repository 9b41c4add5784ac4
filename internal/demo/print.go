package demo

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// printer writes the live summary. Times are shown as offsets from the fleet's
// start, the same offsets the fault scenario uses.
type printer struct {
	w      io.Writer
	start  time.Time
	legend bool // the fair-share table's legend was printed
}

func newPrinter(w io.Writer, start time.Time) *printer { return &printer{w: w, start: start} }

func (p *printer) offset(t time.Time) string {
	d := t.Sub(p.start).Round(time.Second)
	return fmt.Sprintf("+%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func (p *printer) header(f *simhw.Fleet, sc *simhw.Scenario, o Options, ds *demoServer, act *actuator, pol *drain.Policy) {
	nodes := f.Nodes()
	leaves := map[string]bool{}
	for _, n := range nodes {
		leaves[n.Leaf()] = true
	}
	shape := f.Shape()
	switches := "leaf switches"
	if len(leaves) == 1 {
		switches = "leaf switch"
	}
	fmt.Fprintf(p.w, "gpuwatch demo: %d simulated %s nodes (%d GPUs each) under %d %s; %d faults scripted\n",
		len(nodes), shape.Name, shape.GPUs(), len(leaves), switches, len(sc.Faults))
	speed := fmt.Sprintf("at %gx speed", o.Speed)
	if o.Speed < 0 {
		speed = "as fast as possible"
	}
	start := f.Start().UTC()
	var when string
	switch {
	case o.Duration > 0:
		when = fmt.Sprintf("simulated time runs %s to %s", start.Format(time.RFC3339), start.Add(o.Duration).Format("15:04:05Z"))
		if o.nowStart {
			when += fmt.Sprintf(" (the %s up to now, so that Grafana's recent time ranges show it)", o.Duration)
		}
		when += " " + speed
	default:
		when = fmt.Sprintf("simulated time starts at %s and runs until interrupted %s", start.Format(time.RFC3339), speed)
		if o.nowStart && o.Speed > 1 {
			when += ", ahead of the wall clock (widen Grafana's time range into the future)"
		}
	}
	fmt.Fprintf(p.w, "%s; times below are offsets from the start\n", when)
	fmt.Fprintf(p.w, "one gpuwatch agent per node reads it through NVML, /sys and the kernel log: health cycle every %s, full every %s of simulated time\n",
		o.Tick, time.Duration(o.FullEvery)*o.Tick)
	fmt.Fprintf(p.w, "each agent serves /metrics, /health, /topology and /sources on loopback (URLs below); `--show-metrics NODE` prints one at the end\n")
	note := ""
	if ds.note != "" {
		note = " (" + ds.note + ")"
	}
	fmt.Fprintf(p.w, "and remote-writes every sample to the demo's gpuwatch server at %s%s: embedded Prometheus TSDB in %s, node files beside it\n",
		ds.url, note, ds.dir)
	fmt.Fprintf(p.w, "access: bearer tokens (hashes in %s; each secret in %s/<name>.token): an agent token per node, bound to it; operator, admin, grafana (read)\n",
		ds.tokens.file, ds.tokens.dir)
	fmt.Fprintf(p.w, "Grafana: add a Prometheus data source with URL %s and the header Authorization: Bearer <%s> (up while the demo runs)\n",
		ds.url, ds.tokens.path(tokenGrafana))
	fmt.Fprintf(p.w, "dashboards: provision deploy/grafana/ (data source URL %s, GPUWATCH_GRAFANA_TOKEN=$(cat %s); deploy/grafana/README.md); the server stores its own series beside the agents'\n",
		ds.url, ds.tokens.path(tokenGrafana))
	fmt.Fprintf(p.w, "try: curl -H \"Authorization: Bearer $(cat %s)\" '%s/api/v1/query?query=%s'\n", ds.tokens.path(tokenGrafana), ds.url, queryXids)
	fmt.Fprintf(p.w, "     gpuwatch drain --server %s --token-file %s NODE --reason TEXT\n", ds.url, ds.tokens.path(tokenOperator))
	how := `the log actuator, which prints what it would do ("would drain …"; --slurm drives a real local Slurm cluster instead)`
	if act.slurm {
		how = fmt.Sprintf("scontrol to a real Slurm cluster on this host (slurmctld and %d slurmd, %s for %s…, started in %.1f s)",
			len(act.names), act.name(f.Nodes()[0].Name()), f.Nodes()[0].Name(), act.started.Seconds())
	}
	fmt.Fprintf(p.w, "the agents push their health to the server's drain controller (on change, and every %s of simulated time); it drains through %s\n", heartbeat, how)
	fmt.Fprintf(p.w, "drain policy: %s\n", policyLine(pol, o.DrainPolicy == nil))
	fmt.Fprintf(p.w, "fair share: the server charges each account what its GPUs measured (%s), read from the store every simulated minute; standings every %s\n",
		fairShareLine(ds), o.FairShareEvery)
	fmt.Fprintln(p.w)
}

// policyLine says what matters of the drain policy for the story.
func policyLine(pol *drain.Policy, builtin bool) string {
	h := pol.Hysteresis
	s := fmt.Sprintf("act after %d reports or %s (fatal conditions at once); budget %s of the nodes per %s; probation %s without a drain-rule condition, then resume",
		h.Observations, h.For, pol.Budget, pol.Budget.Window, pol.Probation.Duration)
	if builtin {
		d := drain.DefaultPolicy()
		s = "gpuwatch's default rules; " + s + fmt.Sprintf(" (the demo's short windows: by default probation is %s and the budget %s)", d.Probation.Duration, d.Budget)
	}
	return s
}

// fairShareLine says how the fair-share tree is configured.
func fairShareLine(ds *demoServer) string {
	st, _ := ds.srv.FairShare()
	if st == nil {
		return "no standing yet"
	}
	accounts, shares := 0, map[string]bool{}
	for _, r := range st.Associations {
		if r.User == "" && r.Depth == 1 {
			accounts++
			shares[r.SharesRaw.String()] = true
		}
	}
	eq := ""
	if len(shares) == 1 {
		eq = "equal shares, "
	}
	return fmt.Sprintf("%s, %s%d accounts, %d users", algorithmName(st.Algorithm), eq, accounts, st.Users)
}

func algorithmName(a fairshare.Algorithm) string {
	if a == fairshare.Classic {
		return "classic"
	}
	return "Fair Tree"
}

// control prints what the server's drain controller and its actuator did.
func (p *printer) control(lines []ctlLine) {
	for _, l := range lines {
		fmt.Fprintf(p.w, "%s  %-20s %s\n", p.offset(l.at), l.node, l.text)
	}
}

// standing prints the fair-share standing per account (and, at the end, per
// user): allocated against measured GPU-hours, and the factors measured use
// gives next to those allocation would.
func (p *printer) standing(at time.Time, st *fairshare.Standing, alloc *fairshare.Factors, users bool) {
	var root fairshare.StandingRow
	for _, r := range st.Associations {
		if r.Depth == 0 {
			root = r
		}
	}
	what := "per account"
	if users {
		what = "per account and user"
	}
	fmt.Fprintf(p.w, "%s  fair share %s (%s, charged by measured use; %.1f GPU-hours allocated so far):\n",
		p.offset(at), what, algorithmName(st.Algorithm), root.UsageAllocated/3600)
	if st.Fallback {
		fmt.Fprintf(p.w, "        FALLBACK: %s\n", st.FallbackReason)
	}
	factor := "accounts: level fair share (share ÷ usage among siblings; above 1 is under-served)"
	if users {
		factor += "; users: Fair Tree factor (1 is first in line)"
	}
	if st.Algorithm == fairshare.Classic {
		factor = "the classic factor 2^(-usage/share)"
	}
	if !p.legend || users {
		p.legend = true
		fmt.Fprintf(p.w, "        FACTOR is %s; BY ALLOCATION is the same charged per allocated GPU-second, as Slurm does\n", factor)
	}
	const row = "        %-8s %-6s %5s %11s %14s %10s %7s %14s\n"
	fmt.Fprintf(p.w, row, "ACCOUNT", "USER", "SHARE", "ALLOC GPU-H", "MEASURED GPU-H", "MEAS/ALLOC", "FACTOR", "BY ALLOCATION")
	for _, r := range st.Associations {
		if r.Depth == 0 || (r.User != "" && !users) {
			continue
		}
		busy := "-"
		if r.UsageAllocated > 0 {
			busy = fmt.Sprintf("%.0f%%", 100*r.UsageMeasured/r.UsageAllocated)
		}
		ar, _ := alloc.Get(fairshare.Assoc{Account: r.Account, User: r.User})
		var got, want float64
		switch {
		case st.Algorithm == fairshare.Classic:
			got, want = float64(r.ClassicFactor), ar.ClassicFactor
		case r.User != "":
			got, want = float64(r.FairTreeFactor), ar.FairTreeFactor
		default:
			got, want = float64(r.LevelFS), ar.LevelFS
		}
		acct := r.Account
		if r.User != "" {
			acct = ""
		}
		fmt.Fprintf(p.w, row, acct, r.User, fmt.Sprintf("%.0f%%", 100*r.SharesNormalized),
			fmt.Sprintf("%.2f", r.UsageAllocated/3600), fmt.Sprintf("%.2f", r.UsageMeasured/3600), busy,
			factorString(got), factorString(want))
	}
	for _, u := range st.Unattributed {
		fmt.Fprintf(p.w, "        unattributed (not in the fair-share tree): %s/%s %.2f GPU-hours\n", u.Account, u.User, u.Allocated/3600)
	}
}

func factorString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "-"
	case math.IsInf(f, 1):
		return "inf"
	}
	return fmt.Sprintf("%.2f", f)
}

// first prints the agents as they came up: what they found and where they serve.
func (p *printer) first(nodes []NodeView) {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tLEAF\tGPUS\tSOURCES UP\tSAMPLES\tSTATE\tMETRICS")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d/%d\t%d\t%s\t%s/metrics\n", n.Name, n.Leaf, len(n.GPUs), n.SourcesUp, n.Sources,
			n.Samples, n.Report.State, n.URL)
	}
	tw.Flush()
}

// shown reports whether the live summary prints an event. Info-level conditions
// with no action (a busy H100 held at its power cap) are counted, not printed.
func shown(e Event) bool {
	switch e.Kind {
	case EventRaised, EventChanged, EventCleared:
		return e.Severity >= telemetry.SeverityWarning || e.Action != telemetry.ActionNone
	}
	return true
}

// notable reports whether a condition is worth a place in the tables: the same
// test as shown.
func notable(c telemetry.Condition) bool {
	return c.Severity >= telemetry.SeverityWarning || c.Action != telemetry.ActionNone
}

func (p *printer) events(evs []Event) {
	for _, e := range evs {
		if !shown(e) {
			continue
		}
		where := e.Node
		if e.Target != "" {
			where += " " + e.Target
		}
		act := ""
		if e.Action != telemetry.ActionNone {
			act = "  → " + string(e.Action)
		}
		var text string
		switch e.Kind {
		case EventXid:
			name := "(not in the catalog)"
			if info, ok := telemetry.LookupXid(e.Xid); ok {
				name = strings.Join(strings.Fields(info.Mnemonic), " ")
			}
			text = fmt.Sprintf("Xid %d %s counted ×%d", e.Xid, name, e.Count)
			if e.Action == telemetry.ActionNone {
				act = "  (the driver's recovery action)"
			}
		case EventRaised, EventChanged:
			text = fmt.Sprintf("%s %s [%s]: %s", e.Kind, e.Condition, e.Severity, e.Text)
			if i := strings.Index(text, " → "); i > 0 && act != "" && strings.HasSuffix(text, act[2:]) {
				text = text[:i] // the Xid condition's message ends with its action
			}
		case EventCleared:
			text, act = fmt.Sprintf("cleared %s", e.Condition), ""
		case EventState:
			text, act = fmt.Sprintf("node %s → %s%s", e.From, e.To, e.Text), ""
		}
		if r := []rune(text); len(r) > 100 {
			text = string(r[:97]) + "..."
		}
		fmt.Fprintf(p.w, "%s  %-20s %s%s\n", p.offset(e.At), where, text, act)
	}
}

func (p *printer) summary(at time.Time, nodes []NodeView) {
	t := totals(nodes)
	util := 0.0
	if up := t.gpus - t.lost - t.silent; up > 0 {
		util = t.utilSum / float64(up)
	}
	var states []string
	for s := telemetry.StateHealthy; s <= telemetry.StateProbation; s++ {
		if n := t.states[s]; n > 0 {
			states = append(states, fmt.Sprintf("%d %s", n, s))
		}
	}
	fmt.Fprintf(p.w, "%s  fleet: %d GPUs, %d allocated, %d busy, %d lost, %d silent | util %.0f%% | %.1f kW | hottest %.0f C (%s) | NVLink %d/%d | IB %d/%d | %d Xids | %d conditions | nodes %s\n",
		p.offset(at), t.gpus, t.allocated, t.busy, t.lost, t.silent, util, t.powerW/1000, t.hottest, t.hottestAt,
		t.linksUp, t.links, t.portsUp, t.ports, t.xids, t.conditions, strings.Join(states, ", "))
}

// table prints one row per node: its health as its agent and as the server's
// drain controller see it, and its numbers.
func (p *printer) table(nodes []NodeView, ctl map[string]drain.NodeStatus) {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tSERVER\tACTION\tALLOC\tUTIL\tPOWER\tMAX TEMP\tNVLINK UP\tIB UP\tXIDS\tCONDITIONS")
	for _, n := range nodes {
		var alloc, ok int
		var util, power, maxT float64
		var up, links, portsUp int
		for _, g := range n.GPUs {
			if g.Lost || !g.Answered {
				continue
			}
			ok++
			if g.Procs > 0 {
				alloc++
			}
			util += g.Util
			power += g.PowerW
			maxT = max(maxT, g.TempC)
			up += g.LinksUp
			links += g.Links
		}
		for _, pt := range n.Ports {
			if pt.Active {
				portsUp++
			}
		}
		if ok > 0 {
			util /= float64(ok)
		}
		act := string(n.Report.Action)
		if act == "" {
			act = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%.0f%%\t%.1f kW\t%.0f C\t%d/%d\t%d/%d\t%d\t%s\n",
			n.Name, n.Report.State, serverState(ctl[n.Name]), act, alloc, util, power/1000, maxT, up, links, portsUp, len(n.Ports), n.Xids,
			conditionList(n))
	}
	tw.Flush()
}

// conditionList is a node's active conditions grouped by target, worst first:
// "gpu3: xid ecc-dbe; mlx5_6/port1: ib-down".
func conditionList(n NodeView) string {
	var order []string
	by := map[string][]string{}
	for _, c := range n.Report.AllConditions() {
		if !notable(c) {
			continue
		}
		t := shortTarget(c.Target)
		if t == "" {
			t = "node"
		}
		if _, ok := by[t]; !ok {
			order = append(order, t)
		}
		k := string(c.Kind)
		if c.Kind == telemetry.ConditionXid && c.Evidence["xid"] != "" {
			k = "xid" + c.Evidence["xid"]
		}
		if !slices.Contains(by[t], k) {
			by[t] = append(by[t], k)
		}
	}
	parts := make([]string, len(order))
	for i, t := range order {
		parts[i] = t + ": " + strings.Join(by[t], " ")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// metricsExcerpt is how many lines of the worst node's /metrics the final summary
// shows by default.
const metricsExcerpt = 24

func (p *printer) final(res *Result, o Options) {
	all := o.ShowMetrics != ""
	fmt.Fprintln(p.w)
	fmt.Fprintf(p.w, "after %s of simulated time, as the agents report it (SERVER: the drain controller's state of the node):\n", res.Simulated.Round(time.Second))
	ctl := map[string]drain.NodeStatus{}
	for _, n := range res.Drain.Nodes {
		ctl[n.Node] = n
	}
	p.table(res.Nodes, ctl)
	fmt.Fprintln(p.w)

	byXid := map[int]int{}
	for _, e := range res.Events {
		if e.Kind == EventXid {
			byXid[e.Xid] += e.Count
		}
	}
	codes := make([]int, 0, len(byXid))
	for c := range byXid {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		a := "not in the catalog"
		if info, ok := telemetry.LookupXid(c); ok {
			a = string(info.Action)
			if a == "" {
				a = "the driver's recovery action"
			}
		}
		parts = append(parts, fmt.Sprintf("Xid %d ×%d (%s)", c, byXid[c], a))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	fmt.Fprintf(p.w, "Xids counted by the agents: %s\n", strings.Join(parts, ", "))
	var raised, cleared int
	for _, e := range res.Events {
		switch e.Kind {
		case EventRaised:
			raised++
		case EventCleared:
			cleared++
		}
	}
	var out []string
	for _, n := range res.Nodes {
		if !n.Report.State.Schedulable() {
			out = append(out, n.Name+" ("+n.Report.State.String()+")")
		}
	}
	if len(out) == 0 {
		out = []string{"none"}
	}
	fmt.Fprintf(p.w, "health conditions raised %d, cleared %d; nodes taking no new work: %s\n", raised, cleared, strings.Join(out, ", "))
	a := res.acct
	h := func(s float64) float64 { return s / 3600 }
	eff := 0.0
	if a.allocGPUs > 0 {
		eff = 100 * a.measured / a.allocGPUs
	}
	fmt.Fprintf(p.w, "GPU-hours allocated %.1f, measured busy %.1f (%.0f%% efficiency); energy %.1f kWh\n",
		h(a.allocGPUs), h(a.measured), eff, (a.energy-a.energy0)/3.6e9)
	if n := res.HealthCycles + res.FullCycles; n > 0 {
		fmt.Fprintf(p.w, "the agents ran %d health and %d full cycles in %.1f s of CPU (shipping to the store alongside): %.1f ms per node and cycle\n",
			res.HealthCycles, res.FullCycles, res.AgentCPU.Seconds(), float64(res.AgentCPU.Microseconds())/1000/float64(n))
	}
	p.store(res, o)
	p.drainSummary(res.Drain)
	fmt.Fprintln(p.w, res.Placement.summaryLine())
	fmt.Fprintln(p.w)
	if fs := res.FairShare; fs.Standing != nil {
		p.standing(p.start.Add(res.Simulated), fs.Standing, fs.ByAllocation, true)
		if fs.Err != nil {
			fmt.Fprintf(p.w, "the fair-share feeder's last read failed: %v\n", fs.Err)
		}
	}

	lines := strings.Split(strings.TrimRight(res.Metrics, "\n"), "\n")
	url := ""
	for _, n := range res.Nodes {
		if n.Name == res.MetricsNode {
			url = n.URL + "/metrics"
		}
	}
	fmt.Fprintln(p.w)
	if all {
		fmt.Fprintf(p.w, "%s's /metrics (%s, %d lines):\n", res.MetricsNode, url, len(lines))
		fmt.Fprintln(p.w, strings.Join(lines, "\n"))
		return
	}
	// The health and Xid series of the worst node: the lines on-call reads first.
	var pick []string
	for _, l := range lines {
		switch name, _, _ := strings.Cut(l, "{"); name {
		case telemetry.MetricNodeHealthState, telemetry.MetricXidErrorsTotal:
		case telemetry.MetricHealthCondition:
			if strings.Contains(l, `severity="info"`) && !strings.Contains(l, `action="`) {
				continue // a busy GPU at its power cap
			}
		case telemetry.MetricGPUHealthState, telemetry.DCGMXidErrors:
			if strings.HasSuffix(l, " 0") {
				continue
			}
		default:
			continue
		}
		pick = append(pick, l)
	}
	more := ""
	if len(pick) > metricsExcerpt {
		more = fmt.Sprintf(", first %d", metricsExcerpt)
		pick = pick[:metricsExcerpt]
	}
	fmt.Fprintf(p.w, "from %s's /metrics (%d lines; `--show-metrics %s` prints them all), its health and Xid series%s:\n",
		res.MetricsNode, len(lines), res.MetricsNode, more)
	for _, l := range pick {
		fmt.Fprintln(p.w, "  "+l)
	}
}

// store prints what the demo's store holds, as it answers.
func (p *printer) store(res *Result, o Options) {
	st := res.Store
	fmt.Fprintf(p.w, "the store at %s holds %d series: it accepted %d samples and refused %d; the agents sent %d and dropped %d\n",
		st.URL, st.Series, st.Accepted, st.Rejected, st.Sent, st.Dropped)
	cycles := res.HealthCycles + res.FullCycles
	var parts []string
	for _, a := range st.Answers {
		why := ""
		switch a.Expr {
		case queryGPUs:
			why = " GPUs"
		case queryXids:
			why = fmt.Sprintf(" (the agents counted %d)", totals(res.Nodes).xids)
			if p.rebootedLately(res) {
				why = fmt.Sprintf(" (the agents counted %d on their current boots; the counters from before a reboot of the last 5m still count)", totals(res.Nodes).xids)
			}
		case queryAttributed:
			why = " GPUs attributed to a job and its account"
		default:
			why = fmt.Sprintf(" (the agents ran %d cycles; a steady value is shipped once per %s)", cycles, time.Duration(o.FullEvery)*o.Tick)
		}
		v := fmt.Sprintf("%g", a.Value)
		if math.IsNaN(a.Value) {
			v = "no series"
		}
		parts = append(parts, fmt.Sprintf("%s = %s%s", a.Expr, v, why))
	}
	fmt.Fprintf(p.w, "PromQL at %s: %s\n", p.offset(p.start.Add(res.Simulated)), strings.Join(parts, "; "))
	switch {
	case o.KeepServing:
	case o.Dir != "":
		fmt.Fprintf(p.w, "the server stops with the demo (`--keep-serving` keeps it up); `gpuwatch server --data-dir %s` serves its data again\n", st.Dir)
	case o.Duration > 0:
		fmt.Fprintf(p.w, "the server stops with the demo: `--keep-serving` keeps it up for Grafana\n")
	}
}

// serverState is the drain controller's state of a node, with what it waits for.
func serverState(n drain.NodeStatus) string {
	if n.Node == "" {
		return "-"
	}
	s := n.State.String()
	switch {
	case n.WaitingBudget:
		s += " (budget)"
	case n.Held != "":
		s += " (not ours)"
	case n.Mode != "" && !n.Schedulable:
		s += " (" + string(n.Mode) + ")"
	}
	return s
}

// drainSummary prints what the drain controller did over the run.
func (p *printer) drainSummary(d DrainResult) {
	var drained, refused []string
	seen := map[string]bool{}
	for _, r := range d.Audit {
		if r.Event == "decision" && r.Outcome == drain.OutcomeSkippedBudget && !seen[r.Node] {
			seen[r.Node] = true
			refused = append(refused, r.Node)
		}
	}
	for _, l := range d.Drains {
		drained = append(drained, l.Node+" "+l.Action)
	}
	var resumed []string
	for _, r := range d.Audit {
		if r.Event == "actuation" && r.Action == "resume" && r.Outcome == drain.OutcomeAccepted {
			resumed = append(resumed, r.Node)
		}
	}
	list := func(xs []string) string {
		if len(xs) == 0 {
			return ""
		}
		return " (" + strings.Join(xs, ", ") + ")"
	}
	how := "log actuator: what it would have done"
	if d.Actuator == "slurm" {
		how = "through the local Slurm cluster"
	}
	fmt.Fprintf(p.w, "the drain controller (%s) drained %s%s and resumed %d%s; %s refused for budget%s\n",
		how, plural(len(d.Drains), "node"), list(drained), len(resumed), list(resumed), plural(len(refused), "drain"), list(refused))
	b := d.Budget
	state := "closed"
	if b.Tripped {
		state = "TRIPPED: automation drains nothing more until a person resets it (POST /api/gpuwatch/v1/budget/reset)"
	}
	fmt.Fprintf(p.w, "drain budget: %d of %d nodes used in the %s window (%s of %d known nodes); circuit breaker %s\n",
		b.Used, b.Limit, b.Window, b.Max, b.Known, state)
	held := slices.Sorted(maps.Keys(d.Held))
	var hs []string
	for _, n := range held {
		// The reason's cause: "gpuwatch: ecc-dbe gpu=GPU-… action=…" → "gpuwatch: ecc-dbe".
		f := strings.Fields(d.Held[n])
		hs = append(hs, fmt.Sprintf("%s (%s)", n, strings.Join(f[:min(len(f), 2)], " ")))
	}
	who := "the log actuator holds"
	if d.Actuator == "slurm" {
		who = "Slurm holds (scontrol show node)"
	}
	if len(hs) == 0 {
		hs = []string{"none"}
	}
	fmt.Fprintf(p.w, "%s out of service at the end: %s\n", who, strings.Join(hs, ", "))
	if len(d.Drains) > 0 {
		var ls []time.Duration
		var each []string
		for _, l := range d.Drains {
			ls = append(ls, l.Latency())
			each = append(each, fmt.Sprintf("%s %s", l.Node, l.Latency()))
		}
		fmt.Fprintf(p.w, "fault to drain in simulated time (the scripted fault to the actuator accepting): p50 %s, max %s over %s: %s\n",
			percentile(ls, 50), percentile(ls, 100), plural(len(ls), "drain"), strings.Join(each, ", "))
	}
}

// plural is "1 node", "2 nodes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// rebootedLately reports whether a node rebooted within PromQL's lookback (5m)
// of the end, so that its old boot's counters are still in an instant query.
func (p *printer) rebootedLately(res *Result) bool {
	end := p.start.Add(res.Simulated)
	for _, r := range res.Drain.Reboots {
		if r.Down.After(end.Add(-5 * time.Minute)) {
			return true
		}
	}
	return false
}
