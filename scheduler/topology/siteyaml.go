package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/scheduler/topology/hostlist"
)

// The site YAML format, for sites without a fabric dump to read:
//
//	# where each node sits
//	nodes:
//	  - names: gpu[001-018]      # a Slurm host list, or name: gpu001
//	    nvlink_domain: nvl72-a   # NVLink domain (an NVL72 rack), optional
//	    clique: 6f1a…-….4        # nvidia.com/gpu.clique value, optional
//	    leaf: leaf-a1            # the leaf switch (or leaf domain)
//	    spine: spine-a           # optional; needs leaf
//	    core: core-1             # optional; needs spine
//
// Every key but name/names is optional; unknown keys are errors. Names of domains
// are 1-63 letters, digits, '-', '_' or '.' (they become label values and Slurm
// switch names).

var siteKeys = []string{"name", "names", "nvlink_domain", "clique", "leaf", "spine", "core"}

// FromYAML reads a site topology file (format above) and builds its tree. The
// error names file:line of the offending entry: an unknown key, a value that is not
// a string, an entry with neither or both of name and names, a bad host list, and
// everything FromNodes rejects (a node listed twice, a leaf under two spines, …).
func FromYAML(name string, data []byte) (*Tree, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file: want a mapping with a nodes list", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping with a nodes list", name, doc.Line)
	}
	root := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "nodes" {
			return nil, fmt.Errorf("%s:%d: unknown key %q at the top (want nodes)", name, k.Line, k.Value)
		}
		list = v
	}
	if list == nil {
		return nil, fmt.Errorf("%s:%d: no nodes list", name, root.Line)
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: nodes must be a list", name, list.Line)
	}
	var nodes []Node
	var lines []int
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: a nodes entry must be a mapping", name, item.Line)
		}
		f := map[string]string{}
		for i := 0; i+1 < len(item.Content); i += 2 {
			k, v := item.Content[i], item.Content[i+1]
			if !slices.Contains(siteKeys, k.Value) {
				return nil, fmt.Errorf("%s:%d: unknown key %q (want one of %v)", name, k.Line, k.Value, siteKeys)
			}
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return nil, fmt.Errorf("%s:%d: %s must be a string", name, v.Line, k.Value)
			}
			if _, dup := f[k.Value]; dup {
				return nil, fmt.Errorf("%s:%d: %s given twice", name, k.Line, k.Value)
			}
			f[k.Value] = v.Value
		}
		_, one := f["name"]
		_, many := f["names"]
		var hosts []string
		switch {
		case one && many:
			return nil, fmt.Errorf("%s:%d: give name or names, not both", name, item.Line)
		case one:
			hosts = []string{f["name"]}
		case many:
			h, err := hostlist.Expand(f["names"])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: names: %w", name, item.Line, err)
			}
			hosts = h
		default:
			return nil, fmt.Errorf("%s:%d: entry without name or names", name, item.Line)
		}
		for _, h := range hosts {
			nodes = append(nodes, Node{Name: h, NVLinkDomain: f["nvlink_domain"], Clique: f["clique"],
				Leaf: f["leaf"], Spine: f["spine"], Core: f["core"]})
			lines = append(lines, item.Line)
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s:%d: the nodes list is empty", name, list.Line)
	}
	return fromNodes(nodes, func(i int) string { return fmt.Sprintf("%s:%d", name, lines[i]) })
}
