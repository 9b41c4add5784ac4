package shipper

import (
	"hash/maphash"
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
// shipped, and the snapshot that last had it.
type lastSeen struct {
	ts      int64 // the newest timestamp rendered
	shipped int64 // the timestamp last shipped
	v       float64
	gen     uint32
}

// encoder turns rendered snapshots into records. It is used by one goroutine.
type encoder struct {
	extra []prompb.Label // sorted
	batch int
	// unchanged is the longest, in milliseconds, an unchanged value goes without
	// being shipped again; 0 ships every new timestamp.
	unchanged int64
	seed      maphash.Seed
	last      map[uint64]lastSeen
	gen       uint32

	times map[string][]int64 // scratch: per metric name, the samples' times in order
	req   prompb.WriteRequest
	buf   []byte
}

func newEncoder(extra telemetry.Labels, batch int, unchanged time.Duration) *encoder {
	e := &encoder{batch: batch, unchanged: max(0, unchanged.Milliseconds()), seed: maphash.MakeSeed(), last: map[uint64]lastSeen{}, times: map[string][]int64{}}
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

// encode emits the snapshot's series whose timestamp moved since they were last
// shipped (forward, or back after a step of the clock), as records of at most
// batch samples each. With an unchanged
// interval, a series whose value did not change is shipped again only once that
// interval has passed since it was last shipped: health-critical fields read
// every second cost the store one sample per interval until they move, and
// their moves keep the second they happened.
//
// fams is what Exporter.Render returned for snap: the exporter renders the
// snapshot's samples in order, each into its family, and appends its own
// self-metrics after them. So the k-th metric of family N is the k-th sample named
// N in snap.Samples, and a metric beyond those has no time of its own and takes
// the snapshot's. A rendered timestamp (--metrics.timestamps) wins over both.
func (e *encoder) encode(snap *collector.Snapshot, fams []*dto.MetricFamily, out func(data []byte, samples int)) {
	e.gen++
	clear(e.times)
	for i := range snap.Samples {
		s := &snap.Samples[i]
		t := snap.Time.UnixMilli()
		if !s.Time.IsZero() {
			t = s.Time.UnixMilli()
		}
		e.times[s.Name] = append(e.times[s.Name], t)
	}
	snapMs := snap.Time.UnixMilli()
	var h maphash.Hash
	h.SetSeed(e.seed)
	e.req.Timeseries = e.req.Timeseries[:0]
	flush := func() {
		if len(e.req.Timeseries) == 0 {
			return
		}
		n := e.req.Size()
		e.buf = slices.Grow(e.buf[:0], n)[:n]
		n, err := e.req.MarshalToSizedBuffer(e.buf)
		if err != nil { // cannot happen with a sized buffer
			return
		}
		out(snappy.Encode(nil, e.buf[len(e.buf)-n:]), len(e.req.Timeseries))
		e.req.Timeseries = e.req.Timeseries[:0]
	}
	for _, mf := range fams {
		name := mf.GetName()
		times := e.times[name]
		for k, m := range mf.Metric {
			var v float64
			switch {
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Untyped != nil:
				v = m.Untyped.GetValue()
			default:
				continue // the exporter renders no histograms or summaries
			}
			ts := snapMs
			switch {
			case m.TimestampMs != nil:
				ts = m.GetTimestampMs()
			case k < len(times):
				ts = times[k]
			}
			h.Reset()
			h.WriteString(name)
			for _, l := range m.Label {
				h.WriteByte(0xff)
				h.WriteString(l.GetName())
				h.WriteByte(0xfe)
				h.WriteString(l.GetValue())
			}
			key := h.Sum64()
			prev, ok := e.last[key]
			if ok && prev.ts == ts {
				// The same collection, rendered again (a full-tier series in a
				// health snapshot).
				prev.gen = e.gen
				e.last[key] = prev
				continue
			}
			// A time before the last one is a collection made after the clock
			// stepped back: it is shipped (the store's out-of-order window takes
			// it), not held back until the clock has caught up.
			if ok && e.unchanged > 0 && sameValue(prev.v, v) && ts > prev.shipped && ts-prev.shipped < e.unchanged {
				// Unchanged since it was last shipped, and shipped recently: a
				// change is shipped at once, a steady value once per interval.
				e.last[key] = lastSeen{ts: ts, shipped: prev.shipped, v: v, gen: e.gen}
				continue
			}
			e.last[key] = lastSeen{ts: ts, shipped: ts, v: v, gen: e.gen}
			e.req.Timeseries = append(e.req.Timeseries, prompb.TimeSeries{
				Labels:  e.labels(name, m.Label),
				Samples: []prompb.Sample{{Value: v, Timestamp: ts}},
			})
			if len(e.req.Timeseries) >= e.batch {
				flush()
			}
		}
	}
	flush()
	if e.gen%forgetAfter == 0 {
		for k, l := range e.last {
			if e.gen-l.gen >= forgetAfter {
				delete(e.last, k)
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
