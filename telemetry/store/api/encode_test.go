package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/jsonutil"
	"pgregory.net/rapid"
)

// TestEncodersMatchPrometheus checks the float and timestamp encoders against
// Prometheus's own (util/jsonutil, what its HTTP API writes with).
func TestEncodersMatchPrometheus(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, f float64, ms int64) {
		var b bytes.Buffer
		writeFloat(&b, f)
		if want := promEncode(jsonutil.MarshalFloat, f); b.String() != want {
			t.Fatalf("float %v: got %s, Prometheus writes %s", f, b.String(), want)
		}
		b.Reset()
		writeTimestamp(&b, ms)
		if want := promEncode(jsonutil.MarshalTimestamp, ms); b.String() != want {
			t.Fatalf("timestamp %d: got %s, Prometheus writes %s", ms, b.String(), want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99e-7, 1e21, 1e20, 123456789.123, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64} {
		for _, ms := range []int64{0, 1, 10, 100, 999, 1000, 1700000000050, -1, -1500, time.Now().UnixMilli()} {
			check(t, f, ms)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		check(rt, rapid.Float64().Draw(rt, "f"), rapid.Int64().Draw(rt, "ms"))
	})
}

// promEncode runs one of Prometheus's jsonutil encoders, func(v, *jsoniter.Stream),
// on v and a fresh stream, and returns what it wrote. The stream is made through
// reflection from the encoder's own signature, so that gpuwatch does not depend on
// json-iterator itself (Prometheus does). The encoders only append to the
// stream's buffer, which a zero stream has.
func promEncode(encoder, v any) string {
	fn := reflect.ValueOf(encoder)
	stream := reflect.New(fn.Type().In(1).Elem())
	fn.Call([]reflect.Value{reflect.ValueOf(v), stream})
	return string(stream.MethodByName("Buffer").Call(nil)[0].Bytes())
}

func TestQueryErrorTypes(t *testing.T) {
	for _, c := range []struct {
		err  error
		typ  errorType
		code int
	}{
		{promql.ErrQueryTimeout("query timed out in expression evaluation"), errorTimeout, 503},
		{fmt.Errorf("eval: %w", context.DeadlineExceeded), errorTimeout, 503},
		{promql.ErrQueryCanceled("query was canceled"), errorCanceled, 499},
		{context.Canceled, errorCanceled, 499},
		{promql.ErrStorage{Err: errors.New("disk")}, errorInternal, 500},
		{errors.New("many-to-many matching not allowed"), errorExec, 422},
	} {
		got := queryError(c.err)
		if got.typ != c.typ || statusCode(got.typ) != c.code {
			t.Errorf("%v: %s/%d, want %s/%d", c.err, got.typ, statusCode(got.typ), c.typ, c.code)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"1700000000", "1700000000.123", "-1.5", "2025-03-01T12:00:00Z", "2025-03-01T12:00:00.5+02:00", minTimeFormatted, maxTimeFormatted, "NaN", "Inf", "1e300", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := ParseTime(s)
		if err != nil {
			return
		}
		// Unix seconds round to the millisecond, and stay in Prometheus's range.
		if ts.Before(MinTime.Add(-time.Second)) || ts.After(MaxTime.Add(time.Second)) {
			if _, perr := time.Parse(time.RFC3339Nano, s); perr != nil {
				t.Fatalf("ParseTime(%q) = %s, outside [MinTime, MaxTime]", s, ts)
			}
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"15", "0.5", "15s", "1h30m", "1d", "-1", "1e30", "NaN", "", "5x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseDuration(s)
	})
}

func FuzzParseMatchers(f *testing.F) {
	for _, s := range []string{`up`, `{gpu="0"}`, `DCGM_FI_DEV_GPU_UTIL{Hostname=~"node-.*"}`, `{a=~".*"}`, `{`, `{__name__!=""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sets, err := ParseMatchers([]string{s})
		if err != nil {
			return
		}
		// An accepted selector has a matcher that rejects the empty string.
		for _, ms := range sets {
			ok := false
			for _, m := range ms {
				ok = ok || !m.Matches("")
			}
			if !ok {
				t.Fatalf("ParseMatchers(%q) accepted a selector that matches everything", s)
			}
		}
	})
}
