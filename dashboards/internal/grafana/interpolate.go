package grafana

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Selection is a variable's current value.
type Selection struct {
	// Values are the values chosen; with All, every option's value.
	Values []string
	// All is the "All" option.
	All bool
}

// Scope is what Grafana interpolates into a panel's query: the dashboard's
// variables with their selections, and the built-in interval and range
// variables of the dashboard's time range.
type Scope struct {
	Variables []Variable
	Selected  map[string]Selection
	// Range is the dashboard's time range; Interval is $__interval;
	// ScrapeInterval is the data source's scrape interval (its timeInterval
	// setting), which $__rate_interval and the minimum $__interval follow.
	Range, Interval, ScrapeInterval time.Duration
}

// NewScope computes $__interval as Grafana does for a panel maxDataPoints wide
// over the range, no finer than the scrape interval.
func NewScope(vars []Variable, rng time.Duration, maxDataPoints int, scrape time.Duration) *Scope {
	iv := roundInterval(rng / time.Duration(maxDataPoints))
	if iv < scrape {
		iv = scrape
	}
	return &Scope{Variables: vars, Selected: map[string]Selection{}, Range: rng, Interval: iv, ScrapeInterval: scrape}
}

// RateInterval is $__rate_interval: max($__interval + scrape interval, 4 × scrape interval).
func (s *Scope) RateInterval() time.Duration {
	return max(s.Interval+s.ScrapeInterval, 4*s.ScrapeInterval)
}

// roundInterval is Grafana's rangeutil.roundInterval: a raw interval rounded
// to one a person would choose.
func roundInterval(d time.Duration) time.Duration {
	ms := d.Milliseconds()
	steps := []struct {
		upTo int64
		to   time.Duration
	}{
		{10, time.Millisecond}, {15, 10 * time.Millisecond}, {35, 20 * time.Millisecond}, {75, 50 * time.Millisecond},
		{150, 100 * time.Millisecond}, {350, 200 * time.Millisecond}, {750, 500 * time.Millisecond},
		{1500, time.Second}, {3500, 2 * time.Second}, {7500, 5 * time.Second}, {12500, 10 * time.Second},
		{17500, 15 * time.Second}, {25000, 20 * time.Second}, {45000, 30 * time.Second}, {90000, time.Minute},
		{210000, 2 * time.Minute}, {450000, 5 * time.Minute}, {750000, 10 * time.Minute}, {1050000, 15 * time.Minute},
		{1500000, 20 * time.Minute}, {2700000, 30 * time.Minute}, {5400000, time.Hour}, {9000000, 2 * time.Hour},
		{16200000, 3 * time.Hour}, {24300000, 6 * time.Hour}, {54000000, 12 * time.Hour}, {129600000, 24 * time.Hour},
	}
	for _, s := range steps {
		if ms <= s.upTo {
			return s.to
		}
	}
	return 7 * 24 * time.Hour
}

// promDuration spells a duration as Grafana does in queries (10s, 1m, 2h).
func promDuration(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func isDigits(s string) bool { return s != "" && digits(s) == len(s) }

// variableRE is Grafana's variable syntax: $name, [[name:format]] and
// ${name.fieldPath:format}.
var variableRE = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// Interpolate replaces the variables in a query as Grafana's Prometheus data
// source does. A variable the scope does not know is an error: Grafana would
// leave it as it is and the query would fail or quietly mean something else.
// Only $1, $2… are left, as Grafana leaves them: label_replace's group
// references.
func (s *Scope) Interpolate(expr string) (string, error) {
	var errs []string
	out := variableRE.ReplaceAllStringFunc(expr, func(m string) string {
		g := variableRE.FindStringSubmatch(m)
		name, format := g[1], ""
		switch {
		case g[2] != "":
			name, format = g[2], g[3]
		case g[4] != "":
			name, format = g[4], g[6]
			if g[5] != "" {
				errs = append(errs, fmt.Sprintf("%s: field paths are for data links, not queries", m))
				return m
			}
		}
		if isDigits(name) {
			// Not a variable: a regex group reference ($1 in label_replace),
			// which Grafana leaves as it is.
			return m
		}
		v, err := s.value(name, format)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", m, err))
			return m
		}
		return v
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("interpolating %q: %s", expr, strings.Join(errs, "; "))
	}
	return out, nil
}

func (s *Scope) value(name, format string) (string, error) {
	secs := int64(s.Range / time.Second)
	switch name {
	case "__interval":
		return promDuration(s.Interval), nil
	case "__interval_ms":
		return strconv.FormatInt(s.Interval.Milliseconds(), 10), nil
	case "__rate_interval":
		return promDuration(s.RateInterval()), nil
	case "__range":
		return fmt.Sprintf("%ds", secs), nil
	case "__range_s":
		return strconv.FormatInt(secs, 10), nil
	case "__range_ms":
		return strconv.FormatInt(s.Range.Milliseconds(), 10), nil
	}
	var v *Variable
	for i := range s.Variables {
		if s.Variables[i].Name == name {
			v = &s.Variables[i]
		}
	}
	if v == nil {
		return "", fmt.Errorf("no variable %q", name)
	}
	sel, ok := s.Selected[name]
	if !ok {
		return "", fmt.Errorf("variable %q has no value", name)
	}
	if sel.All && v.AllValue != "" && format != "text" && format != "queryparam" {
		// Grafana does not format a custom all value.
		return s.Interpolate(v.AllValue)
	}
	switch format {
	case "":
		return prometheusFormat(v, sel), nil
	case "raw", "text":
		return strings.Join(sel.Values, ","), nil
	case "csv":
		return strings.Join(sel.Values, ","), nil
	case "pipe":
		return strings.Join(sel.Values, "|"), nil
	case "regex":
		if len(sel.Values) == 1 {
			return regexp.QuoteMeta(sel.Values[0]), nil
		}
		q := make([]string, len(sel.Values))
		for i, x := range sel.Values {
			q[i] = regexp.QuoteMeta(x)
		}
		return "(" + strings.Join(q, "|") + ")", nil
	}
	return "", fmt.Errorf("format %q is not implemented here", format)
}

// prometheusFormat is the Prometheus data source's interpolateQueryExpr: a
// variable that is neither multi-value nor has All is escaped for a string;
// otherwise each value is escaped for a regex, and several are joined into an
// alternation.
func prometheusFormat(v *Variable, sel Selection) string {
	if !v.Multi && !v.IncludeAll {
		return regularEscape(strings.Join(sel.Values, ","))
	}
	if len(sel.Values) == 1 {
		return specialRegexEscape(sel.Values[0])
	}
	q := make([]string, len(sel.Values))
	for i, x := range sel.Values {
		q[i] = specialRegexEscape(x)
	}
	return "(" + strings.Join(q, "|") + ")"
}

// regularEscape is Grafana's prometheusRegularEscape.
func regularEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return strings.ReplaceAll(s, `'`, `\\'`)
}

// specialRegexEscape is Grafana's prometheusSpecialRegexEscape: regex
// metacharacters get a backslash, itself escaped for a PromQL string.
func specialRegexEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\\\`)
		case strings.ContainsRune(`$^*{}[]'+?.()|`, r):
			b.WriteString(`\\`)
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Options turns the values the label-values API returned into a variable's
// options as Grafana lists them: through the variable's regex (its first
// capture group, when it has one), without duplicates, in its sort order.
func (v *Variable) Options(values []string) ([]string, error) {
	var re *regexp.Regexp
	if r := strings.TrimSpace(v.Regex); r != "" {
		r = strings.TrimPrefix(r, "/")
		if i := strings.LastIndexByte(r, '/'); i >= 0 {
			r = r[:i]
		}
		var err error
		if re, err = regexp.Compile(r); err != nil {
			return nil, fmt.Errorf("variable %s: regex %q: %w", v.Name, v.Regex, err)
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, x := range values {
		if re != nil {
			m := re.FindStringSubmatch(x)
			if m == nil {
				continue
			}
			if len(m) > 1 {
				x = m[1]
			}
		}
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sortOptions(out, v.Sort)
	return out, nil
}

// sortOptions is Grafana's variable sort: 1/2 alphabetical, 3/4 numerical,
// 5/6 alphabetical case-insensitive, 7/8 natural; even numbers descending.
func sortOptions(xs []string, how int) {
	if how == 0 {
		return
	}
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(strings.TrimFunc(s, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' && r != '-' }), 64)
		if err != nil {
			return -1
		}
		return f
	}
	less := func(a, b string) bool { return a < b }
	switch how {
	case 3, 4:
		less = func(a, b string) bool { return num(a) < num(b) }
	case 5, 6:
		less = func(a, b string) bool { return strings.ToLower(a) < strings.ToLower(b) }
	case 7, 8:
		less = naturalLess
	}
	sort.SliceStable(xs, func(i, j int) bool {
		if how%2 == 0 {
			return less(xs[j], xs[i])
		}
		return less(xs[i], xs[j])
	})
}

// naturalLess compares with runs of digits as numbers (node-2 before node-10).
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
