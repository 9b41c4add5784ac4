package topology

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestLabelsRoundTrip: labels from a tree map back to the same tree, for the X5
// fabric dump and the site file: the same nodes with the same domains, and the
// same switch tree of domains.
func TestLabelsRoundTrip(t *testing.T) {
	for name, tr := range map[string]*Tree{"X5": x5(t), "site": siteTree(t)} {
		t.Run(name, func(t *testing.T) {
			back, err := FromLabels(tr.Labels(LabelOptions{}))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(back.Nodes(), tr.Nodes()) {
				t.Fatalf("nodes differ:\n got %+v\nwant %+v", back.Nodes(), tr.Nodes())
			}
			for _, lvl := range []int{0, LevelLeaf, LevelSpine, LevelCore} {
				a, b := tr.Domains(lvl), back.Domains(lvl)
				if len(a) != len(b) {
					t.Errorf("%s domains: %d, want %d", LevelName(lvl), len(b), len(a))
				}
				for d, nodes := range a {
					if !slices.Equal(b[d], nodes) {
						t.Errorf("%s domain %s: %v, want %v", LevelName(lvl), d, b[d], nodes)
					}
				}
			}
			// The label tree has one parent per domain; for X5 that is the spine
			// domain over all six leaves and the core over it.
			if name == "X5" {
				sp, _ := back.Switch("S-0008f10500108098")
				if len(sp.Children) != 6 {
					t.Errorf("spine domain children %v", sp.Children)
				}
			}
		})
	}
}

func TestLabels(t *testing.T) {
	l := siteTree(t).Labels(LabelOptions{})
	want := map[string]string{
		LabelAccelerator: "nvl72-r01",
		LabelLeaf:        "leaf-r01",
		LabelSpine:       "spine-a",
		LabelCore:        "core-1",
		LabelGPUClique:   "0e1c9b0c-5d43-4c1b-9a8e-3f1f0a6b2d11.1",
	}
	if got := l["gb002"]; !equalMaps(got, want) {
		t.Errorf("gb002: %v, want %v", got, want)
	}
	// No clique in the file: the NVLink domain's name stands for it.
	if got := l["gb009"][LabelGPUClique]; got != "nvl72-r03" {
		t.Errorf("gb009 clique %q", got)
	}
	if len(l["login1"]) != 0 {
		t.Errorf("login1 has labels %v", l["login1"])
	}
	if _, ok := siteTree(t).Labels(LabelOptions{NoGPUClique: true})["gb002"][LabelGPUClique]; ok {
		t.Error("NoGPUClique left the clique label")
	}
	var kb, jb bytes.Buffer
	if err := WriteKubectl(&kb, l); err != nil {
		t.Fatal(err)
	}
	golden(t, "site.kubectl", kb.Bytes())
	if err := WriteLabelsJSON(&jb, l); err != nil {
		t.Fatal(err)
	}
	var back map[string]map[string]string
	if err := json.Unmarshal(jb.Bytes(), &back); err != nil || len(back) != 10 || back["gb005"][LabelLeaf] != "leaf-r02" {
		t.Errorf("json: %v %v", err, back)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestLabelValue(t *testing.T) {
	if got := LabelValue("leaf-1"); got != "leaf-1" {
		t.Errorf("short value changed: %q", got)
	}
	long := strings.Repeat("a", 64)
	got := LabelValue(long)
	// topograph's convention: "x" and FNV-1a 64 in hex (17 characters here).
	if !strings.HasPrefix(got, "x") || len(got) != 17 || got != LabelValue(long) || got == LabelValue(long+"b") {
		t.Errorf("long value: %q", got)
	}
}

func TestKueueLevels(t *testing.T) {
	// Site: each NVLink domain inside one leaf, so the accelerator is a level.
	if got, want := siteTree(t).KueueLevels(), []string{LabelCore, LabelSpine, LabelLeaf, LabelAccelerator, LabelHostname}; !slices.Equal(got, want) {
		t.Errorf("site levels %v, want %v", got, want)
	}
	// An NVLink domain across two leaves cannot nest under leaf: no accelerator level.
	tr, err := FromNodes([]Node{{Name: "a", NVLinkDomain: "d", Leaf: "l1"}, {Name: "b", NVLinkDomain: "d", Leaf: "l2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.KueueLevels(), []string{LabelLeaf, LabelHostname}; !slices.Equal(got, want) {
		t.Errorf("levels %v, want %v", got, want)
	}
	var b bytes.Buffer
	if err := x5(t).WriteKueueTopology(&b, "x5"); err != nil {
		t.Fatal(err)
	}
	golden(t, "X5.kueue.yaml", b.Bytes())
	if err := tr.WriteKueueTopology(&b, "Bad_Name"); err == nil {
		t.Error("bad Topology name accepted")
	}
}
