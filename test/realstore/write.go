package realstore

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
)

// Write sends samples to the server with Prometheus remote write 1.0 (protobuf,
// snappy) in one request, and on VictoriaMetrics flushes after. Samples of one
// series must be in time order. It fails the test when the server refuses them.
func (s *Server) Write(samples []telemetry.Sample) {
	s.t.Helper()
	if err := post(s.RemoteWriteURL(), samples); err != nil {
		s.t.Fatalf("realstore: remote write to %s: %v", s.kind, err)
	}
	s.Flush()
}

// RemoteWrite sends samples to a gpuwatch server at baseURL (its /api/v1/write)
// as an agent's shipper does, in requests of at most `per` of samples each
// (samples in time order; per 0: one request), and fails t unless every
// request is answered 2xx.
func RemoteWrite(t testing.TB, baseURL string, samples []telemetry.Sample, per time.Duration) {
	t.Helper()
	for len(samples) > 0 {
		n := chunk(samples, per)
		if err := post(strings.TrimRight(baseURL, "/")+"/api/v1/write", samples[:n]); err != nil {
			t.Fatalf("remote write to %s: %v", baseURL, err)
		}
		samples = samples[n:]
	}
}

// WriteEvery is Write in requests of at most `per` of samples each (samples in
// time order), as agents ship.
func (s *Server) WriteEvery(samples []telemetry.Sample, per time.Duration) {
	s.t.Helper()
	for len(samples) > 0 {
		n := chunk(samples, per)
		s.Write(samples[:n])
		samples = samples[n:]
	}
}

// chunk is how many of samples (in time order) fall within per of the first;
// per 0: all.
func chunk(samples []telemetry.Sample, per time.Duration) int {
	if per <= 0 {
		return len(samples)
	}
	end := samples[0].Time.Add(per)
	n := 1
	for n < len(samples) && samples[n].Time.Before(end) {
		n++
	}
	return n
}

// post sends one remote-write request.
func post(url string, samples []telemetry.Sample) error {
	w, err := remote.NewWriter(url, remote.Options{})
	if err != nil {
		return err
	}
	if err := w.Append(context.Background(), samples); err != nil {
		return fmt.Errorf("%d samples: %w", len(samples), err)
	}
	return nil
}

// EncodeWriteRequest builds a snappy-compressed remote-write 1.0 request body:
// one TimeSeries per label set, its samples in the order given.
func EncodeWriteRequest(samples []telemetry.Sample) ([]byte, error) {
	return remote.EncodeWriteRequest(samples)
}

// ImportSamples sends samples to VictoriaMetrics's text import endpoint, with
// their timestamps, and flushes.
func (s *Server) ImportSamples(samples []telemetry.Sample) {
	s.t.Helper()
	s.ImportText(FormatText(samples))
}

// FormatText writes samples as Prometheus text exposition lines with millisecond
// timestamps, the format of VictoriaMetrics's /api/v1/import/prometheus.
func FormatText(samples []telemetry.Sample) string {
	var b strings.Builder
	for _, sm := range samples {
		b.WriteString(sm.Name)
		b.WriteByte('{')
		n := 0
		for _, l := range sm.Labels {
			if l.Value == "" {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			b.WriteString(l.Name)
			b.WriteString(`="`)
			b.WriteString(strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(l.Value))
			b.WriteByte('"')
		}
		b.WriteString("} ")
		switch {
		case math.IsNaN(sm.Value):
			b.WriteString("NaN")
		case math.IsInf(sm.Value, 1):
			b.WriteString("+Inf")
		case math.IsInf(sm.Value, -1):
			b.WriteString("-Inf")
		default:
			b.WriteString(strconv.FormatFloat(sm.Value, 'g', -1, 64))
		}
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(sm.Time.UnixMilli(), 10))
		b.WriteByte('\n')
	}
	return b.String()
}
