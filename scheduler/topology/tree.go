package topology

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Switch levels, counted from the hosts up.
const (
	LevelLeaf  = 1
	LevelSpine = 2
	LevelCore  = 3
)

var levelNames = map[int]string{LevelLeaf: "leaf", LevelSpine: "spine", LevelCore: "core"}

// LevelName returns "leaf", "spine", "core", or "level N" above core.
func LevelName(level int) string {
	if n, ok := levelNames[level]; ok {
		return n
	}
	return fmt.Sprintf("level %d", level)
}

// Node is a host and its place in the fabric. Empty fields are unknown.
type Node struct {
	Name         string `json:"name"`
	NVLinkDomain string `json:"nvlink_domain,omitempty"`
	// Clique is the node's nvidia.com/gpu.clique value ("<cluster UUID>.<clique
	// ID>", as GPU feature discovery writes it) where the site states it.
	Clique string `json:"clique,omitempty"`
	Leaf   string `json:"leaf,omitempty"`  // leaf domain
	Spine  string `json:"spine,omitempty"` // spine domain
	Core   string `json:"core,omitempty"`  // core domain
}

// At returns the node's domain at a switch level: Leaf, Spine, Core, or "".
func (n Node) At(level int) string {
	switch level {
	case LevelLeaf:
		return n.Leaf
	case LevelSpine:
		return n.Spine
	case LevelCore:
		return n.Core
	}
	return ""
}

// Switch is a switch of the tree and its links down.
type Switch struct {
	Name     string
	Level    int      // LevelLeaf, LevelSpine, LevelCore, or higher
	Desc     string   // node description from the fabric dump, if any
	Children []string // switches one level down, sorted
	Nodes    []string // hosts cabled to it (leaves only), sorted
	// Peers are switches of the same level cabled to this one: links a tree cannot
	// express (a leaf-to-leaf cable, a ring of spines). Sorted.
	Peers []string
}

// Tree is the fabric: nodes and the switches above them. It is immutable once built
// and safe to read from many goroutines.
type Tree struct {
	nodes    []Node // sorted by name
	byNode   map[string]int
	switches map[string]*Switch
	warnings []string
}

// Nodes returns the nodes sorted by name.
func (t *Tree) Nodes() []Node { return slices.Clone(t.nodes) }

// Node returns the node called name.
func (t *Tree) Node(name string) (Node, bool) {
	i, ok := t.byNode[name]
	if !ok {
		return Node{}, false
	}
	return t.nodes[i], true
}

// Switches returns the switches ordered by level, then name.
func (t *Tree) Switches() []Switch {
	out := make([]Switch, 0, len(t.switches))
	for _, s := range t.switches {
		c := *s
		c.Children, c.Nodes, c.Peers = slices.Clone(s.Children), slices.Clone(s.Nodes), slices.Clone(s.Peers)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Switch) int { return cmp.Or(cmp.Compare(a.Level, b.Level), cmp.Compare(a.Name, b.Name)) })
	return out
}

// Switch returns the switch called name.
func (t *Tree) Switch(name string) (Switch, bool) {
	s, ok := t.switches[name]
	if !ok {
		return Switch{}, false
	}
	return *s, true
}

// Levels returns the highest switch level (0 for a tree without switches).
func (t *Tree) Levels() int {
	m := 0
	for _, s := range t.switches {
		m = max(m, s.Level)
	}
	return m
}

// Warnings returns what building the tree left out or could not express, each a
// sentence (ibnetdiscover lines skipped, switches that reach no host, links a
// tree cannot hold).
func (t *Tree) Warnings() []string { return slices.Clone(t.warnings) }

// Domains returns the domains at a switch level (LevelLeaf, LevelSpine,
// LevelCore) or of NVLink (level 0), each with its nodes, sorted.
func (t *Tree) Domains(level int) map[string][]string {
	out := map[string][]string{}
	for _, n := range t.nodes {
		d := n.At(level)
		if level == 0 {
			d = n.NVLinkDomain
		}
		if d != "" {
			out[d] = append(out[d], n.Name)
		}
	}
	return out
}

// Hierarchy converts the tree to the fleet hierarchy placement reads: NVLink
// domain, leaf and spine as they are, and the core domain as the hierarchy's block
// (the tier above spine).
func (t *Tree) Hierarchy() (*telemetry.Hierarchy, error) {
	locs := make([]telemetry.NodeLocation, len(t.nodes))
	for i, n := range t.nodes {
		locs[i] = telemetry.NodeLocation{Node: telemetry.NodeID(n.Name), NVLinkDomain: n.NVLinkDomain,
			Leaf: n.Leaf, Spine: n.Spine, Block: n.Core}
	}
	return telemetry.NewHierarchy(locs)
}

func newTree(nodes []Node, switches map[string]*Switch, warnings []string) *Tree {
	t := &Tree{nodes: slices.Clone(nodes), byNode: make(map[string]int, len(nodes)), switches: switches, warnings: warnings}
	slices.SortFunc(t.nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	for i, n := range t.nodes {
		t.byNode[n.Name] = i
	}
	for _, s := range switches {
		slices.Sort(s.Children)
		s.Children = slices.Compact(s.Children)
		slices.Sort(s.Nodes)
		s.Nodes = slices.Compact(s.Nodes)
		slices.Sort(s.Peers)
		s.Peers = slices.Compact(s.Peers)
	}
	return t
}

// FromNodes builds a tree from node locations alone (a site file, node labels):
// each leaf, spine and core domain becomes one switch under its one parent. The
// error names the first node that breaks the tree: an invalid or repeated name, a
// spine without a leaf or a core without a spine, a clique without an NVLink
// domain, a leaf under two spines or a spine under two cores, one name used at
// two levels.
func FromNodes(nodes []Node) (*Tree, error) {
	return fromNodes(nodes, func(i int) string { return "node " + nodes[i].Name })
}

// nameRE is what a domain name may be: a Kubernetes label value (it becomes one)
// without Slurm's hostlist characters.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// ValidName reports whether s can name a domain or switch: 1 to 63 letters, digits,
// '-', '_' or '.', starting and ending with a letter or digit (a Kubernetes label
// value, also safe in Slurm's topology.conf).
func ValidName(s string) error {
	if len(s) > 63 || !nameRE.MatchString(s) {
		return fmt.Errorf("invalid name %q: want 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", s)
	}
	return nil
}

// ValidNodeName reports whether s can name a node: a gpuwatch node name without
// the characters Slurm's host lists and topology.conf give a meaning: ',', '[',
// ']', '=' and '#'.
func ValidNodeName(s string) error {
	if _, err := telemetry.ParseNodeID(s); err != nil {
		return err
	}
	if strings.ContainsAny(s, ",[]=#") {
		return fmt.Errorf("invalid node name %q: ',', '[', ']', '=' and '#' are Slurm host list and topology.conf syntax", s)
	}
	return nil
}

// fromNodes is FromNodes with where(i) naming node i in errors ("site.yaml:12").
func fromNodes(nodes []Node, where func(i int) string) (*Tree, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no nodes")
	}
	seen := map[string]int{}
	switches := map[string]*Switch{}
	parent := map[string]string{} // child domain → parent domain
	parentAt := map[string]int{}  // child domain → node index that set the parent
	for i, n := range nodes {
		if err := ValidNodeName(n.Name); err != nil {
			return nil, fmt.Errorf("%s: %w", where(i), err)
		}
		if j, dup := seen[n.Name]; dup {
			return nil, fmt.Errorf("%s: node %s listed twice (also at %s)", where(i), n.Name, where(j))
		}
		seen[n.Name] = i
		for _, f := range []struct{ what, v string }{{"nvlink domain", n.NVLinkDomain}, {"leaf", n.Leaf}, {"spine", n.Spine}, {"core", n.Core}} {
			if f.v != "" {
				if err := ValidName(f.v); err != nil {
					return nil, fmt.Errorf("%s: node %s: %s: %w", where(i), n.Name, f.what, err)
				}
			}
		}
		if n.Clique != "" {
			if err := validClique(n.Clique); err != nil {
				return nil, fmt.Errorf("%s: node %s: %w", where(i), n.Name, err)
			}
			if n.NVLinkDomain == "" {
				return nil, fmt.Errorf("%s: node %s has clique %q but no nvlink domain (a clique is one)", where(i), n.Name, n.Clique)
			}
		}
		switch {
		case n.Spine != "" && n.Leaf == "":
			return nil, fmt.Errorf("%s: node %s has spine %q but no leaf", where(i), n.Name, n.Spine)
		case n.Core != "" && n.Spine == "":
			return nil, fmt.Errorf("%s: node %s has core %q but no spine", where(i), n.Name, n.Core)
		}
		chain := []string{n.Leaf, n.Spine, n.Core}
		for lvl, name := range chain {
			if name == "" {
				break
			}
			s, ok := switches[name]
			if !ok {
				s = &Switch{Name: name, Level: lvl + 1}
				switches[name] = s
			}
			if s.Level != lvl+1 {
				return nil, fmt.Errorf("%s: node %s: %q is used both as %s and as %s", where(i), n.Name, name, LevelName(s.Level), LevelName(lvl+1))
			}
			if lvl == 0 {
				s.Nodes = append(s.Nodes, n.Name)
			}
			if lvl+1 < len(chain) && chain[lvl+1] != "" {
				up := chain[lvl+1]
				if prev, ok := parent[name]; ok && prev != up {
					return nil, fmt.Errorf("%s: node %s: %s %q is under two %ss: %q (%s) and %q",
						where(i), n.Name, LevelName(lvl+1), name, LevelName(lvl+2), prev, where(parentAt[name]), up)
				}
				if _, ok := parent[name]; !ok {
					parent[name], parentAt[name] = up, i
				}
			}
		}
	}
	for child, up := range parent {
		switches[up].Children = append(switches[up].Children, child)
	}
	return newTree(nodes, switches, nil), nil
}

var cliqueRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.[0-9]+$`)

// validClique checks an nvidia.com/gpu.clique value: "<cluster UUID>.<clique ID>".
func validClique(s string) error {
	if !cliqueRE.MatchString(s) {
		return fmt.Errorf("invalid clique %q: want <cluster UUID>.<clique ID> as GPU feature discovery writes nvidia.com/gpu.clique", s)
	}
	return nil
}
