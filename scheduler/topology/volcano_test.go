package topology

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestHyperNodesX5(t *testing.T) {
	hns, err := x5(t).HyperNodes(false)
	if err != nil {
		t.Fatal(err)
	}
	tiers := map[int]int{}
	members := map[string]int{} // member → parents
	for _, h := range hns {
		tiers[h.Tier]++
		for _, m := range h.Members {
			members[m.Type+"/"+m.Exact]++
		}
	}
	// 6 leaf domains, 1 spine domain, 1 core domain; 89 nodes.
	if tiers[1] != 6 || tiers[2] != 1 || tiers[3] != 1 {
		t.Errorf("HyperNodes by tier %v, want 6, 1, 1", tiers)
	}
	nodes := 0
	for m, parents := range members {
		if parents != 1 {
			t.Errorf("%s has %d parents; Volcano allows one", m, parents)
		}
		if strings.HasPrefix(m, "Node/") {
			nodes++
		}
	}
	if nodes != 89 {
		t.Errorf("node members %d, want 89", nodes)
	}
	var b bytes.Buffer
	if err := WriteVolcano(&b, hns); err != nil {
		t.Fatal(err)
	}
	golden(t, "X5.volcano.yaml", b.Bytes())
	// Every document is valid YAML of the HyperNode shape.
	dec := yaml.NewDecoder(&b)
	docs := 0
	for {
		var doc struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Metadata   struct{ Name string }
			Spec       struct {
				Tier    int
				Members []struct {
					Type     string
					Selector map[string]map[string]string
				}
			}
		}
		if err := dec.Decode(&doc); err != nil {
			break
		}
		docs++
		if doc.APIVersion != "topology.volcano.sh/v1alpha1" || doc.Kind != "HyperNode" || doc.Spec.Tier < 1 || len(doc.Spec.Members) == 0 {
			t.Errorf("document %d: %+v", docs, doc)
		}
		if validObjectName(doc.Metadata.Name) != nil {
			t.Errorf("name %q", doc.Metadata.Name)
		}
	}
	if docs != 8 {
		t.Errorf("documents %d, want 8", docs)
	}
}

func TestHyperNodesRegex(t *testing.T) {
	hns, err := siteTree(t).HyperNodes(true)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteVolcano(&b, hns); err != nil {
		t.Fatal(err)
	}
	golden(t, "site.volcano.yaml", b.Bytes())
	if !strings.Contains(b.String(), `pattern: "^(gb001|gb002|gb003|gb004)$"`) {
		t.Errorf("no regex member for leaf-r01:\n%s", b.String())
	}
}

func TestHyperNodeNameClash(t *testing.T) {
	tr, err := FromNodes([]Node{{Name: "a", Leaf: "Leaf1"}, {Name: "b", Leaf: "leaf1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.HyperNodes(false); err == nil || !strings.Contains(err.Error(), `both become HyperNode "leaf1"`) {
		t.Errorf("got %v", err)
	}
}
