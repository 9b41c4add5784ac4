package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
	"github.com/gpuwatch/gpuwatch/analyzer/report"
)

// ReportFile is the HTML utilization report's name in the demo's directory.
const ReportFile = "utilization-report.html"

// utilizationReport ends a run: the utilization report by account over the
// run, read from the server's store as `gpuwatch report` would have it,
// printed as a table, and written as one HTML file into the run's directory
// (Options.Dir; the system's temporary directory when the run has none, as
// that one is removed). A report that cannot be made is said, not fatal: the
// run itself is over.
func utilizationReport(o Options, ds *demoServer, start, end time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := report.Compute(ctx, ds.srv.Querier(), report.Options{From: start, To: end, By: report.ByAccount,
		SampleInterval: o.Tick * time.Duration(o.FullEvery), NoPrevious: true})
	if err != nil {
		fmt.Fprintf(o.Out, "\nno utilization report: %v\n", err)
		return
	}
	st, _ := ds.srv.FairShare()
	report.AttachFairShare(r, st)
	fmt.Fprintln(o.Out)
	if err := report.WriteTable(o.Out, r); err != nil {
		return
	}
	dir := o.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, ReportFile)
	if o.Dir == "" {
		path = filepath.Join(dir, fmt.Sprintf("gpuwatch-demo-%s-%s", end.UTC().Format("20060102T150405Z"), ReportFile))
	}
	f, err := os.Create(path)
	if err == nil {
		err = report.WriteHTML(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(o.Out, "\ncannot write the HTML report: %v\n", err)
		return
	}
	fmt.Fprintf(o.Out, "\nHTML report: %s\n", path)
}

// faultSummary ends a run after the utilization report: the fault analytics
// of the run (analyzer/faults, as `gpuwatch faults` has them) in a few lines:
// Xids by code and by the catalog's action, failures and the nodes with most,
// drains, lemon nodes and the GPUs nearest their retirement limits. A summary
// that cannot be made is said, not fatal.
func faultSummary(o Options, ds *demoServer, start, end time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var drains []faults.Drain
	note := "the demo's server runs no drain controller"
	if c := ds.srv.Drain(); c != nil {
		recs, err := c.Audit(start, 0)
		if err == nil {
			drains, note = faults.FromAudit(recs), ""
		}
	}
	r, err := faults.Compute(ctx, ds.srv.Querier(), faults.Options{From: start, To: end, Top: 3, Now: func() time.Time { return end }}, drains, note)
	if err != nil {
		fmt.Fprintf(o.Out, "\nno fault summary: %v\n", err)
		return
	}
	w := o.Out
	fmt.Fprintf(w, "\nFaults over the run (gpuwatch faults): %d nodes, %d GPUs; %.0f Xids", r.Nodes, r.GPUs, r.XidTotal)
	counts := func(cs []faults.Count, n int) string {
		var parts []string
		for i, c := range cs {
			if i == n {
				parts = append(parts, "…")
				break
			}
			parts = append(parts, fmt.Sprintf("%s ×%.0f", c.Key, c.Count))
		}
		return strings.Join(parts, ", ")
	}
	if r.XidTotal > 0 {
		fmt.Fprintf(w, " (by code: %s; by action: %s)", counts(r.XidByCode, 6), counts(r.XidByAct, 4))
	}
	fmt.Fprintf(w, "\n  failures %d (an Xid of action RESET_GPU or stronger, or a drain; within 10 min on a node, one)", r.Failures)
	var worst []string
	for _, m := range r.MTBFByNode {
		if m.Failures > 0 && len(worst) < 4 {
			worst = append(worst, fmt.Sprintf("%s (%d)", m.Key, m.Failures))
		}
	}
	if len(worst) > 0 {
		fmt.Fprintf(w, "; the most on %s", strings.Join(worst, ", "))
	}
	fmt.Fprintln(w)
	if note != "" {
		fmt.Fprintf(w, "  drains not counted: %s\n", note)
	} else {
		fmt.Fprintf(w, "  drains %d; lemon nodes (%d drains within %s): %d\n", len(drains), r.LemonCount,
			time.Duration(r.LemonWindowSec)*time.Second, len(r.Lemons))
	}
	for _, d := range r.DrainSoon {
		fmt.Fprintf(w, "  drain soon: %s %s %s %.0f of %.0f\n", d.Node, d.GPU, d.What, d.Value, d.Limit)
	}
}
