package ibnet

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// NodeType is the kind of an InfiniBand node.
type NodeType string

// Node types as ibnetdiscover names them.
const (
	Switch NodeType = "Switch"
	CA     NodeType = "Ca"
	Router NodeType = "Rt"
)

// Node is a switch, CA or router of the fabric.
type Node struct {
	Type NodeType
	// ID is the node's name in the dump: "S-0008f10500200b50", "H-0002c90300080d28".
	// In the -p format, which has none, it is made the same way from the GUID column
	// ("S-" or "H-" and 16 hex digits; for a CA that is its port GUID).
	ID    string
	GUID  uint64 // node GUID (switchguid=, caguid=), or the ID's hex digits
	Ports int    // port count from the node line; 0 where the format has none
	Desc  string // node description: "node17 HCA-1", "MF0;switch-de779e:SX6012/U1"
	Line  int    // where the node is declared
	Links []Link // in file order
}

// Link is one cabled port of a node.
type Link struct {
	Port           int
	PortGUID       uint64 // this port's GUID where printed (CA ports), else 0
	RemoteID       string
	RemotePort     int
	RemotePortGUID uint64 // the remote port's GUID where printed (remote CAs), else 0
	RemoteDesc     string
	Rate           string // "4xQDR", "4x EDR"; "" where not printed
	Line           int
}

// Fabric is a parsed ibnetdiscover dump.
type Fabric struct {
	Name     string  // the file name errors and warnings use
	Nodes    []*Node // in file order
	Warnings []string
	byID     map[string]*Node
}

// Node returns the node with the given ID.
func (f *Fabric) Node(id string) (*Node, bool) {
	n, ok := f.byID[id]
	return n, ok
}

// Count returns how many nodes of type t the fabric holds.
func (f *Fabric) Count(t NodeType) int {
	c := 0
	for _, n := range f.Nodes {
		if n.Type == t {
			c++
		}
	}
	return c
}

// maxLineLen bounds one line; ibnetdiscover lines are a few hundred bytes.
const maxLineLen = 1 << 20

var (
	reNode     = regexp.MustCompile(`^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]*)"\s*(?:#\s*(.*))?$`)
	rePort     = regexp.MustCompile(`^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9A-Fa-f]+)\))?\s+"([^"]*)"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9A-Fa-f]+)\))?\s*(?:#\s*(.*))?$`)
	reGUIDKey  = regexp.MustCompile(`^(switchguid|caguid|routerguid)=0x([0-9A-Fa-f]{1,16})(?:\(([0-9A-Fa-f]{1,16})\))?\s*$`)
	reOtherKey = regexp.MustCompile(`^(vendid|devid|sysimgguid)=0x[0-9A-Fa-f]{1,16}\s*$`)
	reQuoted   = regexp.MustCompile(`"([^"]*)"`)
	reRate     = regexp.MustCompile(`(\d+x[A-Z]+)\s*$`)
	rePortRep  = regexp.MustCompile(`^(CA|SW|RT)\s+(\d+)\s+(\d+)\s+0x([0-9A-Fa-f]{1,16})\s+(\S+)\s+(\S+)\s*(.*)$`)
	rePortPeer = regexp.MustCompile(`^-\s+(CA|SW|RT)\s+(\d+)\s+(\d+)\s+0x([0-9A-Fa-f]{1,16})\s+\(\s*'([^']*)'\s+-\s+'([^']*)'\s*\)\s*$`)
)

// Parse reads an ibnetdiscover dump in either format. name labels errors
// ("X5.topofile:12: …"). Every link's remote node must be declared somewhere in the
// file, except in the -p format, where the remote's line may be missing and its
// node is made from the link.
func Parse(name string, r io.Reader) (*Fabric, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLineLen)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	f := &Fabric{Name: name, byID: map[string]*Node{}}
	portReport := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		portReport = rePortRep.MatchString(t)
		break
	}
	var err error
	if portReport {
		err = f.parsePortReport(lines)
	} else {
		err = f.parseTopology(lines)
	}
	if err != nil {
		return nil, err
	}
	if len(f.Nodes) == 0 {
		return nil, fmt.Errorf("%s: no switch or CA found: not ibnetdiscover output", name)
	}
	return f, nil
}

func (f *Fabric) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", f.Name, line, fmt.Sprintf(format, args...))
}

func (f *Fabric) warnf(line int, format string, args ...any) {
	f.Warnings = append(f.Warnings, fmt.Sprintf("%s:%d: %s", f.Name, line, fmt.Sprintf(format, args...)))
}

func (f *Fabric) add(n *Node) error {
	if prev, dup := f.byID[n.ID]; dup {
		return f.errorf(n.Line, "node %q declared twice (first at line %d)", n.ID, prev.Line)
	}
	f.byID[n.ID] = n
	f.Nodes = append(f.Nodes, n)
	return nil
}

func parseHex(s string) (uint64, error) { return strconv.ParseUint(s, 16, 64) }

// idGUID reads the GUID out of an ID "S-0008f10500200b50"; 0 if it has none.
func idGUID(id string) uint64 {
	if len(id) == 18 && (id[0] == 'S' || id[0] == 'H' || id[0] == 'R') && id[1] == '-' {
		if g, err := parseHex(id[2:]); err == nil {
			return g
		}
	}
	return 0
}

func atoiPort(line int, f *Fabric, s, what string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 {
		return 0, f.errorf(line, "%s %q out of range (0-65535)", what, s)
	}
	return n, nil
}

func (f *Fabric) parseTopology(lines []string) error {
	var cur *Node
	var pendingGUID uint64
	pendingLine := 0
	for i, raw := range lines {
		ln := i + 1
		t := strings.TrimSpace(raw)
		switch {
		case t == "":
			cur = nil
			continue
		case strings.HasPrefix(t, "#"):
			continue
		}
		if m := reGUIDKey.FindStringSubmatch(t); m != nil {
			if cur != nil {
				return f.errorf(ln, "%s= inside the block of %q (a blank line must end a node block)", m[1], cur.ID)
			}
			g, err := parseHex(m[2])
			if err != nil {
				return f.errorf(ln, "bad GUID in %q: %v", t, err)
			}
			pendingGUID, pendingLine = g, ln
			continue
		}
		if reOtherKey.MatchString(t) {
			if cur != nil {
				return f.errorf(ln, "%q inside the block of %q (a blank line must end a node block)", t, cur.ID)
			}
			continue
		}
		if m := reNode.FindStringSubmatch(t); m != nil {
			if cur != nil {
				return f.errorf(ln, "node line inside the block of %q (a blank line must end a node block)", cur.ID)
			}
			ports, err := atoiPort(ln, f, m[2], "port count")
			if err != nil {
				return err
			}
			if m[3] == "" {
				return f.errorf(ln, "%s with an empty name", m[1])
			}
			n := &Node{Type: NodeType(m[1]), ID: m[3], Ports: ports, Line: ln}
			if d := reQuoted.FindStringSubmatch(m[4]); d != nil {
				n.Desc = d[1]
			}
			n.GUID = idGUID(n.ID)
			if pendingLine > 0 {
				n.GUID = pendingGUID
			}
			pendingGUID, pendingLine = 0, 0
			if err := f.add(n); err != nil {
				return err
			}
			cur = n
			continue
		}
		if m := rePort.FindStringSubmatch(t); m != nil {
			if cur == nil {
				return f.errorf(ln, "port line outside a node block (no Switch or Ca line above it)")
			}
			l := Link{RemoteID: m[3], Line: ln}
			var err error
			if l.Port, err = atoiPort(ln, f, m[1], "port"); err != nil {
				return err
			}
			if l.RemotePort, err = atoiPort(ln, f, m[4], "remote port"); err != nil {
				return err
			}
			if m[2] != "" {
				if l.PortGUID, err = parseHex(m[2]); err != nil {
					return f.errorf(ln, "bad port GUID %q", m[2])
				}
			}
			if m[5] != "" {
				if l.RemotePortGUID, err = parseHex(m[5]); err != nil {
					return f.errorf(ln, "bad remote port GUID %q", m[5])
				}
			}
			if l.RemoteID == "" {
				return f.errorf(ln, "link to a node with an empty name")
			}
			if q := reQuoted.FindStringSubmatch(m[6]); q != nil {
				l.RemoteDesc = q[1]
			}
			if r := reRate.FindStringSubmatch(m[6]); r != nil {
				l.Rate = r[1]
			}
			if cur.Ports > 0 && l.Port > cur.Ports {
				return f.errorf(ln, "port %d of %q, which has %d ports", l.Port, cur.ID, cur.Ports)
			}
			cur.Links = append(cur.Links, l)
			continue
		}
		if cur != nil {
			return f.errorf(ln, "unrecognised line in the block of %q: %q", cur.ID, clip(t))
		}
		f.warnf(ln, "skipped line outside node blocks: %q", clip(t))
	}
	// Every remote must exist: a dump that names a node it never declares is cut
	// short or edited.
	for _, n := range f.Nodes {
		for _, l := range n.Links {
			if _, ok := f.byID[l.RemoteID]; !ok {
				return f.errorf(l.Line, "link from %q port %d to %q, which the file never declares", n.ID, l.Port, l.RemoteID)
			}
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func portReportID(typ string, guid uint64) (string, NodeType) {
	switch typ {
	case "SW":
		return fmt.Sprintf("S-%016x", guid), Switch
	case "RT":
		return fmt.Sprintf("R-%016x", guid), Router
	}
	return fmt.Sprintf("H-%016x", guid), CA
}

func (f *Fabric) parsePortReport(lines []string) error {
	node := func(typ string, guid uint64, desc string, ln int) (*Node, error) {
		id, nt := portReportID(typ, guid)
		if n, ok := f.byID[id]; ok {
			if n.Desc == "" {
				n.Desc = desc
			}
			return n, nil
		}
		n := &Node{Type: nt, ID: id, GUID: guid, Desc: desc, Line: ln}
		return n, f.add(n)
	}
	for i, raw := range lines {
		ln := i + 1
		t := strings.TrimSpace(raw)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := rePortRep.FindStringSubmatch(t)
		if m == nil {
			return f.errorf(ln, "not an ibnetdiscover -p port line: %q", clip(t))
		}
		port, err := atoiPort(ln, f, m[3], "port")
		if err != nil {
			return err
		}
		guid, err := parseHex(m[4])
		if err != nil {
			return f.errorf(ln, "bad GUID %q", m[4])
		}
		rest := strings.TrimSpace(m[7])
		if p := rePortPeer.FindStringSubmatch(rest); p != nil {
			rport, err := atoiPort(ln, f, p[3], "remote port")
			if err != nil {
				return err
			}
			rguid, err := parseHex(p[4])
			if err != nil {
				return f.errorf(ln, "bad remote GUID %q", p[4])
			}
			local, err := node(m[1], guid, strings.TrimSpace(p[5]), ln)
			if err != nil {
				return err
			}
			remote, err := node(p[1], rguid, strings.TrimSpace(p[6]), ln)
			if err != nil {
				return err
			}
			l := Link{Port: port, RemoteID: remote.ID, RemotePort: rport, RemoteDesc: remote.Desc,
				Rate: m[5] + " " + m[6], Line: ln}
			if local.Type == CA {
				l.PortGUID = guid
			}
			if remote.Type == CA {
				l.RemotePortGUID = rguid
			}
			local.Links = append(local.Links, l)
			continue
		}
		if strings.HasPrefix(rest, "-") {
			return f.errorf(ln, "malformed peer in port line: %q (want - TYPE LID PORT GUID ( 'desc' - 'desc' ))", clip(rest))
		}
		// An unconnected port: only the node's own description follows.
		desc := strings.TrimSpace(strings.Trim(rest, "'"))
		if _, err := node(m[1], guid, desc, ln); err != nil {
			return err
		}
	}
	return nil
}

// SortedIDs returns the IDs of the nodes of type t, sorted.
func (f *Fabric) SortedIDs(t NodeType) []string {
	var out []string
	for _, n := range f.Nodes {
		if n.Type == t {
			out = append(out, n.ID)
		}
	}
	slices.Sort(out)
	return out
}
