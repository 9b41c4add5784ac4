package slurm

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// GRES is one generic resource entry as Slurm prints it in a node's Gres and
// GresUsed and a job's GRES detail: "gpu:h100:3(IDX:0-2)".
type GRES struct {
	// Name is the resource ("gpu"); Type its type ("h100"), "" when untyped.
	Name, Type string
	// Count is how many.
	Count int
	// Indices are the device indices in use (GresUsed, job detail), nil when
	// Slurm printed none or "IDX:N/A".
	Indices []int
	// Sockets is the socket affinity Slurm printed ("0-1" from "(S:0-1)"), if any.
	Sockets string
}

// maxGRESCount bounds a count so a hostile or corrupt value cannot make a caller
// allocate per unit; no node has more devices of one kind than this.
const maxGRESCount = 1 << 20

// maxIndex bounds a device index in an index list for the same reason.
const maxIndex = 1 << 16

// ParseGRES reads a comma-separated GRES list as sinfo, scontrol and squeue print
// it: "gpu:h100:8", "gpu:8(S:0-1)", "gpu:h100:3(IDX:0-2),gpu:a100:0(IDX:N/A)",
// "gpu:h100:4(IDX:0,2-3)". "", "(null)" and "N/A" are no GRES at all.
func ParseGRES(s string) ([]GRES, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "N/A" {
		return nil, nil
	}
	var out []GRES
	for _, item := range splitOutside(s, ',') {
		g, err := parseOneGRES(item)
		if err != nil {
			return nil, fmt.Errorf("gres %q: %w", truncate(s, 120), err)
		}
		out = append(out, g)
	}
	return out, nil
}

func parseOneGRES(item string) (GRES, error) {
	var g GRES
	spec, detail, hasDetail := strings.Cut(item, "(")
	if hasDetail {
		if !strings.HasSuffix(detail, ")") {
			return g, fmt.Errorf("entry %q: unbalanced parenthesis", item)
		}
		detail = strings.TrimSuffix(detail, ")")
	}
	parts := strings.Split(spec, ":")
	if parts[0] == "" {
		return g, fmt.Errorf("entry %q: no resource name", item)
	}
	g.Name = parts[0]
	var count string
	switch len(parts) {
	case 1:
		count = "1"
	case 2:
		count = parts[1]
	case 3:
		g.Type, count = parts[1], parts[2]
	default:
		return g, fmt.Errorf("entry %q: want name[:type]:count", item)
	}
	n, err := parseCount(count)
	if err != nil {
		return g, fmt.Errorf("entry %q: %w", item, err)
	}
	g.Count = n
	if hasDetail {
		for _, d := range splitOutside(detail, ' ') {
			k, v, ok := strings.Cut(d, ":")
			if !ok {
				return g, fmt.Errorf("entry %q: detail %q is not KEY:VALUE", item, d)
			}
			switch k {
			case "IDX":
				if v == "N/A" {
					continue
				}
				idx, err := ParseIndexList(v)
				if err != nil {
					return g, fmt.Errorf("entry %q: %w", item, err)
				}
				g.Indices = idx
			case "S":
				g.Sockets = v
			}
		}
	}
	return g, nil
}

// parseCount reads a GRES count, with Slurm's K/M/G suffixes (powers of 1024).
func parseCount(s string) (int, error) {
	mult := 1
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("count %q is not a non-negative number", s)
	}
	if n > maxGRESCount/mult {
		return 0, fmt.Errorf("count %q×%d is larger than %d", s, mult, maxGRESCount)
	}
	return n * mult, nil
}

// ParseIndexList reads a device index list, "0-2,5,7-8", into sorted distinct
// indices.
func ParseIndexList(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("index list is empty")
	}
	seen := map[int]bool{}
	var out []int
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > maxIndex {
			return nil, fmt.Errorf("index list %q: %q is not an index (0 to %d)", s, lo, maxIndex)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > maxIndex {
				return nil, fmt.Errorf("index list %q: range %q is not LOW-HIGH with LOW <= HIGH <= %d", s, r, maxIndex)
			}
		}
		for i := a; i <= b; i++ {
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// splitOutside splits s at sep where it is outside parentheses and brackets,
// dropping empty pieces.
func splitOutside(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			depth++
		case ')', ']':
			if depth > 0 {
				depth--
			}
		case sep:
			if depth == 0 {
				if p := strings.TrimSpace(s[start:i]); p != "" {
					out = append(out, p)
				}
				start = i + 1
			}
		}
	}
	if p := strings.TrimSpace(s[start:]); p != "" {
		out = append(out, p)
	}
	return out
}

// gpuCount sums the counts of the "gpu" entries.
func gpuCount(gs []GRES) int {
	n := 0
	for _, g := range gs {
		if g.Name == "gpu" {
			n += g.Count
		}
	}
	return n
}

// gpuIndices is the sorted union of the "gpu" entries' indices.
func gpuIndices(gs []GRES) []int {
	var out []int
	seen := map[int]bool{}
	for _, g := range gs {
		if g.Name != "gpu" {
			continue
		}
		for _, i := range g.Indices {
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	sort.Ints(out)
	return out
}

// maxHosts bounds the expansion of one host list.
const maxHosts = 1 << 16

// ExpandHostlist expands a Slurm host list, "gpu[01-03,07],login1", into names
// in order ("gpu01", "gpu02", "gpu03", "gpu07", "login1"), keeping each range's
// zero padding. One bracket group per name is supported, which is what Slurm
// prints for names with one number.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	for _, item := range splitOutside(s, ',') {
		open := strings.IndexByte(item, '[')
		if open < 0 {
			if strings.ContainsAny(item, "]") {
				return nil, fmt.Errorf("host list %q: %q has ] without [", truncate(s, 120), item)
			}
			out = append(out, item)
			continue
		}
		end := strings.IndexByte(item, ']')
		if end < open || strings.Count(item, "[") != 1 || strings.Count(item, "]") != 1 {
			return nil, fmt.Errorf("host list %q: %q: want one [ranges] group", truncate(s, 120), item)
		}
		prefix, body, suffix := item[:open], item[open+1:end], item[end+1:]
		for _, r := range strings.Split(body, ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			a, err := strconv.Atoi(lo)
			if err != nil || a < 0 {
				return nil, fmt.Errorf("host list %q: %q is not a number", truncate(s, 120), lo)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil || b < a {
					return nil, fmt.Errorf("host list %q: range %q is not LOW-HIGH", truncate(s, 120), r)
				}
			}
			if b-a >= maxHosts || len(out)+(b-a) >= maxHosts {
				return nil, fmt.Errorf("host list %q: more than %d hosts", truncate(s, 120), maxHosts)
			}
			for i := a; i <= b; i++ {
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, len(lo), i, suffix))
			}
		}
	}
	return out, nil
}
