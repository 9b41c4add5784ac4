package snapshot

import (
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// MaxGPUsPerNode is the most GPUs one node may have (a GPUSet is a 64-bit mask).
const MaxGPUsPerNode = 64

// FullMilli is one whole GPU in milli-GPU.
const FullMilli = 1000

// Observed is a value with the time it was observed. Stale is set by the Builder when
// At is zero (never observed) or older than the snapshot's bound.
type Observed[T any] struct {
	Value T         `json:"value"`
	At    time.Time `json:"at,omitzero"`
	Stale bool      `json:"stale,omitempty"`
}

// GPUSet is a set of GPU positions within one node: bit i is the node's i-th GPU in
// index order (Node.GPUs[i]), which is not necessarily NVML index i.
type GPUSet uint64

// AllGPUs returns the set of positions 0..n-1.
func AllGPUs(n int) GPUSet {
	if n >= 64 {
		return ^GPUSet(0)
	}
	return GPUSet(1)<<uint(n) - 1
}

// Has reports whether position i is in the set.
func (s GPUSet) Has(i int) bool { return s&(1<<uint(i)) != 0 }

// With returns the set with position i added.
func (s GPUSet) With(i int) GPUSet { return s | 1<<uint(i) }

// Without returns the set with position i removed.
func (s GPUSet) Without(i int) GPUSet { return s &^ (1 << uint(i)) }

// Len returns the number of positions in the set.
func (s GPUSet) Len() int { return bits.OnesCount64(uint64(s)) }

// Positions appends the set's positions in ascending order to dst.
func (s GPUSet) Positions(dst []int) []int {
	for s != 0 {
		i := bits.TrailingZeros64(uint64(s))
		dst = append(dst, i)
		s &= s - 1
	}
	return dst
}

// GPU is one GPU of a node.
type GPU struct {
	Index     int    `json:"index"` // NVML index
	UUID      string `json:"uuid,omitempty"`
	Model     string `json:"model,omitempty"`
	MemoryMiB int64  `json:"memory_mib,omitempty"`
	// Health is the GPU's last known state. A stale health keeps its value (placement
	// treats it as last known, flagged).
	Health Observed[telemetry.State] `json:"health"`
	// Utilization is the measured load in [0,1] (NVML GPU utilization or DCGM SM
	// activity).
	Utilization Observed[float64] `json:"utilization"`
	// ThermalHeadroom and PowerHeadroom are in [0,1]: 1 is far from the slowdown
	// temperature or the power limit, 0 at it.
	ThermalHeadroom Observed[float64] `json:"thermal_headroom"`
	PowerHeadroom   Observed[float64] `json:"power_headroom"`
	// AllocatedMilli is the milli-GPU the schedulers' allocations hold; FreeMilli is
	// what is left (0..1000).
	AllocatedMilli int32    `json:"allocated_milli"`
	FreeMilli      int32    `json:"free_milli"`
	Jobs           []string `json:"jobs,omitempty"` // job ids holding it
	// Excluded is set when the drain controller excludes this GPU (or its node) from
	// gpuwatch's placement.
	Excluded        bool   `json:"excluded,omitempty"`
	ExclusionReason string `json:"exclusion_reason,omitempty"`
	// NIC is the rail NIC (the closest HCA) and Rail its position among the node's
	// NICs in natural name order; -1 when unknown.
	NIC  string `json:"nic,omitempty"`
	Rail int    `json:"rail"`
	// Straggler is set when the GPU was named a straggler of a job within the
	// Builder's straggler window (analyzer/stragglers' gpuwatch_straggler_gpu):
	// placement's straggler scorer prefers other GPUs. The zero value: not named.
	Straggler StragglerMark `json:"straggler,omitzero"`
}

// StragglerMark says that a GPU lagged the other GPUs of a job: the largest
// relative lag it was named with (0.25: 25 % behind the job's reference), on
// which signal (sm_clock, sm_active, gpu_util, power), of which job, and when it
// was last named.
type StragglerMark struct {
	Node string `json:"-"`
	// GPU is the NVML index; with GPU -1 the Builder finds the GPU by UUID.
	GPU    int       `json:"-"`
	UUID   string    `json:"-"`
	Job    string    `json:"job_id,omitempty"`
	Signal string    `json:"signal,omitempty"`
	Lag    float64   `json:"lag"`
	At     time.Time `json:"at,omitzero"`
}

// Named reports whether the mark names the GPU a straggler.
func (m StragglerMark) Named() bool { return m.Lag > 0 }

// Schedulable reports whether new work may use the GPU: its last known health is
// schedulable and the drain controller does not exclude it.
func (g *GPU) Schedulable() bool { return g.Health.Value.Schedulable() && !g.Excluded }

// Node is one node of the fleet.
type Node struct {
	Name     string                 `json:"name"`
	Labels   map[string]string      `json:"labels,omitempty"`
	Location telemetry.NodeLocation `json:"location"`
	// Dense ids of the node's domains (indexes into Snapshot.Domains(tier)); -1 when
	// unknown.
	Leaf, Spine, Block, NVLinkDomain int32 `json:"-"`
	// First is the flat number of GPUs[0]; GPU i of the node is flat First+i.
	First int   `json:"-"`
	GPUs  []GPU `json:"gpus"`
	// Topology is the agent's report, observed at Topology.At; nil Value when unknown.
	Topology Observed[*telemetry.NodeTopology] `json:"-"`
	// Excluded is set when the drain controller excludes the whole node.
	Excluded        bool   `json:"excluded,omitempty"`
	ExclusionReason string `json:"exclusion_reason,omitempty"`

	// Precomputed for the placement hot path.
	hot         []HotGPU
	schedulable GPUSet   // GPUs whose Schedulable() is true
	healthStale GPUSet   // GPUs whose health is stale
	loadStale   GPUSet   // GPUs whose utilization is stale
	stragglers  GPUSet   // GPUs named stragglers within the straggler window
	quality     []uint16 // len(GPUs)² link Quality, position-indexed
	uniform     bool     // every pair has the same link quality (NVSwitch, or unknown)
	bestLink    telemetry.LinkType
	models      string // the one model of all GPUs, lower case; "" when mixed
	minMemory   int64
	capacity    int32 // FullMilli × len(GPUs)
	freeMilli   int64 // Σ FreeMilli
	rails       GPUSet
}

// HotGPU is the part of a GPU placement reads for every candidate, packed in 16
// bytes so scoring thousands of nodes stays in cache. Stale values are NaN.
type HotGPU struct {
	Utilization     float32
	ThermalHeadroom float32
	PowerHeadroom   float32
	Rail            int8  // -1 unknown (or beyond 127)
	State           uint8 // telemetry.State
	HealthStale     bool
	Straggler       bool // named a straggler within the straggler window
}

// Health returns the GPU's last known health state.
func (h HotGPU) Health() telemetry.State { return telemetry.State(h.State) }

// Hot returns the packed per-GPU values, by position. The caller must not modify it.
func (n *Node) Hot() []HotGPU { return n.hot }

// SchedulableGPUs returns the positions of the GPUs new work may use.
func (n *Node) SchedulableGPUs() GPUSet { return n.schedulable }

// HealthStale returns the positions of GPUs whose health observation is stale.
func (n *Node) HealthStale() GPUSet { return n.healthStale }

// LoadStale returns the positions of GPUs whose utilization observation is stale.
func (n *Node) LoadStale() GPUSet { return n.loadStale }

// LinkQuality returns telemetry.GPULink.Quality of the link between positions a and
// b (0 when unknown); a == b returns the best possible quality.
func (n *Node) LinkQuality(a, b int) int {
	if a == b {
		return 1 << 15
	}
	return int(n.quality[a*len(n.GPUs)+b])
}

// UniformLinks reports whether every pair of GPUs is connected alike (an NVSwitch
// fabric, or no topology known), so any subset is as well connected as another.
func (n *Node) UniformLinks() bool { return n.uniform }

// BestLink returns the best link type between any two of the node's GPUs.
func (n *Node) BestLink() telemetry.LinkType { return n.bestLink }

// Model returns the lower-case model of all the node's GPUs, or "" when they differ.
func (n *Node) Model() string { return n.models }

// MinMemoryMiB returns the smallest memory among the node's GPUs.
func (n *Node) MinMemoryMiB() int64 { return n.minMemory }

// CapacityMilli returns 1000 × the node's GPUs.
func (n *Node) CapacityMilli() int32 { return n.capacity }

// FreeMilli returns the node's free milli-GPU in the snapshot (without reservations).
func (n *Node) FreeMilli() int64 { return n.freeMilli }

// Stragglers returns the positions of the GPUs named stragglers within the
// snapshot's straggler window.
func (n *Node) Stragglers() GPUSet { return n.stragglers }

// KnownRails returns the positions of GPUs whose rail is known.
func (n *Node) KnownRails() GPUSet { return n.rails }

// DomainID returns the node's dense domain id at tier t: the node's own position for
// TierNode, 0 for TierCluster, -1 when unknown.
func (n *Node) DomainID(t telemetry.Tier, self int) int32 {
	switch t {
	case telemetry.TierNode:
		return int32(self)
	case telemetry.TierNVLinkDomain:
		return n.NVLinkDomain
	case telemetry.TierLeaf:
		return n.Leaf
	case telemetry.TierSpine:
		return n.Spine
	case telemetry.TierBlock:
		return n.Block
	case telemetry.TierCluster:
		return 0
	}
	return -1
}

// Allocation is GPUs a scheduler has given to a job.
type Allocation struct {
	JobID  string    `json:"job_id"`
	Node   string    `json:"node"`
	GPUs   []int     `json:"gpus"`   // NVML indexes
	Milli  int       `json:"milli"`  // per GPU; 1000 is a whole GPU
	Source string    `json:"source"` // "slurm", "kubernetes", …
	At     time.Time `json:"at,omitzero"`
}

// Exclusion is a GPU (or, with GPU -1, a whole node) that placement must not use.
// Its fields match scheduler/drain.Exclusion, so a drain.Exclusion e converts with
// snapshot.Exclusion(e).
type Exclusion struct {
	Node   string    `json:"node"`
	GPU    int       `json:"gpu"` // -1: the whole node
	UUID   string    `json:"uuid,omitempty"`
	Rule   string    `json:"rule,omitempty"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// Snapshot is the immutable fleet view of one cycle. Build one with a Builder.
type Snapshot struct {
	now         time.Time
	bound       time.Duration
	nodes       []Node
	byName      map[string]int
	gpus        int
	domains     [telemetry.TierCluster + 1][]string // dense id → name, per tier
	hier        *telemetry.Hierarchy
	allocs      []Allocation
	warnings    []string
	domainCap   [telemetry.TierCluster + 1][]int64 // per domain: capacity milli
	domainFree  [telemetry.TierCluster + 1][]int64 // per domain: free milli
	staleHealth int
	staleLoad   int
	// straggler marks: the window, the GPUs marked, the marks too old to count
	stragglerWindow  time.Duration
	stragglerGPUs    int
	stragglerExpired int
}

// Now returns the time the snapshot was built for.
func (s *Snapshot) Now() time.Time { return s.now }

// Bound returns the staleness bound.
func (s *Snapshot) Bound() time.Duration { return s.bound }

// Nodes returns the nodes sorted by name. The caller must not modify them.
func (s *Snapshot) Nodes() []Node { return s.nodes }

// Len returns the number of nodes.
func (s *Snapshot) Len() int { return len(s.nodes) }

// Node returns node i (0 ≤ i < Len()).
func (s *Snapshot) Node(i int) *Node { return &s.nodes[i] }

// Lookup returns the position of the named node.
func (s *Snapshot) Lookup(name string) (int, bool) {
	i, ok := s.byName[name]
	return i, ok
}

// GPUCount returns the number of GPUs in the fleet (the size of flat GPU arrays).
func (s *Snapshot) GPUCount() int { return s.gpus }

// Domains returns the names of the domains at tier t (NVLink domain, leaf, spine,
// block), indexed by the dense ids in Node. The caller must not modify it.
func (s *Snapshot) Domains(t telemetry.Tier) []string {
	if t < 0 || t > telemetry.TierCluster {
		return nil
	}
	return s.domains[t]
}

// DomainCapacityMilli returns the capacity of domain id at tier t in milli-GPU, and
// DomainFreeMilli its free milli-GPU in the snapshot (allocations only).
func (s *Snapshot) DomainCapacityMilli(t telemetry.Tier, id int32) int64 {
	if id < 0 || t < 0 || t > telemetry.TierCluster || int(id) >= len(s.domainCap[t]) {
		return 0
	}
	return s.domainCap[t][id]
}

// DomainFreeMilli returns the free milli-GPU of domain id at tier t in the snapshot.
func (s *Snapshot) DomainFreeMilli(t telemetry.Tier, id int32) int64 {
	if id < 0 || t < 0 || t > telemetry.TierCluster || int(id) >= len(s.domainFree[t]) {
		return 0
	}
	return s.domainFree[t][id]
}

// Hierarchy returns the fleet hierarchy of the snapshot's nodes.
func (s *Snapshot) Hierarchy() *telemetry.Hierarchy { return s.hier }

// Allocations returns the allocations the snapshot was built with (those naming a
// known node and GPU). The caller must not modify them.
func (s *Snapshot) Allocations() []Allocation { return s.allocs }

// Warnings returns what the Builder skipped or corrected, one sentence each: an
// allocation on an unknown node or GPU, an over-committed GPU, an exclusion of an
// unknown node.
func (s *Snapshot) Warnings() []string { return s.warnings }

// StaleGPUs returns how many GPUs have stale health and stale utilization.
func (s *Snapshot) StaleGPUs() (health, load int) { return s.staleHealth, s.staleLoad }

// StragglerWindow returns how long a straggler mark counts after the GPU was last
// named.
func (s *Snapshot) StragglerWindow() time.Duration { return s.stragglerWindow }

// StragglerGPUs returns how many GPUs carry a straggler mark, and how many marks
// were left out for being older than the straggler window.
func (s *Snapshot) StragglerGPUs() (marked, expired int) { return s.stragglerGPUs, s.stragglerExpired }

// HasJob reports whether any allocation belongs to jobID.
func (s *Snapshot) HasJob(jobID string) bool {
	for i := range s.allocs {
		if s.allocs[i].JobID == jobID {
			return true
		}
	}
	return false
}

// naturalLess orders names by text, then a trailing number (mlx5_2 < mlx5_10).
func naturalLess(a, b string) bool {
	ta, na := splitNum(a)
	tb, nb := splitNum(b)
	if ta != tb {
		return ta < tb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) || len(s)-i > 9 {
		return s, -1
	}
	n, _ := strconv.Atoi(s[i:])
	return s[:i], n
}

func sortNatural(names []string) {
	sort.Slice(names, func(i, j int) bool { return naturalLess(names[i], names[j]) })
}

func lower(s string) string { return strings.ToLower(s) }
