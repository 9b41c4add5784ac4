package ingest

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// FuzzParseImport: any text either parses into valid series or is refused with a
// 4xx-classified error; it never panics.
func FuzzParseImport(f *testing.F) {
	for _, s := range []string{
		"up 1\n",
		"# HELP a b\n# TYPE a gauge\na{b=\"c\",d=\"e\"} 1.5 1772366390000\n",
		"esc{v=\"a\\\\b\\\"c\\nd\"} -Inf 1772366390.5\r\nnan NaN\n",
		"a{} 1\na{} 2 3\n",
		"a{b=\"1\",} +Inf -1\n",
		"{a=\"1\"} 1\n", "a{b=1} 1", "a{b=\"\\q\"} 1", "a 1 2 3", "a{b=\"x\"", "\xff 1",
	} {
		f.Add([]byte(s))
	}
	lim := DefaultLimits()
	lim.MaxSamplesPerRequest = 1000
	v := &validator{lim: lim, seed: newSeed()}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := v.parseImport(data, importArgs{defaultMs: testNow.UnixMilli()}, testNow)
		if err != nil {
			if st, _ := classify(err); st < 400 || st >= 500 {
				t.Fatalf("error %v classified %d", err, st)
			}
			return
		}
		for _, s := range b.samples {
			if !isLegacyMetricName(s.Name) {
				t.Fatalf("accepted metric name %q", s.Name)
			}
			for i, l := range s.Labels {
				if !isLegacyLabelName(l.Name) || l.Name == "__name__" || l.Value == "" || !validUTF8(l.Value) {
					t.Fatalf("accepted label %q=%q", l.Name, l.Value)
				}
				if i > 0 && s.Labels[i-1].Name >= l.Name {
					t.Fatalf("labels not sorted or duplicate: %v", s.Labels)
				}
			}
		}
		// Round trip: the accepted samples, written back as text, parse to the same.
		var sb strings.Builder
		for _, s := range b.samples {
			sb.WriteString(s.Name)
			sb.WriteByte('{')
			for i, l := range s.Labels {
				if i > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString(l.Name + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l.Value) + `"`)
			}
			sb.WriteString("} " + formatFloat(s.Value) + " " + formatInt(s.Time.UnixMilli()) + "\n")
		}
		b2, err := v.parseImport([]byte(sb.String()), importArgs{}, testNow)
		if err != nil {
			// A timestamp whose ms value is below 2^32 reads back as seconds: skip those.
			if strings.Contains(err.Error(), "max_future_skew") {
				return
			}
			t.Fatalf("re-parse of %q: %v", sb.String(), err)
		}
		if len(b2.samples) != len(b.samples) {
			t.Fatalf("re-parse: %d samples, want %d", len(b2.samples), len(b.samples))
		}
		for i := range b.samples {
			x, y := b.samples[i], b2.samples[i]
			small := math.Abs(float64(x.Time.UnixMilli())) < 1<<32
			if x.Name != y.Name || x.Labels.String() != y.Labels.String() || (!small && !x.Time.Equal(y.Time)) ||
				(math.Float64bits(x.Value) != math.Float64bits(y.Value) && !(math.IsNaN(x.Value) && math.IsNaN(y.Value))) {
				t.Fatalf("re-parse changed %s into %s", sampleString(x), sampleString(y))
			}
		}
	})
}

// FuzzRemoteWriteBody: arbitrary bytes, snappy-compressed or not, never panic and
// are answered 204 or 4xx, never 5xx.
func FuzzRemoteWriteBody(f *testing.F) {
	seed := marshalWrite(f,
		series(lbls("__name__", "DCGM_FI_DEV_GPU_TEMP", "gpu", "0"), 41, 42),
		series(lbls("__name__", "up", "job", "x"), 1),
		prompb.TimeSeries{Labels: lbls("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1}}},
	)
	f.Add(seed, true)
	f.Add(seed, false)
	f.Add([]byte{}, true)
	f.Add([]byte("\x0a\x02\x0a\x00"), true)
	f.Add(append(binaryUvarint(1<<31), 0), false)
	lim := DefaultLimits()
	lim.MaxDecodedBytes = 1 << 20
	h := NewHandler(nopAppender{}, lim, Options{Now: func() time.Time { return testNow }})
	f.Fuzz(func(t *testing.T, data []byte, compress bool) {
		if compress {
			data = snappy.Encode(nil, data)
		}
		rec := post(h, WritePath, data, rwHeaders)
		if rec.Code != http.StatusNoContent && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// FuzzDecodeWriteRequest: the zero-copy decoder reads exactly what prompb's
// generated Unmarshal reads, on any input prompb accepts.
func FuzzDecodeWriteRequest(f *testing.F) {
	f.Add(marshalWrite(f,
		series(lbls("__name__", "DCGM_FI_DEV_GPU_TEMP", "gpu", "0"), 41, 42),
		prompb.TimeSeries{Labels: lbls("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1}},
			Exemplars: []prompb.Exemplar{{Labels: lbls("trace_id", "x"), Value: 1, Timestamp: 2}}},
	))
	f.Add([]byte("\x0a\x02\x0a\x00"))
	f.Add([]byte("\x1a\x00\x0a\x04\x12\x02\x09\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeRW(append([]byte(nil), data...))
		var want prompb.WriteRequest
		if werr := want.Unmarshal(data); werr != nil {
			return // the fast decoder may be laxer about fields it skips
		}
		if err != nil && strings.Contains(err.Error(), "group") {
			return // gogo skips unknown groups with mismatched end markers; protowire refuses them
		}
		if err != nil {
			t.Fatalf("prompb decodes it, decodeRW fails: %v", err)
		}
		if len(got.series) != len(want.Timeseries) {
			t.Fatalf("%d series, prompb %d", len(got.series), len(want.Timeseries))
		}
		for i, ts := range want.Timeseries {
			g := got.series[i]
			if len(g.labels) != len(ts.Labels) || len(g.samples) != len(ts.Samples) || g.histograms != len(ts.Histograms) {
				t.Fatalf("series %d: %d labels, %d samples, %d histograms; prompb %d, %d, %d", i,
					len(g.labels), len(g.samples), g.histograms, len(ts.Labels), len(ts.Samples), len(ts.Histograms))
			}
			for j, l := range ts.Labels {
				if g.labels[j].Name != l.Name || g.labels[j].Value != l.Value {
					t.Fatalf("series %d label %d: %q=%q, prompb %q=%q", i, j, g.labels[j].Name, g.labels[j].Value, l.Name, l.Value)
				}
			}
			for j, s := range ts.Samples {
				if math.Float64bits(g.samples[j].v) != math.Float64bits(s.Value) || g.samples[j].ts != s.Timestamp {
					t.Fatalf("series %d sample %d: %v@%d, prompb %v@%d", i, j, g.samples[j].v, g.samples[j].ts, s.Value, s.Timestamp)
				}
			}
		}
	})
}
