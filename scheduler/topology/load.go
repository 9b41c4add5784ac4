package topology

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuwatch/gpuwatch/scheduler/topology/ibnet"
)

// Source names the file a Tree is read from: exactly one of IBNetDiscover,
// SiteYAML, SlurmTopology and KubeNodes; GUIDMap only with IBNetDiscover.
type Source struct {
	// IBNetDiscover is an ibnetdiscover dump (plain or -p format).
	IBNetDiscover string
	// GUIDMap names the hosts of the dump's HCAs ("H-<guid> host" lines); it
	// wins over their node descriptions.
	GUIDMap string
	// SiteYAML is a site YAML file (nodes with leaf, spine, core, nvlink_domain).
	SiteYAML string
	// SlurmTopology is a Slurm topology.conf (topology/tree).
	SlurmTopology string
	// KubeNodes is `kubectl get nodes -o json` output whose node labels are in
	// topograph's scheme (network.topology.nvidia.com/*).
	KubeNodes string
}

// Errors of a Source that names no file, several, or a GUID map without a dump.
var (
	ErrNoSource       = errors.New("no topology source")
	ErrSeveralSources = errors.New("several topology sources")
	ErrGUIDMapAlone   = errors.New("a GUID map names the hosts of an ibnetdiscover dump")
)

// Empty reports whether s names no file at all.
func (s Source) Empty() bool { return s == Source{} }

// Check returns ErrNoSource, ErrSeveralSources or ErrGUIDMapAlone where s is
// not one input, nil where it is.
func (s Source) Check() error {
	n := 0
	for _, v := range []string{s.IBNetDiscover, s.SiteYAML, s.SlurmTopology, s.KubeNodes} {
		if v != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return ErrSeveralSources
	case n == 0:
		return ErrNoSource
	case s.GUIDMap != "" && s.IBNetDiscover == "":
		return ErrGUIDMapAlone
	}
	return nil
}

// Name is the base name of the file s reads the tree from: exports name their
// source with it.
func (s Source) Name() string {
	for _, v := range []string{s.SlurmTopology, s.KubeNodes, s.SiteYAML, s.IBNetDiscover} {
		if v != "" {
			return filepath.Base(v)
		}
	}
	return ""
}

// Load reads the file s names and builds its tree. What the input held that
// the tree cannot is in the tree's Warnings.
func Load(s Source) (*Tree, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	switch {
	case s.SlurmTopology != "":
		f, err := os.Open(s.SlurmTopology)
		if err != nil {
			return nil, fmt.Errorf("cannot read topology.conf: %w", err)
		}
		defer f.Close()
		conf, err := ParseSlurmTopology(s.SlurmTopology, f)
		if err != nil {
			return nil, err
		}
		return FromSlurmTopology(s.SlurmTopology, conf)
	case s.KubeNodes != "":
		data, err := os.ReadFile(s.KubeNodes)
		if err != nil {
			return nil, fmt.Errorf("cannot read the node list: %w", err)
		}
		labels, err := ParseKubeNodes(s.KubeNodes, data)
		if err != nil {
			return nil, err
		}
		tree, err := FromLabels(labels)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.KubeNodes, err)
		}
		return tree, nil
	case s.SiteYAML != "":
		data, err := os.ReadFile(s.SiteYAML)
		if err != nil {
			return nil, fmt.Errorf("cannot read site topology: %w", err)
		}
		return FromYAML(s.SiteYAML, data)
	}
	var guids map[uint64]string
	if s.GUIDMap != "" {
		f, err := os.Open(s.GUIDMap)
		if err != nil {
			return nil, fmt.Errorf("cannot read GUID map: %w", err)
		}
		guids, err = ReadGUIDMap(s.GUIDMap, f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	f, err := os.Open(s.IBNetDiscover)
	if err != nil {
		return nil, fmt.Errorf("cannot read ibnetdiscover dump: %w", err)
	}
	defer f.Close()
	fabric, err := ibnet.Parse(s.IBNetDiscover, f)
	if err != nil {
		return nil, err
	}
	return FromIBNetDiscover(fabric, IBOptions{GUIDMap: guids})
}

// ParseKubeNodes reads `kubectl get nodes -o json` (a v1 NodeList) into each
// node's labels: the topology a cluster already carries in topograph's scheme
// (network.topology.nvidia.com/{accelerator,leaf,spine,core}). name names the
// input in errors.
func ParseKubeNodes(name string, data []byte) (map[string]map[string]string, error) {
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: not the JSON of `kubectl get nodes -o json`: %w", name, err)
	}
	if list.Kind != "" && list.Kind != "List" && list.Kind != "NodeList" {
		return nil, fmt.Errorf("%s: kind %q: want a NodeList (`kubectl get nodes -o json`)", name, list.Kind)
	}
	out := make(map[string]map[string]string, len(list.Items))
	for i, it := range list.Items {
		if it.Metadata.Name == "" {
			return nil, fmt.Errorf("%s: items[%d]: no metadata.name", name, i)
		}
		out[it.Metadata.Name] = it.Metadata.Labels
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no nodes", name)
	}
	return out, nil
}
