package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

func TestRemoteWriteRoundTrip(t *testing.T) {
	app := &memAppender{}
	h := NewHandler(app, DefaultLimits(), Options{Now: fixedNow})
	stale := math.Float64frombits(value.StaleNaN)
	body := encodeWrite(t,
		series(lbls("__name__", "DCGM_FI_DEV_GPU_UTIL", "gpu", "0", "UUID", "GPU-1", "empty", ""), 97, stale),
		series(lbls("__name__", "gpuwatch_xid_errors_total", "node", "n1", "xid", "79"), math.Inf(1)),
		prompb.TimeSeries{Labels: lbls("__name__", "no_samples")}, // valid, nothing to store
	)
	rec := post(h, WritePath, body, rwHeaders)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if len(app.batches) != 1 {
		t.Fatalf("want one Append call, got %d", len(app.batches))
	}
	got := app.samples()
	want := []telemetry.Sample{
		{Name: "DCGM_FI_DEV_GPU_UTIL", Labels: telemetry.NewLabels("UUID", "GPU-1", "gpu", "0"), Value: 97, Time: testNow.Add(-2 * time.Second)},
		{Name: "DCGM_FI_DEV_GPU_UTIL", Labels: telemetry.NewLabels("UUID", "GPU-1", "gpu", "0"), Value: stale, Time: testNow.Add(-time.Second)},
		{Name: "gpuwatch_xid_errors_total", Labels: telemetry.NewLabels("node", "n1", "xid", "79"), Value: math.Inf(1), Time: testNow.Add(-time.Second)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d samples, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Labels.String() != w.Labels.String() || !g.Time.Equal(w.Time) ||
			math.Float64bits(g.Value) != math.Float64bits(w.Value) {
			t.Errorf("sample %d: got %s, want %s", i, sampleString(g), sampleString(w))
		}
	}
	if !value.IsStaleNaN(got[1].Value) {
		t.Error("stale marker not kept bit for bit")
	}

	// Without Content-Type, Content-Encoding and version header: still 1.0 + snappy, as Prometheus.
	if rec := post(h, WritePath, body, nil); rec.Code != http.StatusNoContent {
		t.Fatalf("bare headers: status %d: %s", rec.Code, rec.Body)
	}
	// Explicit 1.0 proto parameter.
	if rec := post(h, WritePath, body, map[string]string{"Content-Type": "application/x-protobuf;proto=prometheus.WriteRequest"}); rec.Code != http.StatusNoContent {
		t.Fatalf("proto=prometheus.WriteRequest: status %d: %s", rec.Code, rec.Body)
	}
	// The version header does not pick the protocol, Content-Type does (as in
	// Prometheus): 2.0.0 with a 1.0 Content-Type decodes as 1.0.
	if rec := post(h, WritePath, body, map[string]string{"Content-Type": "application/x-protobuf", RemoteWriteVersionHeader: "2.0.0"}); rec.Code != http.StatusNoContent {
		t.Fatalf("version header 2.0.0 with a 1.0 body: status %d: %s", rec.Code, rec.Body)
	}
	// An empty but well-formed WriteRequest is fine and stores nothing.
	before := len(app.batches)
	if rec := post(h, WritePath, snappy.Encode(nil, nil), rwHeaders); rec.Code != http.StatusNoContent {
		t.Fatalf("empty WriteRequest: status %d: %s", rec.Code, rec.Body)
	}
	if len(app.batches) != before {
		t.Fatal("empty WriteRequest called Append")
	}
}

func TestImportRoundTrip(t *testing.T) {
	app := &memAppender{}
	h := NewHandler(app, DefaultLimits(), Options{Now: fixedNow})
	text := "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature.\n" +
		"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" +
		"\n" +
		"DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\"} 41\r\n" +
		"DCGM_FI_DEV_GPU_TEMP{gpu=\"1\", UUID=\"GPU-2\",} 42 1772366390000\n" +
		"  up   1   1772366390\n" +
		"esc{v=\"a\\\\b\\\"c\\nd\",empty=\"\"} -Inf 1772366390.5\n" +
		"nan NaN\n" +
		"braces{} 3e2"
	now := testNow.UnixMilli()
	want := []string{
		`DCGM_FI_DEV_GPU_TEMP{UUID="GPU-1",gpu="0"} 41 @` + fmt.Sprint(now),
		`DCGM_FI_DEV_GPU_TEMP{UUID="GPU-2",gpu="1"} 42 @1772366390000`,
		`up{} 1 @1772366390000`,
		"esc{v=\"a\\b\"c\nd\"} -Inf @1772366390500",
		`nan{} NaN @` + fmt.Sprint(now),
		`braces{} 300 @` + fmt.Sprint(now),
	}
	check := func(name string, got []telemetry.Sample, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: got %d samples, want %d", name, len(got), len(want))
		}
		for i := range want {
			if s := sampleString(got[i]); s != want[i] {
				t.Errorf("%s: sample %d: got %q, want %q", name, i, s, want[i])
			}
		}
	}
	if rec := post(h, ImportPrometheusPath, []byte(text), nil); rec.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	check("plain", app.samples(), want)

	// gzip, the timestamp query argument (ms) and extra_label (added and replacing).
	app.batches = nil
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte("a{site=\"old\"} 1\nb 2 1772366391000\n"))
	zw.Close()
	rec := post(h, ImportPrometheusPath+"?timestamp=1772366000123&extra_label=site=x&extra_label=cluster=c1", zb.Bytes(), map[string]string{"Content-Encoding": "gzip"})
	if rec.Code != http.StatusNoContent {
		t.Fatalf("gzip: status %d: %s", rec.Code, rec.Body)
	}
	check("gzip", app.samples(), []string{
		`a{cluster="c1",site="x"} 1 @1772366000123`,
		`b{cluster="c1",site="x"} 2 @1772366391000`,
	})
}

func TestRejections(t *testing.T) {
	small := DefaultLimits()
	small.MaxLabelsPerSeries = 4
	small.MaxSamplesPerRequest = 10
	small.MaxSeriesPerRequest = 2
	small.MaxBodyBytes = 4096
	small.MaxDecodedBytes = 8192

	good := goodSeries()
	rw := func(ts ...prompb.TimeSeries) []byte {
		return encodeWrite(t, append([]prompb.TimeSeries{good}, ts...)...)
	}
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	many := func(n int) []float64 { return make([]float64, n) }
	// A snappy block whose header claims 100 MB.
	bomb := append(binaryUvarint(100<<20), 0x00)
	goodLine := "ok{gpu=\"0\"} 1\n"

	cases := []struct {
		name     string
		path     string
		hdr      map[string]string
		body     []byte
		lim      *Limits
		method   string
		status   int
		contains []string
	}{
		{name: "rw 2.0", path: WritePath, body: rw(), hdr: map[string]string{"Content-Type": "application/x-protobuf;proto=io.prometheus.write.v2.Request", RemoteWriteVersionHeader: "2.0.0"},
			status: 415, contains: []string{"remote write 2.0", "io.prometheus.write.v2.Request", "send remote write 1.0", "protobuf_message: prometheus.WriteRequest"}},
		{name: "rw other proto", path: WritePath, body: rw(), hdr: map[string]string{"Content-Type": "application/x-protobuf; proto=foo.Bar"},
			status: 415, contains: []string{`"foo.Bar"`, "only prometheus.WriteRequest"}},
		{name: "rw json", path: WritePath, body: rw(), hdr: map[string]string{"Content-Type": "application/json"},
			status: 415, contains: []string{`Content-Type "application/json" is not remote write`}},
		{name: "rw gzip", path: WritePath, body: rw(), hdr: map[string]string{"Content-Encoding": "gzip"},
			status: 415, contains: []string{`Content-Encoding "gzip"`, "only snappy"}},
		{name: "rw GET", path: WritePath, method: http.MethodGet, status: 405, contains: []string{"method GET not allowed", "use POST"}},
		{name: "rw empty body", path: WritePath, body: nil, status: 400, contains: []string{"empty request body"}},
		{name: "rw not snappy", path: WritePath, body: marshalWrite(t, good), status: 400, contains: []string{"not snappy block-compressed"}},
		// "abcd", a copy of it, then a copy with offset 0: s2's "repeat the last
		// offset", which snappy's block format does not have.
		{name: "rw s2 extension", path: WritePath, body: []byte{0x0c, 0x0c, 'a', 'b', 'c', 'd', 0x01, 0x04, 0x01, 0x00}, status: 400, contains: []string{"not snappy block-compressed", "corrupt input"}},
		{name: "rw snappy bomb", path: WritePath, body: bomb, lim: &small, status: 413, contains: []string{"max_decoded_bytes exceeded: 104857600 > 8192", "snappy-decoded"}},
		{name: "rw body too large", path: WritePath, body: make([]byte, 5000), lim: &small, status: 413, contains: []string{"max_body_bytes exceeded: 5000 > 4096"}},
		{name: "rw bad protobuf", path: WritePath, body: snappy.Encode(nil, []byte("\x0a\xff\xff\xff\x0fgarbage")), status: 400, contains: []string{"not a valid prometheus.WriteRequest protobuf"}},
		{name: "rw no name", path: WritePath, body: rw(series(lbls("job", "x"), 1)), status: 400, contains: []string{`series {job="x"} has no __name__`}},
		{name: "rw empty name", path: WritePath, body: rw(series(lbls("__name__", "", "job", "x"), 1)), status: 400, contains: []string{`invalid metric name ""`}},
		{name: "rw bad metric name", path: WritePath, body: rw(series(lbls("__name__", "1up"), 1)), status: 400, contains: []string{`invalid metric name "1up"`, "[a-zA-Z_:]"}},
		{name: "rw utf8 metric name", path: WritePath, body: rw(series(lbls("__name__", "gpu.temp"), 1)), status: 400, contains: []string{`invalid metric name "gpu.temp"`}},
		{name: "rw bad label name", path: WritePath, body: rw(series(lbls("__name__", "up", "a-b", "1"), 1)), status: 400, contains: []string{`invalid label name "a-b"`, `up{a-b="1"}`}},
		{name: "rw label name colon", path: WritePath, body: rw(series(lbls("__name__", "up", "a:b", "1"), 1)), status: 400, contains: []string{`invalid label name "a:b"`}},
		{name: "rw duplicate label", path: WritePath, body: rw(series(rawLbls("__name__", "up", "gpu", "0", "gpu", "1"), 1)), status: 400, contains: []string{`duplicate label "gpu"`}},
		{name: "rw unsorted labels", path: WritePath, body: rw(series(rawLbls("__name__", "up", "z", "1", "a", "2"), 1)), status: 400, contains: []string{`labels not sorted by name ("a" after "z")`}},
		{name: "rw bad utf8 value", path: WritePath, body: rw(series(lbls("__name__", "up", "a", "\xff\xfe"), 1)), status: 400, contains: []string{`value of label "a" is not valid UTF-8`, `\xff`}},
		{name: "rw histogram", path: WritePath, body: rw(prompb.TimeSeries{Labels: lbls("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1}}}), status: 400, contains: []string{"native histogram", "float samples only"}},
		{name: "rw too many labels", path: WritePath, lim: &small, body: rw(series(lbls("__name__", "up", "a", "1", "b", "2", "c", "3", "d", "4"), 1)), status: 400,
			contains: []string{"max_labels_per_series exceeded: 5 > 4", `series up{a="1",b="2",c="3",d="4"}`}},
		{name: "rw label name too long", path: WritePath, body: rw(series(lbls("__name__", "up", strings.Repeat("n", 300), "1"), 1)), status: 400,
			contains: []string{"max_label_name_length exceeded: 300 > 256", `label "nnnn`, "…"}},
		{name: "rw label value too long", path: WritePath, body: rw(series(lbls("__name__", "up", "job", strings.Repeat("v", 5000)), 1)), status: 400,
			contains: []string{"max_label_value_length exceeded: 5000 > 4096", `value of label "job" of series up{job="vvvv`, "…"}},
		{name: "rw too many samples", path: WritePath, lim: &small, body: rw(series(lbls("__name__", "up"), many(9)...)), status: 413,
			contains: []string{"max_samples_per_request exceeded: 11 > 10"}},
		{name: "rw too many series", path: WritePath, lim: &small, body: rw(series(lbls("__name__", "a"), 1), series(lbls("__name__", "b"), 1)), status: 413,
			contains: []string{"max_series_per_request exceeded: 3 > 2", "series b{}"}},
		{name: "rw future sample", path: WritePath, body: rw(prompb.TimeSeries{Labels: lbls("__name__", "up"), Samples: []prompb.Sample{{Value: 1, Timestamp: testNow.Add(11 * time.Minute).UnixMilli()}}}),
			status: 400, contains: []string{"max_future_skew exceeded: 660000 > 600000", "2026-03-01T12:11:00Z", "series up{}"}},

		{name: "import GET", path: ImportPrometheusPath, method: http.MethodGet, status: 405, contains: []string{"method GET not allowed"}},
		{name: "import empty", path: ImportPrometheusPath, body: nil, status: 400, contains: []string{"empty request body"}},
		{name: "import zstd", path: ImportPrometheusPath, body: []byte(goodLine), hdr: map[string]string{"Content-Encoding": "zstd"}, status: 415, contains: []string{`Content-Encoding "zstd"`}},
		{name: "import bad gzip", path: ImportPrometheusPath, body: []byte(goodLine), hdr: map[string]string{"Content-Encoding": "gzip"}, status: 400, contains: []string{"not gzip"}},
		{name: "import truncated gzip", path: ImportPrometheusPath, body: gz(goodLine)[:20], hdr: map[string]string{"Content-Encoding": "gzip"}, status: 400, contains: []string{"not valid gzip"}},
		{name: "import gzip bomb", path: ImportPrometheusPath, lim: &small, body: gz(goodLine + strings.Repeat("#", 1<<20)), hdr: map[string]string{"Content-Encoding": "gzip"}, status: 413,
			contains: []string{"max_decoded_bytes exceeded: 8193 > 8192", "gunzipped"}},
		{name: "import body too large", path: ImportPrometheusPath, lim: &small, body: []byte(goodLine + strings.Repeat("#", 5000)), status: 413, contains: []string{"max_body_bytes exceeded"}},
		{name: "import bad timestamp arg", path: ImportPrometheusPath + "?timestamp=yesterday", body: []byte(goodLine), status: 400, contains: []string{`timestamp="yesterday" is not a Unix time in milliseconds`}},
		{name: "import bad extra_label", path: ImportPrometheusPath + "?extra_label=a-b=1", body: []byte(goodLine), status: 400, contains: []string{`extra_label="a-b=1"`}},
		{name: "import no value", path: ImportPrometheusPath, body: []byte(goodLine + "up\n"), status: 400, contains: []string{"line 2: want a blank and a value after the series", `"up"`}},
		{name: "import bad value", path: ImportPrometheusPath, body: []byte(goodLine + "up one\n"), status: 400, contains: []string{`line 2: value "one" is not a number`}},
		{name: "import bad timestamp", path: ImportPrometheusPath, body: []byte(goodLine + "up 1 soon\n"), status: 400, contains: []string{`line 2: timestamp "soon" is not a number`}},
		{name: "import trailing text", path: ImportPrometheusPath, body: []byte(goodLine + "up 1 2 3\n"), status: 400, contains: []string{"line 2: unexpected text after the timestamp"}},
		{name: "import unclosed set", path: ImportPrometheusPath, body: []byte(goodLine + "up{a=\"1\" 1\n"), status: 400, contains: []string{"line 2: want ',' or '}' after the value of label \"a\""}},
		{name: "import unclosed value", path: ImportPrometheusPath, body: []byte(goodLine + "up{a=\"1} 1\n"), status: 400, contains: []string{`line 2: value of label "a" not closed`}},
		{name: "import unquoted value", path: ImportPrometheusPath, body: []byte(goodLine + "up{a=1} 1\n"), status: 400, contains: []string{`line 2: want a double-quoted value for label "a"`}},
		{name: "import bad escape", path: ImportPrometheusPath, body: []byte(goodLine + "up{a=\"\\t\"} 1\n"), status: 400, contains: []string{`line 2: invalid escape \t`}},
		{name: "import bad metric name", path: ImportPrometheusPath, body: []byte(goodLine + "gpu-temp 1\n"), status: 400, contains: []string{`line 2: invalid metric name "gpu-temp"`}},
		{name: "import no metric name", path: ImportPrometheusPath, body: []byte(goodLine + "{a=\"1\"} 1\n"), status: 400, contains: []string{"line 2: metric name expected"}},
		{name: "import bad label name", path: ImportPrometheusPath, body: []byte(goodLine + "up{1a=\"1\"} 1\n"), status: 400, contains: []string{`line 2: invalid label name "1a"`}},
		{name: "import duplicate label", path: ImportPrometheusPath, body: []byte(goodLine + "up{a=\"1\",a=\"2\"} 1\n"), status: 400, contains: []string{`line 2: duplicate label "a"`}},
		{name: "import __name__ label", path: ImportPrometheusPath, body: []byte(goodLine + "up{__name__=\"x\"} 1\n"), status: 400, contains: []string{`line 2: duplicate label "__name__"`}},
		{name: "import too many samples", path: ImportPrometheusPath, lim: &small, body: []byte(strings.Repeat(goodLine, 11)), status: 413, contains: []string{"max_samples_per_request exceeded: 11 > 10 at line 11"}},
		{name: "import too many series", path: ImportPrometheusPath, lim: &small, body: []byte(goodLine + "a 1\nb 1\n"), status: 413, contains: []string{"line 3: max_series_per_request exceeded: 3 > 2 at series b{}"}},
		{name: "import too many labels", path: ImportPrometheusPath, lim: &small, body: []byte(goodLine + "up{a=\"1\",b=\"1\",c=\"1\",d=\"1\"} 1\n"), status: 400, contains: []string{"line 2: max_labels_per_series exceeded: 5 > 4"}},
		{name: "import future", path: ImportPrometheusPath, body: []byte(goodLine + "up 1 " + fmt.Sprint(testNow.Add(time.Hour).UnixMilli()) + "\n"), status: 400, contains: []string{"line 2: max_future_skew exceeded: 3600000 > 600000"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := DefaultLimits()
			if tc.lim != nil {
				lim = *tc.lim
			}
			app := &memAppender{}
			reg := prometheus.NewRegistry()
			h := NewHandler(app, lim, Options{Now: fixedNow, Registerer: reg})
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := newRequest(method, tc.path, tc.body, tc.hdr)
			rec := recorder(h, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			msg := rec.Body.String()
			for _, c := range tc.contains {
				if !strings.Contains(msg, c) {
					t.Errorf("message %q lacks %q", msg, c)
				}
			}
			if len(msg) > 1200 {
				t.Errorf("message is %d bytes; offending input must be truncated", len(msg))
			}
			if n := len(app.samples()); n != 0 {
				t.Errorf("refused request stored %d samples", n)
			}
			ep := EndpointRemoteWrite
			if tc.path != WritePath {
				ep = EndpointImportPrometheus
			}
			if got := testutil.ToFloat64(h.m.requests.WithLabelValues(ep, fmt.Sprint(tc.status))); got != 1 {
				t.Errorf("requests_total{code=%d} = %v, want 1", tc.status, got)
			}
			if got := testutil.ToFloat64(h.m.accepted.WithLabelValues(ep)); got != 0 {
				t.Errorf("samples_accepted_total = %v, want 0", got)
			}
		})
	}
}

func TestLimitErrorWrapsErrLimit(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxSeriesPerRequest = 1
	v := &validator{lim: lim, seed: newSeed()}
	_, _, err := v.decodeWriteRequest(marshalWrite(t, goodSeries(), series(lbls("__name__", "b"), 1)), testNow)
	if !errors.Is(err, store.ErrLimit) {
		t.Fatalf("err %v does not wrap store.ErrLimit", err)
	}
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != LimitSeriesPerRequest || le.Value != 2 || le.Max != 1 || le.Status != 413 {
		t.Fatalf("got %#v", le)
	}
	// Bad input is not a limit.
	_, _, err = v.decodeWriteRequest(marshalWrite(t, series(lbls("__name__", "1x"), 1)), testNow)
	if err == nil || errors.Is(err, store.ErrLimit) {
		t.Fatalf("bad name: err %v", err)
	}
}

// A refused request stores nothing, and data stored before stays intact while the
// handler keeps serving.
func TestRejectedRequestAppendsNothing(t *testing.T) {
	app := &memAppender{}
	h := NewHandler(app, DefaultLimits(), Options{Now: fixedNow})
	var ok []prompb.TimeSeries
	for i := range 100 {
		ok = append(ok, series(lbls("__name__", "DCGM_FI_DEV_POWER_USAGE", "gpu", fmt.Sprint(i)), float64(i)))
	}
	if rec := post(h, WritePath, encodeWrite(t, ok...), rwHeaders); rec.Code != 204 {
		t.Fatalf("good request: %d %s", rec.Code, rec.Body)
	}
	before := app.samples()
	// 100 good series, then one bad at the very end.
	bad := append(append([]prompb.TimeSeries(nil), ok...), series(lbls("__name__", "up", "job", strings.Repeat("x", 5000)), 1))
	if rec := post(h, WritePath, encodeWrite(t, bad...), rwHeaders); rec.Code != 400 {
		t.Fatalf("bad request: %d %s", rec.Code, rec.Body)
	}
	if rec := post(h, ImportPrometheusPath, []byte("a 1\nb 2\nc{ 3\n"), nil); rec.Code != 400 {
		t.Fatalf("bad import: %d %s", rec.Code, rec.Body)
	}
	after := app.samples()
	if len(after) != len(before) || len(app.batches) != 1 {
		t.Fatalf("refused requests changed the store: %d samples in %d batches, want %d in 1", len(after), len(app.batches), len(before))
	}
	for i := range before {
		if sampleString(before[i]) != sampleString(after[i]) {
			t.Fatalf("sample %d changed: %s → %s", i, sampleString(before[i]), sampleString(after[i]))
		}
	}
	// Still serving.
	if rec := post(h, WritePath, encodeWrite(t, ok...), rwHeaders); rec.Code != 204 {
		t.Fatalf("good request after bad: %d %s", rec.Code, rec.Body)
	}
}

func TestAppenderErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		reason string
	}{
		{fmt.Errorf("head full: %w", store.ErrLimit), 429, reasonStore},
		{fmt.Errorf("append: %w", storage.ErrOutOfOrderSample), 400, reasonStore},
		{fmt.Errorf("append: %w", storage.ErrTooOldSample), 400, reasonStore},
		{errors.New("disk on fire"), 500, reasonStore},
		{fmt.Errorf("embedded store: %w: the data directory /data has 1.0 MiB free", store.ErrUnavailable), 503, reasonStore},
	} {
		app := &memAppender{err: tc.err}
		h := NewHandler(app, DefaultLimits(), Options{Now: fixedNow})
		rec := post(h, WritePath, encodeWrite(t, goodSeries()), rwHeaders)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.err.Error()) || !strings.Contains(rec.Body.String(), "storing 2 samples") {
			t.Errorf("%v: got %d %q, want %d", tc.err, rec.Code, rec.Body, tc.status)
		}
		if got := testutil.ToFloat64(h.m.rejected.WithLabelValues(EndpointRemoteWrite, tc.reason)); got != 2 {
			t.Errorf("%v: rejected{reason=%s} = %v, want 2", tc.err, tc.reason, got)
		}
	}
}

func TestActiveSeriesGuard(t *testing.T) {
	app := &memAppender{}
	lim := DefaultLimits()
	lim.MaxActiveSeries = 10
	h := NewHandler(app, lim, Options{Now: fixedNow, ActiveSeries: app.series})
	mk := func(prefix string, n int) []byte {
		var ts []prompb.TimeSeries
		for i := range n {
			ts = append(ts, series(lbls("__name__", prefix, "gpu", fmt.Sprint(i)), 1))
		}
		return encodeWrite(t, ts...)
	}
	if rec := post(h, WritePath, mk("a", 8), rwHeaders); rec.Code != 204 {
		t.Fatalf("8 new series under a cap of 10: %d %s", rec.Code, rec.Body)
	}
	if rec := post(h, WritePath, mk("a", 8), rwHeaders); rec.Code != 204 {
		t.Fatalf("the same 8 series again: %d %s", rec.Code, rec.Body)
	}
	rec := post(h, WritePath, mk("b", 3), rwHeaders)
	if rec.Code != 429 || rec.Header().Get("Retry-After") != retryAfter {
		t.Fatalf("3 more new series: got %d (Retry-After %q), want 429", rec.Code, rec.Header().Get("Retry-After"))
	}
	for _, c := range []string{"max_active_series exceeded: 11 > 10", `new series b{gpu="0"} and 2 more new series`} {
		if !strings.Contains(rec.Body.String(), c) {
			t.Errorf("message %q lacks %q", rec.Body, c)
		}
	}
	if app.series() != 8 {
		t.Fatalf("refused request stored series: %d", app.series())
	}
	if rec := post(h, WritePath, mk("b", 2), rwHeaders); rec.Code != 204 {
		t.Fatalf("2 new series reaching the cap: %d %s", rec.Code, rec.Body)
	}
	// Known series keep flowing at the cap.
	if rec := post(h, WritePath, mk("a", 8), rwHeaders); rec.Code != 204 {
		t.Fatalf("known series at the cap: %d %s", rec.Code, rec.Body)
	}

	// After a restart the handler remembers nothing but the store is full: the
	// store's existing series are not locked out, a surplus of new ones is.
	h2 := NewHandler(app, lim, Options{Now: fixedNow, ActiveSeries: app.series})
	if rec := post(h2, WritePath, mk("a", 8), rwHeaders); rec.Code != 204 {
		t.Fatalf("restart, known series: %d %s", rec.Code, rec.Body)
	}
	if rec := post(h2, WritePath, mk("b", 2), rwHeaders); rec.Code != 204 {
		t.Fatalf("restart, the other known series: %d %s", rec.Code, rec.Body)
	}
	if rec := post(h2, WritePath, mk("c", 1), rwHeaders); rec.Code != 429 {
		t.Fatalf("restart, a new series over the cap: %d %s", rec.Code, rec.Body)
	}
}

func TestActiveSeriesWindowForgets(t *testing.T) {
	now := testNow
	var active uint64
	lim := DefaultLimits()
	lim.MaxActiveSeries = 1
	lim.ActiveSeriesWindow = time.Hour
	h := NewHandler(nopAppender{}, lim, Options{Now: func() time.Time { return now }, ActiveSeries: func() uint64 { return active }})
	if rec := post(h, WritePath, encodeWrite(t, series(lbls("__name__", "a"), 1)), rwHeaders); rec.Code != 204 {
		t.Fatal(rec.Code, rec.Body)
	}
	active = 1
	if rec := post(h, WritePath, encodeWrite(t, series(lbls("__name__", "b"), 1)), rwHeaders); rec.Code != 429 {
		t.Fatal("second series over a cap of 1:", rec.Code)
	}
	// Two hours later the store's head dropped "a"; the tracker forgets it too.
	now = now.Add(2 * time.Hour)
	active = 0
	h.tracker.release(&batch{}, 0, true, now) // prune
	if n := len(h.tracker.seen); n != 0 {
		t.Fatalf("tracker still remembers %d series", n)
	}
	if rec := post(h, WritePath, encodeWrite(t, series(lbls("__name__", "b"), 1)), rwHeaders); rec.Code != 204 {
		t.Fatal(rec.Code, rec.Body)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	app := &memAppender{}
	h := NewHandler(app, DefaultLimits(), Options{Now: fixedNow, Registerer: reg})
	post(h, WritePath, encodeWrite(t, goodSeries()), rwHeaders)
	post(h, WritePath, encodeWrite(t, goodSeries(), series(lbls("__name__", "x", "a", strings.Repeat("v", 5000)), 1, 2, 3)), rwHeaders)
	post(h, ImportPrometheusPath, []byte("a 1\nb 2\n"), nil)
	post(h, ImportPrometheusPath, []byte("a 1\nb{ 2\n"), nil)
	want := `
# HELP gpuwatch_ingest_requests_total Ingest requests answered, by endpoint (remote_write, import_prometheus) and HTTP status code.
# TYPE gpuwatch_ingest_requests_total counter
gpuwatch_ingest_requests_total{code="204",endpoint="import_prometheus"} 1
gpuwatch_ingest_requests_total{code="204",endpoint="remote_write"} 1
gpuwatch_ingest_requests_total{code="400",endpoint="import_prometheus"} 1
gpuwatch_ingest_requests_total{code="400",endpoint="remote_write"} 1
# HELP gpuwatch_ingest_samples_accepted_total Samples stored by the ingest endpoints, by endpoint.
# TYPE gpuwatch_ingest_samples_accepted_total counter
gpuwatch_ingest_samples_accepted_total{endpoint="import_prometheus"} 2
gpuwatch_ingest_samples_accepted_total{endpoint="remote_write"} 2
# HELP gpuwatch_ingest_samples_rejected_total Samples in refused ingest requests, by endpoint and reason (a limit name, malformed, invalid_series, unsupported or store).
# TYPE gpuwatch_ingest_samples_rejected_total counter
gpuwatch_ingest_samples_rejected_total{endpoint="import_prometheus",reason="malformed"} 2
gpuwatch_ingest_samples_rejected_total{endpoint="remote_write",reason="max_label_value_length"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if len(app.samples()) != 4 {
		t.Fatalf("stored %d samples, want 4", len(app.samples()))
	}
}

func TestNotFound(t *testing.T) {
	h := NewHandler(nopAppender{}, DefaultLimits(), Options{})
	if rec := post(h, "/api/v1/query", nil, nil); rec.Code != 404 {
		t.Fatalf("got %d", rec.Code)
	}
}

// Content-Length over the limit is refused before the body is read.
func TestContentLengthRefusedUnread(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxBodyBytes = 100
	h := NewHandler(nopAppender{}, lim, Options{})
	req := newRequest(http.MethodPost, WritePath, nil, nil)
	req.ContentLength = 1 << 30
	req.Body = panicReader{}
	rec := recorder(h, req)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), "max_body_bytes exceeded: 1073741824 > 100 at request body (Content-Length)") {
		t.Fatalf("got %d %q", rec.Code, rec.Body)
	}
}

type panicReader struct{}

func (panicReader) Read([]byte) (int, error) {
	panic("body read despite Content-Length over the limit")
}
func (panicReader) Close() error { return nil }
