package placement

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/gpuset"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// DryRun decides where req would go and holds nothing. The error is non-nil only for
// an invalid request (the decision then says why, with outcome invalid).
func (e *Engine) DryRun(ctx context.Context, req framework.Request) (*framework.Decision, error) {
	return e.place(ctx, req, false)
}

// Reserve decides where req goes and holds the GPUs under a lease (the request's, or
// Options.DefaultLease) until Release, expiry, or a snapshot showing the job's
// allocation. The reservation's id is the decision's id.
func (e *Engine) Reserve(ctx context.Context, req framework.Request) (*framework.Decision, error) {
	return e.place(ctx, req, true)
}

type choice struct {
	node  int32
	take  int32
	score float64
}

type group struct {
	key        int32
	start, end int
	cap        int64
	best       float64
}

func (e *Engine) place(ctx context.Context, req framework.Request, reserve bool) (*framework.Decision, error) {
	start := time.Now()
	now := e.opts.Now()
	d := &framework.Decision{ID: e.nextID(), At: now, DryRun: !reserve}
	mode := "dry_run"
	if reserve {
		mode = "reserve"
	}
	ctx, span := e.opts.Tracer.Start(ctx, "gpuwatch.placement.decide", trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	if err := req.Normalize(); err != nil {
		d.Request, d.Outcome, d.Reason = req, framework.OutcomeInvalid, err.Error()
		e.finish(span, d, mode, start)
		span.SetStatus(codes.Error, err.Error())
		return d, err
	}
	d.Request = req
	lease := time.Duration(req.Lease)
	if lease == 0 {
		lease = e.opts.DefaultLease
	}
	if lease > e.opts.MaxLease {
		d.Notes = append(d.Notes, fmt.Sprintf("lease %v capped at %v", lease, e.opts.MaxLease))
		lease = e.opts.MaxLease
	}
	e.expire(now)
	if reserve {
		e.mu.Lock()
		defer e.mu.Unlock()
	} else {
		e.mu.RLock()
		defer e.mu.RUnlock()
	}
	snap := e.snap
	d.SnapshotAt = snap.Now()
	p := e.getScratch(snap.Len())
	defer e.pool.Put(p)
	cy := &framework.Cycle{Snap: snap, Free: e.free, LeafFree: e.leafFree}
	e.resolve(&req, snap, p, d)
	cy.Near = p.near
	e.evalAll(ctx, &req, cy, p)
	d.Evaluated = len(p.idx)
	d.Feasible = e.rejections(p, snap, d)
	tier, dom, reason := e.assemble(&req, snap, p)
	if reason != "" {
		d.Outcome, d.Reason = framework.OutcomeUnschedulable, reason
	} else {
		e.complete(ctx, &req, cy, p, d, tier, dom)
	}
	if d.Outcome == framework.OutcomePlaced && reserve {
		e.reserve(d, &req, snap, now, lease)
	}
	e.runnersUp(ctx, &req, cy, p, d)
	if note := stragglerNote(snap, d); note != "" {
		d.Notes = append(d.Notes, note)
	}
	if h, l := snap.StaleGPUs(); h > 0 || l > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("snapshot has %d GPUs with stale health (last known state used) and %d with stale load (ignored)", h, l))
	}
	e.finish(span, d, mode, start)
	return d, nil
}

// stragglerNote names the chosen GPUs that were named stragglers within the
// snapshot's straggler window (the straggler scorer is soft: they are used
// when the rest of the score or the fit says so); "" when none is.
func stragglerNote(snap *snapshot.Snapshot, d *framework.Decision) string {
	var named []string
	for _, a := range d.Assignments {
		i, ok := snap.Lookup(a.Node)
		if !ok {
			continue
		}
		n := snap.Node(i)
		for _, idx := range a.GPUs {
			for j := range n.GPUs {
				if g := &n.GPUs[j]; g.Index == idx && g.Straggler.Named() {
					named = append(named, fmt.Sprintf("%s gpu %d (%s %.0f%% behind in job %s)", a.Node, idx, g.Straggler.Signal, 100*g.Straggler.Lag, g.Straggler.Job))
				}
			}
		}
	}
	if len(named) == 0 {
		return ""
	}
	what := fmt.Sprintf("%d GPUs named stragglers", len(named))
	if len(named) == 1 {
		what = "1 GPU named a straggler"
	}
	return fmt.Sprintf("uses %s in the last %v: %s", what, snap.StragglerWindow(), strings.Join(named, ", "))
}

// resolve fills the candidate list and the Near positions.
func (e *Engine) resolve(req *framework.Request, snap *snapshot.Snapshot, p *pctx, d *framework.Decision) {
	for _, name := range req.Near {
		if i, ok := snap.Lookup(name); ok {
			p.near = append(p.near, int32(i))
		} else {
			d.Notes = append(d.Notes, fmt.Sprintf("near node %q is not in the snapshot: ignored", name))
		}
	}
	if len(req.Candidates) == 0 {
		for i := range snap.Len() {
			p.idx = append(p.idx, int32(i))
		}
		return
	}
	var unknown []string
	missing := 0
	seen := make(map[int32]bool, len(req.Candidates))
	for _, name := range req.Candidates {
		i, ok := snap.Lookup(name)
		switch {
		case !ok:
			missing++
			if len(unknown) < 3 {
				unknown = append(unknown, name)
			}
		case !seen[int32(i)]:
			seen[int32(i)] = true
			p.idx = append(p.idx, int32(i))
		}
	}
	if missing > 0 {
		d.Rejections = append(d.Rejections, framework.Rejection{Plugin: "snapshot", Reason: "node not in the snapshot", Nodes: missing, Examples: unknown})
	}
}

// rejections counts rejected nodes by plugin and reason and returns how many nodes
// are feasible.
func (e *Engine) rejections(p *pctx, snap *snapshot.Snapshot, d *framework.Decision) int {
	base := len(d.Rejections)
	feasible := 0
	last, lastFail, lastReason := -1, int16(-1), ""
	for _, i := range p.idx {
		o := &p.out[i]
		if o.fail < 0 {
			feasible++
			continue
		}
		k := last
		if k < 0 || o.fail != lastFail || o.reason != lastReason {
			plugin := e.names[o.fail]
			for k = base; k < len(d.Rejections); k++ {
				if r := &d.Rejections[k]; r.Plugin == plugin && r.Reason == o.reason {
					break
				}
			}
			if k == len(d.Rejections) {
				d.Rejections = append(d.Rejections, framework.Rejection{Plugin: plugin, Reason: o.reason})
			}
			last, lastFail, lastReason = k, o.fail, o.reason
		}
		r := &d.Rejections[k]
		r.Nodes++
		if len(r.Examples) < 3 {
			r.Examples = append(r.Examples, snap.Node(int(i)).Name)
		}
	}
	slices.SortStableFunc(d.Rejections, func(a, b framework.Rejection) int { return cmp.Compare(b.Nodes, a.Nodes) })
	for _, r := range d.Rejections {
		e.metrics.rejected.WithLabelValues(r.Plugin).Add(float64(r.Nodes))
	}
	return feasible
}

func need(req *framework.Request) int64 {
	if req.Fixed() {
		return int64(req.Nodes)
	}
	return int64(req.GPUs)
}

func units(req *framework.Request, o *nodeOut) int64 {
	if req.Fixed() {
		return 1
	}
	return int64(o.usable.Len())
}

// assemble chooses the gang's nodes into p.best: on one node when one fits, else in
// the lowest tier with a domain that holds it. It returns the tier, the domain id and
// "" — or a reason why nothing fits.
func (e *Engine) assemble(req *framework.Request, snap *snapshot.Snapshot, p *pctx) (telemetry.Tier, int32, string) {
	p.order = p.order[:0]
	var total int64
	for _, i := range p.idx {
		if o := &p.out[i]; o.fail < 0 {
			p.order = append(p.order, i)
			total += units(req, o)
		}
	}
	// bestDomain reuses p.order as its bucket buffer; keep the feasible list apart.
	p.feas = append(p.feas[:0], p.order...)
	feasible := p.feas
	want := need(req)
	if len(feasible) == 0 {
		return 0, 0, "no node can take a part of the gang (see rejections)"
	}
	// One node.
	if !req.Fixed() || req.Nodes == 1 {
		best := int32(-1)
		for _, i := range feasible {
			o := &p.out[i]
			if int(o.take) < req.GPUs {
				continue
			}
			if best < 0 || o.score > p.out[best].score {
				best = i
			}
		}
		if best >= 0 {
			p.best = append(p.best[:0], choice{node: best, take: int32(p.out[best].take), score: p.out[best].score})
			return telemetry.TierNode, best, ""
		}
		if req.Required == telemetry.TierNode || req.Fixed() {
			return 0, 0, fmt.Sprintf("no node has %d usable GPUs with %d milli-GPU free (%d nodes feasible for less)", req.GPUs, req.Milli, len(feasible))
		}
	}
	if total < want {
		return 0, 0, e.shortReason(req, total, want)
	}
	for t := telemetry.TierNVLinkDomain; t <= req.Required; t++ {
		if t != telemetry.TierCluster && len(snap.Domains(t)) == 0 {
			continue
		}
		if d, ok := e.bestDomain(req, snap, p, feasible, t, want); ok {
			return t, d, ""
		}
	}
	// Say how close the required tier came.
	largest := int64(0)
	nd := len(snap.Domains(req.Required))
	sums := make([]int64, nd)
	for _, i := range feasible {
		if d := snap.Node(int(i)).DomainID(req.Required, int(i)); d >= 0 && int(d) < nd {
			sums[d] += units(req, &p.out[i])
			largest = max(largest, sums[d])
		}
	}
	return 0, 0, fmt.Sprintf("the gang does not fit within one %s: the largest offers %d of the %d %s needed",
		req.Required, largest, want, unitName(req))
}

func unitName(req *framework.Request) string {
	if req.Fixed() {
		return fmt.Sprintf("nodes with %d free GPUs", req.GPUsPerNode)
	}
	return "GPUs"
}

func (e *Engine) shortReason(req *framework.Request, have, want int64) string {
	return fmt.Sprintf("only %d of the %d %s needed are available", have, want, unitName(req))
}

// bestDomain finds the best domain at tier t that holds the gang and leaves its
// selection in p.best.
func (e *Engine) bestDomain(req *framework.Request, snap *snapshot.Snapshot, p *pctx, feasible []int32, t telemetry.Tier, want int64) (int32, bool) {
	nd := len(snap.Domains(t))
	if cap(p.domCap) < nd+1 {
		p.domCap = make([]int64, nd+1)
	}
	dc := p.domCap[:nd]
	clear(dc)
	fits := false
	for _, i := range feasible {
		if d := snap.Node(int(i)).DomainID(t, int(i)); d >= 0 {
			dc[d] += units(req, &p.out[i])
			if dc[d] >= want {
				fits = true
			}
		}
	}
	if !fits {
		return -1, false
	}
	// Bucket the feasible nodes by domain (counting sort into p.order).
	offs := make([]int, nd+1)
	for _, i := range feasible {
		if d := snap.Node(int(i)).DomainID(t, int(i)); d >= 0 {
			offs[d+1]++
		}
	}
	for k := 1; k <= nd; k++ {
		offs[k] += offs[k-1]
	}
	p.order = p.order[:offs[nd]]
	fill := slices.Clone(offs[:nd])
	for _, i := range feasible {
		if d := snap.Node(int(i)).DomainID(t, int(i)); d >= 0 {
			p.order[fill[d]] = i
			fill[d]++
		}
	}
	bestD, bestLeaves, bestLeft, bestScore := int32(-1), 0, int64(0), 0.0
	for d := range nd {
		if dc[d] < want {
			continue
		}
		members := p.order[offs[d]:offs[d+1]]
		leaves, mean := e.planDomain(req, snap, p, members, want)
		left := dc[d] - want
		better := bestD < 0 || leaves < bestLeaves ||
			leaves == bestLeaves && (left < bestLeft || left == bestLeft && mean > bestScore)
		if better {
			bestD, bestLeaves, bestLeft, bestScore = int32(d), leaves, left, mean
			p.best = append(p.best[:0], p.sel...)
		}
	}
	return bestD, bestD >= 0
}

// planDomain selects want units from members (nodes of one domain) on the fewest
// leaves: the largest leaves whole, then the smallest leaf that covers the rest.
// The selection goes to p.sel; it returns the leaves used and the mean node score.
func (e *Engine) planDomain(req *framework.Request, snap *snapshot.Snapshot, p *pctx, members []int32, want int64) (int, float64) {
	leafOf := func(i int32) int32 {
		if l := snap.Node(int(i)).Leaf; l >= 0 {
			return l
		}
		return -2 - i // an unknown leaf is a leaf of its own
	}
	slices.SortFunc(members, func(a, b int32) int {
		if c := cmp.Compare(leafOf(a), leafOf(b)); c != 0 {
			return c
		}
		oa, ob := &p.out[a], &p.out[b]
		if !req.Fixed() {
			if c := cmp.Compare(ob.usable.Len(), oa.usable.Len()); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(ob.score, oa.score); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	p.groups = p.groups[:0]
	for k, i := range members {
		l := leafOf(i)
		if len(p.groups) == 0 || p.groups[len(p.groups)-1].key != l {
			p.groups = append(p.groups, group{key: l, start: k, end: k, best: p.out[i].score})
		}
		g := &p.groups[len(p.groups)-1]
		g.end = k + 1
		g.cap += units(req, &p.out[i])
		g.best = max(g.best, p.out[i].score)
	}
	gs := p.groups
	slices.SortFunc(gs, func(a, b group) int {
		if c := cmp.Compare(b.cap, a.cap); c != 0 {
			return c
		}
		if c := cmp.Compare(b.best, a.best); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	k, sum := 0, int64(0)
	for k < len(gs) && sum+gs[k].cap < want {
		sum += gs[k].cap
		k++
	}
	// gs[:k] are taken whole; the rest comes from the smallest group that covers it.
	rest := want - sum
	last := k
	for j := k + 1; j < len(gs); j++ {
		if gs[j].cap >= rest && gs[j].cap < gs[last].cap {
			last = j
		}
	}
	p.sel = p.sel[:0]
	var scoreSum float64
	take := func(g group, n int64) {
		for _, i := range members[g.start:g.end] {
			if n <= 0 {
				return
			}
			o := &p.out[i]
			u := min(units(req, o), n)
			t := int32(o.take)
			if !req.Fixed() {
				t = int32(u)
			}
			p.sel = append(p.sel, choice{node: i, take: t, score: o.score})
			scoreSum += o.score
			n -= u
		}
	}
	for _, g := range gs[:k] {
		take(g, g.cap)
	}
	take(gs[last], rest)
	return k + 1, scoreSum / float64(max(1, len(p.sel)))
}

// complete turns the selection in p.best into assignments and quality.
func (e *Engine) complete(ctx context.Context, req *framework.Request, cy *framework.Cycle, p *pctx, d *framework.Decision, tier telemetry.Tier, dom int32) {
	snap := cy.Snap
	sel := p.best
	// Rails: when every chosen node has a common set of rails free, prefer it, so
	// local rank r uses rail r' on every node.
	var prefer uint64
	if len(sel) > 1 && !req.Fractional() {
		inter := ^uint64(0)
		maxTake := 0
		for _, c := range sel {
			inter &= railsOf(snap.Node(int(c.node)), p.out[c.node].usable)
			maxTake = max(maxTake, int(c.take))
		}
		if bits.OnesCount64(inter) >= maxTake {
			for inter != 0 && bits.OnesCount64(prefer) < maxTake {
				low := inter & -inter
				prefer |= low
				inter &^= low
			}
		}
	}
	names := make([]telemetry.NodeID, 0, len(sel))
	d.Candidates = slices.Grow(d.Candidates, len(sel))
	d.Assignments = slices.Grow(d.Assignments, len(sel))
	worstQ, worstNode := 1<<20, -1
	var worstSet snapshot.GPUSet
	var freeAfter, capacity int64
	for _, c := range sel {
		i := int(c.node)
		n := snap.Node(i)
		nr, chosen, ok := e.record(ctx, req, cy, i, int(c.take), prefer, true)
		if !ok {
			d.Outcome = framework.OutcomeUnschedulable
			d.Reason = fmt.Sprintf("internal: node %s failed re-evaluation: %s", n.Name, lastVerdict(nr))
			d.Assignments, d.Candidates = nil, nil
			return
		}
		d.Candidates = append(d.Candidates, nr)
		a := framework.Assignment{Node: n.Name, Milli: req.Milli, Exclusive: req.Exclusive, Score: nr.Total,
			GPUs: make([]int, 0, chosen.Len()), UUIDs: make([]string, 0, chosen.Len()), Rails: make([]int, 0, chosen.Len())}
		for _, pos := range gpuset.RankOrder(n, chosen) {
			g := &n.GPUs[pos]
			a.GPUs = append(a.GPUs, g.Index)
			a.UUIDs = append(a.UUIDs, g.UUID)
			a.Rails = append(a.Rails, g.Rail)
		}
		d.Assignments = append(d.Assignments, a)
		names = append(names, telemetry.NodeID(n.Name))
		if chosen.Len() > 1 {
			var pos [snapshot.MaxGPUsPerNode]int
			ps := chosen.Positions(pos[:0])
			for x, a := range ps {
				for _, b := range ps[x+1:] {
					if q := n.LinkQuality(a, b); q < worstQ {
						worstQ, worstNode, worstSet = q, i, chosen
					}
				}
			}
		}
		capacity += int64(n.CapacityMilli())
		if !req.Exclusive {
			var nodeFree int64
			for _, f := range cy.Free[n.First : n.First+len(n.GPUs)] {
				nodeFree += int64(max(f, 0))
			}
			freeAfter += max(0, nodeFree-int64(chosen.Len()*req.Milli))
		}
	}
	h := snap.Hierarchy()
	q := &framework.Quality{Nodes: len(sel), LeavesSpanned: h.LeavesSpanned(names), LCATier: h.LCATierOf(names),
		NVLinkDomainsSpanned: h.DomainsSpanned(names)}
	for _, a := range d.Assignments {
		q.GPUs += len(a.GPUs)
	}
	if worstNode >= 0 {
		q.WorstLink = gpuset.WorstLink(snap.Node(worstNode), worstSet)
	}
	if capacity > 0 {
		q.FragmentationLeft = float64(freeAfter) / float64(capacity)
	}
	q.RailAlignment = railAlignment(d.Assignments)
	q.RailAligned = q.RailAlignment == 1
	q.PreferredMet = q.LCATier <= req.Preferred
	if !q.PreferredMet {
		d.Notes = append(d.Notes, fmt.Sprintf("preferred tier %s missed: the gang spans %s", req.Preferred, q.LCATier))
	}
	d.Quality = q
	d.Outcome = framework.OutcomePlaced
	d.Tier = tier
	switch tier {
	case telemetry.TierNode:
		d.Domain = snap.Node(int(dom)).Name
	case telemetry.TierCluster:
		d.Domain = "cluster"
	default:
		d.Domain = snap.Domains(tier)[dom]
	}
	for k := range d.Candidates {
		d.Candidates[k].Chosen = true
	}
}

func lastVerdict(nr framework.NodeResult) string {
	if len(nr.Verdicts) == 0 {
		return "no verdict"
	}
	v := nr.Verdicts[len(nr.Verdicts)-1]
	return v.Plugin + ": " + v.Status.String()
}

// railsOf returns the rails (bit r) of the node's GPUs in set.
func railsOf(n *snapshot.Node, set snapshot.GPUSet) uint64 {
	var r uint64
	var pos [snapshot.MaxGPUsPerNode]int
	for _, p := range set.Positions(pos[:0]) {
		if rail := n.GPUs[p].Rail; rail >= 0 && rail < 64 {
			r |= 1 << uint(rail)
		}
	}
	return r
}

// railAlignment is, for one node, the share of its GPUs with known rails whose rail
// no other chosen GPU shares; for several nodes, the share of ranks (positions in
// rank order) with a known rail on every node that has that rank whose rail is the
// same on all of them.
func railAlignment(as []framework.Assignment) float64 {
	if len(as) == 1 {
		rails := as[0].Rails
		known, distinct := 0, 0
		for i, r := range rails {
			if r < 0 {
				continue
			}
			known++
			shared := false
			for j, o := range rails {
				if j != i && o == r {
					shared = true
				}
			}
			if !shared {
				distinct++
			}
		}
		if known == 0 {
			return 0
		}
		return float64(distinct) / float64(known)
	}
	maxRanks := 0
	for _, a := range as {
		maxRanks = max(maxRanks, len(a.Rails))
	}
	ranks, aligned := 0, 0
	for r := range maxRanks {
		rail, ok, known := -1, true, false
		for _, a := range as {
			if r >= len(a.Rails) {
				continue
			}
			x := a.Rails[r]
			if x < 0 {
				ok = false
				continue
			}
			known = true
			if rail < 0 {
				rail = x
			} else if x != rail {
				ok = false
			}
		}
		if known {
			ranks++
			if ok {
				aligned++
			}
		}
	}
	if ranks == 0 {
		return 0
	}
	return float64(aligned) / float64(ranks)
}

// record re-evaluates node i with detailed reasons for the decision record. With
// take > 0 the picker chooses that many GPUs (preferring rails prefer).
func (e *Engine) record(ctx context.Context, req *framework.Request, cy *framework.Cycle, i, take int, prefer uint64, withScores bool) (framework.NodeResult, snapshot.GPUSet, bool) {
	var c framework.Candidate
	c.Reset(cy, i)
	c.Need, c.Explain, c.PreferRails = needPerNode(req), true, prefer
	nr := framework.NodeResult{Node: c.Node.Name, Verdicts: make([]framework.Verdict, 0, len(e.filters)+1)}
	for _, f := range e.filters {
		st := f.Filter(ctx, req, &c)
		nr.Verdicts = append(nr.Verdicts, framework.Verdict{Plugin: f.Name(), Status: st})
		if !st.OK() {
			return nr, 0, false
		}
	}
	if take <= 0 {
		take = takePerNode(req, c.Usable.Len())
	}
	c.Take = take
	st := e.picker.Pick(ctx, req, &c)
	if st.OK() && c.Chosen.Len() != take {
		st = framework.Status{Code: framework.Error, Reason: "picker chose the wrong number of GPUs"}
	}
	nr.Verdicts = append(nr.Verdicts, framework.Verdict{Plugin: e.picker.Name(), Status: st})
	if !st.OK() {
		return nr, 0, false
	}
	nr.Feasible = true
	nr.GPUs = make([]int, 0, c.Chosen.Len())
	for _, pos := range gpuset.RankOrder(c.Node, c.Chosen) {
		nr.GPUs = append(nr.GPUs, c.Node.GPUs[pos].Index)
	}
	if withScores {
		nr.Scores = make([]framework.ScoreRecord, 0, len(e.scorers))
		nr.Total = e.scoreNode(ctx, req, &c, &nr.Scores)
	}
	return nr, c.Chosen, true
}

// runnersUp records the best feasible nodes not chosen (or, for Request.Explain,
// every evaluated node).
func (e *Engine) runnersUp(ctx context.Context, req *framework.Request, cy *framework.Cycle, p *pctx, d *framework.Decision) {
	isChosen := func(i int32) bool { return false }
	if d.Outcome == framework.OutcomePlaced {
		if cap(p.mark) < cy.Snap.Len() {
			p.mark = make([]bool, cy.Snap.Len())
		}
		p.mark = p.mark[:cy.Snap.Len()]
		for _, c := range p.best {
			p.mark[c.node] = true
		}
		defer func() {
			for _, c := range p.best {
				p.mark[c.node] = false
			}
		}()
		isChosen = func(i int32) bool { return p.mark[i] }
	}
	if req.Explain {
		for _, i := range p.idx {
			if isChosen(i) {
				continue
			}
			nr, _, _ := e.record(ctx, req, cy, int(i), 0, 0, true)
			d.Candidates = append(d.Candidates, nr)
		}
		return
	}
	top := e.opts.RecordTop
	if top <= 0 {
		return
	}
	p.sel = p.sel[:0]
	// p.feas holds the feasible nodes of p.idx in order (assemble's list).
	for _, i := range p.feas {
		o := &p.out[i]
		if len(p.sel) == top && o.score <= p.sel[top-1].score || isChosen(i) {
			continue
		}
		c := choice{node: i, score: o.score}
		k, _ := slices.BinarySearchFunc(p.sel, c, func(a, b choice) int { return cmp.Compare(b.score, a.score) })
		for k < len(p.sel) && p.sel[k].score == c.score {
			k++
		}
		if len(p.sel) < top {
			p.sel = append(p.sel, choice{})
		}
		if k < len(p.sel) {
			copy(p.sel[k+1:], p.sel[k:len(p.sel)-1])
			p.sel[k] = c
		}
	}
	for _, c := range p.sel {
		nr, _, _ := e.record(ctx, req, cy, int(c.node), 0, 0, true)
		d.Candidates = append(d.Candidates, nr)
	}
}

// reserve holds the decision's GPUs. Called with e.mu held for writing.
func (e *Engine) reserve(d *framework.Decision, req *framework.Request, snap *snapshot.Snapshot, now time.Time, lease time.Duration) {
	r := &reservation{Reservation: Reservation{ID: d.ID, JobID: req.JobID, Created: now, Expires: now.Add(lease)}}
	for _, a := range d.Assignments {
		i, _ := snap.Lookup(a.Node)
		n := snap.Node(i)
		if req.Exclusive {
			for p := range n.GPUs {
				r.GPUs = append(r.GPUs, ReservedGPU{Node: a.Node, GPU: n.GPUs[p].Index, Milli: snapshot.FullMilli})
			}
			continue
		}
		for _, g := range a.GPUs {
			r.GPUs = append(r.GPUs, ReservedGPU{Node: a.Node, GPU: g, Milli: req.Milli})
		}
	}
	r.remap(snap)
	for k, f := range r.flat {
		if f < 0 || e.free[f] < int32(r.GPUs[k].Milli) {
			// Filters guarantee room; refuse rather than double-book if one lied.
			d.Outcome = framework.OutcomeUnschedulable
			d.Reason = fmt.Sprintf("internal: gpu %d of node %s has no room for %d milli-GPU at reservation", r.GPUs[k].GPU, r.GPUs[k].Node, r.GPUs[k].Milli)
			d.Quality, d.Assignments = nil, nil
			return
		}
	}
	e.apply(r, -1)
	e.res[r.ID] = r
	e.noteExpiry(r.Expires)
	d.Reservation = &framework.Lease{ID: r.ID, Expires: r.Expires}
}

// finish records metrics and span attributes and keeps the decision.
func (e *Engine) finish(span trace.Span, d *framework.Decision, mode string, start time.Time) {
	el := time.Since(start)
	d.Duration = framework.Duration(el)
	e.metrics.observe(d, mode, el)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			attribute.String("gpuwatch.decision.id", d.ID),
			attribute.String("gpuwatch.decision.mode", mode),
			attribute.String("gpuwatch.decision.outcome", string(d.Outcome)),
			attribute.Int("gpuwatch.request.gpus", d.Request.GPUs),
			attribute.Int("gpuwatch.request.nodes", d.Request.Nodes),
			attribute.Int("gpuwatch.decision.evaluated", d.Evaluated),
			attribute.Int("gpuwatch.decision.feasible", d.Feasible),
		}
		if d.Reason != "" {
			attrs = append(attrs, attribute.String("gpuwatch.decision.reason", d.Reason))
		}
		if q := d.Quality; q != nil {
			nodes := make([]string, len(d.Assignments))
			for i, a := range d.Assignments {
				nodes[i] = a.Node
			}
			attrs = append(attrs,
				attribute.StringSlice("gpuwatch.placement.nodes", nodes),
				attribute.Int("gpuwatch.placement.leaves_spanned", q.LeavesSpanned),
				attribute.String("gpuwatch.placement.lca_tier", q.LCATier.String()),
				attribute.Int("gpuwatch.placement.nvlink_domains_spanned", q.NVLinkDomainsSpanned),
				attribute.Float64("gpuwatch.placement.rail_alignment", q.RailAlignment),
				attribute.Float64("gpuwatch.placement.fragmentation_left", q.FragmentationLeft))
		}
		if len(d.Rejections) > 0 {
			top := make([]string, 0, 3)
			for _, r := range d.Rejections[:min(3, len(d.Rejections))] {
				top = append(top, fmt.Sprintf("%d×%s: %s", r.Nodes, r.Plugin, r.Reason))
			}
			attrs = append(attrs, attribute.String("gpuwatch.decision.rejections", strings.Join(top, "; ")))
		}
		span.SetAttributes(attrs...)
	}
	e.remember(d)
}
