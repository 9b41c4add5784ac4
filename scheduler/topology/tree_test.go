package topology

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/scheduler/topology/ibnet"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestX5Tree checks the X5 tree against the dump: 11 switches, all placed (6 with
// CAs, 4 cabled to those, 1 cabled only to two of those four), 89 hosts.
func TestX5Tree(t *testing.T) {
	tr := x5(t)
	if w := tr.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	count := map[int]int{}
	for _, s := range tr.Switches() {
		count[s.Level]++
	}
	if count[LevelLeaf] != 6 || count[LevelSpine] != 4 || count[LevelCore] != 1 || len(count) != 3 {
		t.Errorf("switches by level: %v, want 6 leaf, 4 spine, 1 core", count)
	}
	if n := len(tr.Nodes()); n != 89 {
		t.Errorf("nodes: %d, want 89", n)
	}
	// Every leaf reaches spines S-…8098 and S-…8c5c, so all leaves form one spine
	// domain, named after its first switch; the core S-…86a2 joins it.
	for _, n := range tr.Nodes() {
		if n.Spine != "S-0008f10500108098" || n.Core != "S-0008f105001086a2" {
			t.Fatalf("node %+v: want spine S-0008f10500108098, core S-0008f105001086a2", n)
		}
	}
	if n, _ := tr.Node("r422node57"); n.Leaf != "S-0008f10500200b50" {
		t.Errorf("r422node57 on leaf %q, want S-0008f10500200b50 (site map H-003048c74a650000, port 13)", n.Leaf)
	}
	core, _ := tr.Switch("S-0008f105001086a2")
	if !slices.Equal(core.Children, []string{"S-0008f1050010851e", "S-0008f10500108530"}) {
		t.Errorf("core children %v", core.Children)
	}
}

// TestOtherFabrics builds the four documented fabrics of jabl/ibtopotool. Counts
// come from the files: their Switch and Ca lines and node descriptions.
func TestOtherFabrics(t *testing.T) {
	tests := []struct {
		file      string
		nodes     []string
		leaves    int
		levels    int
		warnCount int
	}{
		// Descriptions are the HCA model ("MT23108 InfiniHost …"), not host names:
		// hosts keep their ibnetdiscover IDs. Two leaves cabled to each other
		// (a tree cannot hold it: one warning, plus "Non-Chassis Nodes").
		{"jabl-ibtopotool/1.topo", []string{"H-0008f10403960558", "H-0008f10403960984", "H-0008f10403961354", "H-005442b100004900"}, 2, 1, 2},
		{"jabl-ibtopotool/2.topo", []string{"compute-00-00", "compute-00-01"}, 1, 1, 0},
		// 6 CAs, 5 hosts: r-ufm101 has HCA-1 and HCA-2; the SwitchIB's ports cabled
		// to each other are self-loops, left out. Warnings: the captured stderr
		// line and the leaf-to-leaf cable.
		{"jabl-ibtopotool/3.topo", []string{"r-ufm100", "r-ufm101", "r-ufm111", "r-ufm216", "r-ufm96"}, 2, 1, 2},
		{"jabl-ibtopotool/4.topo", []string{"nsn33-43"}, 1, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			tr, err := FromIBNetDiscover(parseDump(t, tc.file), IBOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range tr.Nodes() {
				names = append(names, n.Name)
				if n.Leaf == "" {
					t.Errorf("node %s has no leaf", n.Name)
				}
			}
			if !slices.Equal(names, tc.nodes) {
				t.Errorf("nodes %q, want %q", names, tc.nodes)
			}
			if got := len(tr.Domains(LevelLeaf)); got != tc.leaves {
				t.Errorf("leaf domains %d, want %d", got, tc.leaves)
			}
			if tr.Levels() != tc.levels {
				t.Errorf("levels %d, want %d", tr.Levels(), tc.levels)
			}
			if len(tr.Warnings()) != tc.warnCount {
				t.Errorf("warnings %q, want %d", tr.Warnings(), tc.warnCount)
			}
		})
	}
}

// railDump is a two-rail fabric: host a and b each have two HCAs, one on leaf L1
// and one on leaf L2 (rail-optimized); host c is on L3 only. Spine S1 is above L1
// and L2, S2 above L3. Each switch also has a SHARP aggregation node, which is
// not a host. A switch X is cabled to nothing.
func railDump() string {
	var b strings.Builder
	sw := func(id, desc string, links ...string) {
		fmt.Fprintf(&b, "switchguid=0x1\nSwitch\t36 %q\t# %q enhanced port 0 lid 1 lmc 0\n", id, desc)
		for i, l := range links {
			fmt.Fprintf(&b, "[%d]\t%s\t# \"x\" lid 2 4xNDR\n", i+1, l)
		}
		b.WriteString("\n")
	}
	ca := func(id, desc string, links ...string) {
		fmt.Fprintf(&b, "Ca\t2 %q\t# %q\n", id, desc)
		for i, l := range links {
			fmt.Fprintf(&b, "[%d](%x)\t%s\t# lid 3 lmc 0 \"sw\" lid 1 4xNDR\n", i+1, 100+i, l)
		}
		b.WriteString("\n")
	}
	sw("S-L1", "leaf1", `"H-a1"[1]`, `"H-b1"[1]`, `"S-S1"[1]`, `"H-agg1"[1]`)
	sw("S-L2", "leaf2", `"H-a2"[1]`, `"H-b2"[1]`, `"S-S1"[2]`)
	sw("S-L3", "leaf3", `"H-c1"[1]`, `"S-S2"[1]`)
	sw("S-S1", "spine1", `"S-L1"[3]`, `"S-L2"[3]`)
	sw("S-S2", "spine2", `"S-L3"[2]`)
	sw("S-X", "lonely")
	ca("H-a1", "a mlx5_0", `"S-L1"[1]`)
	ca("H-a2", "a mlx5_1", `"S-L2"[1]`)
	ca("H-b1", "b mlx5_0", `"S-L1"[2]`)
	ca("H-b2", "b mlx5_1", `"S-L2"[2]`)
	ca("H-c1", "c mlx5_0", `"S-L3"[1]`)
	ca("H-agg1", "Mellanox Technologies Aggregation Node", `"S-L1"[4]`)
	return b.String()
}

func TestMultiRailAndAggregationNodes(t *testing.T) {
	f, err := ibnet.Parse("rail", strings.NewReader(railDump()))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := FromIBNetDiscover(f, IBOptions{NVLinkDomains: map[string]string{"a": "nvl1", "b": "nvl1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		// L1 and L2 share hosts a and b: one leaf domain, named S-L1.
		{Name: "a", NVLinkDomain: "nvl1", Leaf: "S-L1", Spine: "S-S1"},
		{Name: "b", NVLinkDomain: "nvl1", Leaf: "S-L1", Spine: "S-S1"},
		{Name: "c", Leaf: "S-L3", Spine: "S-S2"},
	}
	if got := tr.Nodes(); !slices.Equal(got, want) {
		t.Errorf("nodes\n got %+v\nwant %+v", got, want)
	}
	l1, _ := tr.Switch("S-L1")
	if !slices.Equal(l1.Nodes, []string{"a", "b"}) {
		t.Errorf("S-L1 hosts %v (the aggregation node is not a host)", l1.Nodes)
	}
	if _, ok := tr.Switch("S-X"); ok {
		t.Error("a switch that reaches no host is in the tree")
	}
	if w := tr.Warnings(); len(w) != 1 || !strings.Contains(w[0], `switch "S-X" reaches no host`) {
		t.Errorf("warnings %q", w)
	}
}

func TestHierarchy(t *testing.T) {
	h, err := x5(t).Hierarchy()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		nodes []telemetry.NodeID
		tier  telemetry.Tier
	}{
		{[]telemetry.NodeID{"sl390lin1", "sl390lin2"}, telemetry.TierLeaf},       // both on S-…17670
		{[]telemetry.NodeID{"sl390lin1", "sl390lin101"}, telemetry.TierSpine},    // S-…17670 and S-…36b4
		{[]telemetry.NodeID{"sl390lin1", "sl390lin1"}, telemetry.TierNode},       // the same node
		{[]telemetry.NodeID{"sl390lin1", "no-such-node"}, telemetry.TierCluster}, // unknown shares nothing
	}
	for _, tc := range tests {
		if got := h.LCATierOf(tc.nodes); got != tc.tier {
			t.Errorf("LCA of %v: %s, want %s", tc.nodes, got, tc.tier)
		}
	}
	if got := h.LeavesSpanned([]telemetry.NodeID{"sl390lin1", "sl390lin2", "sl390lin101", "r815lin104"}); got != 3 {
		t.Errorf("leaves spanned %d, want 3", got)
	}
	if l, _ := h.Location("r510gluster1"); l.Block != "S-0008f105001086a2" {
		t.Errorf("core as block: %+v", l)
	}
}

func TestFromNodesErrors(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"empty", nil, "no nodes"},
		{"twice", []Node{{Name: "a", Leaf: "l"}, {Name: "a", Leaf: "l"}}, "node a listed twice"},
		{"leaf under two spines", []Node{{Name: "a", Leaf: "l", Spine: "s1"}, {Name: "b", Leaf: "l", Spine: "s2"}}, `leaf "l" is under two spines: "s1" (node a) and "s2"`},
		{"spine under two cores", []Node{{Name: "a", Leaf: "l1", Spine: "s", Core: "c1"}, {Name: "b", Leaf: "l2", Spine: "s", Core: "c2"}}, `spine "s" is under two cores`},
		{"spine without leaf", []Node{{Name: "a", Spine: "s"}}, "has spine \"s\" but no leaf"},
		{"core without spine", []Node{{Name: "a", Leaf: "l", Core: "c"}}, "has core \"c\" but no spine"},
		{"one name two levels", []Node{{Name: "a", Leaf: "x", Spine: "s"}, {Name: "b", Leaf: "s"}}, `"s" is used both as spine and as leaf`},
		{"bad name", []Node{{Name: "a", Leaf: "bad name"}}, `invalid name "bad name"`},
		{"bad node", []Node{{Name: "n[1]"}}, "Slurm host list and topology.conf syntax"},
		{"bad clique", []Node{{Name: "a", Clique: "7"}}, `invalid clique "7"`},
		{"clique without domain", []Node{{Name: "a", Clique: "00000000-0000-0000-0000-000000000000.0"}}, "but no nvlink domain"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromNodes(tc.nodes)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// FuzzFromIBNetDiscover builds trees from mutated dumps and checks what every
// export relies on: each node sits on a leaf that lists it, the Slurm file reads
// back with the same leaves, and labels give back the same tree.
func FuzzFromIBNetDiscover(f *testing.F) {
	f.Add(railDump())
	for _, rel := range []string{"jabl-ibtopotool/1.topo", "jabl-ibtopotool/3.topo"} {
		b, err := os.ReadFile(filepath.Join(dataDir, rel))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		fab, err := ibnet.Parse("fuzz", strings.NewReader(s))
		if err != nil {
			return
		}
		tr, err := FromIBNetDiscover(fab, IBOptions{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		for _, n := range tr.Nodes() {
			sw, ok := tr.Switch(n.Leaf)
			if !ok || sw.Level != LevelLeaf {
				t.Fatalf("node %s: leaf %q is not a leaf switch", n.Name, n.Leaf)
			}
		}
		var b bytes.Buffer
		if err := tr.WriteSlurmTree(&b, "fuzz"); err != nil {
			t.Fatalf("write slurm: %v", err)
		}
		conf, err := ParseSlurmTopology("out", &b)
		if err != nil {
			t.Fatalf("our topology.conf does not read back: %v\n%s", err, b.String())
		}
		onLeaves := 0
		for _, s := range conf.Switches {
			onLeaves += len(s.Nodes)
		}
		hosts := 0
		for _, s := range tr.Switches() {
			hosts += len(s.Nodes)
		}
		if onLeaves != hosts {
			t.Fatalf("topology.conf lists %d node slots, the tree %d", onLeaves, hosts)
		}
		back, err := FromLabels(tr.Labels(LabelOptions{}))
		if err != nil {
			t.Fatalf("labels do not build a tree: %v", err)
		}
		if !slices.Equal(back.Nodes(), tr.Nodes()) {
			t.Fatalf("labels round trip changed the nodes")
		}
	})
}

// BenchmarkX5 parses the X5 dump (45 KB, 11 switches, 89 CAs) and builds its
// tree.
func BenchmarkX5(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(dataDir, "psmn-X5/X5.topofile"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		f, err := ibnet.Parse("X5.topofile", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := FromIBNetDiscover(f, IBOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
