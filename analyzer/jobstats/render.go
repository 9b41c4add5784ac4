package jobstats

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
)

// Formats lists the output formats of job stats.
var Formats = []report.Format{report.FormatTable, report.FormatJSON}

// ParseFormat checks an output format's name.
func ParseFormat(s string) (report.Format, error) { return report.ParseFormatOf(s, Formats) }

// Render writes r in format f.
func Render(w io.Writer, r *Result, f report.Format) error {
	if f == report.FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "Job %s: %s\n", r.Job, r.Verdict)
	fmt.Fprintf(b, "%s to %s (%s)", r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339), r.End.Sub(r.Start))
	for _, kv := range [][2]string{{"account", r.Account}, {"user", r.User}, {"namespace", r.Namespace}} {
		if kv[1] != "" {
			fmt.Fprintf(b, ", %s %s", kv[0], kv[1])
		}
	}
	fmt.Fprintf(b, "; %.2f GPU-hours allocated\n\n", r.AllocatedGPU)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tGPU\tUUID\tMODEL\tHOURS\tSM ACTIVE\tUTIL\tMEM PEAK\tPOWER\tENERGY\tIDLE\tXIDS\tCONDITIONS")
	for _, g := range r.GPUs {
		mem := "-"
		if g.MemPeakMiB != nil {
			mem = fmt.Sprintf("%.0f MiB", *g.MemPeakMiB)
			if g.MemTotalMiB != nil && *g.MemTotalMiB > 0 {
				mem = fmt.Sprintf("%.0f/%.0f MiB (%.0f%%)", *g.MemPeakMiB, *g.MemTotalMiB, 100**g.MemPeakMiB / *g.MemTotalMiB)
			}
		}
		energy := "-"
		if g.EnergyJ != nil {
			energy = fmt.Sprintf("%.3f kWh", *g.EnergyJ/3.6e6)
		}
		idle := time.Duration(g.IdleSeconds * float64(time.Second)).String()
		if g.DidNothing {
			idle += " (did nothing)"
		}
		var xids []string
		for _, x := range g.Xids {
			xids = append(xids, fmt.Sprintf("%s×%g", x.Xid, x.Count))
		}
		var conds []string
		for _, c := range g.Conditions {
			conds = append(conds, c.Condition)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Node, g.Index, g.UUID, dash(g.Model), g.AllocatedHours,
			pct(g.SMActive, 100), pct(g.Utilization, 1), mem, num(g.PowerW, "%.0f W"), energy, idle, dash(strings.Join(xids, " ")), dash(strings.Join(conds, " ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var stretches []string
	for _, g := range r.GPUs {
		for _, st := range g.IdleStretches {
			stretches = append(stretches, fmt.Sprintf("  %s/%s  %s to %s (%s)", g.Node, g.Index, st.From.Format(time.RFC3339), st.To.Format(time.RFC3339),
				time.Duration(st.Seconds*float64(time.Second))))
		}
	}
	if len(stretches) > 0 {
		fmt.Fprintf(b, "\nIdle stretches (below %g%% for %s or more):\n%s\n", 100*r.IdleBelow, time.Duration(r.IdleForSec*float64(time.Second)), strings.Join(stretches, "\n"))
	}
	if len(r.Stragglers) > 0 {
		b.WriteString("\nStragglers (behind the job's other GPUs):\n")
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NODE/GPU\tUUID\tSIGNAL\tMEDIAN\tREFERENCE\tBEHIND\tFOR\tTHROTTLE REASONS")
		for _, s := range r.Stragglers {
			for _, e := range s.Evidence {
				fmt.Fprintf(tw, "  %s/%s\t%s\t%s\t%.4g\t%.4g\t%.1f%%\t%s\t%s\n", s.Node, s.Index, s.UUID, e.Signal, e.Median, e.Reference,
					100*e.Lag, time.Duration(e.BehindSeconds*float64(time.Second)), dash(strings.Join(s.ThrottleReasons, ",")))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func pct(v *float64, scale float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *v*scale)
}

func num(v *float64, f string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(f, *v)
}
