package topology

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/internal/yamlfile"
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
// Every key but name/names is optional; unknown keys are errors; an empty value
// (`leaf:`) is one left out. Names of domains
// are 1-63 letters, digits, '-', '_' or '.' (they become label values and Slurm
// switch names).

// siteFile is the site YAML file, decoded strictly (internal/yamlfile).
type siteFile struct {
	Nodes []siteEntry `yaml:"nodes"`
}

type siteEntry struct {
	Name         string `yaml:"name"`
	Names        string `yaml:"names"`
	NVLinkDomain string `yaml:"nvlink_domain"`
	Clique       string `yaml:"clique"`
	Leaf         string `yaml:"leaf"`
	Spine        string `yaml:"spine"`
	Core         string `yaml:"core"`
}

// maxSiteFile bounds a site file: a line per node of a 100,000-node site fits.
const maxSiteFile = 64 << 20

// FromYAML reads a site topology file (format above) and builds its tree. Every
// error is FILE:LINE: FIELD: problem (internal/yamlfile): an unknown key, a value
// that is not a string, an entry with neither or both of name and names, a bad
// host list, and everything FromNodes rejects (a node listed twice, a leaf under
// two spines, …).
func FromYAML(name string, data []byte) (*Tree, error) {
	doc, err := yamlfile.Parse(name, data, maxSiteFile)
	if err != nil {
		return nil, err
	}
	if doc.Empty() {
		return nil, fmt.Errorf("%s: empty file: want a mapping with a nodes list", name)
	}
	var f siteFile
	if err := doc.Decode(&f); err != nil {
		return nil, err
	}
	if len(f.Nodes) == 0 {
		doc.Errorf("nodes", "no nodes listed")
		return nil, doc.Err()
	}
	var nodes []Node
	var lines []int
	for i, e := range f.Nodes {
		path := fmt.Sprintf("nodes[%d]", i)
		var hosts []string
		switch {
		case e.Name != "" && e.Names != "":
			doc.Errorf(path, "give name or names, not both")
		case e.Name != "":
			hosts = []string{e.Name}
		case e.Names != "":
			h, err := hostlist.Expand(e.Names)
			if err != nil {
				doc.Errorf(path+".names", "%v", err)
			}
			hosts = h
		default:
			doc.Errorf(path, "entry without name or names")
		}
		for _, h := range hosts {
			nodes = append(nodes, Node{Name: h, NVLinkDomain: e.NVLinkDomain, Clique: e.Clique,
				Leaf: e.Leaf, Spine: e.Spine, Core: e.Core})
			lines = append(lines, doc.Line(path))
		}
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return fromNodes(nodes, func(i int) string { return fmt.Sprintf("%s:%d", name, lines[i]) })
}
