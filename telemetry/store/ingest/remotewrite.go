package ingest

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Remote write protocol names and headers.
const (
	// RemoteWriteVersionHeader is the header remote write senders set: "0.1.0"
	// for 1.0, "2.0.0" for 2.0. Like Prometheus's receiver, this handler decides
	// the protocol from Content-Type alone and does not require the header.
	RemoteWriteVersionHeader = "X-Prometheus-Remote-Write-Version"

	protobufMediaType = "application/x-protobuf"
	writeV1Message    = "prometheus.WriteRequest"
	writeV2Message    = "io.prometheus.write.v2.Request"
)

// checkRemoteWriteHeaders answers 415 for what is not remote write 1.0: a media
// type other than application/x-protobuf, a proto= parameter naming another
// message (2.0's io.prometheus.write.v2.Request gets a message of its own), or a
// Content-Encoding other than snappy. An absent Content-Type or
// Content-Encoding means 1.0 with snappy, as in Prometheus.
func checkRemoteWriteHeaders(r *http.Request) error {
	if ct := strings.TrimSpace(r.Header.Get("Content-Type")); ct != "" {
		parts := strings.Split(ct, ";")
		if media := strings.ToLower(strings.TrimSpace(parts[0])); media != protobufMediaType {
			return &requestError{status: http.StatusUnsupportedMediaType, reason: reasonUnsupported,
				msg: fmt.Sprintf("Content-Type %q is not remote write: want %s (remote write 1.0, prometheus.WriteRequest)", truncate(ct, 128), protobufMediaType)}
		}
		for _, p := range parts[1:] {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok {
				return &requestError{status: http.StatusUnsupportedMediaType, reason: reasonUnsupported,
					msg: fmt.Sprintf("Content-Type %q: parameter %q is not key=value", truncate(ct, 128), truncate(p, 64))}
			}
			if strings.TrimSpace(k) != "proto" {
				continue
			}
			switch msg := strings.Trim(strings.TrimSpace(v), `"`); msg {
			case writeV1Message:
			case writeV2Message:
				return &requestError{status: http.StatusUnsupportedMediaType, reason: reasonUnsupported,
					msg: "remote write 2.0 (proto=" + writeV2Message + ") is not accepted by this receiver; send remote write 1.0 " +
						"(prometheus.WriteRequest; in Prometheus set protobuf_message: prometheus.WriteRequest under remote_write)"}
			default:
				return &requestError{status: http.StatusUnsupportedMediaType, reason: reasonUnsupported,
					msg: fmt.Sprintf("Content-Type %q names protobuf message %q; only %s (remote write 1.0) is accepted", truncate(ct, 128), truncate(msg, 64), writeV1Message)}
			}
		}
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "snappy") {
		return &requestError{status: http.StatusUnsupportedMediaType, reason: reasonUnsupported,
			msg: fmt.Sprintf("Content-Encoding %q is not accepted for remote write; only snappy (block format) is", truncate(enc, 64))}
	}
	return nil
}

// decodeSnappy decodes a snappy block, checking the decoded length its header
// declares against the limit before allocating anything.
func decodeSnappy(body []byte, lim Limits) ([]byte, error) {
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return nil, badRequest(reasonMalformed, "remote write body is not snappy block-compressed: %v", err)
	}
	if lim.MaxDecodedBytes > 0 && int64(n) > lim.MaxDecodedBytes {
		return nil, limitErr(LimitDecodedBytes, int64(n), lim.MaxDecodedBytes, "snappy-decoded request body")
	}
	// DecodeStrict: the snappy block format only, as Prometheus's receiver reads
	// it, not the s2 extensions snappy.Decode would also accept.
	out, err := snappy.DecodeStrict(make([]byte, n), body)
	if err != nil {
		return nil, badRequest(reasonMalformed, "remote write body is not snappy block-compressed: %v", err)
	}
	return out, nil
}

// decodeWriteRequest turns a decoded prometheus.WriteRequest into a validated
// batch. total is the number of samples the request carried (0 when the
// protobuf did not decode), for the rejected-samples counter.
func (v *validator) decodeWriteRequest(buf []byte, now time.Time) (b *batch, total int, err error) {
	req, err := decodeRW(buf)
	if err != nil {
		return nil, 0, badRequest(reasonMalformed, "remote write body is not a valid prometheus.WriteRequest protobuf: %v", err)
	}
	total = req.samples
	histograms, labels := 0, 0
	for i := range req.series {
		histograms += req.series[i].histograms
		labels += len(req.series[i].labels)
	}
	if histograms > 0 {
		for i := range req.series {
			if s := &req.series[i]; s.histograms > 0 {
				return nil, total + histograms, badRequest(reasonUnsupported, "series %s carries %d native histogram samples (%d in the request); this store takes float samples only",
					seriesString(s.labels), s.histograms, histograms)
			}
		}
	}
	if max := v.lim.MaxSamplesPerRequest; max > 0 && total > max {
		return nil, total, limitErr(LimitSamplesPerRequest, int64(total), int64(max), "")
	}
	if max := v.lim.MaxSeriesPerRequest; max > 0 && len(req.series) > 4*max {
		// Far more entries than the cap allows even with repeats: refuse before hashing.
		return nil, total, limitErr(LimitSeriesPerRequest, int64(len(req.series)), int64(max), "")
	}
	nowMs := now.UnixMilli()
	b = &batch{samples: make([]telemetry.Sample, 0, total), seen: make(map[uint64]struct{}, len(req.series))}
	arena := make([]telemetry.Label, 0, labels)
	for i := range req.series {
		s := &req.series[i]
		var name string
		var ls telemetry.Labels
		if name, ls, arena, err = v.validateLabels(s.labels, arena); err != nil {
			return nil, total, err
		}
		if len(s.samples) == 0 {
			continue // nothing to store; the labels were still checked
		}
		if err := b.addSeries(v, name, ls, s.labels); err != nil {
			return nil, total, err
		}
		for _, smp := range s.samples {
			if err := v.checkTime(smp.ts, nowMs, s.labels); err != nil {
				return nil, total, err
			}
			b.samples = append(b.samples, telemetry.Sample{Name: name, Labels: ls, Value: smp.v, Time: time.UnixMilli(smp.ts)})
		}
	}
	return b, total, nil
}
