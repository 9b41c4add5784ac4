package topology

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// HyperNode is a Volcano HyperNode (topology.volcano.sh/v1alpha1): one network
// performance domain, its tier (1 the lowest) and its members, nodes or lower
// HyperNodes.
type HyperNode struct {
	Name    string
	Tier    int
	Members []HyperNodeMember
}

// HyperNodeMember is a member of a HyperNode: Type "Node" or "HyperNode", matched by
// exact name or, for nodes, by a regular expression.
type HyperNodeMember struct {
	Type  string
	Exact string
	Regex string
}

var objectNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// validObjectName checks a Kubernetes object name (an RFC 1123 subdomain).
func validObjectName(s string) error {
	if len(s) > 253 || !objectNameRE.MatchString(s) {
		return fmt.Errorf("invalid object name %q: want lower-case letters, digits, '-' and '.', at most 253", s)
	}
	return nil
}

// objectName turns a domain name into a Kubernetes object name: lower case, '_'
// as '-'.
func objectName(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "_", "-")
}

// HyperNodes returns the tree as Volcano HyperNodes: tier 1 a leaf domain with its
// nodes, tier 2 a spine domain with its leaf HyperNodes, tier 3 a core domain with
// its spine HyperNodes; every node and HyperNode belongs to one parent, as Volcano
// requires. With regex, a leaf's nodes are one member matched by an anchored
// alternation of their names instead of one exact member each. The error names a
// domain whose name cannot be an object name, or two domains that fold to one.
func (t *Tree) HyperNodes(regex bool) ([]HyperNode, error) {
	byName := map[string]*HyperNode{}
	origin := map[string]string{}
	get := func(domain string, tier int) (*HyperNode, error) {
		name := objectName(domain)
		if err := validObjectName(name); err != nil {
			return nil, fmt.Errorf("%s domain %q: %w", LevelName(tier), domain, err)
		}
		if o, ok := origin[name]; ok && o != domain {
			return nil, fmt.Errorf("domains %q and %q both become HyperNode %q", o, domain, name)
		}
		origin[name] = domain
		h, ok := byName[name]
		if !ok {
			h = &HyperNode{Name: name, Tier: tier}
			byName[name] = h
		}
		return h, nil
	}
	leafNodes := map[string][]string{}
	for _, n := range t.nodes {
		chain := []string{n.Leaf, n.Spine, n.Core}
		for i, d := range chain {
			if d == "" {
				break
			}
			h, err := get(d, i+1)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				leafNodes[h.Name] = append(leafNodes[h.Name], n.Name)
			} else {
				child := objectName(chain[i-1])
				if !slices.ContainsFunc(h.Members, func(m HyperNodeMember) bool { return m.Exact == child }) {
					h.Members = append(h.Members, HyperNodeMember{Type: "HyperNode", Exact: child})
				}
			}
		}
	}
	for name, nodes := range leafNodes {
		slices.Sort(nodes)
		h := byName[name]
		if regex {
			q := make([]string, len(nodes))
			for i, n := range nodes {
				q[i] = regexp.QuoteMeta(n)
			}
			h.Members = []HyperNodeMember{{Type: "Node", Regex: "^(" + strings.Join(q, "|") + ")$"}}
			continue
		}
		for _, n := range nodes {
			h.Members = append(h.Members, HyperNodeMember{Type: "Node", Exact: n})
		}
	}
	out := make([]HyperNode, 0, len(byName))
	for _, h := range byName {
		slices.SortFunc(h.Members, func(a, b HyperNodeMember) int { return strings.Compare(a.Exact+a.Regex, b.Exact+b.Regex) })
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b HyperNode) int {
		if a.Tier != b.Tier {
			return a.Tier - b.Tier
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// WriteVolcano writes the HyperNodes as a multi-document YAML stream for kubectl
// apply.
func WriteVolcano(w io.Writer, hns []HyperNode) error {
	bw := bufio.NewWriter(w)
	for i, h := range hns {
		if i > 0 {
			bw.WriteString("---\n")
		}
		fmt.Fprintf(bw, "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: %s\nspec:\n  tier: %d\n  members:\n", h.Name, h.Tier)
		for _, m := range h.Members {
			fmt.Fprintf(bw, "  - type: %s\n    selector:\n", m.Type)
			if m.Regex != "" {
				fmt.Fprintf(bw, "      regexMatch:\n        pattern: %s\n", yamlQuote(m.Regex))
			} else {
				fmt.Fprintf(bw, "      exactMatch:\n        name: %s\n", yamlQuote(m.Exact))
			}
		}
	}
	return bw.Flush()
}

// yamlQuote writes s as a double-quoted YAML scalar.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
