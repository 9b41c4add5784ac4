package placement

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// NodeScore is one node's verdict for a single-node request: what a
// kube-scheduler extender's filter and prioritize calls need.
type NodeScore struct {
	Node     string `json:"node"`
	Feasible bool   `json:"feasible"`
	// Plugin and Reason say why an infeasible node was rejected.
	Plugin string `json:"plugin,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Score is the node's weighted score in [0,1] (0 when infeasible).
	Score float64 `json:"score"`
}

// Evaluate filters and scores nodes for a request that must fit on one node (a
// pod): every node is judged for the whole request, with reservations counted. It
// records no decision and reserves nothing; the answer is in the order of nodes.
// Names the snapshot does not know are infeasible with plugin "snapshot".
func (e *Engine) Evaluate(ctx context.Context, req framework.Request, nodes []string) ([]NodeScore, error) {
	return e.EvaluateAppend(ctx, nil, req, nodes)
}

// EvaluateAppend is Evaluate appending the answers to dst (which may be nil) and
// returning the extended slice. A caller answering many pods (the extender) can
// reuse one buffer, EvaluateAppend(ctx, buf[:0], req, nodes), and so spare the
// garbage collector a 64-byte answer per node and call. On error dst is returned
// unchanged.
func (e *Engine) EvaluateAppend(ctx context.Context, dst []NodeScore, req framework.Request, nodes []string) ([]NodeScore, error) {
	start := time.Now()
	ctx, span := e.opts.Tracer.Start(ctx, "gpuwatch.placement.evaluate")
	defer span.End()
	if req.Nodes > 1 {
		err := fmt.Errorf("evaluate: nodes %d: a request evaluated per node must fit on one node", req.Nodes)
		span.SetStatus(codes.Error, err.Error())
		return dst, err
	}
	if req.Nodes == 0 && req.GPUsPerNode == 0 {
		req.Nodes = 1
	}
	if err := req.Normalize(); err != nil {
		span.SetStatus(codes.Error, err.Error())
		return dst, fmt.Errorf("evaluate: %w", err)
	}
	if len(nodes) == 0 {
		return dst, errors.New("evaluate: no nodes given")
	}
	e.expire(e.opts.Now())
	e.mu.RLock()
	defer e.mu.RUnlock()
	snap := e.snap
	p := e.getScratch(snap.Len())
	defer e.pool.Put(p)
	cy := &framework.Cycle{Snap: snap, Free: e.free, LeafFree: e.leafFree}
	for _, name := range req.Near {
		if i, ok := snap.Lookup(name); ok {
			p.near = append(p.near, int32(i))
		}
	}
	cy.Near = p.near
	base := len(dst)
	dst = slices.Grow(dst, len(nodes))[:base+len(nodes)]
	out := dst[base:]
	clear(out)
	nr := e.newResolver(snap, nodes)
	var feasible int
	if e.grouped {
		feasible = e.evaluateGrouped(ctx, &req, cy, p, &nr, out)
	} else {
		feasible = e.evaluateEach(ctx, &req, cy, p, &nr, out)
	}
	nr.done(e)
	el := time.Since(start)
	e.metrics.latency.WithLabelValues("evaluate").Observe(el.Seconds())
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("gpuwatch.request.gpus", req.GPUs),
			attribute.Int("gpuwatch.evaluate.nodes", len(nodes)), attribute.Int("gpuwatch.evaluate.feasible", feasible))
	}
	return dst, nil
}

// evaluateEach resolves the nodes, evaluates each distinct one and fills out.
func (e *Engine) evaluateEach(ctx context.Context, req *framework.Request, cy *framework.Cycle, p *pctx, nr *resolver, out []NodeScore) int {
	for k, name := range nr.nodes {
		out[k].Node = name
		i, ok := nr.lookup(k, name)
		if !ok {
			p.order = append(p.order, -1)
			out[k].Plugin, out[k].Reason = "snapshot", "node not in the snapshot"
			continue
		}
		p.order = append(p.order, int32(i))
		if p.out[i].fail == -2 { // listed twice: evaluate once
			continue
		}
		p.out[i].fail = -2
		p.idx = append(p.idx, int32(i))
	}
	e.evalAll(ctx, req, cy, p)
	feasible := 0
	for k, i := range p.order {
		if i >= 0 && e.fill(&out[k], &p.out[i]) {
			feasible++
		}
	}
	return feasible
}

// evaluateGrouped is evaluateEach for a grouped engine: a node whose class has a
// valid memo is answered from it, and the pipeline runs once for each other class.
func (e *Engine) evaluateGrouped(ctx context.Context, req *framework.Request, cy *framework.Cycle, p *pctx, nr *resolver, out []NodeScore) int {
	t, stride, stamp := e.memoTable(req, cy, p)
	p.keys = resize(p.keys, len(out))
	p.reps = p.reps[:0]
	class, leaf, gens := e.cls.class, e.cls.leaf, e.cls.leafGen
	slots := t.slots
	feasible := 0
	var cached []string
	if nr.cache != nil {
		cached = nr.cache.names
	}
	for k, name := range nr.nodes {
		out[k].Node = name
		p.keys[k] = -1
		var i int
		var ok bool
		if nr.misses == 0 && k < len(cached) && cached[k] == name {
			i = int(nr.cache.idx[k]) // the previous list, same position: the common case
			ok = i >= 0
		} else {
			i, ok = nr.lookup(k, name)
		}
		if !ok {
			out[k].Plugin, out[k].Reason = "snapshot", "node not in the snapshot"
			continue
		}
		slot := int(class[i])
		if stride > 1 {
			slot = slot*stride + int(nearTier(cy, i)-telemetry.TierNode)
		}
		m := &slots[slot]
		gen := gens[leaf[i]]
		if m.valid && m.gen == gen {
			if e.fill(&out[k], &m.out) {
				feasible++
			}
			continue
		}
		p.keys[k] = int32(slot)
		if m.stamp != stamp {
			m.stamp, m.rep, m.gen, m.valid = stamp, int32(i), gen, false
			p.reps = append(p.reps, int32(i))
		}
	}
	if len(p.reps) == 0 {
		return feasible
	}
	e.evalNodes(ctx, req, cy, p, p.reps)
	for k, slot := range p.keys {
		if slot < 0 {
			continue
		}
		m := &slots[slot]
		if !m.valid {
			m.out, m.valid = p.out[m.rep], true
		}
		if e.fill(&out[k], &m.out) {
			feasible++
		}
	}
	return feasible
}

// fill writes a node's outcome into its answer and reports whether it is feasible.
func (e *Engine) fill(ns *NodeScore, o *nodeOut) bool {
	if o.fail >= 0 {
		ns.Plugin, ns.Reason = e.names[o.fail], o.reason
		return false
	}
	ns.Feasible, ns.Score = true, o.score
	return true
}

// nameCache remembers the positions of the last node list Evaluate resolved: the
// extender asks about the same list, in the same order, pod after pod.
type nameCache struct {
	snap  *snapshot.Snapshot
	names []string
	idx   []int32 // -1: not in the snapshot
}

// resolver finds node names in the snapshot without hashing each one when it can:
// first the name at the same position of the previous list, then the node after the
// previous one in the snapshot (lists sorted by name), then the snapshot's map.
type resolver struct {
	snap   *snapshot.Snapshot
	cache  *nameCache
	next   int
	misses int
	idx    []int32
	nodes  []string
}

func (e *Engine) newResolver(snap *snapshot.Snapshot, nodes []string) resolver {
	c := e.lastNames.Load()
	if c != nil && c.snap != snap {
		c = nil
	}
	return resolver{snap: snap, cache: c, nodes: nodes}
}

func (r *resolver) lookup(k int, name string) (int, bool) {
	i, ok := r.find(k, name)
	if r.misses > 0 {
		if r.idx == nil {
			r.idx = make([]int32, k, len(r.nodes))
			for j := range k {
				r.idx[j] = r.cache.idx[j]
			}
		}
		if !ok {
			r.idx = append(r.idx, -1)
		} else {
			r.idx = append(r.idx, int32(i))
		}
	}
	return i, ok
}

func (r *resolver) find(k int, name string) (int, bool) {
	if c := r.cache; c != nil && k < len(c.names) && c.names[k] == name {
		if i := c.idx[k]; i >= 0 {
			r.next = int(i) + 1
			return int(i), true
		}
		return 0, false
	}
	r.misses++
	if r.next < r.snap.Len() && r.snap.Node(r.next).Name == name {
		r.next++
		return r.next - 1, true
	}
	i, ok := r.snap.Lookup(name)
	if ok {
		r.next = i + 1
	}
	return i, ok
}

// done remembers the list when it was not the cached one.
func (r *resolver) done(e *Engine) {
	if r.misses == 0 && r.cache != nil && len(r.cache.names) == len(r.nodes) {
		return
	}
	if r.idx == nil { // every name hit the cache, but the list is shorter
		r.idx = append([]int32(nil), r.cache.idx[:len(r.nodes)]...)
	}
	e.lastNames.Store(&nameCache{snap: r.snap, names: slices.Clone(r.nodes), idx: r.idx})
}
