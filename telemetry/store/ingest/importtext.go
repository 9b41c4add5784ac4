package ingest

import (
	"bytes"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// importArgs are the query arguments of /api/v1/import/prometheus, as
// VictoriaMetrics reads them.
type importArgs struct {
	defaultMs int64             // timestamp=<unix ms>, else the request time
	extra     []telemetry.Label // extra_label=name=value, added to (or replacing) every line's labels
}

func parseImportArgs(q url.Values, now time.Time) (importArgs, error) {
	a := importArgs{defaultMs: now.UnixMilli()}
	if ts := q.Get("timestamp"); ts != "" {
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return a, badRequest(reasonMalformed, "query argument timestamp=%q is not a Unix time in milliseconds", truncate(ts, 64))
		}
		a.defaultMs = ms
	}
	for _, kv := range q["extra_label"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !isLegacyLabelName(k) || k == "__name__" {
			return a, badRequest(reasonMalformed, "query argument extra_label=%q: want name=value with a label name matching [a-zA-Z_][a-zA-Z0-9_]*", truncate(kv, 128))
		}
		a.extra = append(a.extra, telemetry.Label{Name: k, Value: v})
	}
	return a, nil
}

// lineError is a syntax error on one line of the text import.
func lineError(n int, line []byte, format string, args ...any) error {
	return badRequest(reasonMalformed, "line %d: %s: %q", n, fmt.Sprintf(format, args...), truncate(string(line), 128))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

func skipSpace(s []byte, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// parseImport parses the Prometheus exposition text VictoriaMetrics's
// /api/v1/import/prometheus takes — `name{label="value",...} value [timestamp]`
// per line; blank lines and # comments (HELP, TYPE) are skipped — and validates
// every series. A line's timestamp is Unix milliseconds, or seconds when its
// magnitude is below 2^32 (as VictoriaMetrics reads it), and may be fractional;
// lines without one get args.defaultMs. Label values take the escapes \\ \" \n.
// The first bad line fails the whole body.
func (v *validator) parseImport(data []byte, args importArgs, now time.Time) (*batch, error) {
	b := &batch{}
	nowMs := now.UnixMilli()
	// Labels of the previous line, reused when a line repeats its series.
	var prevKey []byte
	var prevName string
	var prevLabels telemetry.Labels
	raw := make([]telemetry.Label, 0, 16)
	for n := 1; len(data) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimRight(line, "\r")
		i := skipSpace(line, 0)
		if i == len(line) || line[i] == '#' {
			continue
		}
		// Metric name: up to '{' or blank.
		start := i
		for i < len(line) && line[i] != '{' && !isSpace(line[i]) {
			i++
		}
		if i == start {
			return nil, lineError(n, line, "metric name expected")
		}
		name := line[start:i]
		seriesEnd := i
		raw = raw[:0]
		raw = append(raw, telemetry.Label{Name: "__name__", Value: string(name)})
		if i < len(line) && line[i] == '{' {
			var err error
			if raw, i, err = parseLabelSet(line, i+1, raw, n); err != nil {
				return nil, err
			}
			seriesEnd = i
		}
		key := line[start:seriesEnd]
		// Value.
		if i == len(line) || !isSpace(line[i]) {
			return nil, lineError(n, line, "want a blank and a value after the series")
		}
		i = skipSpace(line, i)
		vs := i
		for i < len(line) && !isSpace(line[i]) {
			i++
		}
		if vs == i {
			return nil, lineError(n, line, "value missing")
		}
		val, err := strconv.ParseFloat(string(line[vs:i]), 64)
		if err != nil {
			return nil, lineError(n, line, "value %q is not a number", truncate(string(line[vs:i]), 64))
		}
		// Optional timestamp.
		ms := args.defaultMs
		i = skipSpace(line, i)
		if i < len(line) {
			ts := i
			for i < len(line) && !isSpace(line[i]) {
				i++
			}
			if ms, err = parseLineTimestamp(string(line[ts:i])); err != nil {
				return nil, lineError(n, line, "%v", err)
			}
			if i = skipSpace(line, i); i < len(line) {
				return nil, lineError(n, line, "unexpected text after the timestamp")
			}
		}
		// Series: reuse the previous line's when the text is the same.
		var lname string
		var ls telemetry.Labels
		if prevKey != nil && bytes.Equal(key, prevKey) {
			lname, ls = prevName, prevLabels
		} else {
			for _, e := range args.extra {
				replaced := false
				for j := range raw {
					if raw[j].Name == e.Name {
						raw[j].Value, replaced = e.Value, true
					}
				}
				if !replaced {
					raw = append(raw, e)
				}
			}
			sort.SliceStable(raw, func(a, b int) bool { return raw[a].Name < raw[b].Name })
			if lname, ls, _, err = v.validateLabels(raw, nil); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			if err := b.addSeries(v, lname, ls, raw); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			prevKey, prevName, prevLabels = key, lname, ls
		}
		if err := v.checkTime(ms, nowMs, raw); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if max := v.lim.MaxSamplesPerRequest; max > 0 && len(b.samples) >= max {
			return nil, limitErr(LimitSamplesPerRequest, int64(len(b.samples)+1), int64(max), fmt.Sprintf("line %d", n))
		}
		b.samples = append(b.samples, telemetry.Sample{Name: lname, Labels: ls, Value: val, Time: time.UnixMilli(ms)})
	}
	return b, nil
}

// parseLabelSet parses `name="value", ...}` from line[i:] (just after '{') and
// returns the labels appended to raw and the index after '}'.
func parseLabelSet(line []byte, i int, raw []telemetry.Label, n int) ([]telemetry.Label, int, error) {
	var val []byte
	for {
		i = skipSpace(line, i)
		if i == len(line) {
			return raw, i, lineError(n, line, "label set not closed with '}'")
		}
		if line[i] == '}' {
			return raw, i + 1, nil
		}
		start := i
		for i < len(line) && line[i] != '=' && line[i] != ',' && line[i] != '}' && line[i] != '"' && !isSpace(line[i]) {
			i++
		}
		if i == start {
			return raw, i, lineError(n, line, "label name expected at byte %d", i+1)
		}
		lname := string(line[start:i])
		i = skipSpace(line, i)
		if i == len(line) || line[i] != '=' {
			return raw, i, lineError(n, line, "want '=' after label name %q", truncate(lname, 64))
		}
		i = skipSpace(line, i+1)
		if i == len(line) || line[i] != '"' {
			return raw, i, lineError(n, line, "want a double-quoted value for label %q", truncate(lname, 64))
		}
		i++
		val = val[:0]
		closed := false
		for i < len(line) {
			c := line[i]
			if c == '"' {
				closed = true
				i++
				break
			}
			if c == '\\' {
				if i+1 == len(line) {
					break
				}
				switch line[i+1] {
				case '\\':
					val = append(val, '\\')
				case '"':
					val = append(val, '"')
				case 'n':
					val = append(val, '\n')
				default:
					return raw, i, lineError(n, line, "invalid escape \\%c in the value of label %q; want \\\\, \\\" or \\n", line[i+1], truncate(lname, 64))
				}
				i += 2
				continue
			}
			val = append(val, c)
			i++
		}
		if !closed {
			return raw, i, lineError(n, line, "value of label %q not closed with '\"'", truncate(lname, 64))
		}
		raw = append(raw, telemetry.Label{Name: lname, Value: string(val)})
		i = skipSpace(line, i)
		if i < len(line) && line[i] == ',' {
			i++
			continue
		}
		if i < len(line) && line[i] == '}' {
			return raw, i + 1, nil
		}
		return raw, i, lineError(n, line, "want ',' or '}' after the value of label %q", truncate(lname, 64))
	}
}

// parseLineTimestamp reads a line's timestamp: Unix milliseconds, or seconds when
// its magnitude is below 2^32, possibly fractional.
func parseLineTimestamp(s string) (int64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("timestamp %q is not a number", truncate(s, 64))
	}
	if math.Abs(f) < 1<<32 {
		f *= 1000
	}
	if f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, fmt.Errorf("timestamp %q is out of range", truncate(s, 64))
	}
	return int64(math.Round(f)), nil
}

// countSampleLines counts the non-blank, non-comment lines of a text body, for
// the rejected-samples counter of a body that failed to parse.
func countSampleLines(data []byte) int {
	n := 0
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}
