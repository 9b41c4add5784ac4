package ui

import (
	"bytes"
	"context"
	"html"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// fleetData is the fleet as the fleet page shows it, built once per snapshot.
type fleetData struct {
	builtAt time.Time
	nodes   []fleetNode // by leaf, then node name (natural order)
	leaves  []string
	models  []string
	// accounts are every account holding a GPU.
	accounts []string
	err      string
}

type fleetNode struct {
	name  string
	leaf  string
	model string
	gpus  []fleetGPU
	// accounts holding a GPU of the node, sorted.
	accounts []string
}

type fleetGPU struct {
	index int
	state cellState // the agent's verdict (stale: unknown)
	util  float64   // NaN when unknown
	jobs  []string
}

// fleetData returns the fleet page's cells, built once per snapshot: the
// placement engine's, or one the UI read from the store itself within
// SnapshotEvery.
func (u *UI) fleetData(ctx context.Context) *fleetData {
	u.fleetMu.Lock()
	defer u.fleetMu.Unlock()
	var snap *snapshot.Snapshot
	if u.opts.Snapshot != nil {
		snap = u.opts.Snapshot()
	}
	if snap == nil || snap.Len() == 0 {
		// No placement service (or its first feed has not run): read the
		// store the way it does, at most every SnapshotEvery.
		if u.fleet != nil && u.fleetSnap == nil && time.Since(u.fleetAt) < u.opts.SnapshotEvery {
			return u.fleet
		}
		s, _, err := service.Feed(ctx, u.opts.Querier, service.FeedOptions{Now: u.opts.Now()})
		u.fleetAt = time.Now()
		if err != nil {
			u.fleet, u.fleetSnap = &fleetData{err: "cannot read the fleet from the store: " + err.Error()}, nil
			return u.fleet
		}
		snap = s
		u.fleet, u.fleetSnap = buildFleet(snap, u.accounts(ctx, snap.Now())), nil
		return u.fleet
	}
	if u.fleet != nil && u.fleetSnap == snap {
		return u.fleet
	}
	u.fleet, u.fleetSnap = buildFleet(snap, u.accounts(ctx, snap.Now())), snap
	return u.fleet
}

// accounts reads which account holds each GPU (node, index → accounts).
func (u *UI) accounts(ctx context.Context, now time.Time) map[gpuKey][]string {
	v, err := u.opts.Querier.Instant(ctx, "max by (node, gpu_index, account) (last_over_time("+telemetry.MetricGPUAllocationInfo+"[1m]))", now)
	if err != nil {
		return nil
	}
	out := map[gpuKey][]string{}
	for _, s := range v {
		acct := s.Labels.Get(telemetry.LabelAccount)
		i, err := strconv.Atoi(s.Labels.Get(telemetry.LabelGPUIndex))
		if acct == "" || err != nil {
			continue
		}
		k := gpuKey{s.Labels.Get(telemetry.LabelNode), i}
		out[k] = append(out[k], acct)
	}
	return out
}

type gpuKey struct {
	node  string
	index int
}

func buildFleet(snap *snapshot.Snapshot, accts map[gpuKey][]string) *fleetData {
	f := &fleetData{builtAt: snap.Now(), nodes: make([]fleetNode, 0, snap.Len())}
	leaves, models, accounts := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range snap.Len() {
		n := snap.Node(i)
		fn := fleetNode{name: n.Name, leaf: n.Location.Leaf, gpus: make([]fleetGPU, len(n.GPUs))}
		var nodeAccts []string
		for j := range n.GPUs {
			g := &n.GPUs[j]
			st := fromState(g.Health.Value)
			if g.Health.Stale || g.Health.At.IsZero() {
				st = cellUnknown
			}
			util := math.NaN()
			if !g.Utilization.Stale && !g.Utilization.At.IsZero() {
				util = g.Utilization.Value
			}
			fn.gpus[j] = fleetGPU{index: g.Index, state: st, util: util, jobs: g.Jobs}
			if fn.model == "" {
				fn.model = g.Model
			} else if g.Model != "" && g.Model != fn.model {
				fn.model = "mixed"
			}
			nodeAccts = append(nodeAccts, accts[gpuKey{n.Name, g.Index}]...)
		}
		slices.Sort(nodeAccts)
		fn.accounts = slices.Compact(nodeAccts)
		for _, a := range fn.accounts {
			accounts[a] = true
		}
		leaves[fn.leaf] = true
		if fn.model != "" {
			models[fn.model] = true
		}
		f.nodes = append(f.nodes, fn)
	}
	// The snapshot's nodes are in natural name order; group them by leaf
	// keeping that order within a leaf.
	sort.SliceStable(f.nodes, func(a, b int) bool { return leafLess(f.nodes[a].leaf, f.nodes[b].leaf) })
	f.leaves = keys(leaves)
	sort.Slice(f.leaves, func(a, b int) bool { return leafLess(f.leaves[a], f.leaves[b]) })
	f.models, f.accounts = keys(models), keys(accounts)
	sort.Strings(f.models)
	sort.Strings(f.accounts)
	return f
}

// leafLess orders leaves by name, the unknown leaf last.
func leafLess(a, b string) bool {
	if (a == "") != (b == "") {
		return b == ""
	}
	return a < b
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// fleetFilter is the fleet page's query.
type fleetFilter struct {
	States  [numCellStates]bool
	AnySt   bool
	Model   string
	Leaf    string
	Account string
	Query   string // node name substring
	Util    bool   // colour by utilization
}

func parseFleetFilter(q url.Values) fleetFilter {
	f := fleetFilter{Model: q.Get("model"), Leaf: q.Get("switch"), Account: q.Get("account"), Query: strings.TrimSpace(q.Get("q")),
		Util: q.Get("color") == "util"}
	for _, s := range q["state"] {
		for i, si := range stateInfo {
			if si.Key == s {
				f.States[i], f.AnySt = true, true
			}
		}
	}
	return f
}

// drainView is a node's state as the drain controller holds it.
type drainView struct {
	state   telemetry.State
	reason  string
	gpus    map[int]telemetry.State
	waiting bool
}

// fleetView is the fleet page's data.
type fleetView struct {
	Filter   fleetFilter
	States   []stateCount
	Leaves   []string
	Models   []string
	Accounts []string
	Grid     template.HTML
	Shown    int // nodes shown
	ShownGPU int
	Total    int
	Held     []heldNode
	Alerts   []alertView
	Budget   *drain.BudgetStatus
	BuiltAt  time.Time
	Err      string
	UtilBins []int
}

type stateCount struct {
	Key, Class, Glyph, Label, Meaning string
	Count                             int
	On                                bool
}

type heldNode struct {
	Node, Reason, User, Rule string
	State                    telemetry.State
	Since                    time.Time
	Manual, Waiting          bool
	ProbationEnds            time.Time
}

func (u *UI) handleFleet(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := u.ctx(r)
	defer cancel()
	fd := u.fleetData(ctx)
	filt := parseFleetFilter(r.URL.Query())
	drains := map[string]drainView{}
	var held []heldNode
	var budget *drain.BudgetStatus
	if c := u.opts.Drain; c != nil {
		for _, n := range c.Nodes() {
			if n.State == telemetry.StateHealthy && len(n.GPUs) == 0 && n.Held == "" {
				continue
			}
			dv := drainView{state: n.State, reason: n.Reason, waiting: n.WaitingBudget}
			for _, g := range n.GPUs {
				if g.State != telemetry.StateHealthy {
					if dv.gpus == nil {
						dv.gpus = map[int]telemetry.State{}
					}
					dv.gpus[g.Index] = g.State
				}
			}
			drains[n.Node] = dv
			if !n.Schedulable || n.State == telemetry.StateProbation {
				reason := n.Reason
				if reason == "" {
					reason = n.Held
				}
				held = append(held, heldNode{Node: n.Node, State: n.State, Reason: reason, User: n.User, Rule: n.Rule, Since: n.Since,
					Manual: n.Manual, Waiting: n.WaitingBudget, ProbationEnds: n.ProbationEnds})
			}
		}
		b := c.Budget()
		budget = &b
	}
	v := &fleetView{Filter: filt, Leaves: fd.leaves, Models: fd.models, Accounts: fd.accounts, Total: len(fd.nodes),
		Held: held, Budget: budget, BuiltAt: fd.builtAt, Err: fd.err, Alerts: u.alertViews("")}
	var counts [numCellStates]int
	var buf bytes.Buffer
	buf.Grow(len(fd.nodes) * 160)
	v.Shown, v.ShownGPU = renderGrid(&buf, fd, drains, filt, &counts)
	v.Grid = template.HTML(buf.String())
	for i, si := range stateInfo {
		v.States = append(v.States, stateCount{Key: si.Key, Class: si.Class, Glyph: si.Glyph, Label: si.Label, Meaning: si.Meaning,
			Count: counts[i], On: filt.States[i]})
	}
	u.render(w, r, http.StatusOK, "fleet", u.page(r, "Fleet", "fleet", v))
}

// gpuCell is one GPU's final state: the agent's verdict, made worse by the
// drain controller's when it holds the GPU (or its node) out of service.
func gpuCell(g fleetGPU, dv drainView) cellState {
	st := g.state
	if ds, ok := dv.gpus[g.index]; ok {
		st = worse(st, fromState(ds))
	}
	return st
}

// renderGrid writes the fleet's cells, grouped by leaf switch and node, by
// hand rather than through html/template: on 32,768 GPUs the template's
// per-action escaping is most of the page's time. Every dynamic string goes
// through html.EscapeString.
func renderGrid(b *bytes.Buffer, fd *fleetData, drains map[string]drainView, f fleetFilter, counts *[numCellStates]int) (nodes, gpus int) {
	curLeaf, open := "\x00", false
	var cells [64]cellState
	for i := range fd.nodes {
		n := &fd.nodes[i]
		if f.Model != "" && n.model != f.Model || f.Leaf != "" && n.leaf != f.Leaf ||
			f.Account != "" && !slices.Contains(n.accounts, f.Account) || f.Query != "" && !strings.Contains(n.name, f.Query) {
			continue
		}
		dv := drains[n.name]
		match := !f.AnySt
		ng := min(len(n.gpus), len(cells))
		for j := range ng {
			cells[j] = gpuCell(n.gpus[j], dv)
			if f.States[cells[j]] {
				match = true
			}
		}
		if f.AnySt && !match && !(f.States[cellDraining] && dv.state == telemetry.StateDraining ||
			f.States[cellDrained] && dv.state == telemetry.StateDrained || f.States[cellProbation] && dv.state == telemetry.StateProbation) {
			continue
		}
		if n.leaf != curLeaf {
			if open {
				b.WriteString("</div></section>")
			}
			curLeaf, open = n.leaf, true
			name := n.leaf
			if name == "" {
				name = "no leaf switch known"
			}
			b.WriteString(`<section class="leaf"><h3>`)
			b.WriteString(html.EscapeString(name))
			b.WriteString(`</h3><div class="nodes">`)
		}
		nodes++
		esc := html.EscapeString(n.name)
		href := html.EscapeString(nodeURL(n.name, -1))
		b.WriteString(`<div class="node`)
		switch dv.state {
		case telemetry.StateDraining:
			b.WriteString(` nd2`)
		case telemetry.StateDrained:
			b.WriteString(` nd3`)
		case telemetry.StateProbation:
			b.WriteString(` nd4`)
		}
		b.WriteString(`"><a href="`)
		b.WriteString(href)
		b.WriteString(`">`)
		b.WriteString(esc)
		b.WriteString(`</a>`)
		switch dv.state {
		case telemetry.StateDraining, telemetry.StateDrained, telemetry.StateProbation:
			b.WriteString(`<b>`)
			b.WriteString(dv.state.String())
			b.WriteString(`</b>`)
		}
		for j := 0; j < ng; j++ {
			g := &n.gpus[j]
			st := cells[j]
			counts[st]++
			gpus++
			if f.Util {
				bin := -1
				if !math.IsNaN(g.util) {
					bin = int(math.Round(g.util * 10))
				}
				if bin < 0 {
					b.WriteString(`<i class="u">?</i>`)
					continue
				}
				b.WriteString(`<i class="u`)
				b.WriteString(strconv.Itoa(bin))
				b.WriteString(`" title="GPU `)
				b.WriteString(strconv.Itoa(g.index))
				b.WriteString(`: `)
				b.WriteString(strconv.Itoa(int(math.Round(g.util * 100))))
				b.WriteString(`%"></i>`)
				continue
			}
			if st == cellHealthy {
				// A run of healthy GPUs is one element (drawn as separate
				// squares by its background): on a mostly healthy fleet the
				// page has a few elements per node instead of one per GPU,
				// which is most of what the browser spends on it.
				run := 1
				for j+run < ng && cells[j+run] == cellHealthy {
					run++
				}
				counts[st] += run - 1
				gpus += run - 1
				b.WriteString(`<i class="s0 r`)
				b.WriteString(strconv.Itoa(run))
				b.WriteString(`"></i>`)
				j += run - 1
				continue
			}
			si := stateInfo[st]
			b.WriteString(`<a class="`)
			b.WriteString(si.Class)
			b.WriteString(`" href="`)
			b.WriteString(html.EscapeString(nodeURL(n.name, g.index)))
			b.WriteString(`" title="`)
			b.WriteString(esc)
			b.WriteString(` GPU `)
			b.WriteString(strconv.Itoa(g.index))
			b.WriteString(`: `)
			b.WriteString(si.Label)
			b.WriteString(`">`)
			b.WriteString(si.Glyph)
			b.WriteString(`</a>`)
		}
		b.WriteString(`</div>`)
	}
	if open {
		b.WriteString("</div></section>")
	}
	return nodes, gpus
}
