// Package analyzer reads the telemetry store and answers the questions teams and
// on-call ask after the fact: utilization reports (GPU-hours allocated versus
// measured, idle allocations, efficiency, trends), fault analytics and stragglers,
// rendered as tables, CSV, JSON or HTML, and served to Grafana.
//
// Like the scheduler, it never imports cgo packages.
package analyzer
