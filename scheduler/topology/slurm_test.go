package topology

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSlurmTreeMatchesSiteX5 checks the topology.conf generated from the X5
// production dump against the one the site generated from the same dump with its
// own tool (ibmap2slurm.py), semantically: switch names are matched by what they
// hold, not by spelling.
//
//   - Leaves: the same node sets (6 leaves, 89 nodes).
//   - Upper switches: the same multiset of leaf-child sets (two spines over all 6
//     leaves, two over 5, one with no leaf children).
//   - Upper-to-upper edges: ours are the site's minus exactly two. The site's tool
//     lists every switch neighbour as a child, so spines S-…851e and S-…8530 list
//     the core switch S-…86a2 as their child while S-…86a2 lists them as its
//     children: two 2-cycles, which a tree cannot have. Ours orients each link
//     upward by level (breadth first from the leaves), keeping 86a2 → 851e and
//     86a2 → 8530 and dropping the reverse. That is the only difference.
func TestSlurmTreeMatchesSiteX5(t *testing.T) {
	var buf bytes.Buffer
	if err := x5(t).WriteSlurmTree(&buf, "X5.topofile"); err != nil {
		t.Fatal(err)
	}
	ours, err := ParseSlurmTopology("generated", &buf)
	if err != nil {
		t.Fatalf("cannot read back our own output: %v\n%s", err, buf.String())
	}
	site, err := ParseSlurmTopology("X5.topology.conf", open(t, filepath.Join(dataDir, "psmn-X5/X5.topology.conf")))
	if err != nil {
		t.Fatal(err)
	}

	leafSig := func(conf *SlurmTopology) map[string]string { // switch → sorted node list
		m := map[string]string{}
		for _, s := range conf.Switches {
			if len(s.Nodes) > 0 {
				n := slices.Clone(s.Nodes)
				slices.Sort(n)
				m[s.Name] = strings.Join(n, ",")
			}
		}
		return m
	}
	ol, sl := leafSig(ours), leafSig(site)
	sortedVals := func(m map[string]string) []string {
		var v []string
		for _, s := range m {
			v = append(v, s)
		}
		slices.Sort(v)
		return v
	}
	if got, want := sortedVals(ol), sortedVals(sl); !slices.Equal(got, want) {
		t.Fatalf("leaf node sets differ:\n ours %q\n site %q", got, want)
	}
	if len(ol) != 6 {
		t.Errorf("leaves: got %d, want 6", len(ol))
	}
	nodes := 0
	for _, s := range ol {
		nodes += strings.Count(s, ",") + 1
	}
	if nodes != 89 {
		t.Errorf("nodes under leaves: got %d, want 89 (the dump's 89 CAs, one per host)", nodes)
	}

	// sig names an upper switch by its leaf children (as node sets) and counts
	// its upper children; leaves are named by their node set.
	sigs := func(conf *SlurmTopology, leaves map[string]string) (map[string]string, []string) {
		sig := map[string]string{}
		for name, ns := range leaves {
			sig[name] = "leaf{" + ns + "}"
		}
		var upper []string
		for _, s := range conf.Switches {
			if len(s.Nodes) > 0 {
				continue
			}
			var lc []string
			for _, c := range s.Switches {
				if ns, ok := leaves[c]; ok {
					lc = append(lc, ns)
				}
			}
			slices.Sort(lc)
			sig[s.Name] = fmt.Sprintf("upper%d", len(lc))
			upper = append(upper, strings.Join(lc, "|"))
		}
		slices.Sort(upper)
		return sig, upper
	}
	osig, oupper := sigs(ours, ol)
	ssig, supper := sigs(site, sl)
	if !slices.Equal(oupper, supper) {
		t.Errorf("upper switches' leaf children differ:\n ours %d %q\n site %d %q", len(oupper), oupper, len(supper), supper)
	}
	upperEdges := func(conf *SlurmTopology, sig map[string]string) []string {
		var e []string
		for _, s := range conf.Switches {
			for _, c := range s.Switches {
				if strings.HasPrefix(sig[c], "upper") {
					e = append(e, sig[s.Name]+"→"+sig[c])
				}
			}
		}
		slices.Sort(e)
		return e
	}
	oe, se := upperEdges(ours, osig), upperEdges(site, ssig)
	extra := slices.Clone(se)
	for _, e := range oe {
		i := slices.Index(extra, e)
		if i < 0 {
			t.Errorf("our upper edge %s is not in the site's file", e)
			continue
		}
		extra = slices.Delete(extra, i, i+1)
	}
	// The site's extra edges: spine (5 leaf children) → core (0 leaf children), twice.
	if want := []string{"upper5→upper0", "upper5→upper0"}; !slices.Equal(extra, want) {
		t.Errorf("site edges missing from ours: got %q, want %q (the spine→core back-edges)", extra, want)
	}

	// Both name switches by ibnetdiscover ID, so the names agree too.
	for name := range ol {
		if _, ok := sl[name]; !ok {
			t.Errorf("leaf %s is not a leaf in the site's file", name)
		}
	}
}

func TestSlurmTreeGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := x5(t).WriteSlurmTree(&buf, "X5.topofile"); err != nil {
		t.Fatal(err)
	}
	golden(t, "X5.topology.conf", buf.Bytes())
	buf.Reset()
	if err := x5(t).WriteSlurmBlock(&buf, BlockOptions{}, "X5.topofile"); err != nil {
		t.Fatal(err)
	}
	golden(t, "X5.block.conf", buf.Bytes())
}

func TestSlurmBlocks(t *testing.T) {
	// Leaf blocks of X5 hold 5, 6, 9, 24, 24 and 21 nodes (S-…369c, S-…8bba,
	// S-…827b0, S-…36b4, S-…17670, S-…200b50).
	tr := x5(t)
	tests := []struct {
		name    string
		o       BlockOptions
		sizes   []int
		wantErr string
	}{
		// Smallest block 5; six blocks allow aggregates of 2 and 4: 5, 10, 20.
		{"default sizes", BlockOptions{}, []int{5, 10, 20}, ""},
		{"given sizes", BlockOptions{Sizes: []int{4, 16}}, []int{4, 16}, ""},
		{"not a power of two", BlockOptions{Sizes: []int{4, 12}}, nil, "12 is not a power of two times 4"},
		{"base above smallest block", BlockOptions{Sizes: []int{6}}, nil, "block S-0008f1050020369c has 5 nodes, fewer than the base block size 6"},
		{"zero", BlockOptions{Sizes: []int{0}}, nil, "0 is not positive"},
		{"no nvlink domains", BlockOptions{Level: "nvlink"}, nil, "89 nodes have no nvlink domain"},
		{"bad level", BlockOptions{Level: "rack"}, nil, `invalid block level "rack"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			blocks, sizes, err := tr.SlurmBlocks(tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sizes, tc.sizes) {
				t.Errorf("sizes %v, want %v", sizes, tc.sizes)
			}
			var counts []int
			for _, b := range blocks {
				counts = append(counts, len(b.Nodes))
			}
			if want := []int{24, 9, 6, 21, 5, 24}; !slices.Equal(counts, want) {
				t.Errorf("block sizes by name %v, want %v", counts, want)
			}
		})
	}
}

func TestParseSlurmTopologyErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"unknown line", "PartitionName=x Nodes=a\n", "t.conf:1: unknown line"},
		{"bad hostlist", "SwitchName=s1 Nodes=n[1-\n", "t.conf:1: nodes: invalid host list"},
		{"both lists", "SwitchName=s1 Nodes=a Switches=b\n", "t.conf:1: switch s1 has both"},
		{"twice", "SwitchName=s1 Nodes=a\n# c\nSwitchName=s1 Nodes=b\n", "t.conf:3: s1 defined twice (first at line 1)"},
		{"no value", "SwitchName=s1 Nodes=\n", "t.conf:1: want Key=Value"},
		{"bad size", "BlockSizes=4,x\n", `t.conf:1: invalid block size "x"`},
		{"unknown key", "BlockName=b1 Switches=s\n", `t.conf:1: unknown key "switches"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSlurmTopology("t.conf", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	conf, err := ParseSlurmTopology("t.conf", strings.NewReader("switchname=s0 nodes=n[1-3] # leaf\nSwitchName=s1 Switches=s0 LinkSpeed=100\nBlockName=b Nodes=n1\nBlockSizes=1,4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := conf.Switches[0].Nodes; !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Errorf("nodes %v", got)
	}
	if !slices.Equal(conf.BlockSizes, []int{1, 4}) || len(conf.Blocks) != 1 || conf.Switches[1].Switches[0] != "s0" {
		t.Errorf("parsed %+v", conf)
	}
}

// TestFromSlurmTopologyX5 reads the site's own topology.conf back into a tree: it
// is the tree built from the dump, node for node (same leaf, spine and core
// domains) and switch for switch (same levels and children), although the file
// lists the spine-core links both ways.
func TestFromSlurmTopologyX5(t *testing.T) {
	conf, err := ParseSlurmTopology("X5.topology.conf", open(t, filepath.Join(dataDir, "psmn-X5/X5.topology.conf")))
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromSlurmTopology("X5.topology.conf", conf)
	if err != nil {
		t.Fatal(err)
	}
	want := x5(t)
	if !slices.Equal(got.Nodes(), want.Nodes()) {
		t.Errorf("nodes differ:\n got %+v\nwant %+v", got.Nodes(), want.Nodes())
	}
	gs, ws := got.Switches(), want.Switches()
	if len(gs) != len(ws) {
		t.Fatalf("switches %d, want %d", len(gs), len(ws))
	}
	for i := range gs {
		if gs[i].Name != ws[i].Name || gs[i].Level != ws[i].Level || !slices.Equal(gs[i].Children, ws[i].Children) || !slices.Equal(gs[i].Nodes, ws[i].Nodes) {
			t.Errorf("switch %d:\n got %+v\nwant %+v", i, gs[i], ws[i])
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"SwitchName=s1 Switches=s2\n", "t.conf:1: switch s1 lists switch s2, which no SwitchName line defines"},
		{"SwitchName=s1 Switches=s1\n", "t.conf: no switch lists Nodes="},
	} {
		conf, err := ParseSlurmTopology("t.conf", strings.NewReader(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := FromSlurmTopology("t.conf", conf); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}
