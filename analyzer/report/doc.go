// Package report computes GPU utilization reports from the telemetry store:
// per account, user, job, namespace, node or GPU model, the GPU-hours allocated
// and measured, efficiency, idle allocations, memory headroom, the top idle jobs,
// the change against the previous period and, where the server runs fair share,
// the standing. It reads only through telemetry/store.Querier, so it answers the
// same on the embedded store and on VictoriaMetrics or Prometheus.
//
// How a window is cut, how samples are weighted and how gaps count is written in
// docs/reports.md; Compute's comment is the short form. A Summary is what one
// allocation did over a run of steps, kept so that summaries added in time order
// give what the steps give; the server's Downsampler stores every allocation's
// five-minute and hourly summaries in the store, and Compute reads them where
// an interval is marked summarized with its parameters, raw samples elsewhere
// (docs/reports.md, Downsampling). Render writes a report as
// a table, CSV, JSON, Markdown or one self-contained HTML file whose charts are
// SVG drawn here (HTMLFragment is the part the web UI embeds).
package report
