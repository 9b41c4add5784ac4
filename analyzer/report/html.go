package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"
	"time"
)

// MaxChartGroups is how many groups a chart draws (the largest by allocation);
// the table lists them all.
const MaxChartGroups = 25

// WriteHTML writes the report as one self-contained HTML document: inline
// CSS, charts as inline SVG, no script, nothing fetched; it opens offline.
func WriteHTML(w io.Writer, r *Report) error {
	return pageTemplate.Execute(w, struct {
		Title string
		CSS   template.CSS
		Body  template.HTML
	}{r.title(), template.CSS(FragmentCSS), HTMLFragment(r)})
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#1d232a;background:#fff}
{{.CSS}}</style></head>
<body>
{{.Body}}
<p class="gw-note">Written by gpuwatch report. How the numbers are counted: docs/reports.md.</p>
</body></html>
`))

// FragmentCSS styles what HTMLFragment writes (classes prefixed gw-), for a
// page that embeds the fragment.
const FragmentCSS = `.gw-report h1{font-size:1.4em;margin:0 0 .3em}.gw-report h2{font-size:1.1em;margin:1.4em 0 .4em}
.gw-meta,.gw-note{color:#57606a;font-size:.9em}
.gw-report table{border-collapse:collapse;font-size:.85em;margin:.4em 0}
.gw-report th,.gw-report td{border-bottom:1px solid #d0d7de;padding:.25em .6em;text-align:right;white-space:nowrap}
.gw-report th:first-child,.gw-report td:first-child{text-align:left}
.gw-report tr.gw-total td{font-weight:600;border-top:2px solid #57606a}
.gw-report svg{max-width:100%;height:auto;display:block}
.gw-legend span{display:inline-block;margin-right:1.2em;font-size:.85em}
.gw-legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em}
.gw-legend i.gw-allocated{background:` + colAllocated + `}.gw-legend i.gw-measured{background:` + colMeasured + `}
.gw-legend i.gw-idle{background:` + colIdle + `}.gw-legend i.gw-prev{background:` + colPrev + `;width:.2em}`

// Chart colours.
const (
	colAllocated = "#c9d6e3"
	colMeasured  = "#2f6f9f"
	colIdle      = "#d9822b"
	colPrev      = "#1d232a"
)

// HTMLFragment is the report as an HTML fragment (a <section class="gw-report">
// with a heading, the SVG charts, the table and the top idle jobs), styled by
// FragmentCSS, for pages that embed it (the web UI). Everything from the
// report is escaped.
func HTMLFragment(r *Report) template.HTML {
	var b bytes.Buffer
	e := html.EscapeString
	fmt.Fprintf(&b, `<section class="gw-report"><h1>%s</h1>`, e(r.title()))
	fmt.Fprintf(&b, `<p class="gw-meta">Step %s; %s. Measured use is DCGM SM activity where profiling runs, else NVML utilization (column measured_by).`,
		e(time.Duration(r.StepSeconds*float64(time.Second)).String()), e(r.idleRule()))
	if !r.PreviousFrom.IsZero() {
		fmt.Fprintf(&b, ` Changes against %s to %s.`, e(r.PreviousFrom.UTC().Format(time.RFC3339)), e(r.PreviousTo.UTC().Format(time.RFC3339)))
	}
	b.WriteString(`</p>`)
	if f := r.filterLine(); f != "" {
		fmt.Fprintf(&b, `<p class="gw-meta gw-filter">%s.</p>`, e(strings.ToUpper(f[:1])+f[1:]))
	}
	fmt.Fprintf(&b, `<p class="gw-meta">Total: %s GPU-hours allocated, %s measured (efficiency %s), %s idle.</p>`,
		hours(r.Total.Allocated), hours(r.Total.Measured), pct(r.Total.Efficiency), hours(r.Total.Idle))

	b.WriteString(`<h2>GPU-hours by ` + e(string(r.By)) + `</h2>`)
	// Classes, not style attributes: a page with a strict Content-Security-Policy
	// (the web UI's style-src 'self') refuses inline styles.
	b.WriteString(`<div class="gw-legend"><span><i class="gw-allocated"></i>allocated</span><span><i class="gw-measured"></i>measured</span><span><i class="gw-idle"></i>idle allocated</span></div>`)
	b.WriteString(HoursChartSVG(r))
	b.WriteString(`<h2>Efficiency</h2>`)
	b.WriteString(`<div class="gw-legend"><span><i class="gw-measured"></i>this period</span><span><i class="gw-prev"></i>previous period</span></div>`)
	b.WriteString(EfficiencyChartSVG(r))

	b.WriteString(`<h2>Table</h2><table><thead><tr><th>` + e(string(r.By)) + `</th>`)
	for _, c := range columns {
		b.WriteString(`<th>` + e(c.head) + `</th>`)
	}
	b.WriteString(`</tr></thead><tbody>`)
	for i, g := range append(r.Groups, r.Total) {
		if i == len(r.Groups) {
			b.WriteString(`<tr class="gw-total">`)
		} else {
			b.WriteString(`<tr>`)
		}
		b.WriteString(`<td>` + e(g.Key) + `</td>`)
		for _, c := range columns {
			b.WriteString(`<td>` + e(c.cell(r, g)) + `</td>`)
		}
		b.WriteString(`</tr>`)
	}
	b.WriteString(`</tbody></table>`)
	if r.FairShareNote != "" {
		b.WriteString(`<p class="gw-meta">Fair share: ` + e(r.FairShareNote) + `</p>`)
	}
	if len(r.TopIdleJobs) > 0 {
		b.WriteString(`<h2>Top idle jobs</h2><table><thead><tr><th>job</th><th>account</th><th>user</th><th>gpus</th><th>idle GPU-h</th><th>allocated GPU-h</th></tr></thead><tbody>`)
		for _, j := range r.TopIdleJobs {
			fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td></tr>`,
				e(j.Job), e(j.Account), e(j.User), j.GPUs, hours(j.Idle), hours(j.Allocated))
		}
		b.WriteString(`</tbody></table>`)
	}
	b.WriteString(`</section>`)
	return template.HTML(b.String()) // every value above went through html.EscapeString
}

// chart geometry, in SVG user units.
const (
	chartWidth  = 900
	labelWidth  = 220
	valueWidth  = 120
	barHeight   = 18
	barGap      = 8
	chartTop    = 24
	chartBottom = 8
)

func chartGroups(r *Report) []Group {
	if len(r.Groups) > MaxChartGroups {
		return r.Groups[:MaxChartGroups]
	}
	return r.Groups
}

func shorten(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// HoursChartSVG draws, per group, allocated GPU-hours as a bar with the
// measured and the idle GPU-hours over it, on one linear scale.
func HoursChartSVG(r *Report) string {
	gs := chartGroups(r)
	maxH := 0.0
	for _, g := range gs {
		maxH = math.Max(maxH, g.Allocated)
	}
	if maxH <= 0 {
		maxH = 1
	}
	plot := float64(chartWidth - labelWidth - valueWidth)
	x := func(h float64) float64 { return plot * h / maxH }
	height := chartTop + len(gs)*(barHeight+barGap) + chartBottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="gw-chart gw-hours" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="GPU-hours by %s">`,
		chartWidth, height, chartWidth, height, html.EscapeString(string(r.By)))
	fmt.Fprintf(&b, `<text x="%d" y="14" font-size="11" fill="#57606a">GPU-hours (0 to %s)</text>`, labelWidth, hours(maxH))
	for i, g := range gs {
		y := chartTop + i*(barHeight+barGap)
		fmt.Fprintf(&b, `<g><title>%s: %s allocated, %s measured, %s idle GPU-hours</title>`, html.EscapeString(g.Key), hours(g.Allocated), hours(g.Measured), hours(g.Idle))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="end" fill="#1d232a">%s</text>`, labelWidth-8, y+barHeight-5, html.EscapeString(shorten(g.Key, 30)))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelWidth, y, x(g.Allocated), barHeight, colAllocated)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelWidth, y+3, x(g.Measured), barHeight-6, colMeasured)
		if g.Idle > 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`, float64(labelWidth)+x(g.Allocated-g.Idle), y+barHeight-4, x(g.Idle), 4, colIdle)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" fill="#57606a">%s h</text>`, float64(labelWidth)+x(g.Allocated)+6, y+barHeight-5, hours(g.Allocated))
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// EfficiencyChartSVG draws each group's efficiency (0–100 %) as a bar, with
// the previous period's as a tick.
func EfficiencyChartSVG(r *Report) string {
	gs := chartGroups(r)
	plot := float64(chartWidth - labelWidth - valueWidth)
	height := chartTop + len(gs)*(barHeight+barGap) + chartBottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="gw-chart gw-efficiency" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="efficiency by %s">`,
		chartWidth, height, chartWidth, height, html.EscapeString(string(r.By)))
	for _, p := range []float64{0, 0.25, 0.5, 0.75, 1} {
		xp := float64(labelWidth) + plot*p
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d0d7de"/><text x="%.1f" y="14" font-size="11" text-anchor="middle" fill="#57606a">%.0f%%</text>`,
			xp, chartTop-4, xp, height-chartBottom, xp, p*100)
	}
	for i, g := range gs {
		y := chartTop + i*(barHeight+barGap)
		fmt.Fprintf(&b, `<g><title>%s: efficiency %s (previous %s), measured by %s</title>`, html.EscapeString(g.Key), pct(g.Efficiency), prevPct(g), g.MeasuredBy)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="end" fill="#1d232a">%s</text>`, labelWidth-8, y+barHeight-5, html.EscapeString(shorten(g.Key, 30)))
		if g.Efficiency != nil {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelWidth, y, plot*clamp(*g.Efficiency, 0, 1), barHeight, colMeasured)
		}
		if g.Previous != nil && g.Previous.Efficiency != nil {
			xp := float64(labelWidth) + plot*clamp(*g.Previous.Efficiency, 0, 1)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="3" height="%d" fill="%s"/>`, xp-1.5, y-2, barHeight+4, colPrev)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#57606a">%s</text>`, chartWidth-valueWidth+8, y+barHeight-5, pct(g.Efficiency))
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func prevPct(g Group) string {
	if g.Previous == nil {
		return "none"
	}
	return pct(g.Previous.Efficiency)
}
