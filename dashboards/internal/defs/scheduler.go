package defs

//lint:file-ignore SA1019 The SDK marks its v1 dashboard model deprecated in favour of dashboardv2, which only recent Grafana (12, behind its dynamic-dashboards feature) reads; v1 JSON is what Grafana provisions from files, old and new.

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// mean is a histogram's mean per observation over the rate interval.
func mean(histogram string) string {
	return `sum(increase(` + histogram + `_sum[$__rate_interval])) / sum(increase(` + histogram + `_count[$__rate_interval]))`
}

// scheduler is placement, the kube-scheduler extender and fair share. Like the
// drain controller's, these series are the server's own (gpuwatch_placement_*,
// gpuwatch_extender_*, gpuwatch_fairshare_*).
func scheduler() *dashboard.DashboardBuilder {
	b := newBoard(newDashboard(UIDScheduler, "gpuwatch / Scheduler",
		"gpuwatch's placement engine (decisions, latency, the topology quality of what it placed, rejections, its snapshot and reservations), the kube-scheduler extender, and fair share by account.").
		WithVariable(varAccount.builder()))
	b.row("Placement").
		add(timeSeries(panel{title: "Placement decisions", unit: unitOpsSec,
			desc:    "Placement decisions per second by outcome (placed, unschedulable, invalid) and mode (reserve, dry_run) (gpuwatch_placement_decisions_total).",
			targets: []target{q(`sum by (outcome, mode) (rate(gpuwatch_placement_decisions_total[$__rate_interval]))`, "{{outcome}} ({{mode}})")}})).
		add(timeSeries(panel{title: "Placement latency", unit: unitSeconds,
			desc: "Time to decide one placement, median and 99th percentile (gpuwatch_placement_latency_seconds).",
			targets: []target{
				q(`histogram_quantile(0.5, sum by (le, mode) (rate(gpuwatch_placement_latency_seconds_bucket[$__rate_interval])))`, "p50 ({{mode}})"),
				q(`histogram_quantile(0.99, sum by (le, mode) (rate(gpuwatch_placement_latency_seconds_bucket[$__rate_interval])))`, "p99 ({{mode}})"),
			}})).
		add(histogramHeatmap(panel{title: "Placement latency distribution", unit: unitSeconds,
			desc:    "Placement latency as a heatmap of gpuwatch_placement_latency_seconds's buckets.",
			targets: []target{heatmapQuery(`sum by (le) (increase(gpuwatch_placement_latency_seconds_bucket[$__rate_interval]))`)}})).
		add(timeSeries(panel{title: "Rejected candidate nodes", unit: unitOpsSec,
			desc:    "Candidate nodes the placement pipeline rejected per second, by the plugin that rejected them (gpuwatch_placement_rejected_nodes_total{plugin}): capacity, health, topology…",
			targets: []target{q(`sum by (plugin) (rate(gpuwatch_placement_rejected_nodes_total[$__rate_interval]))`, "{{plugin}}")}}))
	b.row("Placement quality").
		add(timeSeries(panel{title: "Topology spread of placed gangs", unit: unitCount,
			desc: "Mean leaf switches and NVLink domains each placed gang spans (gpuwatch_placement_leaves_spanned, gpuwatch_placement_nvlink_domains_spanned): 1 is a gang inside one leaf or domain.",
			targets: []target{
				q(mean("gpuwatch_placement_leaves_spanned"), "leaf switches spanned"),
				q(mean("gpuwatch_placement_nvlink_domains_spanned"), "NVLink domains spanned"),
			}})).
		add(timeSeries(panel{title: "Rail alignment and fragmentation", unit: unitRatio, min: ptr(0.0), max: ptr(1.0),
			desc: "Mean share of a placed gang's ranks on the same rail on every node (gpuwatch_placement_rail_alignment), and mean free share of the chosen nodes' capacity left after each placement (gpuwatch_placement_fragmentation_left).",
			targets: []target{
				q(mean("gpuwatch_placement_rail_alignment"), "rail alignment"),
				q(mean("gpuwatch_placement_fragmentation_left"), "fragmentation left"),
			}})).
		add(timeSeries(panel{title: "Placed gangs by lowest common tier", unit: unitOpsSec,
			desc:    "Placed gangs per second by the lowest topology tier all their nodes share (gpuwatch_placement_lca_tier_total{tier}): node, NVLink domain, leaf, spine, block.",
			targets: []target{q(`sum by (tier) (rate(gpuwatch_placement_lca_tier_total[$__rate_interval]))`, "{{tier}}")}}))
	b.row("Snapshot and reservations").
		add(timeSeries(panel{title: "Placement snapshot", unit: unitGPUs,
			desc: "The fleet snapshot placement decides on: its GPUs, those whose health or utilization is stale, and those the drain controller excludes (gpuwatch_placement_snapshot_*).",
			targets: []target{
				q(`max(gpuwatch_placement_snapshot_gpus)`, "GPUs"),
				q(`sum by (value) (gpuwatch_placement_snapshot_stale_gpus)`, "stale {{value}}"),
				q(`max(gpuwatch_placement_snapshot_excluded_gpus)`, "excluded by drains"),
			}})).
		add(timeSeries(panel{title: "Reservations", unit: unitCount,
			desc: "Reservations the placement engine holds and the GPUs they hold (gpuwatch_placement_reservations, gpuwatch_placement_reserved_gpus).",
			targets: []target{
				q(`max(gpuwatch_placement_reservations)`, "reservations"),
				q(`max(gpuwatch_placement_reserved_gpus)`, "reserved GPUs"),
			}})).
		add(timeSeries(panel{title: "Snapshot age", unit: unitSeconds,
			desc:    "Age of the snapshot placement decides on (gpuwatch_placement_snapshot_age_seconds): placement refuses to act on a stale fleet.",
			targets: []target{q(`max(gpuwatch_placement_snapshot_age_seconds)`, "age")}}))
	b.row("kube-scheduler extender").
		add(timeSeries(panel{title: "Extender calls", unit: unitOpsSec,
			desc: "kube-scheduler extender calls per second by verb (filter, prioritize) and result (gpuwatch_extender_requests_total), and calls that let nodes pass unjudged, by reason (gpuwatch_extender_fail_open_total).",
			targets: []target{
				q(`sum by (verb, result) (rate(gpuwatch_extender_requests_total[$__rate_interval]))`, "{{verb}} {{result}}"),
				q(`sum by (verb, reason) (rate(gpuwatch_extender_fail_open_total[$__rate_interval]))`, "{{verb}} failed open: {{reason}}"),
			}})).
		add(timeSeries(panel{title: "Extender latency", unit: unitSeconds,
			desc:    "99th percentile time to answer a kube-scheduler extender call, by verb (gpuwatch_extender_duration_seconds).",
			targets: []target{q(`histogram_quantile(0.99, sum by (le, verb) (rate(gpuwatch_extender_duration_seconds_bucket[$__rate_interval])))`, "p99 {{verb}}")}}))
	b.row("Fair share").
		add(timeSeries(panel{title: "Fair-share factor", unit: unitCount, min: ptr(0.0),
			desc:    "Each user association's fair-share factor under the configured algorithm (gpuwatch_fairshare_factor; higher is more deserving), charged by measured GPU use. With Slurm it reaches pending jobs as SiteFactor.",
			targets: []target{q(`gpuwatch_fairshare_factor{account=~"$account"}`, "{{account}}/{{user}}")}})).
		add(timeSeries(panel{title: "Fair-share usage", unit: unitGPUHours,
			desc:    "Decayed GPU-hours each account was charged: by measured use (max(activity, idle floor) per allocated GPU-second) and by allocation (gpuwatch_fairshare_usage_gpu_seconds{charge}).",
			targets: []target{q(`sum by (account, charge) (gpuwatch_fairshare_usage_gpu_seconds{account=~"$account"}) / 3600`, "{{account}} ({{charge}})")}})).
		add(timeSeries(panel{title: "Normalized shares", unit: unitRatio,
			desc:    "Each user association's share of the whole machine (gpuwatch_fairshare_shares_normalized): what fair share steers usage towards.",
			targets: []target{q(`gpuwatch_fairshare_shares_normalized{account=~"$account"}`, "{{account}}/{{user}}")}})).
		add(timeSeries(panel{title: "Ledger age", unit: unitSeconds,
			desc:    "Seconds since the fair-share ledger's newest input (gpuwatch_fairshare_ledger_age_seconds): a ledger older than its stale_after falls back to allocation.",
			targets: []target{q(`max(gpuwatch_fairshare_ledger_age_seconds)`, "ledger age")}})).
		add(timeline(panel{title: "Fair-share fallback", unit: unitState, mappings: onOff("measured use", "allocation (ledger stale)"), h: 4, w: 24,
			desc:    "1 while the fair-share standing is charged by allocation because the ledger was stale (gpuwatch_fairshare_fallback).",
			targets: []target{q(`max(gpuwatch_fairshare_fallback)`, "fallback")}}))
	return b.DashboardBuilder
}
