package placement

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/capacity"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/fragmentation"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/gpuset"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/health"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/load"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/model"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/staleness"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/straggler"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/topology"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TracerName is the instrumentation name of the engine's spans.
const TracerName = "github.com/gpuwatch/gpuwatch/scheduler/placement"

// ErrUnknownReservation is returned for a reservation id the engine does not hold
// (never made, released, or expired).
var ErrUnknownReservation = errors.New("unknown reservation")

// WeightedScorer is a scorer and its weight in a node's total.
type WeightedScorer struct {
	Scorer framework.Scorer
	Weight float64
}

// DefaultFilters returns the standard filters, cheapest and most selective first:
// capacity, model, health, staleness.
func DefaultFilters() []framework.Filter {
	return []framework.Filter{capacity.New(), model.New(), health.New(), staleness.New()}
}

// DefaultPicker returns the in-node GPU set picker (gpuset).
func DefaultPicker() framework.Picker { return gpuset.New() }

// DefaultScorers returns the standard scorers and weights: gpuset 2, fragmentation 2,
// topology 1, health 1, load 1, straggler 1. This list is the one registry of
// scorers; a site changes a weight by passing its own list in Options.Scorers.
func DefaultScorers() []WeightedScorer {
	return []WeightedScorer{
		{gpuset.New(), 2},
		{fragmentation.New(), 2},
		{topology.New(), 1},
		{health.New(), 1},
		{load.New(), 1},
		{straggler.New(), StragglerWeight},
	}
}

// StragglerWeight is the straggler scorer's default weight: a soft exclusion as
// strong as the health scorer's, weaker than a better GPU set or a better fit
// (weight 2 each), so a node with a straggler still wins where it fits better.
const StragglerWeight = 1

// WithWeight returns a copy of scorers with the named scorer's weight set to w
// (0 leaves it out of every total); an error names an unknown scorer or a weight
// that is negative or not a number.
func WithWeight(scorers []WeightedScorer, name string, w float64) ([]WeightedScorer, error) {
	if !(w >= 0) || math.IsInf(w, 0) {
		return nil, fmt.Errorf("placement: scorer %s: weight %v: want a number ≥ 0", name, w)
	}
	out := slices.Clone(scorers)
	for i := range out {
		if out[i].Scorer != nil && out[i].Scorer.Name() == name {
			out[i].Weight = w
			return out, nil
		}
	}
	var names []string
	for _, s := range scorers {
		if s.Scorer != nil {
			names = append(names, s.Scorer.Name())
		}
	}
	return nil, fmt.Errorf("placement: no scorer %q: the scorers are %s", name, strings.Join(names, ", "))
}

// Options configure an Engine. The zero value takes every default.
type Options struct {
	Filters []framework.Filter // default DefaultFilters()
	Picker  framework.Picker   // default DefaultPicker()
	Scorers []WeightedScorer   // default DefaultScorers()
	// Parallelism bounds the goroutines evaluating nodes of one decision (default
	// GOMAXPROCS). A decision that runs the pipeline on fewer than
	// ParallelThreshold nodes (default 2048) runs it on the calling goroutine; when
	// the engine groups nodes into classes, only the classes without a remembered
	// outcome count, so most decisions stay on one goroutine.
	Parallelism       int
	ParallelThreshold int
	// DefaultLease (default 5 minutes) is a reservation's lease when the request
	// gives none; MaxLease (default 1 hour) caps requests.
	DefaultLease time.Duration
	MaxLease     time.Duration
	// RecordTop is how many feasible runners-up a decision records besides the
	// chosen nodes (default 5; negative records none).
	RecordTop int
	// KeepDecisions is how many recent decisions Decision(id) can return (default
	// 1024).
	KeepDecisions int
	// Exhaustive runs every plugin on every candidate node. By default, when every
	// plugin is a built-in one, the engine runs the pipeline once per class of nodes
	// the plugins cannot tell apart (same static inputs, same free milli-GPU per GPU,
	// same leaf) and copies the outcome to the rest; the decisions are the same
	// (see classes.go). Exhaustive is the reference path for tests and debugging.
	Exhaustive bool
	Now        func() time.Time // default time.Now
	Tracer     trace.Tracer     // default otel.Tracer(TracerName)
	Logger     *slog.Logger     // default slog.Default()
}

// Engine places gangs on the fleet of the current snapshot, holding reservations
// in memory. All methods are safe for concurrent use: dry runs and Evaluate run
// concurrently with each other; a reservation is decided and recorded atomically.
type Engine struct {
	opts    Options
	filters []framework.Filter
	picker  framework.Picker
	scorers []WeightedScorer
	wsum    float64
	names   []string // plugin names by failure index: filters, then the picker
	grouped bool     // evaluate once per node class (built-in plugins, not Exhaustive)

	mu       sync.RWMutex
	snap     *snapshot.Snapshot
	free     []int32 // per flat GPU: snapshot free minus reservations
	leafFree []int64
	res      map[string]*reservation
	expiry   atomic.Int64 // unix nanos of the earliest lease end; MaxInt64 when none
	cls      classIndex   // node classes, when grouped

	prefix string
	seq    atomic.Uint64

	dmu       sync.Mutex
	decisions map[string]*framework.Decision
	ring      []string
	ringNext  int

	metrics   *metrics
	pool      sync.Pool
	lastNames atomic.Pointer[nameCache] // Evaluate's last node list
}

// New returns an engine over snap.
func New(snap *snapshot.Snapshot, opts Options) (*Engine, error) {
	if snap == nil {
		return nil, errors.New("placement: nil snapshot")
	}
	if opts.Filters == nil {
		opts.Filters = DefaultFilters()
	}
	if opts.Picker == nil {
		opts.Picker = DefaultPicker()
	}
	if opts.Scorers == nil {
		opts.Scorers = DefaultScorers()
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = runtime.GOMAXPROCS(0)
	}
	if opts.ParallelThreshold <= 0 {
		opts.ParallelThreshold = 2048
	}
	if opts.DefaultLease <= 0 {
		opts.DefaultLease = 5 * time.Minute
	}
	if opts.MaxLease <= 0 {
		opts.MaxLease = time.Hour
	}
	if opts.DefaultLease > opts.MaxLease {
		return nil, fmt.Errorf("placement: default lease %v exceeds max lease %v", opts.DefaultLease, opts.MaxLease)
	}
	if opts.RecordTop == 0 {
		opts.RecordTop = 5
	}
	if opts.KeepDecisions <= 0 {
		opts.KeepDecisions = 1024
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Tracer == nil {
		opts.Tracer = otel.Tracer(TracerName)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	e := &Engine{opts: opts, filters: opts.Filters, picker: opts.Picker, scorers: opts.Scorers,
		res: map[string]*reservation{}, decisions: map[string]*framework.Decision{}, ring: make([]string, opts.KeepDecisions)}
	seen := map[string]bool{}
	for _, f := range e.filters {
		if f == nil {
			return nil, errors.New("placement: nil filter")
		}
		e.names = append(e.names, f.Name())
	}
	e.names = append(e.names, e.picker.Name())
	for _, s := range e.scorers {
		if s.Scorer == nil {
			return nil, errors.New("placement: nil scorer")
		}
		if s.Weight < 0 || s.Weight != s.Weight {
			return nil, fmt.Errorf("placement: scorer %s: weight %v: want ≥ 0", s.Scorer.Name(), s.Weight)
		}
		if seen[s.Scorer.Name()] {
			return nil, fmt.Errorf("placement: scorer %s listed twice", s.Scorer.Name())
		}
		seen[s.Scorer.Name()] = true
		e.wsum += s.Weight
	}
	if e.wsum == 0 && len(e.scorers) > 0 {
		return nil, errors.New("placement: every scorer weight is 0")
	}
	if cs, ok := classifiers(e.filters, e.picker, e.scorers); ok && !opts.Exhaustive {
		e.grouped, e.cls.plugins = true, cs
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	e.prefix = hex.EncodeToString(b[:])
	e.expiry.Store(maxNanos)
	e.metrics = newMetrics(e)
	e.mu.Lock()
	e.setSnapshotLocked(snap)
	e.mu.Unlock()
	return e, nil
}

const maxNanos = int64(^uint64(0) >> 1)

// Snapshot returns the snapshot the engine places on.
func (e *Engine) Snapshot() *snapshot.Snapshot {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.snap
}

// SetSnapshot moves the engine to a new cycle's snapshot. Reservations carry over
// onto the same node and GPU; a reservation whose JobID the new snapshot shows as
// allocated has become an allocation and ends; reserved GPUs the new snapshot lacks
// are dropped from it.
func (e *Engine) SetSnapshot(snap *snapshot.Snapshot) {
	if snap == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.setSnapshotLocked(snap)
}

func (e *Engine) setSnapshotLocked(snap *snapshot.Snapshot) {
	e.snap = snap
	e.free = make([]int32, snap.GPUCount())
	for i := range snap.Len() {
		n := snap.Node(i)
		for p := range n.GPUs {
			e.free[n.First+p] = n.GPUs[p].FreeMilli
		}
	}
	e.leafFree = make([]int64, len(snap.Domains(telemetry.TierLeaf)))
	for l := range e.leafFree {
		e.leafFree[l] = snap.DomainFreeMilli(telemetry.TierLeaf, int32(l))
	}
	if e.grouped {
		e.cls.reset(snap, e.free)
	}
	for id, r := range e.res {
		if r.JobID != "" && snap.HasJob(r.JobID) {
			delete(e.res, id)
			continue
		}
		r.remap(snap)
		e.apply(r, -1)
	}
}

// pctx holds one decision's scratch space; pooled so decisions allocate little.
type pctx struct {
	out    []nodeOut
	idx    []int32
	order  []int32
	feas   []int32
	domCap []int64
	groups []group
	near   []int32
	sel    []choice
	best   []choice
	mark   []bool
	// Class memos (grouped engines): per request key, each class's outcome.
	tables [memoTables]memoTable
	tick   uint64
	stamp  uint32  // this decision's number, for memo scheduling
	keys   []int32 // per p.idx entry: its memo slot, -1 when the memo was valid
	reps   []int32 // the nodes evaluated for their class
	reqKey []byte  // this decision's request key
}

type nodeOut struct {
	score  float64
	reason string
	usable snapshot.GPUSet
	chosen snapshot.GPUSet
	fail   int16 // -1 feasible; else index into Engine.names
	take   int16
}

func (e *Engine) getScratch(n int) *pctx {
	p, _ := e.pool.Get().(*pctx)
	if p == nil {
		p = &pctx{}
	}
	if cap(p.out) < n {
		p.out = make([]nodeOut, n)
		p.idx = make([]int32, 0, n)
		p.order = make([]int32, 0, n)
	}
	p.out = p.out[:n]
	p.idx = p.idx[:0]
	p.order = p.order[:0]
	p.near = p.near[:0]
	p.sel = p.sel[:0]
	p.best = p.best[:0]
	return p
}

// evalNode runs the pipeline on node i of the cycle.
func (e *Engine) evalNode(ctx context.Context, req *framework.Request, cy *framework.Cycle, i int, c *framework.Candidate, o *nodeOut) {
	c.Reset(cy, i)
	c.Need = needPerNode(req)
	o.fail, o.reason, o.score, o.chosen, o.take = -1, "", 0, 0, 0
	for fi, f := range e.filters {
		if st := f.Filter(ctx, req, c); !st.OK() {
			o.fail, o.reason, o.usable = int16(fi), st.Reason, c.Usable
			return
		}
	}
	o.usable = c.Usable
	c.Take = takePerNode(req, c.Usable.Len())
	if st := e.picker.Pick(ctx, req, c); !st.OK() || c.Chosen.Len() != c.Take {
		o.fail, o.reason = int16(len(e.filters)), st.Reason
		if st.OK() {
			o.reason = "picker chose the wrong number of GPUs"
		}
		return
	}
	o.chosen, o.take = c.Chosen, int16(c.Take)
	o.score = e.scoreNode(ctx, req, c, nil)
}

// scoreNode returns the weighted mean score; with rec it records every score.
func (e *Engine) scoreNode(ctx context.Context, req *framework.Request, c *framework.Candidate, rec *[]framework.ScoreRecord) float64 {
	if len(e.scorers) == 0 {
		return 0
	}
	var total float64
	for _, s := range e.scorers {
		v, st := s.Scorer.Score(ctx, req, c)
		reason := st.Reason
		if v != v || v < 0 || v > 1 {
			if rec != nil {
				reason = fmt.Sprintf("score %v outside [0,1], clamped; %s", v, reason)
			}
			v = clamp01(v)
		}
		total += s.Weight * v
		if rec != nil {
			*rec = append(*rec, framework.ScoreRecord{Plugin: s.Scorer.Name(), Score: v, Weight: s.Weight, Reason: reason})
		}
	}
	return clamp01(total / e.wsum)
}

func clamp01(v float64) float64 {
	if v != v {
		return 0
	}
	return max(0, min(1, v))
}

func needPerNode(req *framework.Request) int {
	if req.Fixed() {
		return req.GPUsPerNode
	}
	return 1
}

func takePerNode(req *framework.Request, usable int) int {
	if req.Fixed() {
		return req.GPUsPerNode
	}
	return min(usable, req.GPUs)
}

// evalAll evaluates the nodes of p.idx into p.out: once per node class when the
// engine groups, else every node.
func (e *Engine) evalAll(ctx context.Context, req *framework.Request, cy *framework.Cycle, p *pctx) {
	if e.grouped {
		e.evalGrouped(ctx, req, cy, p)
		return
	}
	e.evalNodes(ctx, req, cy, p, p.idx)
}

const chunk = 256

func (e *Engine) nextID() string {
	return fmt.Sprintf("%s-%06d", e.prefix, e.seq.Add(1))
}

func (e *Engine) remember(d *framework.Decision) {
	e.dmu.Lock()
	defer e.dmu.Unlock()
	if old := e.ring[e.ringNext]; old != "" {
		delete(e.decisions, old)
	}
	e.ring[e.ringNext] = d.ID
	e.ringNext = (e.ringNext + 1) % len(e.ring)
	e.decisions[d.ID] = d
}

// Decision returns a recent decision by id (the last Options.KeepDecisions), for
// explain. The caller must not modify it.
func (e *Engine) Decision(id string) (*framework.Decision, bool) {
	e.dmu.Lock()
	defer e.dmu.Unlock()
	d, ok := e.decisions[id]
	return d, ok
}

// Recent returns up to n of the decisions Decision can return, newest first
// (the web UI's list of placements). The caller must not modify them.
func (e *Engine) Recent(n int) []*framework.Decision {
	e.dmu.Lock()
	defer e.dmu.Unlock()
	var out []*framework.Decision
	for k := 1; k <= len(e.ring) && len(out) < n; k++ {
		id := e.ring[(e.ringNext-k+len(e.ring))%len(e.ring)]
		if id == "" {
			break
		}
		if d, ok := e.decisions[id]; ok {
			out = append(out, d)
		}
	}
	return out
}
