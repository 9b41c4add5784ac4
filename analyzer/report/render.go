package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Format is an output format.
type Format string

// The output formats.
const (
	FormatTable    Format = "table"
	FormatCSV      Format = "csv"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
	FormatHTML     Format = "html"
)

// Formats lists every Format.
var Formats = []Format{FormatTable, FormatCSV, FormatJSON, FormatMarkdown, FormatHTML}

// ParseFormat checks an output format's name.
func ParseFormat(s string) (Format, error) { return ParseFormatOf(s, Formats) }

// ParseFormatOf checks an output format's name against the formats a command
// offers (the analyzer's other answers offer a subset of the report's).
func ParseFormatOf(s string, offered []Format) (Format, error) {
	names := make([]string, len(offered))
	for i, f := range offered {
		if string(f) == s {
			return f, nil
		}
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown output %q: want one of %s", s, strings.Join(names, ", "))
}

// Render writes r in format f.
func Render(w io.Writer, r *Report, f Format) error {
	switch f {
	case FormatTable:
		return WriteTable(w, r)
	case FormatCSV:
		return WriteCSV(w, r)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case FormatMarkdown:
		return WriteMarkdown(w, r)
	case FormatHTML:
		return WriteHTML(w, r)
	}
	_, err := ParseFormat(string(f))
	return err
}

// columns are the table's, CSV's and Markdown's columns, one cell function each.
var columns = []struct {
	head string
	cell func(r *Report, g Group) string
}{
	{"gpus", func(r *Report, g Group) string { return strconv.Itoa(g.GPUs) }},
	{"jobs", func(r *Report, g Group) string { return strconv.Itoa(g.Jobs) }},
	{"allocated_gpu_h", func(r *Report, g Group) string { return hours(g.Allocated) }},
	{"measured_gpu_h", func(r *Report, g Group) string { return hours(g.Measured) }},
	{"efficiency", func(r *Report, g Group) string { return pct(g.Efficiency) }},
	{"idle_gpu_h", func(r *Report, g Group) string { return hours(g.Idle) }},
	{"unmeasured_gpu_h", func(r *Report, g Group) string { return hours(g.Unmeasured) }},
	{"gap_gpu_h", func(r *Report, g Group) string { return hours(g.Gaps) }},
	{"mem_peak_gib", func(r *Report, g Group) string {
		if g.MemTotalMiB <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f/%.0f", g.MemPeakMiB/1024, g.MemTotalMiB/1024)
	}},
	{"mem_headroom", func(r *Report, g Group) string { return pct(g.MemHeadroom) }},
	{"measured_by", func(r *Report, g Group) string { return g.MeasuredBy }},
	{"allocated_change", func(r *Report, g Group) string {
		if r.PreviousFrom.IsZero() {
			return "-"
		}
		return change(g)
	}},
	{"efficiency_prev", func(r *Report, g Group) string {
		if g.Previous == nil {
			return "-"
		}
		return pct(g.Previous.Efficiency)
	}},
	{"fair_share_factor", func(r *Report, g Group) string {
		if g.FairShare == nil || g.FairShare.Factor == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f", *g.FairShare.Factor)
	}},
}

func hours(h float64) string {
	if h >= 100 {
		return fmt.Sprintf("%.0f", h)
	}
	return fmt.Sprintf("%.2f", h)
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *p*100)
}

// change is the allocated GPU-hours' change against the previous period.
func change(g Group) string {
	switch {
	case g.Previous == nil:
		return "new"
	case g.Previous.Allocated <= 0:
		return "new"
	}
	return fmt.Sprintf("%+.0f%%", (g.Allocated/g.Previous.Allocated-1)*100)
}

func (r *Report) title() string {
	return fmt.Sprintf("GPU utilization by %s, %s to %s (%s)", r.By, r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339), r.To.Sub(r.From))
}

// filterLine says which allocations the report counts, when not all.
func (r *Report) filterLine() string {
	if r.Filter.IsZero() {
		return ""
	}
	return "only allocations of " + r.Filter.String() + " (totals and the previous period too)"
}

func (r *Report) idleRule() string {
	return fmt.Sprintf("idle: allocated and below %.0f%% activity for at least %s", r.IdleBelow*100, time.Duration(r.IdleForSeconds*float64(time.Second)))
}

// WriteTable writes the report as aligned text for a terminal.
func WriteTable(w io.Writer, r *Report) error {
	bw := &errWriter{w: w}
	fmt.Fprintln(bw, r.title())
	if f := r.filterLine(); f != "" {
		fmt.Fprintln(bw, f)
	}
	fmt.Fprintf(bw, "step %s; %s", time.Duration(r.StepSeconds*float64(time.Second)), r.idleRule())
	if !r.PreviousFrom.IsZero() {
		fmt.Fprintf(bw, "; allocated_change against %s to %s", r.PreviousFrom.UTC().Format(time.RFC3339), r.PreviousTo.UTC().Format(time.RFC3339))
	}
	fmt.Fprint(bw, "\n\n")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{strings.ToUpper(string(r.By))}
	for _, c := range columns {
		head = append(head, strings.ToUpper(c.head))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, g := range append(r.Groups, r.Total) {
		row := []string{g.Key}
		for _, c := range columns {
			row = append(row, c.cell(r, g))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.FairShareNote != "" {
		fmt.Fprintf(bw, "\nfair share: %s\n", r.FairShareNote)
	}
	if len(r.TopIdleJobs) > 0 {
		fmt.Fprintln(bw, "\nTop idle jobs")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tACCOUNT\tUSER\tGPUS\tIDLE_GPU_H\tALLOCATED_GPU_H")
		for _, j := range r.TopIdleJobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", j.Job, j.Account, j.User, j.GPUs, hours(j.Idle), hours(j.Allocated))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return bw.err
}

// WriteCSV writes one header row and one row per group (the total last, key
// "total").
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	head := []string{string(r.By)}
	for _, c := range columns {
		head = append(head, c.head)
	}
	if err := cw.Write(append(head, "from", "to")); err != nil {
		return err
	}
	from, to := r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339)
	for _, g := range append(r.Groups, r.Total) {
		row := []string{g.Key}
		for _, c := range columns {
			row = append(row, c.cell(r, g))
		}
		if err := cw.Write(append(row, from, to)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteMarkdown writes the report as a Markdown table with the top idle jobs.
func WriteMarkdown(w io.Writer, r *Report) error {
	bw := &errWriter{w: w}
	fmt.Fprintf(bw, "## %s\n\n", r.title())
	if f := r.filterLine(); f != "" {
		fmt.Fprintf(bw, "%s.\n\n", mdEscape(strings.ToUpper(f[:1])+f[1:]))
	}
	fmt.Fprintf(bw, "Step %s; %s.\n\n", time.Duration(r.StepSeconds*float64(time.Second)), r.idleRule())
	head := []string{string(r.By)}
	sep := []string{"---"}
	for _, c := range columns {
		head = append(head, c.head)
		sep = append(sep, "---:")
	}
	fmt.Fprintf(bw, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(sep, " | "))
	for _, g := range append(r.Groups, r.Total) {
		row := []string{mdEscape(g.Key)}
		for _, c := range columns {
			row = append(row, mdEscape(c.cell(r, g)))
		}
		fmt.Fprintf(bw, "| %s |\n", strings.Join(row, " | "))
	}
	if len(r.TopIdleJobs) > 0 {
		fmt.Fprint(bw, "\n### Top idle jobs\n\n| job | account | user | gpus | idle_gpu_h | allocated_gpu_h |\n|---|---|---|---:|---:|---:|\n")
		for _, j := range r.TopIdleJobs {
			fmt.Fprintf(bw, "| %s | %s | %s | %d | %s | %s |\n", mdEscape(j.Job), mdEscape(j.Account), mdEscape(j.User), j.GPUs, hours(j.Idle), hours(j.Allocated))
		}
	}
	return bw.err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
