// Package report computes GPU utilization reports from the telemetry store:
// per account, user, job, namespace, node or GPU model, the GPU-hours allocated
// and measured, efficiency, idle allocations, memory headroom, the top idle jobs,
// the change against the previous period and, where the server runs fair share,
// the standing. It reads only through telemetry/store.Querier, so it answers the
// same on the embedded store and on VictoriaMetrics or Prometheus.
//
// How a window is cut, how samples are weighted and how gaps count is written in
// docs/reports.md; Compute's comment is the short form. Render writes a report as
// a table, CSV, JSON, Markdown or one self-contained HTML file whose charts are
// SVG drawn here (HTMLFragment is the part the web UI embeds).
package report
