package stragglers

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
)

// Formats lists the output formats of the stragglers report.
var Formats = []report.Format{report.FormatTable, report.FormatJSON}

// ParseFormat checks an output format's name.
func ParseFormat(s string) (report.Format, error) { return report.ParseFormatOf(s, Formats) }

// Render writes r in format f: a table of one row per straggler and signal,
// then the jobs without stragglers; or the JSON the API answers.
func Render(w io.Writer, r *Report, f report.Format) error {
	switch f {
	case report.FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case report.FormatTable:
	default:
		return fmt.Errorf("unknown output %q", f)
	}
	named, withStragglers := 0, 0
	for _, j := range r.Jobs {
		named += len(j.Stragglers)
		if len(j.Stragglers) > 0 {
			withStragglers++
		}
	}
	fmt.Fprintf(w, "Stragglers %s to %s (gap %g%% or more for %s or more): %d multi-GPU jobs, %d with stragglers, %d GPUs named\n",
		r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339), 100*r.MinGap,
		time.Duration(r.MinDurationSec*float64(time.Second)), len(r.Jobs), withStragglers, named)
	if named > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tNODE\tGPU\tSIGNAL\tMEDIAN\tREFERENCE\tLAG\tBEHIND\tTHROTTLE REASONS")
		for _, j := range r.Jobs {
			for _, s := range j.Stragglers {
				reasons := strings.Join(s.ThrottleReasons, ",")
				if reasons == "" {
					reasons = "-"
				}
				for _, e := range s.Evidence {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.4g\t%.4g\t%.1f%%\t%s\t%s\n", j.JobID, s.Node, s.GPU, e.Signal,
						e.Median, e.Reference, 100*e.Lag, time.Duration(e.BehindSeconds*float64(time.Second)), reasons)
				}
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	var healthy []string
	for _, j := range r.Jobs {
		if len(j.Stragglers) == 0 {
			nodes := "nodes"
			if j.Nodes == 1 {
				nodes = "node"
			}
			healthy = append(healthy, fmt.Sprintf("%s (%d GPUs on %d %s)", j.JobID, j.GPUs, j.Nodes, nodes))
		}
	}
	if len(healthy) > 0 {
		fmt.Fprintf(w, "\nNo stragglers: %s\n", strings.Join(healthy, ", "))
	}
	return nil
}
