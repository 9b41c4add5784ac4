package telemetry

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The topology graph has two levels:
//
//   - inside a node (NodeTopology): how each pair of GPUs is connected (NVLink,
//     NVSwitch or a PCIe path, in nvidia-smi topo's vocabulary), which InfiniBand HCA
//     sits on each GPU's rail and how far away it is, and the NUMA node of each GPU
//     and NIC;
//   - across the fleet (Hierarchy): node → NVLink domain → leaf switch → spine →
//     block → cluster.
//
// The agent discovers its NodeTopology and serves it as JSON at /topology; the server
// assembles the Hierarchy from ibnetdiscover output, Slurm's topology.conf or node
// labels. Placement reads both.

// LinkType is how two devices in a node are connected, in nvidia-smi topo -m's
// vocabulary (its legend is quoted on each constant). NVLINK and NVSWITCH both print
// as NV# there; gpuwatch tells them apart because an NVSwitch connects every GPU to
// every other at the same bandwidth.
type LinkType string

// Link types, best first.
const (
	LinkUnknown  LinkType = ""
	LinkNVSwitch LinkType = "NVSWITCH" // NV# through an NVSwitch fabric
	LinkNVLink   LinkType = "NVLINK"   // "Connection traversing a bonded set of # NVLinks"
	LinkPIX      LinkType = "PIX"      // "Connection traversing at most a single PCIe bridge"
	LinkPXB      LinkType = "PXB"      // "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"
	LinkPHB      LinkType = "PHB"      // "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"
	LinkNODE     LinkType = "NODE"     // "… the interconnect between PCIe Host Bridges within a NUMA node"
	LinkSYS      LinkType = "SYS"      // "… the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"
)

// pcieRank orders the PCIe path types; higher is closer.
var pcieRank = map[LinkType]int{LinkPIX: 5, LinkPXB: 4, LinkPHB: 3, LinkNODE: 2, LinkSYS: 1}

// IsNVLink reports whether t is NVLINK or NVSWITCH.
func (t LinkType) IsNVLink() bool { return t == LinkNVLink || t == LinkNVSwitch }

// IsPCIe reports whether t is one of the PCIe path types PIX, PXB, PHB, NODE, SYS.
func (t LinkType) IsPCIe() bool { return pcieRank[t] > 0 }

// Valid reports whether t is a known, non-empty link type.
func (t LinkType) Valid() bool { return t.IsNVLink() || t.IsPCIe() }

// ParseLinkToken reads one cell of nvidia-smi topo -m: "NV12" (NVLINK, 12 links),
// "PIX", "PXB", "PHB", "NODE", "SYS", or the older "SOC" (SYS). "X" (self) and
// anything else are errors. NVLINK is returned for NV#: the matrix does not say
// whether an NVSwitch is in between.
func ParseLinkToken(tok string) (LinkType, int, error) {
	switch tok {
	case "PIX", "PXB", "PHB", "NODE", "SYS":
		return LinkType(tok), 0, nil
	case "SOC":
		return LinkSYS, 0, nil
	case "X":
		return LinkUnknown, 0, fmt.Errorf("invalid link %q: a device's link to itself", tok)
	}
	if n, ok := strings.CutPrefix(tok, "NV"); ok {
		links, err := strconv.Atoi(n)
		if err == nil && links > 0 && links <= maxIndex {
			return LinkNVLink, links, nil
		}
	}
	return LinkUnknown, 0, fmt.Errorf("invalid link %q: want NV#, PIX, PXB, PHB, NODE or SYS", tok)
}

// GPULink is the connection between GPUs A and B (NVML indexes) of one node.
type GPULink struct {
	A       int      `json:"a"`
	B       int      `json:"b"`
	Type    LinkType `json:"type"`
	NVLinks int      `json:"nvlinks,omitempty"` // bonded NVLinks; 0 for PCIe paths
}

// Quality orders links: higher is better. NVLink and NVSwitch links beat every PCIe
// path and rank by link count (bandwidth); equal counts rank equal whether or not an
// NVSwitch is in between. PCIe paths rank PIX > PXB > PHB > NODE > SYS. An unknown
// link is 0, the worst.
func (l GPULink) Quality() int {
	if l.Type.IsNVLink() {
		return 1000 + min(l.NVLinks, 999)
	}
	return pcieRank[l.Type] * 100
}

// CompareLinks orders links by Quality, worse first, for slices.SortFunc.
func CompareLinks(a, b GPULink) int { return cmp.Compare(a.Quality(), b.Quality()) }

// Token returns the nvidia-smi topo -m cell for the link: "NV12", "PIX", …
func (l GPULink) Token() string {
	if l.Type.IsNVLink() {
		return "NV" + strconv.Itoa(l.NVLinks)
	}
	return string(l.Type)
}

// TopologyGPU is a GPU as the topology sees it.
type TopologyGPU struct {
	Index    int      `json:"index"`
	UUID     string   `json:"uuid,omitempty"`
	PCIBusID PCIBusID `json:"pci_bus_id,omitzero"`
	Model    string   `json:"model,omitempty"`
	NUMANode int      `json:"numa_node"` // -1 when unknown (nvidia-smi's N/A)
}

// TopologyNIC is an InfiniBand HCA (or RoCE NIC) of the node.
type TopologyNIC struct {
	Device   string   `json:"device"` // /sys/class/infiniband name, "mlx5_0"
	PCIBusID PCIBusID `json:"pci_bus_id,omitzero"`
	NUMANode int      `json:"numa_node"` // -1 when unknown
}

// NICLink is the PCIe distance between a GPU and a NIC (a PCIe LinkType).
type NICLink struct {
	GPU  int      `json:"gpu"`
	NIC  string   `json:"nic"`
	Type LinkType `json:"type"`
}

// NodeTopology is the inside of one node.
type NodeTopology struct {
	Node     NodeID        `json:"node"`
	GPUs     []TopologyGPU `json:"gpus"`
	NICs     []TopologyNIC `json:"nics,omitempty"`
	GPULinks []GPULink     `json:"gpu_links,omitempty"` // one per unordered pair
	NICLinks []NICLink     `json:"nic_links,omitempty"` // GPU × NIC distances
}

// GPU returns the GPU with NVML index i.
func (t *NodeTopology) GPU(i int) (TopologyGPU, bool) {
	for _, g := range t.GPUs {
		if g.Index == i {
			return g, true
		}
	}
	return TopologyGPU{}, false
}

// Link returns the link between GPUs a and b in either order.
func (t *NodeTopology) Link(a, b int) (GPULink, bool) {
	for _, l := range t.GPULinks {
		if l.A == a && l.B == b || l.A == b && l.B == a {
			return l, true
		}
	}
	return GPULink{}, false
}

// WorstLink returns the worst link among all pairs of gpus: the bottleneck of a
// collective over that set, and what placement maximises when it picks GPUs inside a
// node. A pair with no recorded link counts as LinkUnknown, the worst. ok is false
// for fewer than two GPUs.
func (t *NodeTopology) WorstLink(gpus []int) (worst GPULink, ok bool) {
	for i, a := range gpus {
		for _, b := range gpus[i+1:] {
			l, found := t.Link(a, b)
			if !found {
				l = GPULink{A: a, B: b, Type: LinkUnknown}
			}
			if !ok || l.Quality() < worst.Quality() {
				worst, ok = l, true
			}
		}
	}
	return worst, ok
}

// Rail returns the NIC on GPU gpu's rail: the closest NIC by PCIe distance. When
// several NICs behind the GPU's PCIe switches are equally close, the GPUs sharing them
// take them in index order (natural name order for the NICs); further away, the first
// NIC in natural name order. ok is false when no NIC distance is known for the GPU.
func (t *NodeTopology) Rail(gpu int) (best NICLink, ok bool) {
	cands, rank := t.closestNICs(gpu)
	if len(cands) == 0 {
		return NICLink{}, false
	}
	if len(cands) == 1 || rank < pcieRank[LinkPXB] {
		// One closest NIC, or none behind the GPU's own PCIe switches: the first.
		return cands[0], true
	}
	// Several NICs equally close (p5: four per PCIe switch; NDv4: two GPUs and two
	// NICs per switch): the GPUs that share exactly this set of closest NICs take
	// them in order, GPU rank k getting NIC k, so two GPUs of a switch get two rails.
	var peers []int
	for _, g := range t.GPUs {
		c, r := t.closestNICs(g.Index)
		if r == rank && sameNICs(c, cands) {
			peers = append(peers, g.Index)
		}
	}
	slices.Sort(peers)
	k := max(slices.Index(peers, gpu), 0)
	return cands[k%len(cands)], true
}

// closestNICs returns the NIC links of gpu at the best PCIe distance, in natural
// name order (mlx5_2 before mlx5_10), and that distance's rank.
func (t *NodeTopology) closestNICs(gpu int) ([]NICLink, int) {
	rank := -1
	var out []NICLink
	for _, l := range t.NICLinks {
		if l.GPU != gpu {
			continue
		}
		switch r := pcieRank[l.Type]; {
		case r > rank:
			rank, out = r, []NICLink{l}
		case r == rank:
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b NICLink) int { return naturalCompare(a.NIC, b.NIC) })
	return out, rank
}

func sameNICs(a, b []NICLink) bool {
	return slices.EqualFunc(a, b, func(x, y NICLink) bool { return x.NIC == y.NIC })
}

// naturalCompare orders names by their text and then by a trailing number, so that
// mlx5_2 comes before mlx5_10.
func naturalCompare(a, b string) int {
	ta, na := splitTrailingNumber(a)
	tb, nb := splitTrailingNumber(b)
	if c := cmp.Compare(ta, tb); c != 0 {
		return c
	}
	if c := cmp.Compare(na, nb); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

func splitTrailingNumber(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) || len(s)-i > 9 {
		return s, -1
	}
	n := 0
	for _, c := range s[i:] {
		n = n*10 + int(c-'0')
	}
	return s[:i], n
}

// LinksByQuality returns the node's GPU links best first; equal links keep GPU index
// order (by A, then B).
func (t *NodeTopology) LinksByQuality() []GPULink {
	out := slices.Clone(t.GPULinks)
	slices.SortStableFunc(out, func(a, b GPULink) int {
		if c := CompareLinks(b, a); c != 0 {
			return c
		}
		if c := cmp.Compare(min(a.A, a.B), min(b.A, b.B)); c != 0 {
			return c
		}
		return cmp.Compare(max(a.A, a.B), max(b.A, b.B))
	})
	return out
}

// Validate checks the node topology and returns an error naming the first bad
// element: a duplicate or negative GPU index, a duplicate UUID, PCI address or NIC, a
// link to a GPU or NIC the node does not have, a link from a GPU to itself, a pair
// listed twice, an NVLink without a link count or a PCIe path with one.
func (t *NodeTopology) Validate() error {
	if err := t.Node.Validate(); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	gpus := make(map[int]bool, len(t.GPUs))
	uuids := map[string]int{}
	pci := map[PCIBusID]string{}
	for _, g := range t.GPUs {
		if g.Index < 0 || g.Index > maxIndex {
			return fmt.Errorf("topology of %s: gpu index %d out of range", t.Node, g.Index)
		}
		if gpus[g.Index] {
			return fmt.Errorf("topology of %s: gpu %d listed twice", t.Node, g.Index)
		}
		gpus[g.Index] = true
		if g.UUID != "" {
			if other, dup := uuids[g.UUID]; dup {
				return fmt.Errorf("topology of %s: gpus %d and %d share uuid %s", t.Node, other, g.Index, g.UUID)
			}
			uuids[g.UUID] = g.Index
		}
		if err := (GPU{Node: t.Node, Index: g.Index, UUID: g.UUID}).Validate(); err != nil {
			return fmt.Errorf("topology: %w", err)
		}
		if g.NUMANode < -1 {
			return fmt.Errorf("topology of %s: gpu %d: numa node %d (want -1 for unknown)", t.Node, g.Index, g.NUMANode)
		}
		if !g.PCIBusID.IsZero() {
			if other, dup := pci[g.PCIBusID]; dup {
				return fmt.Errorf("topology of %s: gpu %d and %s share PCI address %s", t.Node, g.Index, other, g.PCIBusID)
			}
			pci[g.PCIBusID] = "gpu " + strconv.Itoa(g.Index)
		}
	}
	nics := make(map[string]bool, len(t.NICs))
	for _, n := range t.NICs {
		if err := validIBDevice(n.Device); err != nil {
			return fmt.Errorf("topology of %s: nic: %w", t.Node, err)
		}
		if nics[n.Device] {
			return fmt.Errorf("topology of %s: nic %s listed twice", t.Node, n.Device)
		}
		nics[n.Device] = true
		if n.NUMANode < -1 {
			return fmt.Errorf("topology of %s: nic %s: numa node %d (want -1 for unknown)", t.Node, n.Device, n.NUMANode)
		}
		if !n.PCIBusID.IsZero() {
			if other, dup := pci[n.PCIBusID]; dup {
				return fmt.Errorf("topology of %s: nic %s and %s share PCI address %s", t.Node, n.Device, other, n.PCIBusID)
			}
			pci[n.PCIBusID] = "nic " + n.Device
		}
	}
	gpuRange := func() string {
		idx := make([]int, 0, len(gpus))
		for i := range gpus {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		return fmt.Sprint(idx)
	}
	pairs := map[[2]int]bool{}
	for _, l := range t.GPULinks {
		name := fmt.Sprintf("gpu link %d-%d", l.A, l.B)
		for _, g := range []int{l.A, l.B} {
			if !gpus[g] {
				return fmt.Errorf("topology of %s: %s: gpu index %d out of range (node has gpus %s)", t.Node, name, g, gpuRange())
			}
		}
		if l.A == l.B {
			return fmt.Errorf("topology of %s: %s: a gpu linked to itself", t.Node, name)
		}
		key := [2]int{min(l.A, l.B), max(l.A, l.B)}
		if pairs[key] {
			return fmt.Errorf("topology of %s: %s listed twice", t.Node, name)
		}
		pairs[key] = true
		switch {
		case l.Type.IsNVLink() && l.NVLinks <= 0:
			return fmt.Errorf("topology of %s: %s: %s needs a link count > 0, got %d", t.Node, name, l.Type, l.NVLinks)
		case l.Type.IsPCIe() && l.NVLinks != 0:
			return fmt.Errorf("topology of %s: %s: PCIe path %s cannot have %d NVLinks", t.Node, name, l.Type, l.NVLinks)
		case !l.Type.Valid():
			return fmt.Errorf("topology of %s: %s: unknown link type %q", t.Node, name, l.Type)
		}
	}
	type gpuNIC struct {
		gpu int
		nic string
	}
	seen := map[gpuNIC]bool{}
	for _, l := range t.NICLinks {
		name := fmt.Sprintf("nic link gpu %d-%s", l.GPU, l.NIC)
		if !gpus[l.GPU] {
			return fmt.Errorf("topology of %s: %s: gpu index %d out of range (node has gpus %s)", t.Node, name, l.GPU, gpuRange())
		}
		if !nics[l.NIC] {
			return fmt.Errorf("topology of %s: %s: unknown nic %q", t.Node, name, l.NIC)
		}
		if !l.Type.IsPCIe() {
			return fmt.Errorf("topology of %s: %s: type %q is not a PCIe path (PIX, PXB, PHB, NODE, SYS)", t.Node, name, l.Type)
		}
		if seen[gpuNIC{l.GPU, l.NIC}] {
			return fmt.Errorf("topology of %s: %s listed twice", t.Node, name)
		}
		seen[gpuNIC{l.GPU, l.NIC}] = true
	}
	return nil
}

// Tier is a level of the fleet hierarchy, ordered by how expensive communication
// across it is: GPUs on one node talk fastest, then within an NVLink domain, then
// under one leaf switch, one spine, one block, and last across the cluster. The order
// is by cost, not strict containment: an NVLink domain (an NVL72 rack) may span
// several leaves. The zero Tier is TierUnknown.
type Tier int

// Tiers, lowest (closest) first.
const (
	TierUnknown Tier = iota
	TierNode
	TierNVLinkDomain
	TierLeaf
	TierSpine
	TierBlock
	TierCluster
)

var tierNames = [...]string{"unknown", "node", "nvlink_domain", "leaf", "spine", "block", "cluster"}

// String returns the tier's name: "node", "nvlink_domain", "leaf", "spine", "block",
// "cluster", or "unknown".
func (t Tier) String() string {
	if t < 0 || int(t) >= len(tierNames) {
		return "tier(" + strconv.Itoa(int(t)) + ")"
	}
	return tierNames[t]
}

// ParseTier reads a tier's name.
func ParseTier(s string) (Tier, error) {
	for i, n := range tierNames {
		if i > 0 && n == s {
			return Tier(i), nil
		}
	}
	return TierUnknown, fmt.Errorf("invalid tier %q: want node, nvlink_domain, leaf, spine, block or cluster", s)
}

// MarshalText writes the tier's name.
func (t Tier) MarshalText() ([]byte, error) {
	if t <= TierUnknown || t > TierCluster {
		return nil, fmt.Errorf("cannot marshal tier %d", int(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads a tier's name.
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// NodeLocation places a node in the fleet. Empty fields are unknown.
type NodeLocation struct {
	Node         NodeID `json:"node"`
	NVLinkDomain string `json:"nvlink_domain,omitempty"`
	Leaf         string `json:"leaf,omitempty"`
	Spine        string `json:"spine,omitempty"`
	Block        string `json:"block,omitempty"`
}

// At returns the node's ancestor at tier t: the node name for TierNode, "" where
// unknown and for TierCluster (every node shares it).
func (l NodeLocation) At(t Tier) string {
	switch t {
	case TierNode:
		return string(l.Node)
	case TierNVLinkDomain:
		return l.NVLinkDomain
	case TierLeaf:
		return l.Leaf
	case TierSpine:
		return l.Spine
	case TierBlock:
		return l.Block
	}
	return ""
}

// Hierarchy is the validated, indexed fleet hierarchy. It is immutable once built, so
// placement can read it from many goroutines. Build one with NewHierarchy; its JSON
// form is {"nodes": [NodeLocation…]}.
type Hierarchy struct {
	nodes  []NodeLocation // sorted by node
	byNode map[NodeID]int
}

// NewHierarchy validates locs and indexes them. The error names the first bad
// element: an invalid node name, a node listed twice or on two leaves, a leaf under
// two spines or in two blocks, a spine in two blocks, a spine without a leaf, or one
// switch name used at two tiers.
func NewHierarchy(locs []NodeLocation) (*Hierarchy, error) {
	h := &Hierarchy{nodes: slices.Clone(locs), byNode: make(map[NodeID]int, len(locs))}
	slices.SortStableFunc(h.nodes, func(a, b NodeLocation) int { return strings.Compare(string(a.Node), string(b.Node)) })
	leafSpine := map[string]string{}
	leafBlock := map[string]string{}
	spineBlock := map[string]string{}
	tierOf := map[string]Tier{}
	for i, l := range h.nodes {
		if err := l.Node.Validate(); err != nil {
			return nil, fmt.Errorf("fleet hierarchy: %w", err)
		}
		if j, dup := h.byNode[l.Node]; dup {
			if prev := h.nodes[j]; prev.Leaf != l.Leaf {
				return nil, fmt.Errorf("fleet hierarchy: node %s is on two leaves: %q and %q", l.Node, prev.Leaf, l.Leaf)
			}
			return nil, fmt.Errorf("fleet hierarchy: node %s listed twice", l.Node)
		}
		h.byNode[l.Node] = i
		if l.Spine != "" && l.Leaf == "" {
			return nil, fmt.Errorf("fleet hierarchy: node %s has spine %q but no leaf", l.Node, l.Spine)
		}
		for _, s := range []struct {
			name string
			tier Tier
		}{{l.Leaf, TierLeaf}, {l.Spine, TierSpine}, {l.Block, TierBlock}} {
			if s.name == "" {
				continue
			}
			if t, ok := tierOf[s.name]; ok && t != s.tier {
				return nil, fmt.Errorf("fleet hierarchy: switch %q is used both as %s and as %s (node %s)", s.name, t, s.tier, l.Node)
			}
			tierOf[s.name] = s.tier
		}
		if err := sameParent(leafSpine, "leaf", l.Leaf, "spine", l.Spine, l.Node); err != nil {
			return nil, err
		}
		if err := sameParent(leafBlock, "leaf", l.Leaf, "block", l.Block, l.Node); err != nil {
			return nil, err
		}
		if err := sameParent(spineBlock, "spine", l.Spine, "block", l.Block, l.Node); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// sameParent records that child sits under parent and fails if it was seen under
// another. Unknown (empty) names are not checked.
func sameParent(m map[string]string, childKind, child, parentKind, parent string, node NodeID) error {
	if child == "" || parent == "" {
		return nil
	}
	if prev, ok := m[child]; ok && prev != parent {
		return fmt.Errorf("fleet hierarchy: %s %q is under two %ss: %q and %q (node %s)", childKind, child, parentKind, prev, parent, node)
	}
	m[child] = parent
	return nil
}

// Nodes returns a copy of the node locations, sorted by node name.
func (h *Hierarchy) Nodes() []NodeLocation { return slices.Clone(h.nodes) }

// Location returns where node n is.
func (h *Hierarchy) Location(n NodeID) (NodeLocation, bool) {
	i, ok := h.byNode[n]
	if !ok {
		return NodeLocation{}, false
	}
	return h.nodes[i], true
}

// LCATier returns the lowest tier that nodes a and b share: TierNode when a == b,
// TierNVLinkDomain when both are in the same NVLink domain, then TierLeaf, TierSpine,
// TierBlock, and TierCluster when they share nothing known. Unknown nodes and unknown
// (empty) ancestors share nothing.
func (h *Hierarchy) LCATier(a, b NodeID) Tier { return h.LCATierOf([]NodeID{a, b}) }

// LCATierOf returns the lowest tier that all nodes share (see LCATier). A set of zero
// or one node, or of one node repeated, is TierNode.
func (h *Hierarchy) LCATierOf(nodes []NodeID) Tier {
	if len(nodes) == 0 {
		return TierNode
	}
	locs := make([]NodeLocation, len(nodes))
	for i, n := range nodes {
		locs[i], _ = h.Location(n)
		locs[i].Node = n
	}
	for t := TierNode; t < TierCluster; t++ {
		name := locs[0].At(t)
		if name == "" {
			continue
		}
		shared := true
		for _, l := range locs[1:] {
			if l.At(t) != name {
				shared = false
				break
			}
		}
		if shared {
			return t
		}
	}
	return TierCluster
}

// LeavesSpanned counts the distinct leaf switches under the given nodes, the number
// placement minimises for a gang. A node listed twice counts once; a node whose leaf
// is unknown counts as a leaf of its own, so missing data never looks compact.
func (h *Hierarchy) LeavesSpanned(nodes []NodeID) int { return h.spanned(nodes, TierLeaf) }

// DomainsSpanned counts the distinct NVLink domains under the given nodes, counting
// like LeavesSpanned.
func (h *Hierarchy) DomainsSpanned(nodes []NodeID) int { return h.spanned(nodes, TierNVLinkDomain) }

func (h *Hierarchy) spanned(nodes []NodeID, t Tier) int {
	names := map[string]bool{}
	unknown := map[NodeID]bool{}
	for _, n := range nodes {
		l, _ := h.Location(n)
		if name := l.At(t); name != "" {
			names[name] = true
		} else {
			unknown[n] = true
		}
	}
	return len(names) + len(unknown)
}

// Members returns the nodes whose ancestor at tier t is name, sorted; every node for
// TierCluster.
func (h *Hierarchy) Members(t Tier, name string) []NodeID {
	var out []NodeID
	for _, l := range h.nodes {
		if t == TierCluster || name != "" && l.At(t) == name {
			out = append(out, l.Node)
		}
	}
	return out
}

type hierarchyJSON struct {
	Nodes []NodeLocation `json:"nodes"`
}

// MarshalJSON writes {"nodes": […]} sorted by node.
func (h *Hierarchy) MarshalJSON() ([]byte, error) {
	nodes := h.nodes
	if nodes == nil {
		nodes = []NodeLocation{}
	}
	return json.Marshal(hierarchyJSON{Nodes: nodes})
}

// UnmarshalJSON reads {"nodes": […]} and validates it like NewHierarchy.
func (h *Hierarchy) UnmarshalJSON(b []byte) error {
	var v hierarchyJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("fleet hierarchy: %w", err)
	}
	nh, err := NewHierarchy(v.Nodes)
	if err != nil {
		return err
	}
	*h = *nh
	return nil
}
