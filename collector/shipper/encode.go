package shipper

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

const nameLabel = "__name__"

// lastSeen is a series' last rendered timestamp and value, when it was last
// shipped, the snapshot that last had it and the part of that snapshot it was
// last read from.
type lastSeen struct {
	key     uint64 // collector.Series.Key
	ts      int64  // the newest timestamp rendered
	shipped int64  // the timestamp last shipped
	v       float64
	gen     uint32
	part    partKey
}

// partKey is a snapshot part as rendered under one labelling: the same samples
// with the same labels.
type partKey struct{ gen, labelling uint64 }

// encoder turns rendered snapshots into records. It is used by one goroutine.
type encoder struct {
	extra []prompb.Label // sorted
	batch int
	// unchanged is the longest, in milliseconds, an unchanged value goes without
	// being shipped again; 0 ships every new timestamp.
	unchanged int64
	last      map[uint64]*lastSeen // by collector.Series.Key
	// byWalk is the entry the n-th series walked had in the last snapshot: the
	// walks of a node's snapshots meet their series in the same order, so it
	// is tried before the map.
	byWalk []*lastSeen
	parts  map[partKey]uint32 // the snapshot each part was last in
	gen    uint32
	walked uint64 // series walked, for tests

	req prompb.WriteRequest
	buf []byte
}

func newEncoder(extra telemetry.Labels, batch int, unchanged time.Duration) *encoder {
	e := &encoder{batch: batch, unchanged: max(0, unchanged.Milliseconds()),
		last: map[uint64]*lastSeen{}, parts: map[partKey]uint32{}}
	for _, l := range extra {
		if l.Value != "" {
			e.extra = append(e.extra, prompb.Label{Name: l.Name, Value: l.Value})
		}
	}
	slices.SortFunc(e.extra, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
	return e
}

// forgetAfter is how many snapshots a series may be absent before its last
// timestamp is forgotten (bounding the map when label values churn: job ids, pods).
const forgetAfter = 64

// encode emits the exposition's series whose timestamp moved since they were
// last shipped (forward, or back after a step of the clock), as records of at most batch samples each. With an unchanged
// interval, a series whose value did not change is shipped again only once that
// interval has passed since it was last shipped: health-critical fields read
// every second cost the store one sample per interval until they move, and
// their moves keep the second they happened.
//
// A series' timestamp is its sample's collection time, or the snapshot's for
// the self-metrics (a rendered timestamp, --metrics.timestamps, is the same).
// A part of the snapshot this encoder has already seen, under the same
// labelling, is skipped without rendering it: its series have the timestamps
// they had then, so none would be shipped (a full collection rides along
// unchanged in every health snapshot until the next one).
func (e *encoder) encode(x *collector.Exposition, out func(data []byte, samples int)) {
	e.gen++
	labelling := x.Labelling()
	skip := func(part uint64) bool {
		k := partKey{part, labelling}
		_, seen := e.parts[k]
		e.parts[k] = e.gen
		return seen
	}
	e.req.Timeseries = e.req.Timeseries[:0]
	n := 0
	x.Series(skip, func(s *collector.Series) {
		e.walked++
		part := partKey{s.Part, labelling}
		ts := s.Time.UnixMilli()
		key := s.Key
		var prev *lastSeen
		if n < len(e.byWalk) && e.byWalk[n] != nil && e.byWalk[n].key == key {
			prev = e.byWalk[n]
		} else {
			prev = e.last[key]
			if n >= len(e.byWalk) {
				e.byWalk = append(e.byWalk, make([]*lastSeen, n+1-len(e.byWalk))...)
			}
		}
		switch {
		case prev == nil:
			prev = &lastSeen{key: key, ts: ts, shipped: ts, v: s.Value}
			e.last[key] = prev
		case prev.ts == ts:
			// The same collection again (a full-tier series in a health
			// snapshot). A time before the last one is a collection made after
			// the clock stepped back: it is shipped below (the store's
			// out-of-order window takes it), not held back until the clock has
			// caught up.
			prev.gen, prev.part = e.gen, part
			e.byWalk[n] = prev
			n++
			return
		case e.unchanged > 0 && sameValue(prev.v, s.Value) && ts > prev.shipped && ts-prev.shipped < e.unchanged:
			// Unchanged since it was last shipped, and shipped recently: a
			// change is shipped at once, a steady value once per interval.
			prev.ts, prev.v, prev.gen, prev.part = ts, s.Value, e.gen, part
			e.byWalk[n] = prev
			n++
			return
		default:
			prev.ts, prev.shipped, prev.v = ts, ts, s.Value
		}
		prev.gen, prev.part = e.gen, part
		e.byWalk[n] = prev
		n++
		e.req.Timeseries = append(e.req.Timeseries, prompb.TimeSeries{
			Labels:  e.labels(s.Name, s.Labels),
			Samples: []prompb.Sample{{Value: s.Value, Timestamp: ts}},
		})
	})
	// Records are marshalled after the walk, outside the exporter's lock, so a
	// slow queue never holds up a scrape.
	all := e.req.Timeseries
	for len(all) > 0 {
		n := min(len(all), e.batch)
		e.req.Timeseries = all[:n]
		size := e.req.Size()
		e.buf = slices.Grow(e.buf[:0], size)[:size]
		if m, err := e.req.MarshalToSizedBuffer(e.buf); err == nil { // cannot fail with a sized buffer
			out(snappy.Encode(nil, e.buf[len(e.buf)-m:]), n)
		}
		all = all[n:]
	}
	clear(e.req.Timeseries[:cap(e.req.Timeseries)])
	e.req.Timeseries = e.req.Timeseries[:0]
	if e.gen%forgetAfter == 0 {
		// A series skipped with its part was in the snapshot all the same.
		for k, l := range e.last {
			seen := l.gen
			if g, ok := e.parts[l.part]; ok && l.part.gen != 0 && int32(g-seen) > 0 {
				seen = g
			}
			if e.gen-seen >= forgetAfter {
				delete(e.last, k)
			}
		}
		for i, l := range e.byWalk {
			if l != nil && e.last[l.key] != l {
				e.byWalk[i] = nil // forgotten
			}
		}
		for k, g := range e.parts {
			if e.gen-g >= forgetAfter {
				delete(e.parts, k)
			}
		}
	}
}

// sameValue reports whether a and b are the same sample value (NaN equals NaN,
// so a stale-looking gauge does not ship every cycle).
func sameValue(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// labels builds a series' sorted label set: the rendered labels, __name__, and
// the extra labels the series does not have.
func (e *encoder) labels(name string, pairs []*dto.LabelPair) []prompb.Label {
	ls := make([]prompb.Label, 0, len(pairs)+1+len(e.extra))
	ls = append(ls, prompb.Label{Name: nameLabel, Value: name})
	for _, p := range pairs {
		ls = append(ls, prompb.Label{Name: p.GetName(), Value: p.GetValue()})
	}
	for _, x := range e.extra {
		if !slices.ContainsFunc(pairs, func(p *dto.LabelPair) bool { return p.GetName() == x.Name }) {
			ls = append(ls, x)
		}
	}
	slices.SortFunc(ls, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}
