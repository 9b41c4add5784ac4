package snapshot

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// NodeInput describes one node for the Builder.
type NodeInput struct {
	Name   string
	Labels map[string]string
	// Location places the node in the fleet (leaf, spine, block, NVLink domain); its
	// Node field may be left empty. Builder.SetLocations overrides it.
	Location telemetry.NodeLocation
	// Topology is the agent's /topology document and TopologyAt when it was read;
	// nil when unknown (every GPU pair then counts as connected alike, rails unknown).
	Topology   *telemetry.NodeTopology
	TopologyAt time.Time
	// GPUs; when empty and Topology is set, the GPUs are taken from the topology.
	GPUs []GPUInput
}

// GPUInput describes one GPU for the Builder. Zero times mean "never observed".
type GPUInput struct {
	Index     int
	UUID      string
	Model     string
	MemoryMiB int64
	Health    telemetry.State
	HealthAt  time.Time
	// Utilization in [0,1].
	Utilization   float64
	UtilizationAt time.Time
	// ThermalHeadroom and PowerHeadroom in [0,1], observed at HeadroomAt.
	ThermalHeadroom float64
	PowerHeadroom   float64
	HeadroomAt      time.Time
}

// Builder assembles a Snapshot. It is not safe for concurrent use; build one per
// cycle.
type Builder struct {
	now    time.Time
	bound  time.Duration
	nodes  []NodeInput
	locs   map[string]telemetry.NodeLocation
	allocs []Allocation
	excl   []Exclusion
	strag  []StragglerMark
	window time.Duration
}

// DefaultStragglerWindow is how long a straggler mark counts after the GPU was
// last named, unless SetStragglerWindow says otherwise.
const DefaultStragglerWindow = 30 * time.Minute

// NewBuilder starts a snapshot for the cycle at now; values observed more than bound
// before now (or never) are flagged stale.
func NewBuilder(now time.Time, bound time.Duration) *Builder {
	return &Builder{now: now, bound: bound, window: DefaultStragglerWindow}
}

// SetStragglerWindow sets how long a straggler mark counts after its GPU was last
// named (default DefaultStragglerWindow).
func (b *Builder) SetStragglerWindow(d time.Duration) { b.window = d }

// MarkStraggler records that a GPU was named a straggler (m.GPU its index, or -1
// to find it by m.UUID). A mark older than the straggler window, or without a
// time, does not count; several marks of one GPU keep the largest lag.
func (b *Builder) MarkStraggler(m StragglerMark) { b.strag = append(b.strag, m) }

// AddNode adds a node.
func (b *Builder) AddNode(n NodeInput) { b.nodes = append(b.nodes, n) }

// SetLocations sets the nodes' places in the fleet (for example a Hierarchy's
// Nodes()), overriding NodeInput.Location. Locations of nodes never added are
// ignored.
func (b *Builder) SetLocations(locs []telemetry.NodeLocation) {
	if b.locs == nil {
		b.locs = make(map[string]telemetry.NodeLocation, len(locs))
	}
	for _, l := range locs {
		b.locs[string(l.Node)] = l
	}
}

// AddAllocation records GPUs a scheduler holds for a job. Milli 0 means a whole GPU.
func (b *Builder) AddAllocation(a Allocation) { b.allocs = append(b.allocs, a) }

// Exclude records a GPU (GPU -1: the whole node) placement must not use.
func (b *Builder) Exclude(e Exclusion) { b.excl = append(b.excl, e) }

func (b *Builder) stale(at time.Time) bool {
	return at.IsZero() || b.now.Sub(at) > b.bound
}

func inUnit(v float64) bool { return v >= 0 && v <= 1 && !math.IsNaN(v) }

// Build validates the inputs and returns the snapshot. The error names the first bad
// input: a staleness bound ≤ 0, an invalid or duplicate node name, a duplicate or
// out-of-range GPU index, more than MaxGPUsPerNode GPUs, a value outside [0,1], an
// unknown health state, a topology that fails validation or names another node, an
// inconsistent hierarchy, or an allocation with milli outside 0..1000. Allocations
// and exclusions naming unknown nodes or GPUs, and over-committed GPUs, are not
// errors: they become Warnings.
func (b *Builder) Build() (*Snapshot, error) {
	if b.bound <= 0 {
		return nil, fmt.Errorf("snapshot: staleness bound %v: want > 0", b.bound)
	}
	if b.now.IsZero() {
		return nil, errors.New("snapshot: now is the zero time: pass the cycle's time to NewBuilder")
	}
	if b.window <= 0 {
		return nil, fmt.Errorf("snapshot: straggler window %v: want > 0", b.window)
	}
	s := &Snapshot{now: b.now, bound: b.bound, stragglerWindow: b.window, byName: make(map[string]int, len(b.nodes))}
	inputs := slices.Clone(b.nodes)
	slices.SortStableFunc(inputs, func(x, y NodeInput) int { return strings.Compare(x.Name, y.Name) })
	s.nodes = make([]Node, len(inputs))
	locs := make([]telemetry.NodeLocation, len(inputs))
	var gpuBacking []GPU
	total := 0
	for i := range inputs {
		total += max(len(inputs[i].GPUs), topoGPUs(inputs[i].Topology))
	}
	gpuBacking = make([]GPU, 0, total)
	for i := range inputs {
		in := &inputs[i]
		if err := telemetry.NodeID(in.Name).Validate(); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		if _, dup := s.byName[in.Name]; dup {
			return nil, fmt.Errorf("snapshot: node %s added twice", in.Name)
		}
		s.byName[in.Name] = i
		loc := in.Location
		if l, ok := b.locs[in.Name]; ok {
			loc = l
		}
		loc.Node = telemetry.NodeID(in.Name)
		locs[i] = loc
		first := len(gpuBacking)
		gpus, err := b.gpus(in)
		if err != nil {
			return nil, err
		}
		gpuBacking = append(gpuBacking, gpus...)
		n := &s.nodes[i]
		n.Name, n.Labels, n.Location, n.First = in.Name, in.Labels, loc, first
		n.GPUs = gpuBacking[first:len(gpuBacking):len(gpuBacking)]
		n.Topology = Observed[*telemetry.NodeTopology]{Value: in.Topology, At: in.TopologyAt, Stale: b.stale(in.TopologyAt)}
		if err := n.applyTopology(); err != nil {
			return nil, err
		}
	}
	s.gpus = len(gpuBacking)
	h, err := telemetry.NewHierarchy(locs)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	s.hier = h
	s.assignDomains()
	if err := s.applyAllocations(b.allocs); err != nil {
		return nil, err
	}
	if err := s.applyExclusions(b.excl); err != nil {
		return nil, err
	}
	if err := s.applyStragglers(b.strag); err != nil {
		return nil, err
	}
	hot := make([]HotGPU, s.gpus) // one backing array: candidates are read in node order
	for i := range s.nodes {
		n := &s.nodes[i]
		n.hot = hot[n.First : n.First+len(n.GPUs) : n.First+len(n.GPUs)]
		n.precompute()
		for _, g := range s.nodes[i].GPUs {
			if g.Health.Stale {
				s.staleHealth++
			}
			if g.Utilization.Stale {
				s.staleLoad++
			}
		}
	}
	s.sumDomains()
	return s, nil
}

func topoGPUs(t *telemetry.NodeTopology) int {
	if t == nil {
		return 0
	}
	return len(t.GPUs)
}

func (b *Builder) gpus(in *NodeInput) ([]GPU, error) {
	src := in.GPUs
	if len(src) == 0 && in.Topology != nil {
		for _, g := range in.Topology.GPUs {
			src = append(src, GPUInput{Index: g.Index, UUID: g.UUID, Model: g.Model})
		}
	}
	if len(src) > MaxGPUsPerNode {
		return nil, fmt.Errorf("snapshot: node %s has %d GPUs: at most %d supported", in.Name, len(src), MaxGPUsPerNode)
	}
	out := make([]GPU, len(src))
	for j, g := range src {
		where := fmt.Sprintf("snapshot: node %s gpu %d", in.Name, g.Index)
		switch {
		case g.Index < 0:
			return nil, fmt.Errorf("%s: negative index", where)
		case g.MemoryMiB < 0:
			return nil, fmt.Errorf("%s: memory %d MiB: want ≥ 0", where, g.MemoryMiB)
		case !g.Health.Valid():
			return nil, fmt.Errorf("%s: unknown health state %d", where, int(g.Health))
		case !inUnit(g.Utilization):
			return nil, fmt.Errorf("%s: utilization %v: want a value in [0,1]", where, g.Utilization)
		case !inUnit(g.ThermalHeadroom):
			return nil, fmt.Errorf("%s: thermal headroom %v: want a value in [0,1]", where, g.ThermalHeadroom)
		case !inUnit(g.PowerHeadroom):
			return nil, fmt.Errorf("%s: power headroom %v: want a value in [0,1]", where, g.PowerHeadroom)
		}
		out[j] = GPU{
			Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB,
			Health:          Observed[telemetry.State]{Value: g.Health, At: g.HealthAt, Stale: b.stale(g.HealthAt)},
			Utilization:     Observed[float64]{Value: g.Utilization, At: g.UtilizationAt, Stale: b.stale(g.UtilizationAt)},
			ThermalHeadroom: Observed[float64]{Value: g.ThermalHeadroom, At: g.HeadroomAt, Stale: b.stale(g.HeadroomAt)},
			PowerHeadroom:   Observed[float64]{Value: g.PowerHeadroom, At: g.HeadroomAt, Stale: b.stale(g.HeadroomAt)},
			FreeMilli:       FullMilli,
			Rail:            -1,
		}
	}
	slices.SortFunc(out, func(x, y GPU) int { return x.Index - y.Index })
	for j := 1; j < len(out); j++ {
		if out[j].Index == out[j-1].Index {
			return nil, fmt.Errorf("snapshot: node %s: gpu %d listed twice", in.Name, out[j].Index)
		}
	}
	return out, nil
}

// applyTopology fills the link-quality matrix and the rails from the node's topology.
func (n *Node) applyTopology() error {
	g := len(n.GPUs)
	n.quality = make([]uint16, g*g)
	t := n.Topology.Value
	if t == nil {
		return nil
	}
	if err := t.Validate(); err != nil {
		return fmt.Errorf("snapshot: node %s: %w", n.Name, err)
	}
	if string(t.Node) != n.Name {
		return fmt.Errorf("snapshot: node %s: topology is for node %s", n.Name, t.Node)
	}
	pos := make(map[int]int, g)
	for i := range n.GPUs {
		pos[n.GPUs[i].Index] = i
	}
	for _, l := range t.GPULinks {
		a, okA := pos[l.A]
		b, okB := pos[l.B]
		if !okA || !okB {
			continue // a GPU the node's inventory no longer lists
		}
		q := uint16(l.Quality())
		n.quality[a*g+b], n.quality[b*g+a] = q, q
	}
	nics := make([]string, 0, len(t.NICs))
	for _, nic := range t.NICs {
		nics = append(nics, nic.Device)
	}
	sortNatural(nics)
	for i := range n.GPUs {
		if r, ok := t.Rail(n.GPUs[i].Index); ok {
			n.GPUs[i].NIC = r.NIC
			n.GPUs[i].Rail = slices.Index(nics, r.NIC)
		}
	}
	return nil
}

// assignDomains gives every NVLink domain, leaf, spine and block a dense id, in name
// order.
func (s *Snapshot) assignDomains() {
	tiers := []telemetry.Tier{telemetry.TierNVLinkDomain, telemetry.TierLeaf, telemetry.TierSpine, telemetry.TierBlock}
	for _, t := range tiers {
		seen := map[string]bool{}
		var names []string
		for i := range s.nodes {
			if name := s.nodes[i].Location.At(t); name != "" && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
		sortNatural(names)
		id := make(map[string]int32, len(names))
		for k, name := range names {
			id[name] = int32(k)
		}
		s.domains[t] = names
		for i := range s.nodes {
			n := &s.nodes[i]
			d := int32(-1)
			if name := n.Location.At(t); name != "" {
				d = id[name]
			}
			switch t {
			case telemetry.TierNVLinkDomain:
				n.NVLinkDomain = d
			case telemetry.TierLeaf:
				n.Leaf = d
			case telemetry.TierSpine:
				n.Spine = d
			case telemetry.TierBlock:
				n.Block = d
			}
		}
	}
	s.domains[telemetry.TierCluster] = []string{""}
}

func (s *Snapshot) gpuPos(n *Node, index int) int {
	for i := range n.GPUs {
		if n.GPUs[i].Index == index {
			return i
		}
	}
	return -1
}

func (s *Snapshot) applyAllocations(allocs []Allocation) error {
	used := map[*GPU][]string{}
	for _, a := range allocs {
		milli := a.Milli
		if milli == 0 {
			milli = FullMilli
		}
		if milli < 0 || milli > FullMilli {
			return fmt.Errorf("snapshot: allocation of job %q on node %s: milli %d: want 0 (whole GPU) to %d", a.JobID, a.Node, a.Milli, FullMilli)
		}
		ni, ok := s.byName[a.Node]
		if !ok {
			s.warnings = append(s.warnings, fmt.Sprintf("allocation of job %q names unknown node %q: ignored", a.JobID, a.Node))
			continue
		}
		n := &s.nodes[ni]
		kept := a
		kept.Milli = milli
		kept.GPUs = kept.GPUs[:0:0]
		for _, idx := range a.GPUs {
			p := s.gpuPos(n, idx)
			if p < 0 {
				s.warnings = append(s.warnings, fmt.Sprintf("allocation of job %q names unknown gpu %d of node %s: ignored", a.JobID, idx, a.Node))
				continue
			}
			g := &n.GPUs[p]
			g.AllocatedMilli += int32(milli)
			g.Jobs = append(g.Jobs, a.JobID)
			used[g] = append(used[g], a.JobID)
			kept.GPUs = append(kept.GPUs, idx)
		}
		if len(kept.GPUs) > 0 {
			s.allocs = append(s.allocs, kept)
		}
	}
	for i := range s.nodes {
		n := &s.nodes[i]
		for j := range n.GPUs {
			g := &n.GPUs[j]
			if g.AllocatedMilli > FullMilli {
				s.warnings = append(s.warnings, fmt.Sprintf("gpu %d of node %s is over-committed: %d milli-GPU allocated to jobs %s: treated as full",
					g.Index, n.Name, g.AllocatedMilli, strings.Join(used[g], ", ")))
			}
			g.FreeMilli = max(0, FullMilli-g.AllocatedMilli)
		}
	}
	return nil
}

func (s *Snapshot) applyExclusions(excl []Exclusion) error {
	for _, e := range excl {
		if e.GPU < -1 {
			return fmt.Errorf("snapshot: exclusion on node %s: gpu %d: want -1 (whole node) or an index", e.Node, e.GPU)
		}
		ni, ok := s.byName[e.Node]
		if !ok {
			s.warnings = append(s.warnings, fmt.Sprintf("exclusion names unknown node %q: ignored", e.Node))
			continue
		}
		n := &s.nodes[ni]
		reason := e.Reason
		if reason == "" {
			reason = "excluded by the drain controller"
		}
		if e.GPU == -1 {
			n.Excluded, n.ExclusionReason = true, reason
			for j := range n.GPUs {
				n.GPUs[j].Excluded = true
				if n.GPUs[j].ExclusionReason == "" {
					n.GPUs[j].ExclusionReason = reason
				}
			}
			continue
		}
		p := s.gpuPos(n, e.GPU)
		if p < 0 {
			s.warnings = append(s.warnings, fmt.Sprintf("exclusion names unknown gpu %d of node %s: ignored", e.GPU, e.Node))
			continue
		}
		n.GPUs[p].Excluded, n.GPUs[p].ExclusionReason = true, reason
	}
	return nil
}

// applyStragglers puts the marks young enough to count on their GPUs.
func (s *Snapshot) applyStragglers(marks []StragglerMark) error {
	for _, m := range marks {
		if !(m.Lag >= 0 && m.Lag <= 1) {
			return fmt.Errorf("snapshot: straggler mark of node %s gpu %d (%s): lag %v: want a fraction in [0,1]", m.Node, m.GPU, m.UUID, m.Lag)
		}
		if m.GPU < -1 {
			return fmt.Errorf("snapshot: straggler mark of node %s: gpu %d: want -1 (find by UUID) or an index", m.Node, m.GPU)
		}
		if !m.Named() {
			continue
		}
		if m.At.IsZero() || s.now.Sub(m.At) > s.stragglerWindow {
			s.stragglerExpired++
			continue
		}
		ni, ok := s.byName[m.Node]
		if !ok {
			s.warnings = append(s.warnings, fmt.Sprintf("straggler mark names unknown node %q: ignored", m.Node))
			continue
		}
		n := &s.nodes[ni]
		p := -1
		if m.GPU >= 0 {
			p = s.gpuPos(n, m.GPU)
		} else {
			for i := range n.GPUs {
				if m.UUID != "" && n.GPUs[i].UUID == m.UUID {
					p = i
				}
			}
		}
		if p < 0 {
			s.warnings = append(s.warnings, fmt.Sprintf("straggler mark names unknown gpu %d (%q) of node %s: ignored", m.GPU, m.UUID, m.Node))
			continue
		}
		g := &n.GPUs[p]
		if !g.Straggler.Named() {
			s.stragglerGPUs++
		}
		mark := m
		mark.Node, mark.GPU, mark.UUID = n.Name, g.Index, g.UUID
		if old := g.Straggler; old.Named() && (old.Lag > m.Lag || (old.Lag == m.Lag && old.At.After(m.At))) {
			mark = old
		}
		g.Straggler = mark
	}
	return nil
}

func (n *Node) precompute() {
	g := len(n.GPUs)
	n.capacity = int32(g * FullMilli)
	n.minMemory = math.MaxInt64
	if g == 0 {
		n.minMemory = 0
	}
	n.models = ""
	for i := range n.GPUs {
		gpu := &n.GPUs[i]
		h := &n.hot[i]
		h.Rail = -1
		if gpu.Rail >= 0 && gpu.Rail < 127 {
			h.Rail = int8(gpu.Rail)
		}
		h.State, h.HealthStale = uint8(gpu.Health.Value), gpu.Health.Stale
		h.Utilization = hotValue(gpu.Utilization)
		h.ThermalHeadroom = hotValue(gpu.ThermalHeadroom)
		h.PowerHeadroom = hotValue(gpu.PowerHeadroom)
		h.Straggler = gpu.Straggler.Named()
		if h.Straggler {
			n.stragglers = n.stragglers.With(i)
		}
		if gpu.Schedulable() {
			n.schedulable = n.schedulable.With(i)
		}
		if gpu.Health.Stale {
			n.healthStale = n.healthStale.With(i)
		}
		if gpu.Utilization.Stale {
			n.loadStale = n.loadStale.With(i)
		}
		if gpu.Rail >= 0 {
			n.rails = n.rails.With(i)
		}
		n.freeMilli += int64(gpu.FreeMilli)
		n.minMemory = min(n.minMemory, gpu.MemoryMiB)
		m := lower(gpu.Model)
		if i == 0 {
			n.models = m
		} else if m != n.models {
			n.models = ""
		}
	}
	n.uniform = true
	for a := range g {
		for b := a + 1; b < g; b++ {
			if n.quality[a*g+b] != n.quality[1] {
				n.uniform = false
			}
		}
	}
	if t := n.Topology.Value; t != nil && len(t.GPULinks) > 0 {
		n.bestLink = t.LinksByQuality()[0].Type
	}
}

func hotValue(o Observed[float64]) float32 {
	if o.Stale {
		return float32(math.NaN())
	}
	return float32(o.Value)
}

func (s *Snapshot) sumDomains() {
	for t := telemetry.TierNVLinkDomain; t <= telemetry.TierCluster; t++ {
		s.domainCap[t] = make([]int64, len(s.domains[t]))
		s.domainFree[t] = make([]int64, len(s.domains[t]))
	}
	for i := range s.nodes {
		n := &s.nodes[i]
		for t := telemetry.TierNVLinkDomain; t <= telemetry.TierCluster; t++ {
			if d := n.DomainID(t, i); d >= 0 {
				s.domainCap[t][d] += int64(n.capacity)
				s.domainFree[t][d] += n.freeMilli
			}
		}
	}
}
