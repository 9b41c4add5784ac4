package ui

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// chart is a small server-drawn SVG: no script, no library, readable by a
// screen reader through its title and the table-like description.
type chart struct {
	Title string
	Unit  string
	Note  string // shown instead of a chart when there is nothing to draw
	SVG   template.HTML
	// Last values per line, for the caption.
	Last []lastValue
}

type lastValue struct {
	Name  string
	Value string
	Class string
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 480, 140
	padL, padR     = 48, 8
	padT, padB     = 8, 20
)

// lineClasses colour the lines (CSS); dashes tell them apart without colour.
var lineClasses = []string{"l0", "l1", "l2", "l3", "l4", "l5"}

// lineChart draws the series of m over [start, end] with one polyline each,
// the y axis from 0 (or the minimum when negative) to the maximum.
func lineChart(title, unit string, m store.Matrix, names []string, start, end time.Time) *chart {
	c := &chart{Title: title, Unit: unit}
	lo, hi := math.Inf(1), math.Inf(-1)
	points := 0
	for _, s := range m {
		for _, p := range s.Points {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			lo, hi = math.Min(lo, p.V), math.Max(hi, p.V)
			points++
		}
	}
	if points == 0 {
		c.Note = "no data in this window"
		return c
	}
	lo = math.Min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	span := end.Sub(start).Seconds()
	x := func(t time.Time) float64 { return padL + (chartW-padL-padR)*t.Sub(start).Seconds()/span }
	y := func(v float64) float64 { return padT + (chartH-padT-padB)*(1-(v-lo)/(hi-lo)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s"><title>%s</title>`, chartW, chartH,
		html.EscapeString(title+" ("+unit+")"), html.EscapeString(title))
	// Axes and labels.
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, chartH-padB, chartW-padR, chartH-padB)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, padT, padL, chartH-padB)
	fmt.Fprintf(&b, `<line class="gridline" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padL, y((lo+hi)/2), chartW-padR, y((lo+hi)/2))
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y(hi)+8, html.EscapeString(short(hi)))
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y(lo), html.EscapeString(short(lo)))
	for i := 0; i <= 4; i++ {
		t := start.Add(time.Duration(float64(end.Sub(start)) * float64(i) / 4))
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(t), chartH-5, anchor, t.UTC().Format("15:04"))
	}
	for i, s := range m {
		cls := lineClasses[i%len(lineClasses)]
		var pts []string
		flush := func() {
			if len(pts) == 1 {
				pts = append(pts, pts[0])
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline class="%s" points="%s"/>`, cls, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		var last time.Time
		gap := 5 * time.Minute
		for _, p := range s.Points {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			if !last.IsZero() && p.T.Sub(last) > gap {
				flush()
			}
			last = p.T
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.T), y(p.V)))
		}
		flush()
		name := fmt.Sprint(i)
		if i < len(names) {
			name = names[i]
		}
		if n := len(s.Points); n > 0 {
			c.Last = append(c.Last, lastValue{Name: name, Value: short(s.Points[n-1].V), Class: cls})
		}
	}
	b.WriteString(`</svg>`)
	c.SVG = template.HTML(b.String())
	return c
}

// xidStrip draws the Xid events of a window as marks on a time line, tallest
// for the most disruptive action.
func xidStrip(evs []xidEvent, start, end time.Time) *chart {
	c := &chart{Title: "Xid events"}
	if len(evs) == 0 {
		c.Note = "no Xid in this window"
		return c
	}
	const h = 44
	span := end.Sub(start).Seconds()
	x := func(t time.Time) float64 { return padL + (chartW-padL-padR)*t.Sub(start).Seconds()/span }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart strip" viewBox="0 0 %d %d" role="img" aria-label="Xid events on a time line"><title>Xid events</title>`, chartW, h)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, h-16, chartW-padR, h-16)
	for i := 0; i <= 4; i++ {
		t := start.Add(time.Duration(float64(end.Sub(start)) * float64(i) / 4))
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(t), h-3, t.UTC().Format("15:04"))
	}
	for _, e := range evs {
		fatal := e.Action != "" && e.Action != "IGNORE" && e.Action != "RESTART_APP"
		cls, top := "xmark", 14
		if fatal {
			cls, top = "xmark fatal", 2
		}
		fmt.Fprintf(&b, `<line class="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d"><title>%s</title></line>`, cls, x(e.At), top, x(e.At), h-16,
			html.EscapeString(fmt.Sprintf("%s GPU %d Xid %d (%s)", e.At.UTC().Format("15:04:05"), e.GPU, e.Xid, e.Action)))
	}
	b.WriteString(`</svg>`)
	c.SVG = template.HTML(b.String())
	return c
}

// short formats an axis value in few characters.
func short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
