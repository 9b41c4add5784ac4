package simhw

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/simhw/simib"
	"github.com/gpuwatch/gpuwatch/collector/simhw/simkmsg"
)

// defaultStart is the simulated time a fleet starts at when FleetSpec.Start is zero.
func defaultStart() time.Time { return time.Date(2025, time.March, 3, 8, 0, 0, 0, time.UTC) }

// Topology defaults for a FleetSpec field left at zero.
const (
	DefaultNodesPerLeaf   = 4
	DefaultLeavesPerSpine = 2
)

// FleetSpec describes a simulated fleet. Zero values take the documented defaults;
// NewFleet rejects negative or inconsistent values with an error naming the field.
type FleetSpec struct {
	// Nodes is the number of nodes, named node-01, node-02, … (at least 1).
	Nodes int
	// Shape is the server model of every node; "" means ShapeHGXH100.
	Shape ShapeName
	// CustomShape, when set, is used instead of Shape (a copy of HGXH100() with an
	// older driver, say).
	CustomShape *Shape
	// NodesPerLeaf is the size of a scalable unit: the nodes whose rail r all plug
	// into the same leaf switch (DefaultNodesPerLeaf).
	NodesPerLeaf int
	// LeavesPerSpine is how many leaf groups share a spine group
	// (DefaultLeavesPerSpine).
	LeavesPerSpine int
	// Blocks splits the spine groups evenly into this many blocks (default 1).
	Blocks int
	// NVLinkDomainNodes groups consecutive nodes into multi-node NVLink domains
	// of this size (9 for NVL72-style racks); 0 makes each node its own domain.
	NVLinkDomainNodes int
	// Seed makes every identity, noise draw and workload choice reproducible.
	Seed int64
	// Start is the simulated time the fleet starts at (default 2025-03-03 08:00 UTC).
	Start time.Time
	// Root, when set, is a directory under which every Advance materializes each
	// node's files: <Root>/<node>/sys (InfiniBand sysfs), <Root>/<node>/kmsg.log
	// (kernel log, /dev/kmsg format) and <Root>/<node>/proc/<pid>/cgroup.
	Root string
	// SysfsEvery, with Root, rewrites the InfiniBand sysfs trees only when this
	// much simulated time has passed since the last write (0: at every Advance).
	// Each write costs a few file operations per changed counter; a demo running
	// many times faster than real time does not need them all.
	SysfsEvery time.Duration
}

// Fleet is a simulated GPU fleet moving through simulated time. Its methods are
// safe for concurrent use; NVML calls on the nodes may run while it advances.
type Fleet struct {
	spec  FleetSpec
	shape Shape
	start time.Time

	mu      sync.Mutex // serializes Advance and Schedule
	now     time.Time
	nodes   []*Node
	byName  map[string]*Node
	pending []scheduledFault // sorted by time, then by scenario order
	seq     int              // scheduling order, for a stable sort
	nowMu   sync.RWMutex     // guards now for Now()
	sysfsAt time.Time        // simulated time of the last sysfs write
}

type scheduledFault struct {
	at    time.Time
	seq   int
	node  *Node
	fault Fault
	where string // "file.yaml: faults[2]" for errors
}

// NewFleet builds the fleet spec describes, with every node idle at spec.Start.
func NewFleet(spec FleetSpec) (*Fleet, error) {
	if err := spec.fill(); err != nil {
		return nil, err
	}
	shape := HGXH100()
	if spec.CustomShape != nil {
		shape = *spec.CustomShape
		if err := shape.validate(); err != nil {
			return nil, fmt.Errorf("fleet spec: CustomShape: %w", err)
		}
	} else {
		var err error
		if shape, err = ShapeByName(spec.Shape); err != nil {
			return nil, fmt.Errorf("fleet spec: Shape: %w", err)
		}
	}
	f := &Fleet{spec: spec, shape: shape, start: spec.Start, now: spec.Start, byName: map[string]*Node{}}
	width := max(2, len(fmt.Sprint(spec.Nodes)))
	for i := 0; i < spec.Nodes; i++ {
		name := fmt.Sprintf("node-%0*d", width, i+1)
		n, err := newNode(f, i, name)
		if err != nil {
			return nil, err
		}
		f.nodes = append(f.nodes, n)
		f.byName[name] = n
	}
	if spec.Root != "" {
		if err := f.materialize(true); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// fill applies defaults and validates the spec.
func (s *FleetSpec) fill() error {
	if s.Nodes < 1 {
		return fmt.Errorf("fleet spec: Nodes: want at least 1, got %d", s.Nodes)
	}
	if s.Shape == "" {
		s.Shape = ShapeHGXH100
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"NodesPerLeaf", &s.NodesPerLeaf, DefaultNodesPerLeaf},
		{"LeavesPerSpine", &s.LeavesPerSpine, DefaultLeavesPerSpine},
		{"Blocks", &s.Blocks, 1},
		{"NVLinkDomainNodes", &s.NVLinkDomainNodes, 0},
	} {
		if *f.v < 0 {
			return fmt.Errorf("fleet spec: %s: want 0 (default) or more, got %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if spines := s.spines(); s.Blocks > spines {
		return fmt.Errorf("fleet spec: Blocks: %d blocks but only %d spine groups (%d nodes, %d per leaf, %d leaves per spine)",
			s.Blocks, spines, s.Nodes, s.NodesPerLeaf, s.LeavesPerSpine)
	}
	if s.Start.IsZero() {
		s.Start = defaultStart()
	}
	if s.SysfsEvery < 0 {
		return fmt.Errorf("fleet spec: SysfsEvery: want 0 or more, got %v", s.SysfsEvery)
	}
	if s.Root != "" {
		if err := os.MkdirAll(s.Root, 0o755); err != nil {
			return fmt.Errorf("fleet spec: Root: %w", err)
		}
	}
	return nil
}

func (s *FleetSpec) leaves() int { return (s.Nodes + s.NodesPerLeaf - 1) / s.NodesPerLeaf }
func (s *FleetSpec) spines() int { return (s.leaves() + s.LeavesPerSpine - 1) / s.LeavesPerSpine }

// Spec returns the spec the fleet was built from, defaults filled in.
func (f *Fleet) Spec() FleetSpec { return f.spec }

// Shape returns the server model of the fleet's nodes.
func (f *Fleet) Shape() Shape { return f.shape }

// Start returns the simulated time the fleet started at.
func (f *Fleet) Start() time.Time { return f.start }

// Now returns the current simulated time.
func (f *Fleet) Now() time.Time {
	f.nowMu.RLock()
	defer f.nowMu.RUnlock()
	return f.now
}

// Nodes returns the nodes in name order.
func (f *Fleet) Nodes() []*Node { return slices.Clone(f.nodes) }

// Node returns the node called name, or nil.
func (f *Fleet) Node(name string) *Node { return f.byName[name] }

// Advance moves simulated time forward by dt on every node: the workload drives
// utilization, power, temperature, clocks, energy and traffic, timed faults end,
// and each scheduled fault is applied at exactly its time (the step is split
// there). With FleetSpec.Root set it then writes the nodes' files. An error means
// a scheduled fault or a file could not be applied; the simulation itself still
// advanced.
func (f *Fleet) Advance(dt time.Duration) error {
	if dt < 0 {
		return fmt.Errorf("advance: negative step %v", dt)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.now.Add(dt)
	var errs []error
	for {
		next := end
		if len(f.pending) > 0 && f.pending[0].at.Before(next) {
			next = f.pending[0].at
		}
		if next.After(f.now) {
			for _, n := range f.nodes {
				n.advanceTo(next)
			}
			f.setNow(next)
		}
		for len(f.pending) > 0 && !f.pending[0].at.After(f.now) {
			sf := f.pending[0]
			f.pending = f.pending[1:]
			if err := sf.node.Inject(sf.fault); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", sf.where, err))
			}
		}
		if !next.Before(end) {
			break
		}
	}
	if f.spec.Root != "" {
		sysfs := f.now.Sub(f.sysfsAt) >= f.spec.SysfsEvery
		if err := f.materialize(sysfs); err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range f.nodes {
		n.broadcastAdvance()
	}
	return errors.Join(errs...)
}

func (f *Fleet) setNow(t time.Time) {
	f.nowMu.Lock()
	f.now = t
	f.nowMu.Unlock()
}

// materialize writes every node's files under Root, the nodes in parallel: the
// work is file system calls, which overlap well.
func (f *Fleet) materialize(sysfs bool) error {
	if sysfs {
		f.sysfsAt = f.now
	}
	errs := make([]error, len(f.nodes))
	var wg sync.WaitGroup
	for i, n := range f.nodes {
		wg.Go(func() { errs[i] = n.materialize(sysfs) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Node is one simulated server: its GPUs behind an nvml.Interface, its
// InfiniBand HCAs, its kernel log and its place in the fabric.
type Node struct {
	fleet *Fleet
	name  string
	index int
	shape *Shape

	leaf, spine, block, domain string
	clusterUUID                [16]uint8
	cliqueID                   uint32

	mu       sync.RWMutex // guards the simulated state below and in every gpu
	now      time.Time
	boot     time.Time
	rng      *rand.Rand
	gpus     []*gpu
	jobs     map[string]*jobState
	nextPID  int
	sets     []*eventSet
	ibFaults []*ibFault
	// driverUnloaded: the NVIDIA kernel module is not loaded (driver-not-loaded):
	// NVML's Init fails until a node-level recover.
	driverUnloaded bool
	// switchErrs are the SXids DCGM's NVSwitch health watches report until a
	// node-level recover.
	switchErrs []switchErr
	advanced   chan struct{} // closed and replaced when the node advances
	waited     bool          // someone holds advanced

	server *Server
	kmsg   *simkmsg.Log
	hcas   []*simib.HCA
	dir    string // <Root>/<node>, or ""
	fileMu sync.Mutex
}

func newNode(f *Fleet, index int, name string) (*Node, error) {
	sh := &f.shape
	seed := uint64(f.spec.Seed)
	n := &Node{
		fleet:    f,
		name:     name,
		index:    index,
		shape:    sh,
		now:      f.start,
		rng:      rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, uint64(index)+1)),
		jobs:     map[string]*jobState{},
		advanced: make(chan struct{}),
	}
	n.placeInFabric(&f.spec)
	// The node has been up between six hours and two weeks.
	uptime := 6*time.Hour + time.Duration(n.rng.Int64N(int64(14*24*time.Hour)))
	n.boot = f.start.Add(-uptime).Truncate(time.Second)
	n.nextPID = 4000 + n.rng.IntN(60000)

	for i := 0; i < sh.GPUs(); i++ {
		n.gpus = append(n.gpus, newGPU(n, i, uptime))
	}
	n.server = newServer(n)
	for i := 0; i < sh.GPUs(); i++ {
		// simib gives distinct GUIDs to distinct seeds below 6<<24.
		hseed := int64(seed%6)<<24 | int64(index&0xfffff)<<4 | int64(i)
		h := simib.NewConnectX7(fmt.Sprintf("mlx5_%d", i), sysfsAddr(sh.HCABus[i]), sh.NUMAOf(i), hseed)
		n.hcas = append(n.hcas, h)
		n.seedIBHistory(h, uptime)
	}
	n.bootLog()
	if f.spec.Root != "" {
		n.dir = filepath.Join(f.spec.Root, name)
	}
	return n, nil
}

// newGPU creates GPU i of n with identities and counters a node that has been up
// for uptime would show: energy, low-utilization time and, on some GPUs, a few
// PCIe replays, corrected ECC errors and NVLink replays.
func newGPU(n *Node, i int, uptime time.Duration) *gpu {
	sh, r := n.shape, n.rng
	g := &gpu{
		node:     n,
		index:    i,
		bus:      sh.GPUBus[i],
		busID:    busID(sh.GPUBus[i]),
		numa:     sh.NUMAOf(i),
		moduleID: i + 1,
		uuid:     randomUUID(r),
		serial:   fmt.Sprintf("%s%07d", sh.SerialPrefix, r.IntN(10_000_000)),
		smMHz:    sh.IdleSMMHz,
		videoMHz: sh.IdleVideoMHz,
		powerW:   sh.IdlePowerW,
		reasons:  nvml.ClocksEventReasonGpuIdle,
	}
	g.tempC = sh.AmbientC + sh.CPerWatt*sh.IdlePowerW
	g.memTempC = g.tempC + 7
	avgW := sh.IdlePowerW + r.Float64()*(sh.PowerLimitW-sh.IdlePowerW)*0.6
	g.energyMJ = avgW * uptime.Seconds() * 1000
	g.viol[violLowUtil] = uint64(float64(uptime) * (0.2 + 0.3*r.Float64()))
	g.viol[violTotalApp] = g.viol[violLowUtil]
	if r.Float64() < 0.3 {
		g.replay = uint64(r.IntN(120))
	}
	if r.Float64() < 0.1 {
		n := uint64(1 + r.IntN(20))
		g.ecc[nvml.MEMORY_ERROR_TYPE_CORRECTED][nvml.AGGREGATE_ECC][nvml.MEMORY_LOCATION_DRAM] = n
	}
	perSwitch := map[int]uint32{}
	for _, sw := range sh.LinkToSwitch {
		k := nvlink{active: true, sw: sw}
		// Switch ports are numbered per switch in GPU order.
		k.port = uint32(i)*uint32(countOf(sh.LinkToSwitch, sw)) + perSwitch[sw]
		perSwitch[sw]++
		if r.Float64() < 0.05 {
			k.replay = uint64(r.IntN(5))
		}
		g.links = append(g.links, k)
	}
	return g
}

// bootLog writes the kernel log lines of the node's boot that matter to a reader
// of NVRM lines, and registers the GPUs with the simulated driver.
func (n *Node) bootLog() {
	sh := n.shape
	n.kmsg = simkmsg.New(n.boot, simkmsg.WithDriver(sh.DriverVersion), simkmsg.WithHostname(n.name))
	n.kmsg.Printf(n.boot, simkmsg.LevelNotice, "Linux version 5.15.0-126-generic (buildd@lcy02-amd64-032) "+
		"(gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) "+
		"#136-Ubuntu SMP Wed Nov 6 10:38:22 UTC 2024 (Ubuntu 5.15.0-126.136-generic 5.15.167)")
	for i, h := range n.hcas {
		n.kmsg.Printf(n.boot.Add(2*time.Second+time.Duration(i)*40*time.Millisecond), simkmsg.LevelInfo,
			"mlx5_core %s: firmware version: %s", h.PCI.Addr, h.FWVer)
	}
	n.kmsg.Printf(n.boot.Add(3200*time.Millisecond), simkmsg.LevelWarning, "nvidia: loading out-of-tree module taints kernel.")
	n.kmsg.Printf(n.boot.Add(3500*time.Millisecond), simkmsg.LevelInfo,
		"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Mar 14 20:37:21 UTC 2025", sh.DriverVersion)
	for _, g := range n.gpus {
		n.kmsg.GPUAttached(n.boot.Add(4*time.Second), sysfsAddr(g.bus), g.uuid, g.serial)
	}
}

// seedIBHistory gives a port the counters a node up for uptime carries: traffic,
// a link-down from boot, and on some ports a few symbol errors.
func (n *Node) seedIBHistory(h *simib.HCA, uptime time.Duration) {
	for _, p := range h.Ports {
		words := uint64(uptime.Seconds() * 5e8 * n.rng.Float64() / 4)
		_ = p.Add("port_xmit_data", words)
		_ = p.Add("port_rcv_data", words+uint64(n.rng.IntN(1<<20)))
		_ = p.Add("link_downed", 1)
		if n.rng.Float64() < 0.25 {
			p.AddSymbolErrors(uint64(1 + n.rng.IntN(40)))
		}
	}
}

func countOf(xs []int, v int) int {
	c := 0
	for _, x := range xs {
		if x == v {
			c++
		}
	}
	return c
}

func randomUUID(r *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40 // version 4, like the driver's
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// placeInFabric names the node's leaf, spine, block and NVLink domain.
//
// The InfiniBand fabric is rail-optimized, as in NVIDIA's DGX SuperPOD reference
// design: nodes form scalable units of NodesPerLeaf nodes, and each unit has one
// leaf switch per rail; HCA mlx5_r (rail r, beside GPU r) of every node in unit u
// plugs into leaf "leaf-u/rail-r". Rail-aligned traffic between two nodes of one
// unit crosses a single leaf; anything else goes through a spine. Leaf() names the
// unit ("leaf-01"), HCALeaf(r) the rail's switch ("leaf-01-rail3"). Units group into
// spine groups of LeavesPerSpine ("spine-01"), spine groups into Blocks blocks.
func (n *Node) placeInFabric(s *FleetSpec) {
	leaf := n.index / s.NodesPerLeaf
	spine := leaf / s.LeavesPerSpine
	perBlock := (s.spines() + s.Blocks - 1) / s.Blocks
	n.leaf = fmt.Sprintf("leaf-%02d", leaf+1)
	n.spine = fmt.Sprintf("spine-%02d", spine+1)
	n.block = fmt.Sprintf("block-%02d", spine/perBlock+1)
	dom := n.index
	if s.NVLinkDomainNodes > 0 {
		dom = n.index / s.NVLinkDomainNodes
	}
	n.domain = fmt.Sprintf("nvl-%02d", dom+1)
	// One cluster UUID per NVLink domain; the clique is the fabric partition
	// within it, which the simulation keeps at 1.
	r := rand.New(rand.NewPCG(uint64(s.Seed), uint64(dom)+0x6e766c))
	for i := range n.clusterUUID {
		n.clusterUUID[i] = uint8(r.UintN(256))
	}
	n.cliqueID = 1
}

// Name returns the node's host name ("node-03").
func (n *Node) Name() string { return n.name }

// Shape returns the node's server model.
func (n *Node) Shape() Shape { return *n.shape }

// NVML returns the node's NVML library. Call Init before anything else, as with
// the real one.
func (n *Node) NVML() nvml.Interface { return n.server }

// Server returns the node's NVML library as its concrete type.
func (n *Node) Server() *Server { return n.server }

// Leaf returns the node's scalable unit, the group of leaf switches its rails
// plug into ("leaf-01").
func (n *Node) Leaf() string { return n.leaf }

// HCALeaf returns the leaf switch HCA mlx5_<rail> plugs into ("leaf-01-rail3").
func (n *Node) HCALeaf(rail int) string { return fmt.Sprintf("%s-rail%d", n.leaf, rail) }

// Spine returns the node's spine group ("spine-01").
func (n *Node) Spine() string { return n.spine }

// Block returns the node's block ("block-01").
func (n *Node) Block() string { return n.block }

// NVLinkDomain returns the node's NVLink domain ("nvl-01").
func (n *Node) NVLinkDomain() string { return n.domain }

// Boot returns the simulated time the node booted.
func (n *Node) Boot() time.Time { return n.boot }

// Now returns the node's simulated time.
func (n *Node) Now() time.Time {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.now
}

// KernelLog returns the node's kernel log.
func (n *Node) KernelLog() *simkmsg.Log { return n.kmsg }

// HCAs returns the node's InfiniBand adapters, mlx5_0 … mlx5_7; HCA i is rail i,
// on GPU i's PCIe switch and NUMA node.
func (n *Node) HCAs() []*simib.HCA { return slices.Clone(n.hcas) }

// Dir returns <Root>/<node>, or "" when the fleet has no Root.
func (n *Node) Dir() string { return n.dir }

// SysRoot returns the node's materialized /sys, or "" without a Root.
func (n *Node) SysRoot() string { return n.path("sys") }

// ProcRoot returns the node's materialized /proc, or "" without a Root.
func (n *Node) ProcRoot() string { return n.path("proc") }

// KmsgPath returns the file the node's kernel log is appended to (/dev/kmsg
// format), or "" without a Root.
func (n *Node) KmsgPath() string { return n.path("kmsg.log") }

func (n *Node) path(p string) string {
	if n.dir == "" {
		return ""
	}
	return filepath.Join(n.dir, p)
}

// maxSubstep is the longest step the physics takes at once: a longer Advance is
// split so that temperature, throttling and noise evolve as they would when
// sampled every few seconds.
const maxSubstep = 5 * time.Second

// advanceTo steps the node's hardware to t.
func (n *Node) advanceTo(t time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for n.now.Before(t) {
		dt := min(t.Sub(n.now), maxSubstep)
		n.now = n.now.Add(dt)
		n.stepLocked(dt)
	}
}

// stepLocked advances the hardware by dt, ending at n.now.
func (n *Node) stepLocked(dt time.Duration) {
	for _, g := range n.gpus {
		g.step(n.now, dt)
	}
	sec := dt.Seconds()
	for i, h := range n.hcas {
		tx, rx := 2e3*sec, 2e3*sec // subnet management and monitoring traffic
		if i < len(n.gpus) {
			tx += n.gpus[i].ibTxBps * sec
			rx += n.gpus[i].ibRxBps * sec
		}
		for _, p := range h.Ports {
			p.Advance(dt, uint64(tx), uint64(rx))
		}
	}
	n.stepIBFaults(dt)
}

// broadcastAdvance wakes event-set waiters so they can check simulated time.
func (n *Node) broadcastAdvance() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waited {
		close(n.advanced)
		n.advanced = make(chan struct{})
		n.waited = false
	}
}

// advancedChan returns a channel closed at the node's next advance, and the
// node's time now.
func (n *Node) advancedChan() (<-chan struct{}, time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waited = true
	return n.advanced, n.now
}

// GPUState is a read-only snapshot of one GPU for tests and the demo summary.
// Collectors must read the hardware through NVML instead.
type GPUState struct {
	Index          int
	UUID           string
	Serial         string
	PCIBusID       string // NVML form
	NUMA           int
	JobID          string // "" when free
	Util           float64
	PowerW         float64
	TempC          float64
	SMClockMHz     uint32
	MemUsedBytes   uint64 // allocated by processes
	EnergyMJ       float64
	Lost           bool
	Hung           bool
	Stalled        bool // needs a reset before it runs work again
	RecoveryAction nvml.DeviceGpuRecoveryAction
	ActiveNVLinks  int
	ThrottleReason uint64
}

// GPUs returns a snapshot of the node's GPUs.
func (n *Node) GPUs() []GPUState {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]GPUState, len(n.gpus))
	for i, g := range n.gpus {
		s := GPUState{
			Index: g.index, UUID: g.uuid, Serial: g.serial, PCIBusID: g.busID, NUMA: g.numa,
			Util: g.util, PowerW: g.powerW, TempC: g.tempC, SMClockMHz: g.smMHz,
			MemUsedBytes: g.memJob, EnergyMJ: g.energyMJ, Lost: g.lost, Hung: g.hung,
			Stalled: g.stalled, RecoveryAction: g.recovery, ActiveNVLinks: g.activeLinks(),
			ThrottleReason: g.reasons,
		}
		if g.job != nil {
			s.JobID = g.job.ID
		}
		out[i] = s
	}
	return out
}

// sortedJobIDs returns the node's job ids in order. The caller holds the lock.
func (n *Node) sortedJobIDs() []string {
	ids := make([]string, 0, len(n.jobs))
	for id := range n.jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
