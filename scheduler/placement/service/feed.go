package service

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// Series the feeder reads.
const (
	metricFBTotal          = telemetry.DCGMFBTotal
	metricUtil             = telemetry.DCGMGPUUtil
	metricSMActive         = telemetry.DCGMProfSMActive
	metricTemp             = telemetry.DCGMGPUTemp
	metricSlowdownTemp     = telemetry.DCGMSlowdownTemp
	metricPowerUsage       = telemetry.DCGMPowerUsage
	metricEnforcedPowerLim = telemetry.DCGMEnforcedPowerLimit
	metricPowerMgmtLim     = telemetry.DCGMPowerMgmtLimit
)

// FeedOptions say how Feed reads the store.
type FeedOptions struct {
	// Now is the cycle's time; Staleness the bound past which a value is stale
	// (default 1 minute).
	Now       time.Time
	Staleness time.Duration
	// Lookback is how long inventory, health, topology and limits are remembered
	// after the last sample (default 15 minutes).
	Lookback time.Duration
	// AgentInterval is the agents' full collection interval (default 10 s): an
	// allocation series older than its node's newest inventory sample by more than
	// two intervals belongs to a job that has ended.
	AgentInterval time.Duration
	// Exclusions are the drain controller's; Allocations come from schedulers
	// (Slurm) besides the store's gpuwatch_gpu_allocation_info; Locations, when
	// set, place nodes in the fleet instead of gpuwatch_topology_node_info.
	Exclusions  []snapshot.Exclusion
	Allocations []snapshot.Allocation
	Locations   []telemetry.NodeLocation
	// StragglerWindow is how long a GPU named a straggler (gpuwatch_straggler_gpu)
	// stays marked after it was last named (default 30 minutes): the straggler
	// scorer prefers other GPUs meanwhile.
	StragglerWindow time.Duration
}

// FeedStats describe one read.
type FeedStats struct {
	Queries int
	Nodes   int
	GPUs    int
	// Skipped lists what the feeder left out, one sentence each (a node with an
	// invalid name, a topology that fails validation, a value outside its range).
	Skipped []string
}

func (o *FeedOptions) defaults() error {
	if o.Now.IsZero() {
		return fmt.Errorf("feed: the cycle's time is zero")
	}
	if o.Staleness == 0 {
		o.Staleness = time.Minute
	}
	if o.Lookback == 0 {
		o.Lookback = 15 * time.Minute
	}
	if o.AgentInterval == 0 {
		o.AgentInterval = 10 * time.Second
	}
	if o.StragglerWindow == 0 {
		o.StragglerWindow = snapshot.DefaultStragglerWindow
	}
	switch {
	case o.Staleness < 0:
		return fmt.Errorf("feed: staleness %v: want > 0", o.Staleness)
	case o.Lookback < time.Second:
		return fmt.Errorf("feed: lookback %v: want at least 1s", o.Lookback)
	case o.AgentInterval < 0:
		return fmt.Errorf("feed: agent interval %v: want > 0", o.AgentInterval)
	case o.StragglerWindow < time.Minute:
		return fmt.Errorf("feed: straggler window %v: want at least 1m", o.StragglerWindow)
	}
	return nil
}

// gpuKey names a GPU by node and NVML index.
type gpuKey struct {
	node  string
	index int
}

type observed struct {
	v  float64
	at time.Time
}

type gpuRead struct {
	uuid, model string
	memMiB      int64
	health      observed
	util        observed
	temp        observed
	slowdown    float64
	power       observed
	powerLimit  float64
}

type nodeRead struct {
	gpus    map[int]*gpuRead
	loc     telemetry.NodeLocation
	links   []telemetry.GPULink
	nicLink []telemetry.NICLink
	topoAt  time.Time
	invAt   time.Time // newest gpuwatch_gpu_info sample
}

type reader struct {
	ctx   context.Context
	q     store.Querier
	now   time.Time
	stats *FeedStats
	nodes map[string]*nodeRead
	// answers holds the prefetched queries' results.
	answers map[string]answer
}

type answer struct {
	v   store.Vector
	err error
}

// feedParallelism bounds the queries in flight at once.
const feedParallelism = 4

// stragglerQueries are the straggler marks' expressions for a window: each
// mark's last lag, and when it was last named, its newest sample time: through a
// subquery for the window (timestamp() alone sees only the store's lookback of 5
// minutes) and timestamp() now for a sample newer than the subquery's last step,
// which is aligned to the minute.
func stragglerQueries(window string) (lag, at, recent string) {
	m := telemetry.MetricStragglerGPU
	return "last_over_time(" + m + "[" + window + "])", "max_over_time(timestamp(" + m + ")[" + window + ":1m])", "timestamp(" + m + ")"
}

// queries lists every expression a read evaluates, so they can run at once (an
// external store answers each after a network round trip).
func queries(lb, stragglerWindow string) []string {
	var out []string
	for _, m := range []string{telemetry.MetricGPUInfo, metricFBTotal, telemetry.MetricGPUHealthState, metricSlowdownTemp,
		metricPowerMgmtLim, metricEnforcedPowerLim, telemetry.MetricTopologyNodeInfo, telemetry.MetricTopologyGPULinkInfo,
		telemetry.MetricTopologyGPUNICInfo} {
		out = append(out, "last_over_time("+m+"["+lb+"])")
	}
	out = append(out, metricUtil, metricSMActive, metricTemp, metricPowerUsage)
	for _, m := range []string{telemetry.MetricGPUInfo, telemetry.MetricGPUHealthState, metricUtil, metricSMActive, metricTemp, metricPowerUsage,
		telemetry.MetricGPUAllocationInfo} {
		out = append(out, "timestamp("+m+")")
	}
	lag, at, recent := stragglerQueries(stragglerWindow)
	return append(out, "max by ("+telemetry.LabelNode+") (timestamp("+telemetry.MetricTopologyGPUInfo+"))", lag, at, recent)
}

// prefetch evaluates exprs, feedParallelism at a time.
func (r *reader) prefetch(exprs []string) {
	r.answers = make(map[string]answer, len(exprs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, feedParallelism)
	for _, e := range exprs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			v, err := r.q.Instant(r.ctx, e, r.now)
			mu.Lock()
			r.answers[e] = answer{v, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	r.stats.Queries += len(exprs)
}

func (r *reader) query(expr string) (store.Vector, error) {
	a, ok := r.answers[expr]
	if !ok {
		r.stats.Queries++
		a.v, a.err = r.q.Instant(r.ctx, expr, r.now)
	}
	if a.err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", expr, a.err)
	}
	return a.v, nil
}

func (r *reader) skip(format string, args ...any) {
	if len(r.stats.Skipped) < 100 {
		r.stats.Skipped = append(r.stats.Skipped, fmt.Sprintf(format, args...))
	}
}

func firstLabel(ls telemetry.Labels, names ...string) string {
	for _, n := range names {
		if v := ls.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// nodeOf names a sample's node: gpuwatch's node label, on every series a
// gpuwatch agent exports; for a node that only runs dcgm-exporter, its host-name
// label in either spelling (hostname since its 4.8, Hostname before).
func nodeOf(ls telemetry.Labels) string {
	return firstLabel(ls, telemetry.LabelNode, telemetry.DCGMLabelHostname, telemetry.DCGMLabelHostnameLegacy)
}

// key reads the node and GPU index of a per-GPU sample.
func keyOf(ls telemetry.Labels) (gpuKey, bool) {
	node := nodeOf(ls)
	idx, err := strconv.Atoi(firstLabel(ls, telemetry.LabelGPUIndex, telemetry.DCGMLabelGPU))
	if node == "" || err != nil || idx < 0 || idx > 1<<16 {
		return gpuKey{}, false
	}
	return gpuKey{node, idx}, true
}

func (r *reader) node(name string) *nodeRead {
	n := r.nodes[name]
	if n == nil {
		n = &nodeRead{gpus: map[int]*gpuRead{}}
		r.nodes[name] = n
	}
	return n
}

// gpu returns the inventory entry of k, nil when the inventory lacks it.
func (r *reader) gpu(k gpuKey) *gpuRead {
	if n := r.nodes[k.node]; n != nil {
		return n.gpus[k.index]
	}
	return nil
}

// secs turns a timestamp() value (Unix seconds) into a time.
func secs(v float64) time.Time {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(math.Round(v * 1000))).UTC()
}

// remembered reads the newest value of m within the lookback.
func (r *reader) remembered(m string, lookback string) (store.Vector, error) {
	return r.query("last_over_time(" + m + "[" + lookback + "])")
}

// values reads metric m with each sample's time, per GPU of the inventory.
func (r *reader) values(m string, set func(g *gpuRead, o observed)) error {
	v, err := r.query(m)
	if err != nil {
		return err
	}
	ts, err := r.query("timestamp(" + m + ")")
	if err != nil {
		return err
	}
	at := make(map[gpuKey]time.Time, len(ts))
	for _, s := range ts {
		if k, ok := keyOf(s.Labels); ok {
			at[k] = secs(s.Value)
		}
	}
	for _, s := range v {
		k, ok := keyOf(s.Labels)
		if !ok || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			continue
		}
		if g := r.gpu(k); g != nil {
			set(g, observed{s.Value, at[k]})
		}
	}
	return nil
}

// promDuration writes d as a PromQL duration in whole seconds.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(d/time.Second)), 10) + "s"
}

// Feed reads the store at opts.Now and builds the fleet snapshot: every GPU the
// agents (or dcgm-exporter) reported within opts.Lookback, each value with its
// sample time, the drain exclusions and the allocations. The error names the
// query or input that failed; nothing is built then.
func Feed(ctx context.Context, q store.Querier, opts FeedOptions) (*snapshot.Snapshot, FeedStats, error) {
	var stats FeedStats
	if q == nil {
		return nil, stats, fmt.Errorf("feed: no store querier")
	}
	if err := opts.defaults(); err != nil {
		return nil, stats, err
	}
	r := &reader{ctx: ctx, q: q, now: opts.Now, stats: &stats, nodes: map[string]*nodeRead{}}
	lb := promDuration(opts.Lookback)
	sw := promDuration(opts.StragglerWindow)
	r.prefetch(queries(lb, sw))
	if err := r.inventory(lb); err != nil {
		return nil, stats, err
	}
	if err := r.measurements(lb); err != nil {
		return nil, stats, err
	}
	if err := r.topology(lb); err != nil {
		return nil, stats, err
	}
	allocs, err := r.allocations(2 * opts.AgentInterval)
	if err != nil {
		return nil, stats, err
	}
	marks, err := r.stragglers(sw)
	if err != nil {
		return nil, stats, err
	}
	b := snapshot.NewBuilder(opts.Now, opts.Staleness)
	b.SetStragglerWindow(opts.StragglerWindow)
	names := make([]string, 0, len(r.nodes))
	for name := range r.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n := r.nodes[name]
		if len(n.gpus) == 0 {
			continue // topology or allocations of a node with no inventory
		}
		if err := telemetry.NodeID(name).Validate(); err != nil {
			r.skip("node %q: %v", name, err)
			continue
		}
		if len(n.gpus) > snapshot.MaxGPUsPerNode {
			r.skip("node %s reports %d GPUs: at most %d supported", name, len(n.gpus), snapshot.MaxGPUsPerNode)
			continue
		}
		in := snapshot.NodeInput{Name: name, Location: n.loc}
		idx := make([]int, 0, len(n.gpus))
		for i := range n.gpus {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		for _, i := range idx {
			in.GPUs = append(in.GPUs, r.gpuInput(name, i, n.gpus[i]))
		}
		if t := r.nodeTopology(name, n, idx); t != nil {
			in.Topology, in.TopologyAt = t, n.topoAt
		}
		b.AddNode(in)
		stats.Nodes++
		stats.GPUs += len(in.GPUs)
	}
	if opts.Locations != nil {
		b.SetLocations(opts.Locations)
	}
	for _, a := range mergeAllocations(allocs, opts.Allocations) {
		b.AddAllocation(a)
	}
	for _, e := range opts.Exclusions {
		b.Exclude(e)
	}
	for _, m := range marks {
		if g := r.nodes[m.Node]; g != nil && len(g.gpus) > 0 {
			b.MarkStraggler(m)
		}
	}
	snap, err := b.Build()
	if err != nil {
		return nil, stats, fmt.Errorf("feed: %w", err)
	}
	return snap, stats, nil
}

// inventory reads which GPUs each node has: gpuwatch_gpu_info (agents) and
// DCGM_FI_DEV_FB_TOTAL (agents and dcgm-exporter, with the memory).
func (r *reader) inventory(lb string) error {
	info, err := r.remembered(telemetry.MetricGPUInfo, lb)
	if err != nil {
		return err
	}
	fresh, err := r.query("timestamp(" + telemetry.MetricGPUInfo + ")")
	if err != nil {
		return err
	}
	freshUUID := map[gpuKey]string{}
	for _, s := range fresh {
		if k, ok := keyOf(s.Labels); ok {
			freshUUID[k] = s.Labels.Get(telemetry.LabelGPUUUID)
			n := r.node(k.node)
			if t := secs(s.Value); t.After(n.invAt) {
				n.invAt = t
			}
		}
	}
	add := func(s telemetry.Sample, uuid, model string) *gpuRead {
		k, ok := keyOf(s.Labels)
		if !ok {
			return nil
		}
		n := r.node(k.node)
		g := n.gpus[k.index]
		if g == nil {
			g = &gpuRead{}
			n.gpus[k.index] = g
		}
		// A GPU replaced under the same index leaves two series within the
		// lookback: the one with a fresh sample wins.
		fu, isFresh := freshUUID[k]
		switch {
		case g.uuid == "":
			g.uuid, g.model = uuid, model
		case isFresh && uuid == fu && g.uuid != fu:
			g.uuid, g.model = uuid, model
		}
		if g.model == "" {
			g.model = model
		}
		return g
	}
	for _, s := range info {
		add(s, s.Labels.Get(telemetry.LabelGPUUUID), s.Labels.Get(telemetry.LabelModel))
	}
	mem, err := r.remembered(metricFBTotal, lb)
	if err != nil {
		return err
	}
	for _, s := range mem {
		g := add(s, firstLabel(s.Labels, telemetry.DCGMLabelUUID, telemetry.LabelGPUUUID),
			firstLabel(s.Labels, telemetry.DCGMLabelModelName, telemetry.LabelModel))
		if g != nil && s.Value > 0 && s.Value < 1<<40 {
			g.memMiB = int64(s.Value)
		}
	}
	return nil
}

// measurements reads health, utilization, temperature and power.
func (r *reader) measurements(lb string) error {
	// Health is remembered for the lookback (its last known state, flagged stale
	// once old); the sample time comes from timestamp(), which sees the store's
	// lookback only, so an older health has no time and is stale.
	hv, err := r.remembered(telemetry.MetricGPUHealthState, lb)
	if err != nil {
		return err
	}
	ht, err := r.query("timestamp(" + telemetry.MetricGPUHealthState + ")")
	if err != nil {
		return err
	}
	hat := map[gpuKey]time.Time{}
	for _, s := range ht {
		if k, ok := keyOf(s.Labels); ok {
			hat[k] = secs(s.Value)
		}
	}
	for _, s := range hv {
		if k, ok := keyOf(s.Labels); ok {
			if g := r.gpu(k); g != nil {
				g.health = observed{s.Value, hat[k]}
			}
		}
	}
	if err := r.values(metricUtil, func(g *gpuRead, o observed) { g.util = o }); err != nil {
		return err
	}
	// DCGM's SM activity, where a host engine gives it, is the finer measure of
	// load (the share of cycles the SMs had work, not of time a kernel ran): it
	// replaces NVML's utilization, in percent.
	if err := r.values(metricSMActive, func(g *gpuRead, o observed) {
		if o.v >= 0 && o.v <= 1 {
			g.util = observed{o.v * 100, o.at}
		}
	}); err != nil {
		return err
	}
	if err := r.values(metricTemp, func(g *gpuRead, o observed) { g.temp = o }); err != nil {
		return err
	}
	if err := r.values(metricPowerUsage, func(g *gpuRead, o observed) { g.power = o }); err != nil {
		return err
	}
	limits := []struct {
		metric string
		set    func(*gpuRead, float64)
	}{
		{metricSlowdownTemp, func(g *gpuRead, v float64) { g.slowdown = v }},
		{metricPowerMgmtLim, func(g *gpuRead, v float64) { g.powerLimit = v }},
		{metricEnforcedPowerLim, func(g *gpuRead, v float64) { g.powerLimit = v }}, // the cap in force wins
	}
	for _, l := range limits {
		v, err := r.remembered(l.metric, lb)
		if err != nil {
			return err
		}
		for _, s := range v {
			if k, ok := keyOf(s.Labels); ok && s.Value > 0 && !math.IsInf(s.Value, 0) {
				if g := r.gpu(k); g != nil {
					l.set(g, s.Value)
				}
			}
		}
	}
	return nil
}

// topology reads each node's place in the fleet and the inside of the node.
func (r *reader) topology(lb string) error {
	locs, err := r.remembered(telemetry.MetricTopologyNodeInfo, lb)
	if err != nil {
		return err
	}
	for _, s := range locs {
		name := nodeOf(s.Labels)
		if name == "" {
			continue
		}
		n := r.node(name)
		n.loc = telemetry.NodeLocation{Node: telemetry.NodeID(name), NVLinkDomain: s.Labels.Get(telemetry.LabelNVLinkDomain),
			Leaf: s.Labels.Get(telemetry.LabelLeaf), Spine: s.Labels.Get(telemetry.LabelSpine), Block: s.Labels.Get(telemetry.LabelBlock)}
	}
	links, err := r.remembered(telemetry.MetricTopologyGPULinkInfo, lb)
	if err != nil {
		return err
	}
	for _, s := range links {
		k, ok := keyOf(s.Labels)
		peer, err := strconv.Atoi(s.Labels.Get(telemetry.LabelPeerGPUIndex))
		if !ok || err != nil {
			continue
		}
		typ := telemetry.LinkType(s.Labels.Get(telemetry.LabelLinkType))
		if !typ.Valid() {
			r.skip("node %s: gpu %d ↔ %d link type %q is not an nvidia-smi topo type", k.node, k.index, peer, typ)
			continue
		}
		count, _ := strconv.Atoi(s.Labels.Get(telemetry.LabelNVLinkCount))
		n := r.node(k.node)
		n.links = append(n.links, telemetry.GPULink{A: k.index, B: peer, Type: typ, NVLinks: max(0, count)})
	}
	nics, err := r.remembered(telemetry.MetricTopologyGPUNICInfo, lb)
	if err != nil {
		return err
	}
	for _, s := range nics {
		k, ok := keyOf(s.Labels)
		dev := s.Labels.Get(telemetry.LabelIBDevice)
		typ := telemetry.LinkType(s.Labels.Get(telemetry.LabelLinkType))
		if !ok || dev == "" {
			continue
		}
		if !typ.IsPCIe() {
			r.skip("node %s: gpu %d → %s PCIe distance %q is not a PCIe link type", k.node, k.index, dev, typ)
			continue
		}
		n := r.node(k.node)
		n.nicLink = append(n.nicLink, telemetry.NICLink{GPU: k.index, NIC: dev, Type: typ})
	}
	at, err := r.query("max by (" + telemetry.LabelNode + ") (timestamp(" + telemetry.MetricTopologyGPUInfo + "))")
	if err != nil {
		return err
	}
	for _, s := range at {
		if name := s.Labels.Get(telemetry.LabelNode); name != "" {
			r.node(name).topoAt = secs(s.Value)
		}
	}
	return nil
}

// nodeTopology assembles the node's topology from its info series; nil when the
// node reported none or it fails validation (then noted in the stats).
func (r *reader) nodeTopology(name string, n *nodeRead, idx []int) *telemetry.NodeTopology {
	if len(n.links) == 0 && len(n.nicLink) == 0 {
		return nil
	}
	t := &telemetry.NodeTopology{Node: telemetry.NodeID(name)}
	for _, i := range idx {
		g := n.gpus[i]
		t.GPUs = append(t.GPUs, telemetry.TopologyGPU{Index: i, UUID: g.uuid, Model: g.model, NUMANode: -1})
	}
	seen := map[[2]int]bool{}
	for _, l := range n.links {
		p := [2]int{min(l.A, l.B), max(l.A, l.B)}
		if seen[p] || n.gpus[l.A] == nil || n.gpus[l.B] == nil || l.A == l.B {
			continue
		}
		seen[p] = true
		t.GPULinks = append(t.GPULinks, l)
	}
	nicSeen := map[string]bool{}
	linkSeen := map[telemetry.NICLink]bool{}
	for _, l := range n.nicLink {
		if n.gpus[l.GPU] == nil || linkSeen[telemetry.NICLink{GPU: l.GPU, NIC: l.NIC}] {
			continue
		}
		linkSeen[telemetry.NICLink{GPU: l.GPU, NIC: l.NIC}] = true
		if !nicSeen[l.NIC] {
			nicSeen[l.NIC] = true
			t.NICs = append(t.NICs, telemetry.TopologyNIC{Device: l.NIC, NUMANode: -1})
		}
		t.NICLinks = append(t.NICLinks, l)
	}
	slices.SortFunc(t.GPULinks, func(a, b telemetry.GPULink) int {
		if c := min(a.A, a.B) - min(b.A, b.B); c != 0 {
			return c
		}
		return max(a.A, a.B) - max(b.A, b.B)
	})
	slices.SortFunc(t.NICs, func(a, b telemetry.TopologyNIC) int { return strings.Compare(a.Device, b.Device) })
	if err := t.Validate(); err != nil {
		r.skip("node %s: topology from the store left out: %v", name, err)
		return nil
	}
	return t
}

// gpuInput turns what was read about one GPU into the Builder's input. A value
// outside its range is left out (never observed) and noted.
func (r *reader) gpuInput(node string, index int, g *gpuRead) snapshot.GPUInput {
	in := snapshot.GPUInput{Index: index, UUID: g.uuid, Model: g.model, MemoryMiB: g.memMiB}
	if st := telemetry.State(g.health.v); g.health.v == math.Trunc(g.health.v) && st.Valid() {
		in.Health, in.HealthAt = st, g.health.at
	} else {
		r.skip("node %s gpu %d: health state %v is not a state: treated as never observed", node, index, g.health.v)
	}
	if !g.util.at.IsZero() {
		if u := g.util.v / 100; u >= 0 && u <= 1 {
			in.Utilization, in.UtilizationAt = u, g.util.at
		} else {
			r.skip("node %s gpu %d: utilization %v%% outside 0..100: left out", node, index, g.util.v)
		}
	}
	// Headroom counts only when both temperature and power are known.
	if !g.temp.at.IsZero() && !g.power.at.IsZero() && g.slowdown > 0 && g.powerLimit > 0 {
		in.ThermalHeadroom = unit((g.slowdown - g.temp.v) / g.slowdown)
		in.PowerHeadroom = unit(1 - g.power.v/g.powerLimit)
		in.HeadroomAt = g.temp.at
		if g.power.at.Before(in.HeadroomAt) {
			in.HeadroomAt = g.power.at
		}
	}
	return in
}

// unit clamps v into [0,1].
func unit(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return max(0, min(1, v))
}

// allocations reads who holds each GPU from gpuwatch_gpu_allocation_info. A
// series whose newest sample is older than its node's newest inventory sample by
// more than slack has ended (its job finished while the agent kept reporting);
// when the node's agent went quiet, the allocation stands.
func (r *reader) allocations(slack time.Duration) ([]snapshot.Allocation, error) {
	v, err := r.query("timestamp(" + telemetry.MetricGPUAllocationInfo + ")")
	if err != nil {
		return nil, err
	}
	var out []snapshot.Allocation
	for _, s := range v {
		k, ok := keyOf(s.Labels)
		if !ok {
			continue
		}
		at := secs(s.Value)
		if n := r.nodes[k.node]; n != nil && !n.invAt.IsZero() && at.Before(n.invAt.Add(-slack)) {
			continue
		}
		job := s.Labels.Get(telemetry.LabelJobID)
		source := "store"
		if job == "" {
			if pod := s.Labels.Get(telemetry.LabelPod); pod != "" {
				job = pod
				if ns := s.Labels.Get(telemetry.LabelNamespace); ns != "" {
					job = ns + "/" + pod
				}
				source = "kubernetes"
			}
		}
		if job == "" {
			job = "unknown"
		}
		out = append(out, snapshot.Allocation{JobID: job, Node: k.node, GPUs: []int{k.index}, Source: source, At: at})
	}
	return out, nil
}

// stragglers reads the GPUs named stragglers within the window from
// gpuwatch_straggler_gpu (the server's recorder writes it): one mark per
// series (job, signal), found by the node and GPU UUID; the Builder keeps each
// GPU's largest lag. A lag outside [0,1] is left out and noted.
func (r *reader) stragglers(window string) ([]snapshot.StragglerMark, error) {
	lagExpr, atExpr, recentExpr := stragglerQueries(window)
	lags, err := r.query(lagExpr)
	if err != nil {
		return nil, err
	}
	ats, err := r.query(atExpr)
	if err != nil {
		return nil, err
	}
	recent, err := r.query(recentExpr)
	if err != nil {
		return nil, err
	}
	ats = append(ats, recent...)
	type key struct{ node, uuid, job, signal string }
	keyOf := func(ls telemetry.Labels) key {
		return key{ls.Get(telemetry.LabelNode), ls.Get(telemetry.LabelGPUUUID), ls.Get(telemetry.LabelJobID), ls.Get(telemetry.LabelSignal)}
	}
	at := make(map[key]time.Time, len(ats))
	for _, s := range ats {
		k := keyOf(s.Labels)
		if t := secs(s.Value); t.After(at[k]) {
			at[k] = t
		}
	}
	var out []snapshot.StragglerMark
	for _, s := range lags {
		k := keyOf(s.Labels)
		if k.node == "" || k.uuid == "" {
			continue
		}
		if !(s.Value >= 0 && s.Value <= 1) {
			r.skip("node %s gpu %s: straggler lag %v outside [0,1]: left out", k.node, k.uuid, s.Value)
			continue
		}
		out = append(out, snapshot.StragglerMark{Node: k.node, GPU: -1, UUID: k.uuid, Job: k.job, Signal: k.signal, Lag: s.Value, At: at[k]})
	}
	return out, nil
}

// mergeAllocations joins the store's allocations with a scheduler's, counting a
// (node, GPU, job) once: the scheduler's word wins.
func mergeAllocations(fromStore, fromScheduler []snapshot.Allocation) []snapshot.Allocation {
	type key struct {
		node, job string
		gpu       int
	}
	held := map[key]bool{}
	out := make([]snapshot.Allocation, 0, len(fromStore)+len(fromScheduler))
	for _, a := range fromScheduler {
		for _, g := range a.GPUs {
			held[key{a.Node, a.JobID, g}] = true
		}
		out = append(out, a)
	}
	for _, a := range fromStore {
		kept := a
		kept.GPUs = nil
		for _, g := range a.GPUs {
			if !held[key{a.Node, a.JobID, g}] {
				kept.GPUs = append(kept.GPUs, g)
			}
		}
		if len(kept.GPUs) > 0 {
			out = append(out, kept)
		}
	}
	return out
}
