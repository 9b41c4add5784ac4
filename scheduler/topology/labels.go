package topology

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
)

// Node label keys in NVIDIA topograph's scheme, which Kueue's topology-aware
// scheduling and KAI read as topology levels, and the GPU clique label GPU feature
// discovery writes.
const (
	LabelAccelerator = "network.topology.nvidia.com/accelerator" // NVLink domain
	LabelLeaf        = "network.topology.nvidia.com/leaf"
	LabelSpine       = "network.topology.nvidia.com/spine"
	LabelCore        = "network.topology.nvidia.com/core"
	LabelGPUClique   = "nvidia.com/gpu.clique"
	LabelHostname    = "kubernetes.io/hostname"
)

// LabelOptions tunes Labels.
type LabelOptions struct {
	// NoGPUClique leaves nvidia.com/gpu.clique out: on nodes where GPU feature
	// discovery runs, it writes that label itself from NVML.
	NoGPUClique bool
}

// LabelValue returns v as a Kubernetes label value the way topograph does: as it is
// up to 63 characters, else "x" and the 64-bit FNV-1a hash of v in hex.
func LabelValue(v string) string {
	if len(v) <= 63 {
		return v
	}
	h := fnv.New64a()
	h.Write([]byte(v))
	return fmt.Sprintf("x%x", h.Sum64())
}

// Labels returns each node's topology labels: accelerator (NVLink domain), leaf,
// spine and core where known, and nvidia.com/gpu.clique where the NVLink domain is
// known (the site's clique value where given, else the NVLink domain's name).
// Nodes with nothing known get an empty map.
func (t *Tree) Labels(o LabelOptions) map[string]map[string]string {
	out := make(map[string]map[string]string, len(t.nodes))
	for _, n := range t.nodes {
		l := map[string]string{}
		set := func(k, v string) {
			if v != "" {
				l[k] = LabelValue(v)
			}
		}
		set(LabelAccelerator, n.NVLinkDomain)
		set(LabelLeaf, n.Leaf)
		set(LabelSpine, n.Spine)
		set(LabelCore, n.Core)
		if !o.NoGPUClique && n.NVLinkDomain != "" {
			set(LabelGPUClique, cmp.Or(n.Clique, n.NVLinkDomain))
		}
		out[n.Name] = l
	}
	return out
}

// FromLabels builds a tree from node labels in topograph's scheme (other keys are
// ignored), the inverse of Labels: labels of a tree give back that tree. A
// nvidia.com/gpu.clique value in GPU feature discovery's form is kept as the
// node's clique where the accelerator label is there too. The error names the node whose labels break the tree.
func FromLabels(labels map[string]map[string]string) (*Tree, error) {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	slices.Sort(names)
	nodes := make([]Node, len(names))
	for i, name := range names {
		l := labels[name]
		nodes[i] = Node{Name: name, NVLinkDomain: l[LabelAccelerator], Leaf: l[LabelLeaf], Spine: l[LabelSpine], Core: l[LabelCore]}
		if c := l[LabelGPUClique]; c != "" && validClique(c) == nil && nodes[i].NVLinkDomain != "" {
			nodes[i].Clique = c
		}
	}
	return fromNodes(nodes, func(i int) string { return "node " + names[i] + "'s labels" })
}

// sortedKeys returns m's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// WriteKubectl writes one "kubectl label node NODE k=v … --overwrite" line per node
// with labels, nodes and keys sorted.
func WriteKubectl(w io.Writer, labels map[string]map[string]string) error {
	bw := bufio.NewWriter(w)
	for _, n := range sortedKeys(labels) {
		l := labels[n]
		if len(l) == 0 {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "kubectl label node %s", n)
		for _, k := range sortedKeys(l) {
			fmt.Fprintf(&b, " %s=%s", k, l[k])
		}
		b.WriteString(" --overwrite\n")
		bw.WriteString(b.String())
	}
	return bw.Flush()
}

// WriteLabelsJSON writes the labels as one JSON object, node → {key: value}, keys
// sorted, indented.
func WriteLabelsJSON(w io.Writer, labels map[string]map[string]string) error {
	b, err := json.MarshalIndent(labels, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode labels: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// KueueLevels returns the node labels of a Kueue Topology's levels, highest first:
// core, spine and leaf where any node has them, the accelerator (NVLink domain)
// when every NVLink domain lies inside one leaf domain (a Kueue level must nest in
// the one above it; an NVL72 rack cabled to several leaves does not), and
// kubernetes.io/hostname last.
func (t *Tree) KueueLevels() []string {
	has := map[string]bool{}
	domLeaf := map[string]string{}
	nested := true
	for _, n := range t.nodes {
		has[LabelCore] = has[LabelCore] || n.Core != ""
		has[LabelSpine] = has[LabelSpine] || n.Spine != ""
		has[LabelLeaf] = has[LabelLeaf] || n.Leaf != ""
		if n.NVLinkDomain != "" {
			has[LabelAccelerator] = true
			if l, ok := domLeaf[n.NVLinkDomain]; ok && l != n.Leaf {
				nested = false
			}
			domLeaf[n.NVLinkDomain] = n.Leaf
		}
	}
	var out []string
	for _, k := range []string{LabelCore, LabelSpine, LabelLeaf} {
		if has[k] {
			out = append(out, k)
		}
	}
	if has[LabelAccelerator] && nested {
		out = append(out, LabelAccelerator)
	}
	return append(out, LabelHostname)
}

// WriteKueueTopology writes a Kueue Topology object (kueue.x-k8s.io/v1beta1)
// named name with KueueLevels.
func (t *Tree) WriteKueueTopology(w io.Writer, name string) error {
	if err := validObjectName(name); err != nil {
		return fmt.Errorf("kueue topology: %w", err)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata:\n  name: %s\nspec:\n  levels:\n", name)
	for _, l := range t.KueueLevels() {
		fmt.Fprintf(bw, "  - nodeLabel: %s\n", l)
	}
	return bw.Flush()
}
