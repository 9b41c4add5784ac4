package api

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// The encoders below write what Prometheus's jsoniter codec writes: timestamps
// as seconds with up to three decimals ("1700000000.5" is "1700000000.500"),
// values as strings in the shortest 'f' form ('e' below 1e-6 and from 1e21),
// "NaN", "+Inf" and "-Inf", and labels as an object in label order.

func writeTimestamp(b *bytes.Buffer, ms int64) {
	if ms < 0 {
		b.WriteByte('-')
		ms = -ms
	}
	b.WriteString(strconv.FormatInt(ms/1000, 10))
	if frac := ms % 1000; frac != 0 {
		b.WriteByte('.')
		if frac < 100 {
			b.WriteByte('0')
		}
		if frac < 10 {
			b.WriteByte('0')
		}
		b.WriteString(strconv.FormatInt(frac, 10))
	}
}

func writeFloat(b *bytes.Buffer, f float64) {
	b.WriteByte('"')
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b.Write(strconv.AppendFloat(b.AvailableBuffer(), f, format, -1, 64))
	b.WriteByte('"')
}

// writeString writes s as a JSON string, escaped as encoding/json does.
func writeString(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			out, _ := json.Marshal(s)
			b.Write(out)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

func writeLabels(b *bytes.Buffer, ls labels.Labels) {
	b.WriteByte('{')
	first := true
	ls.Range(func(l labels.Label) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(b, l.Name)
		b.WriteByte(':')
		writeString(b, l.Value)
	})
	b.WriteByte('}')
}

func writePoint(b *bytes.Buffer, t int64, f float64) {
	b.WriteByte('[')
	writeTimestamp(b, t)
	b.WriteByte(',')
	writeFloat(b, f)
	b.WriteByte(']')
}

// writeValue writes a query answer as {"resultType":…,"result":…}. Native
// histograms, which gpuwatch does not write, are left out.
func writeValue(b *bytes.Buffer, v parser.Value) {
	b.WriteString(`{"resultType":"`)
	b.WriteString(string(v.Type()))
	b.WriteString(`","result":`)
	switch v := v.(type) {
	case promql.Matrix:
		b.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"metric":`)
			writeLabels(b, s.Metric)
			b.WriteString(`,"values":[`)
			for j, p := range s.Floats {
				if j > 0 {
					b.WriteByte(',')
				}
				writePoint(b, p.T, p.F)
			}
			b.WriteString(`]}`)
		}
		b.WriteByte(']')
	case promql.Vector:
		b.WriteByte('[')
		n := 0
		for _, s := range v {
			if s.H != nil {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			b.WriteString(`{"metric":`)
			writeLabels(b, s.Metric)
			b.WriteString(`,"value":`)
			writePoint(b, s.T, s.F)
			b.WriteByte('}')
		}
		b.WriteByte(']')
	case promql.Scalar:
		writePoint(b, v.T, v.V)
	case promql.String:
		b.WriteByte('[')
		writeTimestamp(b, v.T)
		b.WriteByte(',')
		writeString(b, v.V)
		b.WriteByte(']')
	default:
		b.WriteString("null")
	}
	b.WriteByte('}')
}
