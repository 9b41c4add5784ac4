package topology

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/topology/hostlist"
)

// slurmName checks a switch or block name for topology.conf: at most 64
// characters (Slurm's limit) and none of the characters its hostlist syntax and
// key=value lines use.
func slurmName(s string) error {
	if s == "" || len(s) > 64 || strings.ContainsAny(s, ",[]= \t#") {
		return fmt.Errorf("name %q cannot be a Slurm switch or block name: want 1-64 characters without ',[]=#' or spaces", s)
	}
	return nil
}

// WriteSlurmTree writes the tree as a topology.conf for TopologyPlugin=topology/tree:
// one SwitchName line per switch, leaves first (Nodes=, a compressed host list),
// then each level above (Switches=, its children one level down). A switch cabled to
// several parents is listed under each, as Slurm reads it. What the tree could not
// hold (its warnings) is written as comments. source names the input in the header.
func (t *Tree) WriteSlurmTree(w io.Writer, source string) error {
	bw := bufio.NewWriter(w)
	counts := map[int]int{}
	for _, s := range t.switches {
		counts[s.Level]++
	}
	fmt.Fprintf(bw, "# topology.conf for TopologyPlugin=topology/tree, written by gpuwatch topology slurm\n")
	fmt.Fprintf(bw, "# from %s: %d nodes;", source, len(t.nodes))
	for lvl := 1; lvl <= t.Levels(); lvl++ {
		fmt.Fprintf(bw, " %d %s", counts[lvl], LevelName(lvl))
	}
	fmt.Fprintf(bw, " switches\n")
	for _, w := range t.warnings {
		fmt.Fprintf(bw, "# note: %s\n", oneLine(w))
	}
	var unplaced []string
	for _, n := range t.nodes {
		if n.Leaf == "" {
			unplaced = append(unplaced, n.Name)
		}
	}
	if len(unplaced) > 0 {
		hl, err := hostlist.Compress(unplaced)
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "# note: nodes without a leaf switch, not in this file: %s\n", hl)
	}
	if tops := t.topSwitches(); len(tops) > 1 {
		hl, _ := hostlist.Compress(tops)
		fmt.Fprintf(bw, "# note: %d top switches share no parent (%s): Slurm runs no job across them\n", len(tops), hl)
	}
	for _, s := range t.Switches() {
		if err := slurmName(s.Name); err != nil {
			return err
		}
		var list []string
		key := "Switches"
		if s.Level == LevelLeaf {
			list, key = s.Nodes, "Nodes"
		} else {
			list = s.Children
		}
		if len(list) == 0 {
			continue
		}
		hl, err := hostlist.Compress(list)
		if err != nil {
			return fmt.Errorf("switch %s: %w", s.Name, err)
		}
		fmt.Fprintf(bw, "SwitchName=%s %s=%s\n", s.Name, key, hl)
	}
	return bw.Flush()
}

// topSwitches returns the switches no other switch lists as a child, sorted.
func (t *Tree) topSwitches() []string {
	child := map[string]bool{}
	for _, s := range t.switches {
		for _, c := range s.Children {
			child[c] = true
		}
	}
	var out []string
	for name := range t.switches {
		if !child[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// BlockOptions chooses Slurm's topology/block blocks.
type BlockOptions struct {
	// Level is what a block is: "nvlink" (an NVLink domain, e.g. a GB200 NVL72
	// rack: what topology/block is meant for), "leaf" (a leaf domain), or "" for
	// nvlink where every node has an NVLink domain, else leaf.
	Level string
	// Sizes is BlockSizes: the planning base block size, then larger sizes, each a
	// power of two times the one before. Empty: the smallest block's size, doubled
	// while the doubled size needs no more blocks than there are.
	Sizes []int
}

// SlurmBlock is one BlockName line.
type SlurmBlock struct {
	Name  string
	Nodes []string
}

// SlurmBlocks returns the blocks and block sizes WriteSlurmBlock writes. The error
// says why: an unknown level, nodes without a domain at the chosen level, bad sizes
// (not positive, not a power-of-two multiple of the one before, or a base larger
// than the smallest block, which Slurm would leave unusable).
func (t *Tree) SlurmBlocks(o BlockOptions) ([]SlurmBlock, []int, error) {
	level := o.Level
	if level == "" {
		level = "nvlink"
		for _, n := range t.nodes {
			if n.NVLinkDomain == "" {
				level = "leaf"
				break
			}
		}
	}
	var doms map[string][]string
	switch level {
	case "nvlink":
		doms = t.Domains(0)
	case "leaf":
		doms = t.Domains(LevelLeaf)
	default:
		return nil, nil, fmt.Errorf("invalid block level %q: want nvlink or leaf", o.Level)
	}
	var missing []string
	for _, n := range t.nodes {
		if level == "nvlink" && n.NVLinkDomain == "" || level == "leaf" && n.Leaf == "" {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 {
		hl, _ := hostlist.Compress(missing)
		return nil, nil, fmt.Errorf("%d nodes have no %s domain, so no block: %s", len(missing), level, hl)
	}
	blocks := make([]SlurmBlock, 0, len(doms))
	smallest := 0
	for name, nodes := range doms {
		if err := slurmName(name); err != nil {
			return nil, nil, err
		}
		blocks = append(blocks, SlurmBlock{Name: name, Nodes: nodes})
		if smallest == 0 || len(nodes) < smallest {
			smallest = len(nodes)
		}
	}
	slices.SortFunc(blocks, func(a, b SlurmBlock) int { return strings.Compare(a.Name, b.Name) })
	sizes := slices.Clone(o.Sizes)
	if len(sizes) == 0 {
		for s, k := smallest, 1; k <= len(blocks); s, k = s*2, k*2 {
			sizes = append(sizes, s)
		}
	}
	for i, s := range sizes {
		if s <= 0 {
			return nil, nil, fmt.Errorf("invalid block sizes %v: %d is not positive", sizes, s)
		}
		if i > 0 {
			r := s / sizes[i-1]
			if s%sizes[i-1] != 0 || r < 2 || r&(r-1) != 0 {
				return nil, nil, fmt.Errorf("invalid block sizes %v: %d is not a power of two times %d (Slurm requires each size a power of two larger than the one before)", sizes, s, sizes[i-1])
			}
		}
	}
	if sizes[0] > smallest {
		for _, b := range blocks {
			if len(b.Nodes) < sizes[0] {
				return nil, nil, fmt.Errorf("invalid block sizes %v: block %s has %d nodes, fewer than the base block size %d", sizes, b.Name, len(b.Nodes), sizes[0])
			}
		}
	}
	return blocks, sizes, nil
}

// WriteSlurmBlock writes a topology.conf for TopologyPlugin=topology/block: one
// BlockName line per block (see SlurmBlocks) and BlockSizes.
func (t *Tree) WriteSlurmBlock(w io.Writer, o BlockOptions, source string) error {
	blocks, sizes, err := t.SlurmBlocks(o)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# topology.conf for TopologyPlugin=topology/block, written by gpuwatch topology slurm --block\n")
	fmt.Fprintf(bw, "# from %s: %d nodes in %d blocks\n", source, len(t.nodes), len(blocks))
	for _, b := range blocks {
		hl, err := hostlist.Compress(b.Nodes)
		if err != nil {
			return fmt.Errorf("block %s: %w", b.Name, err)
		}
		fmt.Fprintf(bw, "BlockName=%s Nodes=%s\n", b.Name, hl)
	}
	strs := make([]string, len(sizes))
	for i, s := range sizes {
		strs[i] = strconv.Itoa(s)
	}
	fmt.Fprintf(bw, "BlockSizes=%s\n", strings.Join(strs, ","))
	return bw.Flush()
}

// SlurmSwitch is a SwitchName line of a topology.conf, its lists expanded.
type SlurmSwitch struct {
	Name     string
	Switches []string
	Nodes    []string
	Line     int
}

// SlurmTopology is a parsed topology.conf.
type SlurmTopology struct {
	Switches   []SlurmSwitch
	Blocks     []SlurmBlock
	BlockSizes []int
}

// ParseSlurmTopology reads a topology.conf (topology/tree SwitchName lines with
// Switches=, Nodes= and LinkSpeed=; topology/block BlockName lines and
// BlockSizes). Keys are case-insensitive and '#' starts a comment, as in Slurm.
// The error names file:line.
func ParseSlurmTopology(name string, r io.Reader) (*SlurmTopology, error) {
	out := &SlurmTopology{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	ln := 0
	seen := map[string]int{}
	for sc.Scan() {
		ln++
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		kv := map[string]string{}
		var first string
		for _, f := range fields {
			k, v, ok := strings.Cut(f, "=")
			if !ok || v == "" {
				return nil, fmt.Errorf("%s:%d: want Key=Value, got %q", name, ln, f)
			}
			k = strings.ToLower(k)
			if _, dup := kv[k]; dup {
				return nil, fmt.Errorf("%s:%d: %s given twice", name, ln, k)
			}
			kv[k] = v
			if first == "" {
				first = k
			}
		}
		expand := func(key string) ([]string, error) {
			v, ok := kv[key]
			if !ok {
				return nil, nil
			}
			l, err := hostlist.Expand(v)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %w", name, ln, key, err)
			}
			return l, nil
		}
		switch first {
		case "switchname", "blockname":
			for k := range kv {
				if first == "switchname" && !slices.Contains([]string{"switchname", "switches", "nodes", "linkspeed"}, k) ||
					first == "blockname" && !slices.Contains([]string{"blockname", "nodes"}, k) {
					return nil, fmt.Errorf("%s:%d: unknown key %q on a %s line", name, ln, k, first)
				}
			}
			n := kv[first]
			if prev, dup := seen[n]; dup {
				return nil, fmt.Errorf("%s:%d: %s defined twice (first at line %d)", name, ln, n, prev)
			}
			seen[n] = ln
			nodes, err := expand("nodes")
			if err != nil {
				return nil, err
			}
			if first == "blockname" {
				out.Blocks = append(out.Blocks, SlurmBlock{Name: n, Nodes: nodes})
				continue
			}
			sws, err := expand("switches")
			if err != nil {
				return nil, err
			}
			if len(sws) > 0 && len(nodes) > 0 {
				return nil, fmt.Errorf("%s:%d: switch %s has both Switches= and Nodes=", name, ln, n)
			}
			out.Switches = append(out.Switches, SlurmSwitch{Name: n, Switches: sws, Nodes: nodes, Line: ln})
		case "blocksizes":
			if len(kv) > 1 {
				return nil, fmt.Errorf("%s:%d: BlockSizes takes no other keys", name, ln)
			}
			for _, s := range strings.Split(kv[first], ",") {
				v, err := strconv.Atoi(s)
				if err != nil || v <= 0 {
					return nil, fmt.Errorf("%s:%d: invalid block size %q", name, ln, s)
				}
				out.BlockSizes = append(out.BlockSizes, v)
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown line starting %q: want SwitchName=, BlockName= or BlockSizes=", name, ln, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// FromSlurmTopology builds the tree a topology/tree topology.conf describes, read
// the way FromIBNetDiscover reads a fabric: leaves are the switches with Nodes=,
// and each Switches= entry is a cable, its direction taken from the levels
// (breadth first from the leaves), not from which line lists it. A file that lists
// a link both ways (as generators that copy every neighbour do) gives the same tree
// as one that lists it once. name labels errors; the error names the line of a
// switch that lists an undefined switch, or says that no switch has nodes.
func FromSlurmTopology(name string, conf *SlurmTopology) (*Tree, error) {
	defined := map[string]bool{}
	for _, s := range conf.Switches {
		defined[s.Name] = true
	}
	adj := map[string]map[string]bool{}
	leafHosts := map[string]map[string]bool{}
	hostLeaves := map[string]map[string]bool{}
	add := func(m map[string]map[string]bool, a, b string) {
		if m[a] == nil {
			m[a] = map[string]bool{}
		}
		m[a][b] = true
	}
	var sws []switchInfo
	for _, s := range conf.Switches {
		where := fmt.Sprintf("%s:%d", name, s.Line)
		sws = append(sws, switchInfo{name: s.Name, where: where})
		for _, n := range s.Nodes {
			if err := ValidNodeName(n); err != nil {
				return nil, fmt.Errorf("%s: switch %s: %w", where, s.Name, err)
			}
			add(leafHosts, s.Name, n)
			add(hostLeaves, n, s.Name)
		}
		for _, c := range s.Switches {
			if !defined[c] {
				return nil, fmt.Errorf("%s: switch %s lists switch %s, which no SwitchName line defines", where, s.Name, c)
			}
			if c != s.Name {
				add(adj, s.Name, c)
				add(adj, c, s.Name)
			}
		}
	}
	if len(leafHosts) == 0 {
		return nil, fmt.Errorf("%s: no switch lists Nodes=: no tree to build", name)
	}
	return assemble(name, sws, adj, leafHosts, hostLeaves, nil)
}
