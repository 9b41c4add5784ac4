package ingest

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// A zero-copy decoder for prometheus.WriteRequest (remote write 1.0): label
// strings point into the decoded buffer, which is never reused, and labels and
// samples live in a few shared arrays. It reads what prompb's generated
// Unmarshal reads (timeseries: labels, samples; exemplars and metadata skipped;
// histograms counted) with the same wire-type checks, at a small fraction of its
// allocations; FuzzDecodeWriteRequest checks it against prompb.

// rwSeries is one decoded TimeSeries: views into the request's arrays.
type rwSeries struct {
	labels     []telemetry.Label // as received, __name__ included
	samples    []rwSample
	histograms int
}

type rwSample struct {
	v  float64
	ts int64
}

type rwRequest struct {
	series  []rwSeries
	samples int
}

var errTruncated = errors.New("unexpected end of data")

// errCodeTag is consumeTag's error code, apart from protowire's (-1 to -6).
const errCodeTag = -100

func wireErr(n int) error {
	if n >= 0 {
		return nil
	}
	if n == errCodeTag {
		return errors.New("invalid field tag (field number 0 or negative)")
	}
	if err := protowire.ParseError(n); err != nil {
		return err
	}
	return errTruncated
}

// bytesToString makes a string sharing b's memory; b must never change.
func bytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// decodeRW decodes buf, which the caller hands over for good.
func decodeRW(buf []byte) (*rwRequest, error) {
	req := &rwRequest{}
	labels := make([]telemetry.Label, 0, len(buf)/24)
	samples := make([]rwSample, 0, len(buf)/128)
	for len(buf) > 0 {
		field := buf
		num, typ, n := consumeTag(buf)
		if err := wireErr(n); err != nil {
			return nil, fmt.Errorf("WriteRequest: %w", err)
		}
		buf = buf[n:]
		if num == 1 { // timeseries
			if typ != protowire.BytesType {
				return nil, fmt.Errorf("WriteRequest: wrong wire type %d for field timeseries", typ)
			}
			msg, n := consumeBytes(buf)
			if err := wireErr(n); err != nil {
				return nil, fmt.Errorf("WriteRequest.timeseries: %w", err)
			}
			buf = buf[n:]
			ls0, ss0 := len(labels), len(samples)
			var s rwSeries
			var err error
			if labels, samples, s.histograms, err = decodeSeries(msg, labels, samples); err != nil {
				return nil, fmt.Errorf("WriteRequest.timeseries[%d]: %w", len(req.series), err)
			}
			s.labels = labels[ls0:len(labels):len(labels)]
			s.samples = samples[ss0:len(samples):len(samples)]
			req.samples += len(s.samples)
			req.series = append(req.series, s)
			continue
		}
		n, err := skipField(field)
		if err != nil {
			return nil, fmt.Errorf("WriteRequest field %d: %w", num, err)
		}
		buf = field[n:]
	}
	return req, nil
}

func decodeSeries(buf []byte, labels []telemetry.Label, samples []rwSample) ([]telemetry.Label, []rwSample, int, error) {
	hist := 0
	for len(buf) > 0 {
		field := buf
		num, typ, n := consumeTag(buf)
		if err := wireErr(n); err != nil {
			return labels, samples, hist, err
		}
		buf = buf[n:]
		switch num {
		case 1, 2, 3, 4:
			if typ != protowire.BytesType {
				return labels, samples, hist, fmt.Errorf("wrong wire type %d for field %d", typ, num)
			}
			msg, n := consumeBytes(buf)
			if err := wireErr(n); err != nil {
				return labels, samples, hist, fmt.Errorf("field %d: %w", num, err)
			}
			buf = buf[n:]
			var err error
			switch num {
			case 1:
				var l telemetry.Label
				if l, err = decodeLabel(msg); err != nil {
					return labels, samples, hist, fmt.Errorf("labels[]: %w", err)
				}
				labels = append(labels, l)
			case 2:
				var s rwSample
				if s, err = decodeSample(msg); err != nil {
					return labels, samples, hist, fmt.Errorf("samples[]: %w", err)
				}
				samples = append(samples, s)
			case 3:
				if err = checkMessage(msg); err != nil { // exemplars: ignored, but well-formed
					return labels, samples, hist, fmt.Errorf("exemplars[]: %w", err)
				}
			case 4:
				if err = checkMessage(msg); err != nil {
					return labels, samples, hist, fmt.Errorf("histograms[]: %w", err)
				}
				hist++
			}
		default:
			n, err := skipField(field)
			if err != nil {
				return labels, samples, hist, fmt.Errorf("field %d: %w", num, err)
			}
			buf = field[n:]
		}
	}
	return labels, samples, hist, nil
}

func decodeLabel(buf []byte) (telemetry.Label, error) {
	var l telemetry.Label
	for len(buf) > 0 {
		field := buf
		num, typ, n := consumeTag(buf)
		if err := wireErr(n); err != nil {
			return l, err
		}
		buf = buf[n:]
		if num == 1 || num == 2 {
			if typ != protowire.BytesType {
				return l, fmt.Errorf("wrong wire type %d for field %d", typ, num)
			}
			b, n := consumeBytes(buf)
			if err := wireErr(n); err != nil {
				return l, err
			}
			buf = buf[n:]
			if num == 1 {
				l.Name = bytesToString(b)
			} else {
				l.Value = bytesToString(b)
			}
			continue
		}
		n, err := skipField(field)
		if err != nil {
			return l, err
		}
		buf = field[n:]
	}
	return l, nil
}

func decodeSample(buf []byte) (rwSample, error) {
	var s rwSample
	for len(buf) > 0 {
		field := buf
		num, typ, n := consumeTag(buf)
		if err := wireErr(n); err != nil {
			return s, err
		}
		buf = buf[n:]
		switch {
		case num == 1:
			if typ != protowire.Fixed64Type {
				return s, fmt.Errorf("wrong wire type %d for field value", typ)
			}
			v, n := protowire.ConsumeFixed64(buf)
			if err := wireErr(n); err != nil {
				return s, err
			}
			s.v = math.Float64frombits(v)
			buf = buf[n:]
		case num == 2:
			if typ != protowire.VarintType {
				return s, fmt.Errorf("wrong wire type %d for field timestamp", typ)
			}
			v, n := uvarint(buf)
			if err := wireErr(n); err != nil {
				return s, err
			}
			s.ts = int64(v)
			buf = buf[n:]
		default:
			n, err := skipField(field)
			if err != nil {
				return s, err
			}
			buf = field[n:]
		}
	}
	return s, nil
}

// checkMessage walks a message's fields without keeping anything.
func checkMessage(buf []byte) error {
	for len(buf) > 0 {
		field := buf
		n, err := skipField(field)
		if err != nil {
			return err
		}
		buf = field[n:]
	}
	return nil
}

// skipField skips one field, tag included, the way prompb's generated (gogo)
// code skips fields it does not know, groups included, so this decoder accepts
// every message prompb accepts.
func skipField(buf []byte) (int, error) {
	depth := 0
	i := 0
	varint := func() (uint64, error) {
		v, n := uvarint(buf[i:])
		if n < 0 {
			return 0, wireErr(n)
		}
		i += n
		return v, nil
	}
	for i < len(buf) {
		tag, err := varint()
		if err != nil {
			return 0, err
		}
		switch tag & 7 {
		case 0:
			if _, err := varint(); err != nil {
				return 0, err
			}
		case 1:
			i += 8
		case 2:
			l, err := varint()
			if err != nil {
				return 0, err
			}
			if l > uint64(len(buf)) {
				return 0, errTruncated
			}
			i += int(l)
		case 3:
			depth++
		case 4:
			if depth == 0 {
				return 0, errors.New("unexpected end of group")
			}
			depth--
		case 5:
			i += 4
		default:
			return 0, fmt.Errorf("illegal wire type %d", tag&7)
		}
		if i > len(buf) {
			return 0, errTruncated
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, errTruncated
}

// consumeTag reads a field tag as prompb's generated code does: any varint whose
// field number, as an int32, is positive.
func consumeTag(buf []byte) (int32, protowire.Type, int) {
	v, n := uvarint(buf)
	if n < 0 {
		return 0, 0, n
	}
	num := int32(v >> 3)
	if num <= 0 {
		return 0, 0, errCodeTag
	}
	return num, protowire.Type(v & 7), n
}

// uvarint reads a varint as prompb's generated code does: at most ten bytes, bits
// past 64 dropped. n is -1 (protowire's "truncated") when the data ends first,
// -3 ("overflow") past ten bytes.
func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i, shift := 0, uint(0); ; i, shift = i+1, shift+7 {
		if shift >= 64 {
			return 0, -3
		}
		if i >= len(b) {
			return 0, -1
		}
		c := b[i]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i + 1
		}
	}
}

// consumeBytes reads a length-delimited value.
func consumeBytes(b []byte) ([]byte, int) {
	l, n := uvarint(b)
	if n < 0 {
		return nil, n
	}
	if l > uint64(len(b)-n) {
		return nil, -1
	}
	return b[n : n+int(l)], n + int(l)
}
