package topology

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func siteTree(t *testing.T) *Tree {
	t.Helper()
	data, err := os.ReadFile("testdata/site.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := FromYAML("site.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestFromYAML(t *testing.T) {
	tr := siteTree(t)
	if n := len(tr.Nodes()); n != 10 {
		t.Fatalf("nodes %d, want 10 (gb001-gb009, login1)", n)
	}
	if n, _ := tr.Node("gb006"); n != (Node{Name: "gb006", NVLinkDomain: "nvl72-r02", Clique: "0e1c9b0c-5d43-4c1b-9a8e-3f1f0a6b2d11.2", Leaf: "leaf-r02", Spine: "spine-a", Core: "core-1"}) {
		t.Errorf("gb006: %+v", n)
	}
	if n, _ := tr.Node("login1"); n != (Node{Name: "login1"}) {
		t.Errorf("login1: %+v", n)
	}
	spine, _ := tr.Switch("spine-a")
	if spine.Level != LevelSpine || !slices.Equal(spine.Children, []string{"leaf-r01", "leaf-r02"}) {
		t.Errorf("spine-a: %+v", spine)
	}
	core, _ := tr.Switch("core-1")
	if !slices.Equal(core.Children, []string{"spine-a", "spine-b"}) {
		t.Errorf("core-1: %+v", core)
	}
	var b strings.Builder
	if err := tr.WriteSlurmTree(&b, "site.yaml"); err != nil {
		t.Fatal(err)
	}
	golden(t, "site.topology.conf", []byte(b.String()))
	b.Reset()
	// login1 has no NVLink domain, so blocks must be asked for by leaf, and
	// login1 has no leaf either: an error names it.
	if err := tr.WriteSlurmBlock(&b, BlockOptions{Level: "nvlink"}, "site.yaml"); err == nil || !strings.Contains(err.Error(), "1 nodes have no nvlink domain, so no block: login1") {
		t.Errorf("block error: %v", err)
	}
}

func TestFromYAMLErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "s.yaml: empty file"},
		{"not a mapping", "- a\n", "s.yaml:1: want a mapping"},
		{"unknown top key", "nodes: []\nracks: []\n", `s.yaml:2: racks: unknown field (want one of nodes)`},
		{"no list", "nodes: {}\n", "s.yaml:1: nodes: want a list, got a mapping"},
		{"empty list", "nodes: []\n", "s.yaml:1: nodes: no nodes listed"},
		{"unknown key", "nodes:\n  - name: a\n    rack: r1\n", `s.yaml:3: nodes[0].rack: unknown field (want one of name, names`},
		{"not a string", "nodes:\n  - name: a\n    leaf: [x]\n", "s.yaml:3: nodes[0].leaf: want a single value, got a list"},
		{"no name", "nodes:\n  - leaf: l\n", "s.yaml:2: nodes[0]: entry without name or names"},
		{"both names", "nodes:\n  - name: a\n    names: b[1-2]\n", "s.yaml:2: nodes[0]: give name or names, not both"},
		{"bad hostlist", "nodes:\n  - names: b[1-\n", "s.yaml:2: nodes[0].names: invalid host list"},
		{"listed twice", "nodes:\n  - names: g[1-3]\n    leaf: l\n  - name: g2\n    leaf: l\n", "s.yaml:4: node g2 listed twice (also at s.yaml:2)"},
		{"leaf under two spines", "nodes:\n  - name: a\n    leaf: l\n    spine: s1\n  - name: b\n    leaf: l\n    spine: s2\n", `s.yaml:5: node b: leaf "l" is under two spines: "s1" (s.yaml:2) and "s2"`},
		{"bad domain name", "nodes:\n  - name: a\n    leaf: -l\n", `s.yaml:2: node a: leaf: invalid name "-l"`},
		{"syntax", "nodes:\n  - name: [\n", "s.yaml:2: invalid YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromYAML("s.yaml", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func FuzzFromYAML(f *testing.F) {
	data, err := os.ReadFile("testdata/site.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add("nodes:\n  - names: g[1-3]\n    leaf: l\n    spine: s\n")
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := FromYAML("f.yaml", []byte(s))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// A tree from a file round-trips through its labels.
		back, err := FromLabels(tr.Labels(LabelOptions{}))
		if err != nil {
			t.Fatalf("labels of a valid tree do not build a tree: %v", err)
		}
		if !slices.Equal(back.Nodes(), tr.Nodes()) {
			t.Fatalf("round trip changed the nodes:\n%+v\n%+v", tr.Nodes(), back.Nodes())
		}
	})
}
