package hostlist

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxDigits bounds a numeric suffix Compress folds: longer digit runs are GUIDs
// ("S-0008f10500108098"), not node numbers, and such names stay whole. Expand reads
// numbers up to 18 digits.
const maxDigits = 9

// maxExpand bounds how many names an expression may expand to (Slurm's own
// limit on a range is 64Ki), so a hostile "n[0-999999999999]" fails instead of
// exhausting memory.
const maxExpand = 1 << 16

// split returns name's prefix, its numeric suffix and the suffix's width; ok is
// false when name has no usable numeric suffix.
func split(name string) (prefix string, num uint64, width int, ok bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	digits := name[i:]
	if digits == "" || len(digits) > maxDigits {
		return name, 0, 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return name, 0, 0, false
	}
	return name[:i], n, len(digits), true
}

// padded reports whether a number written in width digits has leading zeros.
func padded(n uint64, width int) bool { return len(strconv.FormatUint(n, 10)) < width }

type member struct {
	num   uint64
	width int // as written
}

type group struct {
	prefix string
	width  int // 0: unpadded numbers only, printed as they are
	nums   []uint64
}

// Compress returns the Slurm hostlist expression for names: duplicates dropped,
// groups ordered by prefix and then by their first number, numbers ascending. An
// empty input gives "". Names must not contain ',', '[' or ']' (Slurm's hostlist
// syntax); Compress returns an error naming the first that does.
func Compress(names []string) (string, error) {
	var plain []string
	byPrefix := map[string][]member{}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" {
			return "", fmt.Errorf("cannot compress host list: empty host name")
		}
		if strings.ContainsAny(n, ",[] \t") {
			return "", fmt.Errorf("cannot compress host list: host name %q contains one of ',[]' or a space", n)
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		p, num, w, ok := split(n)
		if !ok {
			plain = append(plain, n)
			continue
		}
		byPrefix[p] = append(byPrefix[p], member{num, w})
	}
	var groups []group
	for p, ms := range byPrefix {
		// Padded numbers fix their group's width. An unpadded number joins the
		// widest padded group it fits (width <= its digit count), else the
		// unpadded group.
		var widths []int
		for _, m := range ms {
			if padded(m.num, m.width) && !slices.Contains(widths, m.width) {
				widths = append(widths, m.width)
			}
		}
		slices.Sort(widths)
		byWidth := map[int][]uint64{}
		for _, m := range ms {
			w := 0
			if padded(m.num, m.width) {
				w = m.width
			} else {
				for _, pw := range widths {
					if pw <= m.width {
						w = pw
					}
				}
			}
			byWidth[w] = append(byWidth[w], m.num)
		}
		for w, nums := range byWidth {
			slices.Sort(nums)
			groups = append(groups, group{prefix: p, width: w, nums: nums})
		}
	}
	type item struct {
		key   string
		first uint64
		width int
		text  string
	}
	items := make([]item, 0, len(groups)+len(plain))
	for _, g := range groups {
		items = append(items, item{g.prefix, g.nums[0], g.width, g.String()})
	}
	for _, n := range plain {
		items = append(items, item{n, 0, -1, n})
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.width, b.width), cmp.Compare(a.first, b.first))
	})
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.text
	}
	return strings.Join(out, ","), nil
}

func (g group) format(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) < g.width {
		s = strings.Repeat("0", g.width-len(s)) + s
	}
	return s
}

// String writes the group: "p7" for one number, "p[1-3,7]" otherwise.
func (g group) String() string {
	if len(g.nums) == 1 {
		return g.prefix + g.format(g.nums[0])
	}
	var b strings.Builder
	b.WriteString(g.prefix)
	b.WriteByte('[')
	for i := 0; i < len(g.nums); {
		j := i
		for j+1 < len(g.nums) && g.nums[j+1] == g.nums[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g.format(g.nums[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(g.format(g.nums[j]))
		}
		i = j + 1
	}
	b.WriteByte(']')
	return b.String()
}

// Expand reads a Slurm hostlist expression ("gpu[01-04,07],login1") into its host
// names in the order written. A bracket may come anywhere in a name
// ("rack[1-2]-gpu[1-4]" is eight names); ranges keep the width of their lower bound
// when it is zero-padded. The error names the expression and what is wrong with it.
func Expand(expr string) ([]string, error) {
	var out []string
	for _, part := range splitTop(expr) {
		if part == "" {
			return nil, fmt.Errorf("invalid host list %q: empty name", expr)
		}
		names, err := expandOne(part)
		if err != nil {
			return nil, fmt.Errorf("invalid host list %q: %w", expr, err)
		}
		if len(out)+len(names) > maxExpand {
			return nil, fmt.Errorf("invalid host list %q: more than %d names", expr, maxExpand)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits expr at the commas outside brackets.
func splitTop(expr string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(expr); i++ {
		switch expr[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, expr[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, expr[start:])
}

// expandOne expands one name that may hold brackets.
func expandOne(s string) ([]string, error) {
	open := strings.IndexByte(s, '[')
	if open < 0 {
		if strings.ContainsAny(s, "] \t") {
			return nil, fmt.Errorf("name %q: unexpected ']' or space", s)
		}
		return []string{s}, nil
	}
	if strings.ContainsAny(s[:open], "] \t") {
		return nil, fmt.Errorf("name %q: unexpected ']' or space", s)
	}
	end := strings.IndexByte(s[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("name %q: '[' without ']'", s)
	}
	end += open
	body := s[open+1 : end]
	if strings.IndexByte(body, '[') >= 0 {
		return nil, fmt.Errorf("name %q: nested '['", s)
	}
	nums, err := expandRanges(body)
	if err != nil {
		return nil, fmt.Errorf("name %q: %w", s, err)
	}
	rest, err := expandOne(s[end+1:])
	if err != nil {
		return nil, err
	}
	if len(nums)*len(rest) > maxExpand {
		return nil, fmt.Errorf("name %q: more than %d names", s, maxExpand)
	}
	out := make([]string, 0, len(nums)*len(rest))
	for _, n := range nums {
		for _, r := range rest {
			out = append(out, s[:open]+n+r)
		}
	}
	return out, nil
}

// expandRanges reads "1-3,07,10-11" into the numbers as written with their width.
func expandRanges(body string) ([]string, error) {
	if body == "" {
		return nil, fmt.Errorf("empty brackets")
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isDigits(lo) || isRange && !isDigits(hi) {
			return nil, fmt.Errorf("range %q: want N or N-M with decimal digits", r)
		}
		if len(lo) > 18 || len(hi) > 18 {
			return nil, fmt.Errorf("range %q: number longer than 18 digits", r)
		}
		a, _ := strconv.ParseUint(lo, 10, 64)
		if !isRange {
			out = append(out, lo)
			continue
		}
		b, _ := strconv.ParseUint(hi, 10, 64)
		if b < a {
			return nil, fmt.Errorf("range %q: end before start", r)
		}
		if b-a >= maxExpand || len(out)+int(b-a) >= maxExpand {
			return nil, fmt.Errorf("range %q: more than %d numbers", r, maxExpand)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for n := a; ; n++ {
			s := strconv.FormatUint(n, 10)
			if len(s) < width {
				s = strings.Repeat("0", width-len(s)) + s
			}
			out = append(out, s)
			if n == b {
				break
			}
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
