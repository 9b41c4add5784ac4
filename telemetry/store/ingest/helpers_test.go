package ingest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// memAppender is an all-or-nothing in-memory store.Appender that records each
// accepted batch; err, when set, refuses every batch.
type memAppender struct {
	mu      sync.Mutex
	batches [][]telemetry.Sample
	err     error
}

func (a *memAppender) Append(_ context.Context, batch []telemetry.Sample) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	a.batches = append(a.batches, append([]telemetry.Sample(nil), batch...))
	return nil
}

func (a *memAppender) samples() []telemetry.Sample {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []telemetry.Sample
	for _, b := range a.batches {
		out = append(out, b...)
	}
	return out
}

// series counts the distinct series stored, for ActiveSeries.
func (a *memAppender) series() uint64 {
	seen := map[string]bool{}
	for _, s := range a.samples() {
		seen[s.Name+s.Labels.String()] = true
	}
	return uint64(len(seen))
}

type nopAppender struct{}

func (nopAppender) Append(context.Context, []telemetry.Sample) error { return nil }

// fixed test clock.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return testNow }

// lbls builds sorted prompb labels from name, value pairs (__name__ first in
// the arguments is fine: they are sorted).
func lbls(kv ...string) []prompb.Label {
	out := make([]prompb.Label, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// rawLbls keeps the order given (to build unsorted or duplicate label sets).
func rawLbls(kv ...string) []prompb.Label {
	out := make([]prompb.Label, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func series(ls []prompb.Label, vals ...float64) prompb.TimeSeries {
	ts := prompb.TimeSeries{Labels: ls}
	for i, v := range vals {
		ts.Samples = append(ts.Samples, prompb.Sample{Value: v, Timestamp: testNow.UnixMilli() - int64(len(vals)-i)*1000})
	}
	return ts
}

// goodSeries is a valid series put in front of bad ones, to prove nothing of a
// refused request is stored.
func goodSeries() prompb.TimeSeries {
	return series(lbls("__name__", "DCGM_FI_DEV_GPU_TEMP", "gpu", "0", "Hostname", "node1"), 41, 42)
}

func marshalWrite(t testing.TB, ts ...prompb.TimeSeries) []byte {
	t.Helper()
	req := &prompb.WriteRequest{Timeseries: ts}
	pb, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

func encodeWrite(t testing.TB, ts ...prompb.TimeSeries) []byte {
	return snappy.Encode(nil, marshalWrite(t, ts...))
}

var rwHeaders = map[string]string{
	"Content-Type":           "application/x-protobuf",
	"Content-Encoding":       "snappy",
	RemoteWriteVersionHeader: "0.1.0",
}

func post(h http.Handler, path string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func sampleString(s telemetry.Sample) string {
	return fmt.Sprintf("%s%s %v @%d", s.Name, s.Labels, s.Value, s.Time.UnixMilli())
}

func newRequest(method, path string, body []byte, hdr map[string]string) *http.Request {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

func recorder(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func binaryUvarint(x uint64) []byte {
	var b []byte
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "") == s }

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func formatInt(v int64) string { return strconv.FormatInt(v, 10) }
