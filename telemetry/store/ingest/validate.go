package ingest

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// requestError is a request refused for what it carries (400), its media type
// (415) or its method (405); reason is the rejected-samples label.
type requestError struct {
	status int
	reason string
	msg    string
}

func (e *requestError) Error() string { return e.msg }

// Reasons, besides the Limit* names, on gpuwatch_ingest_samples_rejected_total.
const (
	reasonMalformed     = "malformed"      // undecodable body: protobuf, snappy, gzip, text syntax, empty
	reasonInvalidSeries = "invalid_series" // names, duplicates, order, UTF-8, missing __name__
	reasonUnsupported   = "unsupported"    // remote write 2.0, native histograms, encodings
	reasonStore         = "store"          // the Appender refused or failed
	reasonForbidden     = "forbidden"      // the caller may not write these series (a node-bound token)
)

func badRequest(reason, format string, args ...any) *requestError {
	return &requestError{status: 400, reason: reason, msg: fmt.Sprintf(format, args...)}
}

// maxSubject bounds how much of an offending series or label an error quotes.
const maxSubject = 256

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so the message stays valid UTF-8.
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// seriesString renders received labels as name{a="b"} for error messages, quoting
// values Go-style so control characters and invalid UTF-8 show up escaped, and
// stops once the text is long enough to be truncated.
func seriesString(ls []telemetry.Label) string {
	var b strings.Builder
	name := ""
	for _, l := range ls {
		if l.Name == "__name__" {
			name = l.Value
			break
		}
	}
	b.WriteString(truncate(strings.ToValidUTF8(name, "\uFFFD"), maxSubject))
	b.WriteByte('{')
	first := true
	for _, l := range ls {
		if l.Name == "__name__" {
			continue
		}
		if b.Len() > maxSubject {
			b.WriteString(",…")
			break
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(truncate(strings.ToValidUTF8(l.Name, "\uFFFD"), 64))
		b.WriteByte('=')
		b.WriteString(fmt.Sprintf("%q", truncate(l.Value, 64)))
	}
	b.WriteByte('}')
	return truncate(b.String(), maxSubject+8)
}

func quoteLabel(s string) string { return fmt.Sprintf("%q", truncate(s, 64)) }

// isLegacyMetricName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*, the
// metric name rule of Prometheus's legacy validation scheme.
func isLegacyMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// isLegacyLabelName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]*.
func isLegacyLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// validator checks series against the limits and the label rules; one per handler.
type validator struct {
	lim  Limits
	seed maphash.Seed
}

// validateLabels checks one series' labels as received (sorted by name, __name__
// among them) and returns its metric name and the remaining labels in the
// telemetry form: sorted, without __name__, and without empty values (Prometheus
// treats an empty value as an absent label).
// The labels are appended to arena (a nil arena allocates) and returned with
// their capacity clipped, with the grown arena.
func (v *validator) validateLabels(ls []telemetry.Label, arena []telemetry.Label) (string, telemetry.Labels, []telemetry.Label, error) {
	if v.lim.MaxLabelsPerSeries > 0 && len(ls) > v.lim.MaxLabelsPerSeries {
		return "", nil, arena, limitErr(LimitLabelsPerSeries, int64(len(ls)), int64(v.lim.MaxLabelsPerSeries), "series "+seriesString(ls))
	}
	name := ""
	hasName := false
	keep := 0
	for i := range ls {
		l := &ls[i]
		if v.lim.MaxLabelNameLength > 0 && len(l.Name) > v.lim.MaxLabelNameLength {
			return "", nil, arena, limitErr(LimitLabelNameLength, int64(len(l.Name)), int64(v.lim.MaxLabelNameLength),
				"label "+quoteLabel(l.Name)+" of series "+seriesString(ls))
		}
		if v.lim.MaxLabelValueLength > 0 && len(l.Value) > v.lim.MaxLabelValueLength {
			return "", nil, arena, limitErr(LimitLabelValueLength, int64(len(l.Value)), int64(v.lim.MaxLabelValueLength),
				"value of label "+quoteLabel(l.Name)+" of series "+seriesString(ls))
		}
		if i > 0 {
			switch prev := ls[i-1].Name; {
			case l.Name == prev:
				return "", nil, arena, badRequest(reasonInvalidSeries, "duplicate label %s in series %s", quoteLabel(l.Name), seriesString(ls))
			case l.Name < prev:
				return "", nil, arena, badRequest(reasonInvalidSeries, "labels not sorted by name (%s after %s) in series %s; remote write 1.0 requires sorted labels",
					quoteLabel(l.Name), quoteLabel(prev), seriesString(ls))
			}
		}
		if l.Name == "__name__" {
			if !isLegacyMetricName(l.Value) {
				return "", nil, arena, badRequest(reasonInvalidSeries, "invalid metric name %s in series %s: want [a-zA-Z_:][a-zA-Z0-9_:]*", quoteLabel(l.Value), seriesString(ls))
			}
			name, hasName = l.Value, true
			continue
		}
		if !isLegacyLabelName(l.Name) {
			return "", nil, arena, badRequest(reasonInvalidSeries, "invalid label name %s in series %s: want [a-zA-Z_][a-zA-Z0-9_]*", quoteLabel(l.Name), seriesString(ls))
		}
		if !utf8.ValidString(l.Value) {
			return "", nil, arena, badRequest(reasonInvalidSeries, "value of label %s is not valid UTF-8 in series %s", quoteLabel(l.Name), seriesString(ls))
		}
		if l.Value != "" {
			keep++
		}
	}
	if !hasName {
		return "", nil, arena, badRequest(reasonInvalidSeries, "series %s has no __name__ label (metric name)", seriesString(ls))
	}
	if arena == nil {
		arena = make([]telemetry.Label, 0, keep)
	}
	start := len(arena)
	for i := range ls {
		if l := &ls[i]; l.Name != "__name__" && l.Value != "" {
			arena = append(arena, *l)
		}
	}
	return name, telemetry.Labels(arena[start:len(arena):len(arena)]), arena, nil
}

// hash identifies a validated series within this process.
func (v *validator) hash(name string, ls telemetry.Labels) uint64 {
	var h maphash.Hash
	h.SetSeed(v.seed)
	h.WriteString(name)
	for _, l := range ls {
		h.WriteByte(0xff)
		h.WriteString(l.Name)
		h.WriteByte(0xfe)
		h.WriteString(l.Value)
	}
	return h.Sum64()
}

// batch is one request's validated samples. Samples of one series share its
// Labels slice.
type batch struct {
	samples []telemetry.Sample
	seen    map[uint64]struct{}
	series  []seriesRef // distinct series, in first-seen order
}

type seriesRef struct {
	hash   uint64
	sample int // index in samples of its first sample, for messages
	name   string
	labels telemetry.Labels
}

// addSeries records a series and enforces the per-request series cap.
func (b *batch) addSeries(v *validator, name string, ls telemetry.Labels, raw []telemetry.Label) error {
	h := v.hash(name, ls)
	if _, ok := b.seen[h]; ok {
		return nil
	}
	if b.seen == nil {
		b.seen = make(map[uint64]struct{})
	}
	b.seen[h] = struct{}{}
	b.series = append(b.series, seriesRef{hash: h, sample: len(b.samples), name: name, labels: ls})
	if max := v.lim.MaxSeriesPerRequest; max > 0 && len(b.series) > max {
		return limitErr(LimitSeriesPerRequest, int64(len(b.series)), int64(max), "series "+seriesString(raw))
	}
	return nil
}

// checkTime enforces MaxFutureSkew on one sample.
func (v *validator) checkTime(ms, nowMs int64, raw []telemetry.Label) error {
	if v.lim.MaxFutureSkew <= 0 {
		return nil
	}
	if skew := v.lim.MaxFutureSkew.Milliseconds(); ms > nowMs+skew {
		return limitErr(LimitFutureSkew, ms-nowMs, skew,
			fmt.Sprintf("sample at %s (ms %d) of series %s", time.UnixMilli(ms).UTC().Format(time.RFC3339Nano), ms, seriesString(raw)))
	}
	return nil
}

// activeTracker is the cardinality guard's memory: series it accepted recently,
// and the new series of requests in flight (reserved between check and append so
// concurrent requests cannot jointly overshoot the cap).
type activeTracker struct {
	mu        sync.Mutex
	seen      map[uint64]int64 // series hash → last accepted, unix seconds
	reserved  uint64
	window    time.Duration
	lastPrune time.Time
}

// reserve counts the batch's new series and refuses the batch when they would
// take the store past max. The store's count (active) may include series this
// tracker has not seen (accepted before a restart, or through another path); as
// many of the batch's unknown series as that gap are assumed to be among them,
// so a restart never locks senders out. It returns the number reserved.
func (t *activeTracker) reserve(b *batch, active, max uint64) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var unknown uint64
	firstNew := -1
	for i, s := range b.series {
		if _, ok := t.seen[s.hash]; !ok {
			unknown++
			if firstNew < 0 {
				firstNew = i
			}
		}
	}
	if unknown == 0 {
		return 0, nil
	}
	newN := unknown
	if tracked := uint64(len(t.seen)); active > tracked {
		gap := active - tracked
		if gap >= newN {
			newN = 0
		} else {
			newN -= gap
		}
	}
	if total := active + t.reserved + newN; newN > 0 && total > max {
		s := b.series[firstNew]
		subject := fmt.Sprintf("new series %s", telemetrySeriesString(s.name, s.labels))
		if unknown > 1 {
			subject += fmt.Sprintf(" and %d more new series", unknown-1)
		}
		return 0, limitErr(LimitActiveSeries, int64(total), int64(max), subject)
	}
	t.reserved += newN
	return newN, nil
}

// release returns a reservation and, when the batch was stored, remembers its
// series.
func (t *activeTracker) release(b *batch, reserved uint64, stored bool, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved -= reserved
	if !stored {
		return
	}
	sec := now.Unix()
	for _, s := range b.series {
		t.seen[s.hash] = sec
	}
	if now.Sub(t.lastPrune) >= t.window/8 {
		t.lastPrune = now
		cutoff := now.Add(-t.window).Unix()
		for h, last := range t.seen {
			if last < cutoff {
				delete(t.seen, h)
			}
		}
	}
}

func telemetrySeriesString(name string, ls telemetry.Labels) string {
	raw := make([]telemetry.Label, 0, len(ls)+1)
	raw = append(raw, telemetry.Label{Name: "__name__", Value: name})
	raw = append(raw, ls...)
	return seriesString(raw)
}
