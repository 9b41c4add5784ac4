package placement

import (
	"bytes"
	"context"
	"encoding/binary"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/topology"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Equivalence classes of nodes.
//
// Each plugin says what it reads through framework.Classifier: of a candidate
// node, what is fixed for the snapshot (AppendNodeKey), and of the request
// (AppendRequestKey). Besides, every plugin may read the node's free milli-GPU per
// GPU (snapshot minus reservations), the free share of its leaf and, with
// Request.Near only, the lowest tier it shares with a Near node; the engine keys
// those itself.
//
// Two nodes equal in all of these get the same verdicts, the same usable and chosen
// GPUs (by position) and the same scores from every plugin, for any request. The
// engine therefore keeps every node's class: a static key (the plugins' node keys)
// interned per snapshot, combined with the free vector and interned again whenever
// a reservation or release changes a node's free milli-GPU. A decision runs the
// pipeline once per class (on the class's lowest-numbered candidate) and copies the
// outcome to the other members; the outcome is remembered per request key (the
// plugins' request keys). Keys are compared byte for byte, never by hash alone, so
// a class never merges nodes that differ.
//
// The engine groups only when every filter, the picker and every scorer is a
// Classifier, and never when Options.Exhaustive is set; TestGroupedMatchesExhaustive
// holds the two paths equal. A plugin that starts reading another input of the node
// or the request must append it to its keys, and genMixedFleet must vary it, or
// grouping will merge nodes it tells apart.

// classifiers returns the pipeline's plugins as Classifiers, each once, or false
// when one of them is not a Classifier.
func classifiers(filters []framework.Filter, picker framework.Picker, scorers []WeightedScorer) ([]framework.Classifier, bool) {
	var out []framework.Classifier
	add := func(p framework.Plugin) bool {
		c, ok := p.(framework.Classifier)
		if !ok {
			return false
		}
		t := reflect.TypeOf(c)
		for _, o := range out {
			if reflect.TypeOf(o) == t && t.Comparable() && o == c {
				return true // the same plugin as filter and scorer: its keys once
			}
		}
		out = append(out, c)
		return true
	}
	for _, f := range filters {
		if !add(f) {
			return nil, false
		}
	}
	if !add(picker) {
		return nil, false
	}
	for _, s := range scorers {
		if !add(s.Scorer) {
			return nil, false
		}
	}
	return out, true
}

// beginPart and endPart frame what one plugin appends with its length (a
// varint), so that the parts of two plugins never run into each other.
func beginPart(b []byte) (framework.Key, int) {
	at := len(b)
	return append(b, 0), at
}

func endPart(b []byte, at int) []byte {
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	var v [binary.MaxVarintLen64]byte
	m := binary.PutUvarint(v[:], uint64(n))
	b = append(b, v[:m-1]...)
	copy(b[at+m:], b[at+1:at+1+n])
	copy(b[at:], v[:m])
	return b
}

// classIndex holds every node's class. It is changed only with Engine.mu held for
// writing and read under the read lock.
type classIndex struct {
	static  []uint32         // per node: interned static key
	class   []int32          // per node: interned (static, free vector) key
	ids     map[string]int32 // (static, free vector) → class
	nodeOf  []int32          // per flat GPU: its node
	leaf    []int32          // per node: its leaf, or len(leafGen)-1 when unknown
	leafGen []uint32         // per leaf (and one for unknown leaves): bumped when its free milli-GPU changes
	epoch   uint64           // bumped when classes are renumbered
	buf     []byte
	plugins []framework.Classifier // whose keys make the classes
}

func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// appendStaticKey appends what the plugins read of node n that is fixed for the
// snapshot: its number of GPUs and every plugin's node key.
func (x *classIndex) appendStaticKey(b []byte, n *snapshot.Node) []byte {
	b = appendU32(b, uint32(len(n.GPUs)))
	for _, c := range x.plugins {
		k, at := beginPart(b)
		b = endPart(c.AppendNodeKey(k, n), at)
	}
	return b
}

// reset classifies every node of snap with the engine's free overlay.
func (x *classIndex) reset(snap *snapshot.Snapshot, free []int32) {
	statics := make(map[string]uint32)
	x.static = resize(x.static, snap.Len())
	x.class = resize(x.class, snap.Len())
	x.nodeOf = resize(x.nodeOf, snap.GPUCount())
	x.leaf = resize(x.leaf, snap.Len())
	leaves := len(snap.Domains(telemetry.TierLeaf))
	x.leafGen = make([]uint32, leaves+1)
	for i := range snap.Len() {
		n := snap.Node(i)
		x.leaf[i] = int32(leaves)
		if n.Leaf >= 0 && int(n.Leaf) < leaves {
			x.leaf[i] = n.Leaf
		}
		x.buf = x.appendStaticKey(x.buf[:0], n)
		id, ok := statics[string(x.buf)]
		if !ok {
			id = uint32(len(statics))
			statics[string(x.buf)] = id
		}
		x.static[i] = id
		for p := range n.GPUs {
			x.nodeOf[n.First+p] = int32(i)
		}
	}
	x.reclassAll(snap, free)
}

func (x *classIndex) reclassAll(snap *snapshot.Snapshot, free []int32) {
	x.epoch++
	x.ids = make(map[string]int32, len(x.ids))
	for i := range snap.Len() {
		x.reclass(snap, free, i)
	}
}

// reclass recomputes node i's class after its free milli-GPU changed.
func (x *classIndex) reclass(snap *snapshot.Snapshot, free []int32, i int) {
	n := snap.Node(i)
	x.buf = appendU32(x.buf[:0], x.static[i])
	for _, f := range free[n.First : n.First+len(n.GPUs)] {
		x.buf = appendU32(x.buf, uint32(f))
	}
	id, ok := x.ids[string(x.buf)]
	if !ok {
		id = int32(len(x.ids))
		x.ids[string(x.buf)] = id
	}
	x.class[i] = id
}

// touched reclassifies the nodes of the flat GPUs a reservation changed and moves
// their leaves to a new generation; when churn has left many classes no node uses
// any more, it renumbers them all.
func (x *classIndex) touched(snap *snapshot.Snapshot, free []int32, flat []int32) {
	if x.ids == nil {
		return
	}
	for _, f := range flat {
		if f >= 0 && int(f) < len(x.nodeOf) {
			x.leafGen[x.leaf[x.nodeOf[f]]]++
		}
	}
	if len(x.ids) > 2*snap.Len()+1024 {
		x.reclassAll(snap, free)
		return
	}
	last := int32(-1)
	for _, f := range flat {
		if f < 0 || int(f) >= len(x.nodeOf) {
			continue
		}
		if i := x.nodeOf[f]; i != last {
			x.reclass(snap, free, int(i))
			last = i
		}
	}
}

func (x *classIndex) classes() int { return len(x.ids) }

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// appendRequestKey appends what the engine and the plugins read of a request: two
// requests equal in it get the same outcome on the same class of node. near says
// whether Request.Near named a known node (the topology scorer then rates the tier
// shared with the closest peer, which becomes part of the memo slot, instead of
// the leaf's fill).
func (e *Engine) appendRequestKey(b []byte, req *framework.Request, near bool) []byte {
	b = appendBool(b, near)
	b = appendBool(b, req.Fixed())
	b = appendU64(b, uint64(req.GPUs))
	b = appendU64(b, uint64(req.GPUsPerNode))
	for _, c := range e.cls.plugins {
		k, at := beginPart(b)
		b = endPart(c.AppendRequestKey(k, req), at)
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// memo is a class's outcome for one request key, kept across decisions: it stays
// valid while the class numbering (epoch) holds and the class's leaf has not changed
// (gen), since the topology scorer reads the leaf's free milli-GPU.
type memo struct {
	out   nodeOut
	gen   uint32 // leaf generation out was computed at
	stamp uint32 // decision that last scheduled the class for evaluation
	rep   int32  // the node evaluated for the class in that decision
	valid bool
}

// memoTable holds the memos of one request key.
type memoTable struct {
	key   []byte // the request key
	epoch uint64
	used  uint64
	slots []memo
}

// memoTables is how many request keys a scratch space remembers.
const memoTables = 4

// table returns the memo table for key in the current class epoch, recycling the
// least recently used one.
func (p *pctx) table(key []byte, epoch uint64) *memoTable {
	p.tick++
	var t *memoTable
	for k := range p.tables {
		c := &p.tables[k]
		if c.epoch == epoch && c.slots != nil && bytes.Equal(c.key, key) {
			t = c
			break
		}
		if t == nil || c.used < t.used {
			t = c
		}
	}
	if t.epoch != epoch || t.slots == nil || !bytes.Equal(t.key, key) {
		t.key, t.epoch = append(t.key[:0], key...), epoch
		t.slots = t.slots[:0]
	}
	t.used = p.tick
	return t
}

// nearStride spaces class memo slots when Request.Near makes the topology score
// depend on the node's lowest common tier with a peer: one slot per tier from node
// to cluster.
const nearStride = int(telemetry.TierCluster-telemetry.TierNode) + 1

// memoTable returns the memo table for req, grown to every class, the slot stride,
// and a new decision stamp.
func (e *Engine) memoTable(req *framework.Request, cy *framework.Cycle, p *pctx) (*memoTable, int, uint32) {
	stride := 1
	if len(cy.Near) > 0 {
		stride = nearStride
	}
	p.reqKey = e.appendRequestKey(p.reqKey[:0], req, len(cy.Near) > 0)
	t := p.table(p.reqKey, e.cls.epoch)
	if n := e.cls.classes() * stride; len(t.slots) < n {
		t.slots = append(t.slots, make([]memo, n-len(t.slots))...)
	}
	p.stamp++
	if p.stamp == 0 { // wrapped: forget which decision scheduled what
		for k := range p.tables {
			for j := range p.tables[k].slots {
				p.tables[k].slots[j].stamp = 0
			}
		}
		p.stamp = 1
	}
	return t, stride, p.stamp
}

// evalGrouped evaluates the nodes of p.idx into p.out: a node whose class has a
// valid memo takes it; otherwise the pipeline runs once per class, on the class's
// first node, and the others copy its outcome.
func (e *Engine) evalGrouped(ctx context.Context, req *framework.Request, cy *framework.Cycle, p *pctx) {
	t, stride, stamp := e.memoTable(req, cy, p)
	p.keys = resize(p.keys, len(p.idx))
	p.reps = p.reps[:0]
	class, leaf, gens := e.cls.class, e.cls.leaf, e.cls.leafGen
	slots := t.slots
	for k, i := range p.idx {
		slot := int(class[i])
		if stride > 1 {
			slot = slot*stride + int(nearTier(cy, int(i))-telemetry.TierNode)
		}
		m := &slots[slot]
		gen := gens[leaf[i]]
		if m.valid && m.gen == gen {
			p.out[i] = m.out
			p.keys[k] = -1
			continue
		}
		p.keys[k] = int32(slot)
		if m.stamp != stamp {
			m.stamp, m.rep, m.gen, m.valid = stamp, i, gen, false
			p.reps = append(p.reps, i)
		}
	}
	if len(p.reps) == 0 {
		return
	}
	e.evalNodes(ctx, req, cy, p, p.reps)
	for k, i := range p.idx {
		slot := p.keys[k]
		if slot < 0 {
			continue
		}
		m := &slots[slot]
		if m.rep == i { // the class's first node: its outcome is the memo
			m.out, m.valid = p.out[i], true
		} else {
			p.out[i] = m.out
		}
	}
}

// nearTier is the lowest tier node i shares with a Near node.
func nearTier(cy *framework.Cycle, i int) telemetry.Tier {
	best := telemetry.TierCluster
	for _, q := range cy.Near {
		best = min(best, topology.LCATier(cy.Snap, i, int(q)))
	}
	return best
}

// evalNodes runs the pipeline on the nodes idx, in parallel chunks when there are
// at least Options.ParallelThreshold of them.
func (e *Engine) evalNodes(ctx context.Context, req *framework.Request, cy *framework.Cycle, p *pctx, idx []int32) {
	n := len(idx)
	if n > 0 {
		e.metrics.runs.Add(float64(n))
	}
	run := func(from, to int, c *framework.Candidate) {
		for k := from; k < to; k++ {
			i := int(idx[k])
			e.evalNode(ctx, req, cy, i, c, &p.out[i])
		}
	}
	workers := min(e.opts.Parallelism, (n+chunk-1)/chunk)
	if n < e.opts.ParallelThreshold || workers <= 1 {
		var c framework.Candidate
		run(0, n, &c)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c framework.Candidate
			for {
				s := int(next.Add(chunk)) - chunk
				if s >= n {
					return
				}
				run(s, min(s+chunk, n), &c)
			}
		}()
	}
	wg.Wait()
}
