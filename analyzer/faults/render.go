package faults

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
)

// Formats lists the output formats of the fault report, a subset of the
// utilization report's.
var Formats = []report.Format{report.FormatTable, report.FormatJSON, report.FormatCSV}

// ParseFormat checks an output format's name.
func ParseFormat(s string) (report.Format, error) { return report.ParseFormatOf(s, Formats) }

// Render writes r in format f.
func Render(w io.Writer, r *Report, f report.Format) error {
	switch f {
	case report.FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case report.FormatCSV:
		return renderCSV(w, r)
	case report.FormatTable:
		return renderTable(w, r)
	}
	return fmt.Errorf("the fault report has no %s output", f)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func hoursOrDash(h *float64) string {
	if h == nil {
		return "-"
	}
	return strconv.FormatFloat(*h, 'f', 1, 64)
}

// renderCSV writes one row per number: section, key (node, GPU, port or link,
// "/"-joined), field, value.
func renderCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	rows := [][]string{{"section", "key", "field", "value"}}
	add := func(sec, key, field, value string) { rows = append(rows, []string{sec, key, field, value}) }
	add("summary", "", "from", r.From.Format(time.RFC3339))
	add("summary", "", "to", r.To.Format(time.RFC3339))
	add("summary", "", "nodes", strconv.Itoa(r.Nodes))
	add("summary", "", "gpus", strconv.Itoa(r.GPUs))
	add("summary", "", "xids", num(r.XidTotal))
	add("summary", "", "failures", strconv.Itoa(r.Failures))
	for _, s := range []struct {
		name string
		cs   []Count
	}{{"xid_by_code", r.XidByCode}, {"xid_by_action", r.XidByAct}, {"xid_by_model", r.XidByModel}, {"xid_by_node", r.XidByNode}, {"conditions_by_kind", r.Conditions}} {
		for _, c := range s.cs {
			add(s.name, c.Key, "count", num(c.Count))
		}
	}
	for _, s := range []struct {
		name string
		ms   []MTBF
	}{{"mtbf_by_node", r.MTBFByNode}, {"mtbf_by_model", r.MTBFByMod}} {
		for _, m := range s.ms {
			add(s.name, m.Key, "nodes", strconv.Itoa(m.Nodes))
			add(s.name, m.Key, "observed_node_hours", num(m.ObservedHours))
			add(s.name, m.Key, "failures", strconv.Itoa(m.Failures))
			if m.MTBFHours != nil {
				add(s.name, m.Key, "mtbf_hours", num(*m.MTBFHours))
			}
		}
	}
	for _, l := range r.Lemons {
		add("lemons", l.Node, "drains", strconv.Itoa(l.Drains))
		add("lemons", l.Node, "max_within_window", strconv.Itoa(l.MaxWithin))
	}
	for _, d := range r.DrainSoon {
		k := d.Node + "/" + d.GPU
		add("drain_soon", k, d.What, num(d.Value))
		add("drain_soon", k, d.What+"_growth", num(d.Growth))
		add("drain_soon", k, d.What+"_limit", num(d.Limit))
		if d.HoursToLimit != nil {
			add("drain_soon", k, "hours_to_limit", num(*d.HoursToLimit))
		}
		add("drain_soon", k, "row_remap_pending", strconv.FormatBool(d.RemapPending))
		add("drain_soon", k, "row_remap_failure", strconv.FormatBool(d.RemapFailed))
		add("drain_soon", k, "ecc_dbe_growth", num(d.DBEGrowth))
	}
	for _, p := range r.IBPorts {
		k := p.Node + "/" + p.Device + "/" + p.Port
		add("infiniband_ports", k, "flaps", num(p.Flaps))
		add("infiniband_ports", k, "symbol_errors", num(p.SymbolErrors))
	}
	for _, l := range r.NVLinks {
		k := l.Node + "/" + l.GPU + "/" + l.Link
		add("nvlink_links", k, "crc_errors", num(l.CRCErrors))
		add("nvlink_links", k, "replays", num(l.Replays))
		add("nvlink_links", k, "recovery_errors", num(l.Recovery))
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

func renderTable(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "Fault report %s to %s: %d nodes, %d GPUs, %s Xids, %d failures\n",
		r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Nodes, r.GPUs, num(r.XidTotal), r.Failures)
	if r.DrainAuditNote != "" {
		fmt.Fprintf(w, "Drains not counted: %s\n", r.DrainAuditNote)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	section := func(title, header string, empty bool) bool {
		fmt.Fprintf(tw, "\n%s\n", title)
		if empty {
			fmt.Fprintln(tw, "  (none)")
			return false
		}
		fmt.Fprintln(tw, header)
		return true
	}
	for _, s := range []struct {
		title string
		cs    []Count
	}{{"Xids by code", r.XidByCode}, {"Xids by action", r.XidByAct}, {"Xids by GPU model", r.XidByModel}, {"Xids by node", r.XidByNode}, {"Health conditions raised", r.Conditions}} {
		if section(s.title, "  KEY\tCOUNT", len(s.cs) == 0) {
			for _, c := range s.cs {
				fmt.Fprintf(tw, "  %s\t%s\n", c.Key, num(c.Count))
			}
		}
	}
	for _, s := range []struct {
		title string
		ms    []MTBF
	}{{"MTBF by node (nodes with failures)", r.MTBFByNode}, {"MTBF by GPU model", r.MTBFByMod}} {
		if section(s.title, "  KEY\tNODES\tNODE-HOURS\tFAILURES\tMTBF (h)", len(s.ms) == 0) {
			for _, m := range s.ms {
				fmt.Fprintf(tw, "  %s\t%d\t%.1f\t%d\t%s\n", m.Key, m.Nodes, m.ObservedHours, m.Failures, hoursOrDash(m.MTBFHours))
			}
		}
	}
	title := fmt.Sprintf("Lemon nodes (%d drains or more within %s)", r.LemonCount, time.Duration(r.LemonWindowSec)*time.Second)
	if section(title, "  NODE\tDRAINS\tMOST IN WINDOW\tLAST", len(r.Lemons) == 0) {
		for _, l := range r.Lemons {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\n", l.Node, l.Drains, l.MaxWithin, l.Times[len(l.Times)-1].Format(time.RFC3339))
		}
	}
	if section("Drain soon (retired pages limit 60, uncorrectable remapped rows limit 512)",
		"  NODE\tGPU\tCOUNTER\tVALUE\tGROWTH\tLIMIT\tHOURS TO LIMIT\tREMAP PENDING\tREMAP FAILED", len(r.DrainSoon) == 0) {
		for _, d := range r.DrainSoon {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%t\t%t\n", d.Node, d.GPU, d.What, num(d.Value), num(d.Growth), num(d.Limit),
				hoursOrDash(d.HoursToLimit), d.RemapPending, d.RemapFailed)
		}
	}
	if section("InfiniBand ports by flaps and symbol errors", "  NODE\tDEVICE\tPORT\tFLAPS\tSYMBOL ERRORS", len(r.IBPorts) == 0) {
		for _, p := range r.IBPorts {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", p.Node, p.Device, p.Port, num(p.Flaps), num(p.SymbolErrors))
		}
	}
	if section("NVLink links by CRC and replay errors", "  NODE\tGPU\tLINK\tCRC\tREPLAYS\tRECOVERY", len(r.NVLinks) == 0) {
		for _, l := range r.NVLinks {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", l.Node, l.GPU, l.Link, num(l.CRCErrors), num(l.Replays), num(l.Recovery))
		}
	}
	return tw.Flush()
}
