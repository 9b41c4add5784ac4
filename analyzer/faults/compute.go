package faults

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// FromAudit picks the drains out of the drain controller's audit records:
// transitions into draining (automatic or manual), dry runs left out.
func FromAudit(recs []drain.AuditRecord) []Drain {
	var out []Drain
	for _, r := range recs {
		if r.Event == "transition" && r.To == telemetry.StateDraining.String() && !r.DryRun {
			out = append(out, Drain{Node: r.Node, Time: r.Time, Reason: r.Note})
		}
	}
	return out
}

// event is a counter's growth n seen at step t.
type event struct {
	t time.Time
	n float64
}

// counter walks a counter series: its growth over the points (a decrease is a
// reset, after which the new value is growth), and when it grew. born: a
// series whose first point comes after start was created by its first event
// (gpuwatch_xid_errors_total), so its first value is growth too.
func counter(s store.Series, start time.Time, born bool) (total float64, events []event) {
	for i, p := range s.Points {
		var d float64
		switch {
		case i == 0:
			if born && p.T.After(start) {
				d = p.V
			}
		case p.V >= s.Points[i-1].V:
			d = p.V - s.Points[i-1].V
		default:
			d = p.V
		}
		if d > 0 {
			total += d
			events = append(events, event{p.T, d})
		}
	}
	return total, events
}

func last(s store.Series) float64 {
	if len(s.Points) == 0 {
		return 0
	}
	return s.Points[len(s.Points)-1].V
}

func nodeOf(l telemetry.Labels) string {
	if n := l.Get(telemetry.LabelNode); n != "" {
		return n
	}
	if n := l.Get(telemetry.DCGMLabelHostname); n != "" {
		return n
	}
	return None
}

func gpuOf(l telemetry.Labels) string {
	if g := l.Get(telemetry.LabelGPUUUID); g != "" {
		return g
	}
	if g := l.Get(telemetry.DCGMLabelUUID); g != "" {
		return g
	}
	return None
}

func firstOf(l telemetry.Labels, names ...string) string {
	for _, n := range names {
		if v := l.Get(n); v != "" {
			return v
		}
	}
	return None
}

// Compute reads the store over opts.From to opts.To and builds the report;
// drains are the drain controller's (FromAudit), drainNote says why there are
// none when the server keeps no audit log. docs/faults-report.md defines each
// number.
func Compute(ctx context.Context, q store.Querier, opts Options, drains []Drain, drainNote string) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	step := opts.step()
	rng := store.Range{Start: opts.From, End: opts.To, Step: step}
	read := func(name string) (store.Matrix, error) {
		m, err := q.Range(ctx, name, rng)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		return m, nil
	}
	// changedIn reads only the nodes on which some series of the family
	// changed in the window (plus the lookback before it), and the extra
	// ones: the error counters of a healthy fleet never change, and reading
	// all of them at 10,000 points a series would be most of the report's
	// cost. Every series of the family is read on those nodes.
	span := fmt.Sprintf("%ds", int64((opts.To.Sub(opts.From)+lookback)/time.Second))
	changedIn := func(family []string, extra store.Vector) (func(string) (store.Matrix, error), error) {
		nodes := map[string][]string{} // node label → its values
		seen := map[string]bool{}
		add := func(l telemetry.Labels) {
			key, val := telemetry.LabelNode, l.Get(telemetry.LabelNode)
			if val == "" {
				key, val = telemetry.DCGMLabelHostname, l.Get(telemetry.DCGMLabelHostname)
			}
			if val != "" && !seen[key+"\xff"+val] {
				seen[key+"\xff"+val] = true
				nodes[key] = append(nodes[key], regexp.QuoteMeta(val))
			}
		}
		for _, smp := range extra {
			add(smp.Labels)
		}
		for _, name := range family {
			v, err := q.Instant(ctx, "changes("+name+"["+span+"]) > 0", opts.To)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", name, err)
			}
			for _, smp := range v {
				add(smp.Labels)
			}
		}
		return func(name string) (store.Matrix, error) {
			var out store.Matrix
			got := map[string]bool{}
			for _, key := range []string{telemetry.LabelNode, telemetry.DCGMLabelHostname} {
				vals := nodes[key]
				if len(vals) == 0 {
					continue
				}
				sort.Strings(vals)
				m, err := read(name + "{" + key + "=~" + strconv.Quote(strings.Join(vals, "|")) + "}")
				if err != nil {
					return nil, err
				}
				for _, s := range m {
					if k := s.Labels.String(); !got[k] {
						got[k] = true
						out = append(out, s)
					}
				}
			}
			return out, nil
		}, nil
	}

	r := &Report{From: opts.From.UTC(), To: opts.To.UTC(), StepSeconds: step.Seconds(), GeneratedAt: opts.Now().UTC(),
		DrainAuditNote: drainNote, LemonCount: opts.LemonCount, LemonWindowSec: int64(opts.LemonWindow / time.Second),
		MTBFByNode: []MTBF{}, MTBFByMod: []MTBF{}}
	hours := opts.To.Sub(opts.From).Hours()

	// Inventory: each GPU's model, each node's most common model.
	info, err := q.Instant(ctx, "last_over_time("+telemetry.MetricGPUInfo+"["+span+"])", opts.To)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", telemetry.MetricGPUInfo, err)
	}
	gpuModel := map[string]string{}
	nodeModels := map[string]map[string]int{}
	for _, s := range info {
		node, gpu, model := nodeOf(s.Labels), gpuOf(s.Labels), firstOf(s.Labels, telemetry.LabelModel)
		if _, seen := gpuModel[gpu]; !seen {
			gpuModel[gpu] = model
			if nodeModels[node] == nil {
				nodeModels[node] = map[string]int{}
			}
			nodeModels[node][model]++
		}
	}
	r.GPUs = len(gpuModel)
	nodeModel := func(node string) string {
		best, n := None, 0
		for m, k := range nodeModels[node] {
			if k > n || (k == n && m < best) {
				best, n = m, k
			}
		}
		return best
	}

	// Xids, and the failures among them.
	xids, err := read(telemetry.MetricXidErrorsTotal)
	if err != nil {
		return nil, err
	}
	byCode, byAct, byModel, byNode := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	failures := map[string][]time.Time{} // node → failure event times
	for _, s := range xids {
		n, evs := counter(s, opts.From, true)
		if n == 0 {
			continue
		}
		node, gpu := nodeOf(s.Labels), gpuOf(s.Labels)
		model, ok := gpuModel[gpu]
		if !ok {
			model = nodeModel(node)
		}
		act := firstOf(s.Labels, telemetry.LabelAction)
		r.XidTotal += n
		byCode[firstOf(s.Labels, telemetry.LabelXid)] += n
		byAct[act] += n
		byModel[model] += n
		byNode[node] += n
		if act != None && telemetry.Action(act).Rank() >= FailureAction.Rank() {
			for _, e := range evs {
				failures[node] = append(failures[node], e.t)
			}
		}
	}
	r.XidByCode, r.XidByAct, r.XidByModel, r.XidByNode = counts(byCode, true), counts(byAct, false), counts(byModel, false), counts(byNode, false)

	// Health conditions raised, by kind.
	conds, err := read(telemetry.MetricHealthConditionsTotal)
	if err != nil {
		return nil, err
	}
	byKind := map[string]float64{}
	for _, s := range conds {
		if n, _ := counter(s, opts.From, true); n > 0 {
			byKind[firstOf(s.Labels, telemetry.LabelCondition)] += n
		}
	}
	r.Conditions = counts(byKind, false)

	// Drains: failures, and lemons.
	nodeDrains := map[string][]Drain{}
	for _, d := range drains {
		if d.Time.Before(opts.From) || d.Time.After(opts.To) {
			continue
		}
		failures[d.Node] = append(failures[d.Node], d.Time)
		nodeDrains[d.Node] = append(nodeDrains[d.Node], d)
	}
	r.Lemons = lemons(nodeDrains, opts)

	// MTBF: every node seen (inventory or a failure) is observed the window.
	nodes := map[string]bool{}
	for n := range nodeModels {
		nodes[n] = true
	}
	for n := range failures {
		nodes[n] = true
	}
	r.Nodes = len(nodes)
	models := map[string]*MTBF{}
	for node := range nodes {
		f := incidents(failures[node])
		r.Failures += f
		m := nodeModel(node)
		if models[m] == nil {
			models[m] = &MTBF{Key: m}
		}
		models[m].Nodes++
		models[m].ObservedHours += hours
		models[m].Failures += f
		if f > 0 {
			r.MTBFByNode = append(r.MTBFByNode, mtbf(MTBF{Key: node, Nodes: 1, ObservedHours: hours, Failures: f}))
		}
	}
	for _, m := range models {
		r.MTBFByMod = append(r.MTBFByMod, mtbf(*m))
	}
	sortMTBF(r.MTBFByNode)
	sortMTBF(r.MTBFByMod)

	lastValue := func(name string) (store.Vector, error) {
		v, err := q.Instant(ctx, "last_over_time("+name+"["+span+"]) != 0", opts.To)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		return v, nil
	}
	var flags store.Vector
	for _, name := range remapFlags {
		v, err := lastValue(name)
		if err != nil {
			return nil, err
		}
		for _, smp := range v {
			smp.Name = name // last_over_time drops it
			flags = append(flags, smp)
		}
	}
	for _, f := range []struct {
		family []string
		extra  store.Vector
		run    func(func(string) (store.Matrix, error)) error
	}{
		{memoryCounters, flags, func(rd func(string) (store.Matrix, error)) (err error) {
			r.DrainSoon, err = drainSoon(rd, flags, opts, hours)
			return err
		}},
		{ibCounters, nil, func(rd func(string) (store.Matrix, error)) (err error) {
			r.IBPorts, err = ibPorts(rd, opts)
			return err
		}},
		{nvlinkCounters, nil, func(rd func(string) (store.Matrix, error)) (err error) {
			r.NVLinks, err = nvLinks(rd, opts)
			return err
		}},
	} {
		rd, err := changedIn(f.family, f.extra)
		if err != nil {
			return nil, err
		}
		if err := f.run(rd); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// counts sorts a breakdown by count, largest first, then by key (numerically
// for Xid codes).
func counts(m map[string]float64, numeric bool) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if numeric && len(out[i].Key) != len(out[j].Key) {
			return len(out[i].Key) < len(out[j].Key)
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// incidents counts failures: events of one node closer than IncidentGap to the
// one before are the same failure.
func incidents(ts []time.Time) int {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	n := 0
	for i, t := range ts {
		if i == 0 || t.Sub(ts[i-1]) >= IncidentGap {
			n++
		}
	}
	return n
}

func mtbf(m MTBF) MTBF {
	if m.Failures > 0 {
		h := m.ObservedHours / float64(m.Failures)
		m.MTBFHours = &h
	}
	return m
}

// sortMTBF: most failures first, then shortest MTBF, then by key.
func sortMTBF(ms []MTBF) {
	slices.SortFunc(ms, func(a, b MTBF) int {
		if c := cmp.Compare(b.Failures, a.Failures); c != 0 {
			return c
		}
		if a.MTBFHours != nil && b.MTBFHours != nil {
			if c := cmp.Compare(*a.MTBFHours, *b.MTBFHours); c != 0 {
				return c
			}
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// lemons: nodes with LemonCount drains or more within some LemonWindow.
func lemons(byNode map[string][]Drain, opts Options) []Lemon {
	out := []Lemon{}
	for node, ds := range byNode {
		slices.SortFunc(ds, func(a, b Drain) int { return a.Time.Compare(b.Time) })
		most, i := 0, 0
		for j := range ds {
			for ds[j].Time.Sub(ds[i].Time) > opts.LemonWindow {
				i++
			}
			most = max(most, j-i+1)
		}
		if most < opts.LemonCount {
			continue
		}
		l := Lemon{Node: node, Drains: len(ds), MaxWithin: most}
		for _, d := range ds {
			l.Times = append(l.Times, d.Time.UTC())
			if d.Reason != "" {
				l.Reasons = append(l.Reasons, d.Reason)
			}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Lemon) int {
		if c := cmp.Compare(b.MaxWithin, a.MaxWithin); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Drains, a.Drains); c != 0 {
			return c
		}
		return strings.Compare(a.Node, b.Node)
	})
	return out
}

type gpuKey struct{ node, gpu string }

// drainSoon: the GPUs whose retired pages or uncorrectable remapped rows grew
// in the window, or whose row remapping is pending or failed.
// The row remapping flags are read as they stand at the window's end
// (nonzero), changed in the window or not.
func drainSoon(read func(string) (store.Matrix, error), flags store.Vector, opts Options, hours float64) ([]DrainSoon, error) {
	type acc struct {
		retired, retiredGrowth, rows, rowsGrowth, rowsCE, dbe float64
		pending, failed                                       bool
	}
	gpus := map[gpuKey]*acc{}
	get := func(l telemetry.Labels) *acc {
		k := gpuKey{nodeOf(l), gpuOf(l)}
		if gpus[k] == nil {
			gpus[k] = &acc{}
		}
		return gpus[k]
	}
	for _, c := range []struct {
		name string
		add  func(a *acc, s store.Series)
	}{
		{telemetry.DCGMRetiredSBE, func(a *acc, s store.Series) {
			g, _ := counter(s, opts.From, false)
			a.retired, a.retiredGrowth = a.retired+last(s), a.retiredGrowth+g
		}},
		{telemetry.DCGMRetiredDBE, func(a *acc, s store.Series) {
			g, _ := counter(s, opts.From, false)
			a.retired, a.retiredGrowth = a.retired+last(s), a.retiredGrowth+g
		}},
		{telemetry.DCGMUncorrectableRemappedRows, func(a *acc, s store.Series) {
			g, _ := counter(s, opts.From, false)
			a.rows, a.rowsGrowth = last(s), g
		}},
		{telemetry.DCGMCorrectableRemappedRows, func(a *acc, s store.Series) { a.rowsCE = last(s) }},
		{telemetry.DCGMECCDBEAggTotal, func(a *acc, s store.Series) { a.dbe, _ = counter(s, opts.From, false) }},
	} {
		m, err := read(c.name)
		if err != nil {
			return nil, err
		}
		for _, s := range m {
			c.add(get(s.Labels), s)
		}
	}
	for _, smp := range flags {
		a := get(smp.Labels)
		if smp.Name == telemetry.DCGMRowRemapFailure {
			a.failed = true
		} else {
			a.pending = true
		}
	}
	out := []DrainSoon{}
	for k, a := range gpus {
		if a.retiredGrowth == 0 && a.rowsGrowth == 0 && !a.pending && !a.failed {
			continue
		}
		d := DrainSoon{Node: k.node, GPU: k.gpu, DBEGrowth: a.dbe, RemapPending: a.pending, RemapFailed: a.failed, RemappedRowsCE: a.rowsCE}
		pages := a.retired / RetiredPagesLimit
		rows := a.rows / RemappedRowsLimit
		if a.retiredGrowth > 0 && (a.rowsGrowth == 0 || pages >= rows) {
			d.What, d.Value, d.Growth, d.Limit, d.Fraction = "retired_pages", a.retired, a.retiredGrowth, RetiredPagesLimit, pages
		} else {
			d.What, d.Value, d.Growth, d.Limit, d.Fraction = "remapped_rows", a.rows, a.rowsGrowth, RemappedRowsLimit, rows
		}
		if d.Growth > 0 {
			h := math.Max(0, (d.Limit-d.Value)/(d.Growth/hours))
			d.HoursToLimit = &h
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b DrainSoon) int {
		if a.RemapFailed != b.RemapFailed {
			return map[bool]int{true: -1, false: 1}[a.RemapFailed]
		}
		switch {
		case a.HoursToLimit != nil && b.HoursToLimit == nil:
			return -1
		case a.HoursToLimit == nil && b.HoursToLimit != nil:
			return 1
		case a.HoursToLimit != nil:
			if c := cmp.Compare(*a.HoursToLimit, *b.HoursToLimit); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(b.Fraction, a.Fraction); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.GPU, b.GPU))
	})
	return out[:min(len(out), opts.Top)], nil
}

// ibPorts ranks InfiniBand ports by flaps, then symbol errors.
func ibPorts(read func(string) (store.Matrix, error), opts Options) ([]IBPort, error) {
	type key struct{ node, dev, port string }
	ports := map[key]*IBPort{}
	for _, name := range []string{telemetry.NodeIBLinkDownedTotal, telemetry.MetricIBSymbolErrorsTotal} {
		m, err := read(name)
		if err != nil {
			return nil, err
		}
		for _, s := range m {
			g, _ := counter(s, opts.From, false)
			if g == 0 {
				continue
			}
			k := key{nodeOf(s.Labels), firstOf(s.Labels, telemetry.LabelIBDevice, telemetry.NodeExpLabelDevice),
				firstOf(s.Labels, telemetry.LabelIBPort, telemetry.NodeExpLabelPort)}
			if ports[k] == nil {
				ports[k] = &IBPort{Node: k.node, Device: k.dev, Port: k.port}
			}
			if name == telemetry.NodeIBLinkDownedTotal {
				ports[k].Flaps += g
			} else {
				ports[k].SymbolErrors += g
			}
		}
	}
	out := make([]IBPort, 0, len(ports))
	for _, p := range ports {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b IBPort) int {
		return cmp.Or(cmp.Compare(b.Flaps, a.Flaps), cmp.Compare(b.SymbolErrors, a.SymbolErrors),
			strings.Compare(a.Node, b.Node), strings.Compare(a.Device, b.Device), strings.Compare(a.Port, b.Port))
	})
	return out[:min(len(out), opts.Top)], nil
}

// nvLinks ranks NVLinks by CRC errors plus replays, then recovery errors.
func nvLinks(read func(string) (store.Matrix, error), opts Options) ([]NVLinkLink, error) {
	type key struct{ node, gpu, link string }
	links := map[key]*NVLinkLink{}
	for _, name := range []string{telemetry.MetricNVLinkCRCFlitErrorsTotal, telemetry.MetricNVLinkCRCDataErrorsTotal,
		telemetry.MetricNVLinkReplayErrorsTotal, telemetry.MetricNVLinkRecoveryErrorsTotal} {
		m, err := read(name)
		if err != nil {
			return nil, err
		}
		for _, s := range m {
			g, _ := counter(s, opts.From, false)
			if g == 0 {
				continue
			}
			k := key{nodeOf(s.Labels), gpuOf(s.Labels), firstOf(s.Labels, telemetry.LabelLink)}
			if links[k] == nil {
				links[k] = &NVLinkLink{Node: k.node, GPU: k.gpu, Link: k.link}
			}
			switch name {
			case telemetry.MetricNVLinkReplayErrorsTotal:
				links[k].Replays += g
			case telemetry.MetricNVLinkRecoveryErrorsTotal:
				links[k].Recovery += g
			default:
				links[k].CRCErrors += g
			}
		}
	}
	out := make([]NVLinkLink, 0, len(links))
	for _, l := range links {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b NVLinkLink) int {
		return cmp.Or(cmp.Compare(b.CRCErrors+b.Replays, a.CRCErrors+a.Replays), cmp.Compare(b.Recovery, a.Recovery),
			strings.Compare(a.Node, b.Node), strings.Compare(a.GPU, b.GPU), strings.Compare(a.Link, b.Link))
	})
	return out[:min(len(out), opts.Top)], nil
}

// The counter families read only on nodes where one of them changed, and the
// row remapping flags, read as they stand at the window's end.
var (
	memoryCounters = []string{telemetry.DCGMRetiredSBE, telemetry.DCGMRetiredDBE, telemetry.DCGMUncorrectableRemappedRows,
		telemetry.DCGMCorrectableRemappedRows, telemetry.DCGMECCDBEAggTotal}
	ibCounters     = []string{telemetry.NodeIBLinkDownedTotal, telemetry.MetricIBSymbolErrorsTotal}
	nvlinkCounters = []string{telemetry.MetricNVLinkCRCFlitErrorsTotal, telemetry.MetricNVLinkCRCDataErrorsTotal,
		telemetry.MetricNVLinkReplayErrorsTotal, telemetry.MetricNVLinkRecoveryErrorsTotal}
	remapFlags = []string{telemetry.DCGMRowRemapPending, telemetry.DCGMRowRemapFailure}
)

// lookback is the PromQL lookback delta: a range query's first point stands
// for the last sample up to this long before the window.
const lookback = 5 * time.Minute
