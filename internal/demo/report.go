package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

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
