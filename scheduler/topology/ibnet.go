package topology

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/topology/ibnet"
)

// IBOptions tunes FromIBNetDiscover.
type IBOptions struct {
	// GUIDMap names hosts by GUID (node GUID or port GUID of their HCA), as a site's
	// GUID→host map does (ReadGUIDMap). It wins over the node description.
	GUIDMap map[uint64]string
	// NVLinkDomains places nodes in NVLink domains (node → domain); the dump has
	// none.
	NVLinkDomains map[string]string
}

// reHostDesc is a CA description that names its host: "node17 HCA-1",
// "gpu001 mlx5_0" (two words, the first the host), as ibnetdiscover prints the node
// description the HCA's driver set from the host name.
var reHostDesc = regexp.MustCompile(`^(\S+)\s+\S+$`)

// HostName returns the host of a CA: from the GUID map by node GUID, then by any
// port GUID; else from a two-word node description "host HCA-1"; else the CA's
// ibnetdiscover ID ("H-0002c90300080d28"), as Slurm sites do for unmapped HCAs.
func HostName(ca *ibnet.Node, guids map[uint64]string) string {
	if h, ok := guids[ca.GUID]; ok && ca.GUID != 0 {
		return h
	}
	for _, l := range ca.Links {
		if h, ok := guids[l.PortGUID]; ok && l.PortGUID != 0 {
			return h
		}
	}
	if m := reHostDesc.FindStringSubmatch(ca.Desc); m != nil && ValidNodeName(m[1]) == nil {
		return m[1]
	}
	return ca.ID
}

// isAggregationNode reports whether a CA is a switch's SHARP aggregation node
// ("Mellanox Technologies Aggregation Node"): a CA inside the switch, not a host.
func isAggregationNode(n *ibnet.Node) bool {
	return strings.Contains(strings.ToLower(n.Desc), "aggregation node")
}

// FromIBNetDiscover builds the tree of a parsed ibnetdiscover dump. Hosts are the
// CAs (SHARP aggregation nodes excluded), named by HostName; leaves are the
// switches with a host cabled to them; each further level is the switches cabled
// to the level below that are not placed yet (breadth first from the leaves, as
// Slurm's and topograph's generators do). Links between switches of one level go
// to Switch.Peers and a warning; switches that reach no host are left out with a
// warning. The error says why no tree could be built (no host on any switch).
func FromIBNetDiscover(f *ibnet.Fabric, o IBOptions) (*Tree, error) {
	warn := slices.Clone(f.Warnings)
	host := map[string]string{} // CA ID → host
	for _, n := range f.Nodes {
		if n.Type == ibnet.CA && !isAggregationNode(n) {
			host[n.ID] = HostName(n, o.GUIDMap)
		}
	}
	adj := map[string]map[string]bool{}
	leafHosts := map[string]map[string]bool{}
	hostLeaves := map[string]map[string]bool{}
	addSet := func(m map[string]map[string]bool, a, b string) {
		if m[a] == nil {
			m[a] = map[string]bool{}
		}
		m[a][b] = true
	}
	routers := 0
	for _, n := range f.Nodes {
		for _, l := range n.Links {
			r, ok := f.Node(l.RemoteID)
			if !ok || r == n {
				continue // self-loop (a switch's port cabled to its own port)
			}
			switch {
			case n.Type == ibnet.Switch && r.Type == ibnet.Switch:
				addSet(adj, n.ID, r.ID)
				addSet(adj, r.ID, n.ID)
			case n.Type == ibnet.Switch && r.Type == ibnet.CA || n.Type == ibnet.CA && r.Type == ibnet.Switch:
				sw, ca := n, r
				if n.Type == ibnet.CA {
					sw, ca = r, n
				}
				h, isHost := host[ca.ID]
				if !isHost {
					continue
				}
				addSet(leafHosts, sw.ID, h)
				addSet(hostLeaves, h, sw.ID)
			case n.Type == ibnet.Router || r.Type == ibnet.Router:
				routers++
			default:
				warn = append(warn, fmt.Sprintf("%s:%d: CA %q is cabled to CA %q (back to back): no switch between them", f.Name, l.Line, n.ID, r.ID))
			}
		}
	}
	if routers > 0 {
		warn = append(warn, fmt.Sprintf("%s: %d router links left out (routers join subnets; they are not part of this tree)", f.Name, routers))
	}
	if len(leafHosts) == 0 {
		return nil, fmt.Errorf("%s: no host is cabled to a switch (%d switches, %d CAs): no tree to build",
			f.Name, f.Count(ibnet.Switch), f.Count(ibnet.CA))
	}
	var sws []switchInfo
	for _, n := range f.Nodes {
		if n.Type == ibnet.Switch {
			sws = append(sws, switchInfo{name: n.ID, desc: n.Desc, where: fmt.Sprintf("%s:%d", f.Name, n.Line)})
		}
	}
	tr, err := assemble(f.Name, sws, adj, leafHosts, hostLeaves, warn)
	if err != nil {
		return nil, err
	}
	for i := range tr.nodes {
		tr.nodes[i].NVLinkDomain = o.NVLinkDomains[tr.nodes[i].Name]
	}
	return tr, nil
}

// switchInfo is a switch as its source declares it; where is "file:line".
type switchInfo struct{ name, desc, where string }

// assemble builds a tree from a switch graph read from src: the switches in source order, their
// undirected links (adj), and which hosts are cabled to which switches. Levels are
// assigned breadth first from the leaves (the switches with hosts); links between
// switches of one level become Peers and a warning; switches that reach no host are
// left out with a warning.
func assemble(src string, sws []switchInfo, adj, leafHosts, hostLeaves map[string]map[string]bool, warn []string) (*Tree, error) {
	level := map[string]int{}
	var frontier []string
	for sw := range leafHosts {
		level[sw] = LevelLeaf
		frontier = append(frontier, sw)
	}
	for lvl := LevelLeaf + 1; len(frontier) > 0; lvl++ {
		var next []string
		for _, s := range frontier {
			for p := range adj[s] {
				if _, ok := level[p]; !ok {
					level[p] = lvl
					next = append(next, p)
				}
			}
		}
		frontier = next
	}
	switches := map[string]*Switch{}
	for _, si := range sws {
		lvl, ok := level[si.name]
		if !ok {
			warn = append(warn, fmt.Sprintf("%s: switch %q reaches no host; left out", si.where, si.name))
			continue
		}
		if err := ValidName(si.name); err != nil {
			return nil, fmt.Errorf("%s: switch: %w", si.where, err)
		}
		s := &Switch{Name: si.name, Level: lvl, Desc: si.desc}
		for h := range leafHosts[si.name] {
			s.Nodes = append(s.Nodes, h)
		}
		for p := range adj[si.name] {
			switch level[p] {
			case lvl - 1:
				s.Children = append(s.Children, p)
			case lvl:
				s.Peers = append(s.Peers, p)
			}
		}
		switches[si.name] = s
	}
	for _, s := range sortedSwitches(switches) {
		var higher []string
		for _, p := range s.Peers {
			if p > s.Name {
				higher = append(higher, p)
			}
		}
		if len(higher) > 0 {
			warn = append(warn, fmt.Sprintf("%s switch %s is cabled to %s %s of the same level: a tree cannot hold that link",
				LevelName(s.Level), s.Name, plural(len(higher), "switch", "switches"), strings.Join(higher, ",")))
		}
	}
	nodes := domains(switches, hostLeaves)
	for _, n := range nodes {
		if err := ValidNodeName(n.Name); err != nil {
			return nil, fmt.Errorf("%s: host: %w", src, err)
		}
	}
	return newTree(nodes, switches, warn), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func sortedSwitches(m map[string]*Switch) []*Switch {
	out := make([]*Switch, 0, len(m))
	for _, s := range m {
		slices.Sort(s.Peers)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Switch) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// unionFind joins names into components; each component is named by its
// smallest member.
type unionFind map[string]string

func (u unionFind) find(x string) string {
	if _, ok := u[x]; !ok {
		u[x] = x
	}
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

func (u unionFind) union(a, b string) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return
	}
	if rb < ra {
		ra, rb = rb, ra
	}
	u[rb] = ra // the smaller name is the root
}

// domains places every host in its leaf, spine and core domain. Leaf domains are
// the leaves joined by hosts cabled to several of them; the domain at level k
// joins the level k-1 domains that share a level-k switch, and is named after its
// smallest level-k switch.
func domains(switches map[string]*Switch, hostLeaves map[string]map[string]bool) []Node {
	byLevel := map[int][]*Switch{}
	maxLevel := 0
	for _, s := range sortedSwitches(switches) {
		byLevel[s.Level] = append(byLevel[s.Level], s)
		maxLevel = max(maxLevel, s.Level)
	}
	// dom[k][switch at level k] = name of its level-k domain.
	dom := map[int]map[string]string{}
	leafUF := unionFind{}
	for _, s := range byLevel[LevelLeaf] {
		leafUF.find(s.Name)
	}
	for _, leaves := range hostLeaves {
		var first string
		for l := range leaves {
			if first == "" {
				first = l
			} else {
				leafUF.union(first, l)
			}
		}
	}
	dom[LevelLeaf] = map[string]string{}
	for _, s := range byLevel[LevelLeaf] {
		dom[LevelLeaf][s.Name] = leafUF.find(s.Name)
	}
	// childDom[k][domain at k-1] = domain at k.
	up := map[int]map[string]string{}
	for k := LevelLeaf + 1; k <= min(maxLevel, LevelCore); k++ {
		uf := unionFind{}
		for _, s := range byLevel[k] {
			uf.find(s.Name)
		}
		// Every level-k switch joins the lower domains of its children; a lower
		// domain joins all level-k switches above any of its members.
		lowerTo := map[string]string{} // lower domain → one level-k switch above it
		for _, s := range byLevel[k] {
			for _, c := range s.Children {
				ld := dom[k-1][c]
				if other, ok := lowerTo[ld]; ok {
					uf.union(other, s.Name)
				} else {
					lowerTo[ld] = s.Name
				}
			}
		}
		dom[k] = map[string]string{}
		for _, s := range byLevel[k] {
			dom[k][s.Name] = uf.find(s.Name)
		}
		up[k] = map[string]string{}
		for ld, sw := range lowerTo {
			up[k][ld] = uf.find(sw)
		}
	}
	var nodes []Node
	for h, leaves := range hostLeaves {
		var any string
		for l := range leaves {
			any = l
			break
		}
		n := Node{Name: h, Leaf: dom[LevelLeaf][any]}
		n.Spine = up[LevelSpine][n.Leaf]
		if n.Spine != "" {
			n.Core = up[LevelCore][n.Spine]
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// ReadGUIDMap reads a GUID→host map, one "GUID host" pair a line: the GUID as the
// ibnetdiscover ID ("H-0002c90300080d28"), 0x-prefixed or bare hex; '#' starts a
// comment. The error names file:line.
func ReadGUIDMap(name string, r io.Reader) (map[uint64]string, error) {
	out := map[uint64]string{}
	at := map[uint64]int{}
	sc := bufio.NewScanner(r)
	ln := 0
	for sc.Scan() {
		ln++
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"GUID host\", got %d fields", name, ln, len(fields))
		}
		g := fields[0]
		if len(g) > 2 && (g[0] == 'H' || g[0] == 'S') && g[1] == '-' {
			g = g[2:]
		}
		g = strings.TrimPrefix(strings.TrimPrefix(g, "0x"), "0X")
		guid, err := strconv.ParseUint(g, 16, 64)
		if err != nil || g == "" {
			return nil, fmt.Errorf("%s:%d: invalid GUID %q: want H-<16 hex>, 0x<hex> or <hex>", name, ln, fields[0])
		}
		if err := ValidNodeName(fields[1]); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, ln, err)
		}
		if prev, dup := out[guid]; dup && prev != fields[1] {
			return nil, fmt.Errorf("%s:%d: GUID %s maps to %s here and to %s at line %d", name, ln, fields[0], fields[1], prev, at[guid])
		}
		out[guid], at[guid] = fields[1], ln
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}
