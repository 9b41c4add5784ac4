package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// kubeNodeList writes the labels as `kubectl get nodes -o json` shows them.
func kubeNodeList(t *testing.T, labels map[string]map[string]string) string {
	t.Helper()
	type item struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	list := struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Items      []item `json:"items"`
	}{APIVersion: "v1", Kind: "List"}
	for name, ls := range labels {
		var it item
		it.Metadata.Name, it.Metadata.Labels = name, ls
		list.Items = append(list.Items, it)
	}
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "nodes.json", string(data))
}

// TestLoad: each kind of source gives the tree its own constructor gives, and
// the source's name is its file's base name.
func TestLoad(t *testing.T) {
	x5dir := filepath.Join(dataDir, "psmn-X5")
	slurmTree := func(t *testing.T) *Tree {
		conf, err := ParseSlurmTopology("X5.topology.conf", open(t, "testdata/X5.topology.conf"))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := FromSlurmTopology("X5.topology.conf", conf)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tests := []struct {
		name     string
		src      Source
		want     func(*testing.T) *Tree
		wantName string
	}{
		{"ibnetdiscover with map", Source{IBNetDiscover: filepath.Join(x5dir, "X5.topofile"), GUIDMap: filepath.Join(x5dir, "X5.map")}, x5, "X5.topofile"},
		{"site yaml", Source{SiteYAML: "testdata/site.yaml"}, siteTree, "site.yaml"},
		{"slurm topology.conf", Source{SlurmTopology: "testdata/X5.topology.conf"}, slurmTree, "X5.topology.conf"},
		{"kube nodes", Source{KubeNodes: kubeNodeList(t, siteTree(t).Labels(LabelOptions{}))}, siteTree, "nodes.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want(t)
			if !slices.Equal(got.Nodes(), want.Nodes()) {
				t.Errorf("nodes:\n got %+v\nwant %+v", got.Nodes(), want.Nodes())
			}
			if !slices.Equal(got.Warnings(), want.Warnings()) {
				t.Errorf("warnings %q, want %q", got.Warnings(), want.Warnings())
			}
			if n := tc.src.Name(); n != tc.wantName {
				t.Errorf("Name() = %q, want %q", n, tc.wantName)
			}
		})
	}
}

// TestLoadKubeNodesGivesTheYAMLsTree: node labels as `kubectl get nodes -o
// json` shows them (here: the labels gpuwatch wrote from the site YAML) give
// back the same Slurm tree as the YAML itself.
func TestLoadKubeNodesGivesTheYAMLsTree(t *testing.T) {
	fromYAML, err := Load(Source{SiteYAML: "testdata/site.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	fromK8s, err := Load(Source{KubeNodes: kubeNodeList(t, fromYAML.Labels(LabelOptions{}))})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := fromYAML.WriteSlurmTree(&a, "x"); err != nil {
		t.Fatal(err)
	}
	if err := fromK8s.WriteSlurmTree(&b, "x"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.String(), "\nSwitchName=") || a.String() != b.String() {
		t.Errorf("topology.conf from node labels differs from the YAML's:\n%s\n---\n%s", b.String(), a.String())
	}
}

func TestLoadErrors(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "nodes:\n  - name: a\n    rack: r1\n")
	pods := writeFile(t, "pods.json", `{"kind":"PodList","items":[]}`)
	tests := []struct {
		name    string
		src     Source
		wantErr error
		want    string
	}{
		{"nothing", Source{}, ErrNoSource, "no topology source"},
		{"two sources", Source{IBNetDiscover: "x", SiteYAML: "y"}, ErrSeveralSources, "several"},
		{"map without dump", Source{SiteYAML: bad, GUIDMap: "m"}, ErrGUIDMapAlone, "GUID map"},
		{"bad site file names file:line", Source{SiteYAML: bad}, nil, "bad.yaml:3: nodes[0].rack: unknown field"},
		{"missing dump", Source{IBNetDiscover: "/nonexistent/x.topo"}, nil, "cannot read ibnetdiscover dump"},
		{"missing map", Source{IBNetDiscover: "/nonexistent/x.topo", GUIDMap: "/nonexistent/x.map"}, nil, "cannot read GUID map"},
		{"missing topology.conf", Source{SlurmTopology: "/nonexistent/topology.conf"}, nil, "cannot read topology.conf"},
		{"a PodList", Source{KubeNodes: pods}, nil, `kind "PodList"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("got %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil && tc.src.Check() != tc.wantErr {
				t.Errorf("Check() = %v, want %v", tc.src.Check(), tc.wantErr)
			}
		})
	}
}

func TestParseKubeNodes(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not JSON", "kind: NodeList", "n.json: not the JSON of `kubectl get nodes -o json`"},
		{"a PodList", `{"kind":"PodList","items":[{"metadata":{"name":"p"}}]}`, `n.json: kind "PodList": want a NodeList`},
		{"a nameless node", `{"kind":"NodeList","items":[{"metadata":{"labels":{"a":"b"}}}]}`, "n.json: items[0]: no metadata.name"},
		{"no nodes", `{"kind":"List","items":[]}`, "n.json: no nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKubeNodes("n.json", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	got, err := ParseKubeNodes("n.json", []byte(`{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"gpu01","labels":{"`+LabelLeaf+`":"leaf-1"}}},{"metadata":{"name":"gpu02"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["gpu01"][LabelLeaf] != "leaf-1" || len(got["gpu02"]) != 0 {
		t.Errorf("got %v", got)
	}
}

func FuzzParseKubeNodes(f *testing.F) {
	f.Add(`{"kind":"NodeList","items":[{"metadata":{"name":"gpu01","labels":{"` + LabelLeaf + `":"leaf-1","` + LabelSpine + `":"s"}}}]}`)
	f.Add(`{"kind":"PodList","items":[]}`)
	f.Add(`{"items":[{"metadata":{}}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		nodes, err := ParseKubeNodes("f.json", []byte(s))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json: ") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		if len(nodes) == 0 {
			t.Fatal("no error and no nodes")
		}
		for name := range nodes {
			if name == "" {
				t.Fatal("a node without a name")
			}
		}
		// Whatever labels the list carries, building a tree from them either
		// succeeds or fails with an error; it never panics.
		_, _ = FromLabels(nodes)
	})
}
