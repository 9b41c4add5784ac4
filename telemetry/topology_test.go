package telemetry

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// a800Matrix is `nvidia-smi topo --matrix` from a real 8× A800 node with four
// ConnectX HCAs, as published in liguodongiot/llm-action @ 92344943
// (a800-env-install.md, Apache-2.0; ../shared/data/real-cli-outputs/llm-action/).
const a800Matrix = `        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    NIC0    NIC1    NIC2    NIC3    CPU Affinity    NUMA Affinity
GPU0     X      NV8     NV8     NV8     NV8     NV8     NV8     NV8     NODE    NODE    SYS     SYS     0-31,64-95      0
GPU1    NV8      X      NV8     NV8     NV8     NV8     NV8     NV8     PIX     NODE    SYS     SYS     0-31,64-95      0
GPU2    NV8     NV8      X      NV8     NV8     NV8     NV8     NV8     NODE    NODE    SYS     SYS     0-31,64-95      0
GPU3    NV8     NV8     NV8      X      NV8     NV8     NV8     NV8     NODE    PIX     SYS     SYS     0-31,64-95      0
GPU4    NV8     NV8     NV8     NV8      X      NV8     NV8     NV8     SYS     SYS     NODE    NODE    32-63,96-127    1
GPU5    NV8     NV8     NV8     NV8     NV8      X      NV8     NV8     SYS     SYS     NODE    NODE    32-63,96-127    1
GPU6    NV8     NV8     NV8     NV8     NV8     NV8      X      NV8     SYS     SYS     NODE    NODE    32-63,96-127    1
GPU7    NV8     NV8     NV8     NV8     NV8     NV8     NV8      X      SYS     SYS     PIX     PIX     32-63,96-127    1
NIC0    NODE    PIX     NODE    NODE    SYS     SYS     SYS     SYS      X      NODE    SYS     SYS
NIC1    NODE    NODE    NODE    PIX     SYS     SYS     SYS     SYS     NODE     X      SYS     SYS
NIC2    SYS     SYS     SYS     SYS     NODE    NODE    NODE    PIX     SYS     SYS      X      PIX
NIC3    SYS     SYS     SYS     SYS     NODE    NODE    NODE    PIX     SYS     SYS     PIX      X
`

// topologyFromMatrix builds a NodeTopology from nvidia-smi topo -m output: the small
// reader a topology source would have, kept here to run the vocabulary on real data.
// NICn is named mlx5_n, as the matrix's NIC legend says for this node.
func topologyFromMatrix(t *testing.T, node NodeID, matrix string) *NodeTopology {
	t.Helper()
	lines := strings.Split(strings.TrimRight(matrix, "\n"), "\n")
	cols := strings.Fields(lines[0])
	topo := &NodeTopology{Node: node}
	nicName := func(col string) string { return "mlx5_" + strings.TrimPrefix(col, "NIC") }
	for _, c := range cols {
		if strings.HasPrefix(c, "NIC") {
			topo.NICs = append(topo.NICs, TopologyNIC{Device: nicName(c), NUMANode: -1})
		}
	}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if !strings.HasPrefix(f[0], "GPU") {
			continue
		}
		a, err := strconv.Atoi(strings.TrimPrefix(f[0], "GPU"))
		if err != nil {
			t.Fatal(err)
		}
		numa, err := strconv.Atoi(f[len(f)-1])
		if err != nil {
			t.Fatal(err)
		}
		topo.GPUs = append(topo.GPUs, TopologyGPU{Index: a, NUMANode: numa})
		for i, col := range cols {
			if !strings.HasPrefix(col, "GPU") && !strings.HasPrefix(col, "NIC") {
				break // CPU Affinity, NUMA Affinity
			}
			cell := f[i+1]
			switch {
			case strings.HasPrefix(col, "GPU"):
				b, _ := strconv.Atoi(strings.TrimPrefix(col, "GPU"))
				if b <= a {
					continue
				}
				typ, n, err := ParseLinkToken(cell)
				if err != nil {
					t.Fatalf("GPU%d-GPU%d: %v", a, b, err)
				}
				topo.GPULinks = append(topo.GPULinks, GPULink{A: a, B: b, Type: typ, NVLinks: n})
			case strings.HasPrefix(col, "NIC"):
				typ, _, err := ParseLinkToken(cell)
				if err != nil {
					t.Fatalf("GPU%d-%s: %v", a, col, err)
				}
				topo.NICLinks = append(topo.NICLinks, NICLink{GPU: a, NIC: nicName(col), Type: typ})
			}
		}
	}
	return topo
}

func TestNodeTopologyFromRealMatrix(t *testing.T) {
	topo := topologyFromMatrix(t, "a800-01", a800Matrix)
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(topo.GPUs) != 8 || len(topo.NICs) != 4 || len(topo.GPULinks) != 28 || len(topo.NICLinks) != 32 {
		t.Fatalf("got %d GPUs, %d NICs, %d GPU links, %d NIC links; want 8, 4, 28 (8 choose 2), 32",
			len(topo.GPUs), len(topo.NICs), len(topo.GPULinks), len(topo.NICLinks))
	}
	l, ok := topo.Link(6, 2) // either order
	if !ok || l.Type != LinkNVLink || l.NVLinks != 8 || l.Token() != "NV8" {
		t.Errorf("Link(6, 2) = %+v, %v", l, ok)
	}
	// Rails: the closest NIC; ties go to the first name.
	rails := []struct {
		gpu  int
		nic  string
		typ  LinkType
		numa int
	}{
		{0, "mlx5_0", LinkNODE, 0}, // NODE to NIC0 and NIC1: tie
		{1, "mlx5_0", LinkPIX, 0},
		{2, "mlx5_0", LinkNODE, 0},
		{3, "mlx5_1", LinkPIX, 0},
		{4, "mlx5_2", LinkNODE, 1},
		{7, "mlx5_2", LinkPIX, 1}, // PIX to NIC2 and NIC3: tie
	}
	for _, r := range rails {
		got, ok := topo.Rail(r.gpu)
		if !ok || got.NIC != r.nic || got.Type != r.typ {
			t.Errorf("Rail(%d) = %+v, %v; want %s over %s", r.gpu, got, ok, r.nic, r.typ)
		}
		if g, _ := topo.GPU(r.gpu); g.NUMANode != r.numa {
			t.Errorf("GPU %d NUMA node %d, want %d", r.gpu, g.NUMANode, r.numa)
		}
	}
	if _, ok := topo.Rail(9); ok {
		t.Error("Rail(9) found a NIC for a GPU the node does not have")
	}
	// JSON round trip: what the agent serves at /topology.
	b, err := json.Marshal(topo)
	if err != nil {
		t.Fatal(err)
	}
	var back NodeTopology
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.GPULinks, topo.GPULinks) || !slices.Equal(back.NICLinks, topo.NICLinks) || !slices.Equal(back.GPUs, topo.GPUs) {
		t.Error("JSON round trip changed the topology")
	}
	for _, key := range []string{`"node":"a800-01"`, `"gpu_links":[{"a":0,"b":1,"type":"NVLINK","nvlinks":8}`, `"nic_links":[{"gpu":0,"nic":"mlx5_0","type":"NODE"}`, `"numa_node":0`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestParseLinkToken(t *testing.T) {
	tests := []struct {
		tok     string
		typ     LinkType
		links   int
		wantErr bool
	}{
		{"NV18", LinkNVLink, 18, false},
		{"NV1", LinkNVLink, 1, false},
		{"PIX", LinkPIX, 0, false},
		{"PXB", LinkPXB, 0, false},
		{"PHB", LinkPHB, 0, false},
		{"NODE", LinkNODE, 0, false},
		{"SYS", LinkSYS, 0, false},
		{"SOC", LinkSYS, 0, false}, // older drivers' name for SYS
		{"X", LinkUnknown, 0, true},
		{"NV", LinkUnknown, 0, true},
		{"NV0", LinkUnknown, 0, true},
		{"NV-2", LinkUnknown, 0, true},
		{"nv8", LinkUnknown, 0, true},
		{"N/A", LinkUnknown, 0, true},
		{"", LinkUnknown, 0, true},
	}
	for _, tc := range tests {
		typ, n, err := ParseLinkToken(tc.tok)
		if (err != nil) != tc.wantErr || typ != tc.typ || n != tc.links {
			t.Errorf("ParseLinkToken(%q) = %q, %d, %v", tc.tok, typ, n, err)
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(tc.tok)) {
			t.Errorf("ParseLinkToken(%q) error %q does not name the input", tc.tok, err)
		}
	}
}

func TestLinkQualityOrder(t *testing.T) {
	// Best first. NVLink count is bandwidth; an NVSwitch with as many links ranks equal.
	order := []GPULink{
		{Type: LinkNVSwitch, NVLinks: 18},
		{Type: LinkNVLink, NVLinks: 12},
		{Type: LinkNVLink, NVLinks: 2},
		{Type: LinkPIX},
		{Type: LinkPXB},
		{Type: LinkPHB},
		{Type: LinkNODE},
		{Type: LinkSYS},
		{Type: LinkUnknown},
	}
	for i := 1; i < len(order); i++ {
		if CompareLinks(order[i-1], order[i]) <= 0 {
			t.Errorf("%s (%d) should beat %s (%d)", order[i-1].Token(), order[i-1].Quality(), order[i].Token(), order[i].Quality())
		}
	}
	if q1, q2 := (GPULink{Type: LinkNVSwitch, NVLinks: 12}).Quality(), (GPULink{Type: LinkNVLink, NVLinks: 12}).Quality(); q1 != q2 {
		t.Errorf("NVSWITCH×12 = %d, NVLINK×12 = %d; want equal", q1, q2)
	}
}

// pcieBox is a 4-GPU PCIe node: GPUs 0,1 under one switch, 2,3 under another, the two
// switches on different sockets.
func pcieBox() *NodeTopology {
	return &NodeTopology{
		Node: "pcie-01",
		GPUs: []TopologyGPU{{Index: 0, NUMANode: 0}, {Index: 1, NUMANode: 0}, {Index: 2, NUMANode: 1}, {Index: 3, NUMANode: 1}},
		GPULinks: []GPULink{
			{A: 0, B: 1, Type: LinkPIX}, {A: 2, B: 3, Type: LinkPIX},
			{A: 0, B: 2, Type: LinkSYS}, {A: 0, B: 3, Type: LinkSYS},
			{A: 1, B: 2, Type: LinkSYS}, {A: 1, B: 3, Type: LinkSYS},
		},
	}
}

func TestWorstLinkAndOrdering(t *testing.T) {
	topo := pcieBox()
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		gpus []int
		want LinkType
		ok   bool
	}{
		{[]int{0, 1}, LinkPIX, true},
		{[]int{2, 3}, LinkPIX, true},
		{[]int{0, 1, 2}, LinkSYS, true},
		{[]int{0, 1, 2, 3}, LinkSYS, true},
		{[]int{0, 9}, LinkUnknown, true}, // no recorded link: the worst
		{[]int{0}, LinkUnknown, false},
		{nil, LinkUnknown, false},
	}
	for _, tc := range tests {
		got, ok := topo.WorstLink(tc.gpus)
		if ok != tc.ok || got.Type != tc.want {
			t.Errorf("WorstLink(%v) = %+v, %v; want %s, %v", tc.gpus, got, ok, tc.want, tc.ok)
		}
	}
	var pairs []string
	for _, l := range topo.LinksByQuality() {
		pairs = append(pairs, strconv.Itoa(l.A)+"-"+strconv.Itoa(l.B)+":"+l.Token())
	}
	if got, want := strings.Join(pairs, " "), "0-1:PIX 2-3:PIX 0-2:SYS 0-3:SYS 1-2:SYS 1-3:SYS"; got != want {
		t.Errorf("LinksByQuality = %s\nwant %s", got, want)
	}
}

func TestNodeTopologyValidate(t *testing.T) {
	pci := func(s string) PCIBusID { p, _ := ParsePCIBusID(s); return p }
	tests := []struct {
		name    string
		edit    func(*NodeTopology)
		wantErr string // fragment naming the bad element; "" = valid
	}{
		{"valid", func(*NodeTopology) {}, ""},
		{"bad node", func(n *NodeTopology) { n.Node = "" }, "invalid node name"},
		{"duplicate gpu", func(n *NodeTopology) { n.GPUs = append(n.GPUs, TopologyGPU{Index: 2}) }, "gpu 2 listed twice"},
		{"negative gpu", func(n *NodeTopology) { n.GPUs[0].Index = -1 }, "gpu index -1 out of range"},
		{"link to missing gpu", func(n *NodeTopology) { n.GPULinks = append(n.GPULinks, GPULink{A: 1, B: 8, Type: LinkPIX}) },
			"gpu link 1-8: gpu index 8 out of range (node has gpus [0 1 2 3])"},
		{"self link", func(n *NodeTopology) { n.GPULinks = append(n.GPULinks, GPULink{A: 3, B: 3, Type: LinkPIX}) }, "gpu link 3-3: a gpu linked to itself"},
		{"pair twice", func(n *NodeTopology) { n.GPULinks = append(n.GPULinks, GPULink{A: 1, B: 0, Type: LinkPIX}) }, "gpu link 1-0 listed twice"},
		{"nvlink without count", func(n *NodeTopology) { n.GPULinks[0] = GPULink{A: 0, B: 1, Type: LinkNVLink} }, "gpu link 0-1: NVLINK needs a link count"},
		{"pcie with count", func(n *NodeTopology) { n.GPULinks[0].NVLinks = 4 }, "gpu link 0-1: PCIe path PIX cannot have 4 NVLinks"},
		{"unknown type", func(n *NodeTopology) { n.GPULinks[0].Type = "QPI" }, `gpu link 0-1: unknown link type "QPI"`},
		{"duplicate uuid", func(n *NodeTopology) { n.GPUs[0].UUID = "GPU-a"; n.GPUs[1].UUID = "GPU-a" }, "gpus 0 and 1 share uuid GPU-a"},
		{"bad uuid", func(n *NodeTopology) { n.GPUs[0].UUID = "abc" }, `uuid "abc"`},
		{"bad numa", func(n *NodeTopology) { n.GPUs[3].NUMANode = -2 }, "gpu 3: numa node -2"},
		{"shared pci", func(n *NodeTopology) {
			n.GPUs[0].PCIBusID = pci("0000:1b:00.0")
			n.NICs = []TopologyNIC{{Device: "mlx5_0", PCIBusID: pci("00000000:1B:00.0")}}
		}, "nic mlx5_0 and gpu 0 share PCI address 0000:1b:00.0"},
		{"duplicate nic", func(n *NodeTopology) { n.NICs = []TopologyNIC{{Device: "mlx5_0"}, {Device: "mlx5_0"}} }, "nic mlx5_0 listed twice"},
		{"nameless nic", func(n *NodeTopology) { n.NICs = []TopologyNIC{{}} }, "empty InfiniBand device name"},
		{"nic link to unknown nic", func(n *NodeTopology) { n.NICLinks = []NICLink{{GPU: 0, NIC: "mlx5_9", Type: LinkPIX}} }, `nic link gpu 0-mlx5_9: unknown nic "mlx5_9"`},
		{"nic link to missing gpu", func(n *NodeTopology) {
			n.NICs = []TopologyNIC{{Device: "mlx5_0"}}
			n.NICLinks = []NICLink{{GPU: 5, NIC: "mlx5_0", Type: LinkPIX}}
		}, "nic link gpu 5-mlx5_0: gpu index 5 out of range"},
		{"nic link over nvlink", func(n *NodeTopology) {
			n.NICs = []TopologyNIC{{Device: "mlx5_0"}}
			n.NICLinks = []NICLink{{GPU: 0, NIC: "mlx5_0", Type: LinkNVLink}}
		}, `type "NVLINK" is not a PCIe path`},
		{"nic link twice", func(n *NodeTopology) {
			n.NICs = []TopologyNIC{{Device: "mlx5_0"}}
			n.NICLinks = []NICLink{{GPU: 0, NIC: "mlx5_0", Type: LinkPIX}, {GPU: 0, NIC: "mlx5_0", Type: LinkPIX}}
		}, "nic link gpu 0-mlx5_0 listed twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := pcieBox()
			tc.edit(topo)
			err := topo.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error with %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("Validate() = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestTier(t *testing.T) {
	for tier := TierNode; tier <= TierCluster; tier++ {
		got, err := ParseTier(tier.String())
		if err != nil || got != tier {
			t.Errorf("ParseTier(%q) = %v, %v", tier, got, err)
		}
	}
	for _, bad := range []string{"unknown", "", "Leaf", "rack"} {
		if _, err := ParseTier(bad); err == nil {
			t.Errorf("ParseTier(%q): no error", bad)
		}
	}
	if _, err := json.Marshal(TierUnknown); err == nil {
		t.Error("marshalling TierUnknown succeeded")
	}
	if got := Tier(42).String(); got != "tier(42)" {
		t.Errorf("Tier(42).String() = %q", got)
	}
}

// fleet is a small fleet: n1 and n2 share an NVLink domain across two leaves; n3 shares
// n1's leaf; n4 is on another spine of the same block; n5 is in another block; n6 has
// no known location.
func fleet(t *testing.T) *Hierarchy {
	t.Helper()
	h, err := NewHierarchy([]NodeLocation{
		{Node: "n5", Leaf: "L4", Spine: "S3", Block: "B2"},
		{Node: "n1", NVLinkDomain: "d1", Leaf: "L1", Spine: "S1", Block: "B1"},
		{Node: "n2", NVLinkDomain: "d1", Leaf: "L2", Spine: "S1", Block: "B1"},
		{Node: "n3", Leaf: "L1", Spine: "S1", Block: "B1"},
		{Node: "n4", Leaf: "L3", Spine: "S2", Block: "B1"},
		{Node: "n6"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLCATier(t *testing.T) {
	h := fleet(t)
	tests := []struct {
		a, b NodeID
		want Tier
	}{
		{"n1", "n1", TierNode},
		{"n1", "n2", TierNVLinkDomain}, // same domain though on different leaves
		{"n1", "n3", TierLeaf},
		{"n2", "n3", TierSpine}, // L2 vs L1, both under S1
		{"n1", "n4", TierBlock},
		{"n1", "n5", TierCluster},
		{"n1", "n6", TierCluster}, // n6's place is unknown
		{"n6", "n6", TierNode},
		{"n1", "nope", TierCluster},
	}
	for _, tc := range tests {
		if got := h.LCATier(tc.a, tc.b); got != tc.want {
			t.Errorf("LCATier(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
		if got := h.LCATier(tc.b, tc.a); got != tc.want {
			t.Errorf("LCATier(%s, %s) = %s, want %s (symmetry)", tc.b, tc.a, got, tc.want)
		}
	}
	sets := []struct {
		nodes []NodeID
		want  Tier
	}{
		{nil, TierNode},
		{[]NodeID{"n4"}, TierNode},
		{[]NodeID{"n1", "n1"}, TierNode},
		{[]NodeID{"n1", "n3"}, TierLeaf},
		{[]NodeID{"n1", "n2", "n3"}, TierSpine}, // no domain holds n3, no leaf holds all three
		{[]NodeID{"n1", "n2", "n3", "n4"}, TierBlock},
		{[]NodeID{"n1", "n5"}, TierCluster},
	}
	for _, tc := range sets {
		if got := h.LCATierOf(tc.nodes); got != tc.want {
			t.Errorf("LCATierOf(%v) = %s, want %s", tc.nodes, got, tc.want)
		}
	}
}

func TestSpanned(t *testing.T) {
	h := fleet(t)
	tests := []struct {
		nodes           []NodeID
		leaves, domains int
	}{
		{nil, 0, 0},
		{[]NodeID{"n1"}, 1, 1},
		{[]NodeID{"n1", "n3"}, 1, 2},                   // one leaf; n3 has no domain: counts alone
		{[]NodeID{"n1", "n2"}, 2, 1},                   // one domain across two leaves
		{[]NodeID{"n1", "n2", "n3", "n6", "n6"}, 3, 3}, // L1, L2, and n6 (unknown, once)
		{[]NodeID{"n1", "nope"}, 2, 2},                 // an unknown node never looks compact
	}
	for _, tc := range tests {
		if got := h.LeavesSpanned(tc.nodes); got != tc.leaves {
			t.Errorf("LeavesSpanned(%v) = %d, want %d", tc.nodes, got, tc.leaves)
		}
		if got := h.DomainsSpanned(tc.nodes); got != tc.domains {
			t.Errorf("DomainsSpanned(%v) = %d, want %d", tc.nodes, got, tc.domains)
		}
	}
}

func TestMembersAndLocation(t *testing.T) {
	h := fleet(t)
	tests := []struct {
		tier Tier
		name string
		want []NodeID
	}{
		{TierLeaf, "L1", []NodeID{"n1", "n3"}},
		{TierSpine, "S1", []NodeID{"n1", "n2", "n3"}},
		{TierBlock, "B1", []NodeID{"n1", "n2", "n3", "n4"}},
		{TierNVLinkDomain, "d1", []NodeID{"n1", "n2"}},
		{TierCluster, "", []NodeID{"n1", "n2", "n3", "n4", "n5", "n6"}},
		{TierLeaf, "", nil}, // "unknown" is not a leaf
		{TierLeaf, "nope", nil},
	}
	for _, tc := range tests {
		if got := h.Members(tc.tier, tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("Members(%s, %q) = %v, want %v", tc.tier, tc.name, got, tc.want)
		}
	}
	if l, ok := h.Location("n2"); !ok || l.Leaf != "L2" || l.At(TierSpine) != "S1" || l.At(TierNode) != "n2" || l.At(TierCluster) != "" {
		t.Errorf("Location(n2) = %+v, %v", l, ok)
	}
	if _, ok := h.Location("nope"); ok {
		t.Error("Location(nope) found a node")
	}
	nodes := h.Nodes()
	nodes[0].Leaf = "changed"
	if l, _ := h.Location("n1"); l.Leaf != "L1" {
		t.Error("Nodes() returned the hierarchy's own slice")
	}
}

func TestNewHierarchyErrors(t *testing.T) {
	tests := []struct {
		name    string
		locs    []NodeLocation
		wantErr string
	}{
		{"node on two leaves", []NodeLocation{{Node: "n1", Leaf: "L1"}, {Node: "n1", Leaf: "L2"}},
			`node n1 is on two leaves: "L1" and "L2"`},
		{"node twice", []NodeLocation{{Node: "n1", Leaf: "L1"}, {Node: "n1", Leaf: "L1"}}, "node n1 listed twice"},
		{"leaf under two spines", []NodeLocation{{Node: "n1", Leaf: "L1", Spine: "S1"}, {Node: "n2", Leaf: "L1", Spine: "S2"}},
			`leaf "L1" is under two spines: "S1" and "S2" (node n2)`},
		{"spine in two blocks", []NodeLocation{{Node: "n1", Leaf: "L1", Spine: "S1", Block: "B1"}, {Node: "n2", Leaf: "L2", Spine: "S1", Block: "B2"}},
			`spine "S1" is under two blocks: "B1" and "B2"`},
		{"leaf in two blocks", []NodeLocation{{Node: "n1", Leaf: "L1", Block: "B1"}, {Node: "n2", Leaf: "L1", Block: "B2"}},
			`leaf "L1" is under two blocks`},
		{"spine without leaf", []NodeLocation{{Node: "n1", Spine: "S1"}}, `node n1 has spine "S1" but no leaf`},
		{"name at two tiers", []NodeLocation{{Node: "n1", Leaf: "sw1"}, {Node: "n2", Leaf: "L2", Spine: "sw1"}},
			`switch "sw1" is used both as leaf and as spine`},
		{"bad node name", []NodeLocation{{Node: "n 1"}}, `invalid node name "n 1"`},
		{"empty node name", []NodeLocation{{Leaf: "L1"}}, `invalid node name ""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHierarchy(tc.locs)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewHierarchy() = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
	// A block of nodes with no tree inside it is fine (Slurm's topology/block).
	if _, err := NewHierarchy([]NodeLocation{{Node: "n1", Block: "B1"}, {Node: "n2", Block: "B1"}}); err != nil {
		t.Errorf("block-only hierarchy: %v", err)
	}
}

func TestHierarchyJSON(t *testing.T) {
	h := fleet(t)
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"nodes":[{"node":"n1","nvlink_domain":"d1","leaf":"L1","spine":"S1","block":"B1"}`) {
		t.Errorf("json = %s", b)
	}
	var back Hierarchy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Nodes(), h.Nodes()) || back.LCATier("n1", "n2") != TierNVLinkDomain {
		t.Error("JSON round trip changed the hierarchy")
	}
	err = json.Unmarshal([]byte(`{"nodes":[{"node":"n1","leaf":"a"},{"node":"n1","leaf":"b"}]}`), &back)
	if err == nil || !strings.Contains(err.Error(), "node n1 is on two leaves") {
		t.Errorf("invalid JSON hierarchy: %v", err)
	}
	empty, _ := NewHierarchy(nil)
	if b, _ := json.Marshal(empty); string(b) != `{"nodes":[]}` {
		t.Errorf("empty hierarchy json = %s", b)
	}
}

// TestRailSpreadsSharedSwitch: two GPUs and two NICs behind one PCIe switch (Azure
// NDv4) get one rail each; one GPU with four NICs (AWS p5) gets the first in natural
// name order.
func TestRailSpreadsSharedSwitch(t *testing.T) {
	topo := &NodeTopology{Node: "n", GPUs: []TopologyGPU{{Index: 0}, {Index: 1}, {Index: 2}}}
	for g := range 2 {
		for _, nic := range []string{"mlx5_1", "mlx5_0"} {
			topo.NICLinks = append(topo.NICLinks, NICLink{GPU: g, NIC: nic, Type: LinkPIX})
		}
	}
	for _, nic := range []string{"mlx5_10", "mlx5_9", "mlx5_11", "mlx5_8"} {
		topo.NICLinks = append(topo.NICLinks, NICLink{GPU: 2, NIC: nic, Type: LinkPIX})
	}
	for g, want := range []string{"mlx5_0", "mlx5_1", "mlx5_8"} {
		if r, ok := topo.Rail(g); !ok || r.NIC != want {
			t.Errorf("Rail(%d) = %v, %v; want %s", g, r, ok, want)
		}
	}
}
