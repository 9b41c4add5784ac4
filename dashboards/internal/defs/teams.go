package defs

//lint:file-ignore SA1019 The SDK marks its v1 dashboard model deprecated in favour of dashboardv2, which only recent Grafana (12, behind its dynamic-dashboards feature) reads; v1 JSON is what Grafana provisions from files, old and new.

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"
)

// allocSel picks the allocations of the chosen accounts and users.
const allocSel = `account=~"$account", user=~"$user"`

// perGPU is a DCGM field per GPU keyed by gpu_uuid, the key gpuwatch's series
// (and the allocations) carry: dcgm-exporter's UUID label renamed, one series
// per GPU whatever pod labels came and went.
func perGPU(metric string) string {
	return `max by (gpu_uuid) (label_replace(` + metric + `, "gpu_uuid", "$1", "UUID", "(.+)"))`
}

// share divides a per-allocation expression among the allocations of its GPU:
// a GPU shared by two jobs counts half to each, so that accounts add up to the
// fleet.
func share(expr string) string {
	return `(
  ` + expr + `
    / on (gpu_uuid) group_left ()
  count by (gpu_uuid) (gpuwatch_gpu_allocation_info)
)`
}

// allocated is each allocation's share of its GPU (GPUs).
var allocated = share(`gpuwatch_gpu_allocation_info{` + allocSel + `}`)

// measuredBy is each allocation's share of its GPU's measured work (GPUs), by
// a DCGM field scaled to 0..1.
func measuredBy(metric, scale string) string {
	return share(`gpuwatch_gpu_allocation_info{` + allocSel + `}
    * on (gpu_uuid) group_left ()
  (` + perGPU(metric) + scale + `)`)
}

var measured = measuredBy("DCGM_FI_DEV_GPU_UTIL", " / 100")

// reportTable is gpuwatch's utilization report grouped by one dimension over
// the dashboard's time range, from the gpuwatch data source: allocated,
// measured (SM activity where DCGM profiles, else utilization), idle,
// unmeasured and unobserved GPU-hours, efficiency, memory peak and headroom,
// the previous period, fair share (docs/reports.md); only the allocations of
// the accounts and users the dashboard's variables pick (comma-separated, as
// the report query reads a multi-value variable; All is every allocation).
func reportTable(title, desc, by string) *table.PanelBuilder {
	return analyzerTable(panel{title: title, desc: desc, unit: unitCount},
		map[string]any{"queryType": "report", "by": by, "step": "1m",
			"account": "${" + varAccount.name + ":csv}", "user": "${" + varUser.name + ":csv}"})
}

// teams is utilization by account, user and job: what was allocated against
// what the GPUs measured.
func teams() *dashboard.DashboardBuilder {
	b := newBoard(newDashboard(UIDTeams, "gpuwatch / Team utilization",
		"GPUs allocated against GPUs' worth of measured work by account, user and job (the agents' attribution, gpuwatch_gpu_allocation_info, joined with each GPU's utilization), GPU-hours over the time range, and allocations left idle.").
		WithVariable(varAccount.builder()).
		WithVariable(varUser.builder()))
	withPluginVariable(b.DashboardBuilder)
	b.row("Now").
		add(stacked(panel{title: "Allocated GPUs by account", unit: unitGPUs,
			desc:    "GPUs allocated to each account's jobs (gpuwatch_gpu_allocation_info; a GPU shared by several jobs counts in part to each).",
			targets: []target{q(`sum by (account) `+allocated, "{{account}}")}})).
		add(stacked(panel{title: "Measured GPUs by account", unit: unitGPUs,
			desc:    "GPUs' worth of work each account's allocations measured: each allocated GPU's utilization ÷ 100 (DCGM_FI_DEV_GPU_UTIL), split among the jobs sharing it.",
			targets: []target{q(`sum by (account) `+measured, "{{account}}")}})).
		add(timeSeries(panel{title: "Efficiency by account", unit: unitRatio, min: ptr(0.0), max: ptr(1.0),
			desc:    "Measured ÷ allocated GPUs per account: how much of what each account holds it uses.",
			targets: []target{q(`sum by (account) `+measured+` / sum by (account) `+allocated, "{{account}}")}})).
		add(timeSeries(panel{title: "Idle allocated GPUs by account", unit: unitGPUs,
			desc: "Allocated GPUs whose utilization is under 5% now, by account: capacity held and not used (the alert GpuwatchIdleAllocation fires after 30 minutes of it).",
			targets: []target{q(`count by (account) (
  (gpuwatch_gpu_allocation_info{`+allocSel+`} * on (gpu_uuid) group_left () `+perGPU("DCGM_FI_DEV_GPU_UTIL")+`) < 5
)`, "{{account}}")}})).
		add(timeSeries(panel{title: "Measured GPUs by account, by SM activity", unit: unitGPUs, w: 24,
			desc:    "GPUs' worth of work by DCGM's SM activity (DCGM_FI_PROF_SM_ACTIVE, only where a DCGM host engine runs), split among the jobs sharing a GPU: a stricter measure than utilization, which counts a GPU busy while any kernel runs. Fair share charges this when it is there.",
			targets: []target{q(`sum by (account) `+measuredBy("DCGM_FI_PROF_SM_ACTIVE", ""), "{{account}}")}}))
	b.row("Over the time range").
		add(reportTable("GPU-hours by account",
			"gpuwatch's utilization report by account over the dashboard's time range (the gpuwatch data source): GPU-hours allocated, measured (DCGM's SM activity where it profiles, else utilization), idle (under 5% for 30 minutes or more), unmeasured and unobserved, efficiency, memory peak and headroom, the previous period of the same length and the fair-share factor. Only the allocations of the accounts and users the Account and User variables pick (All: the whole fleet, pods without an account label included), in the rows, the total and the previous period; each account's fair-share factor is its own.",
			"account")).
		add(reportTable("GPU-hours by user",
			"gpuwatch's utilization report by user over the time range: GPU-hours allocated, measured and idle, efficiency, memory headroom, against the previous period; the users the Account and User variables pick.",
			"user")).
		add(reportTable("GPU-hours by job",
			"gpuwatch's utilization report by job over the time range (Slurm job id, or namespace/pod): the jobs that hold more than they use, and those left idle; the jobs of the accounts and users the Account and User variables pick.",
			"job")).
		add(labelTable(panel{title: "Idle allocations", unit: unitPercent, w: 24,
			desc: "Allocations whose GPU averaged under 5% utilization over the time range: the GPU, the job and its owner, and the mean. Click a row to open the GPU.",
			targets: []target{instant(`avg_over_time(
  (max by (node, gpu_index, job_id, account, user) (
    gpuwatch_gpu_allocation_info{` + allocSel + `} * on (gpu_uuid) group_left () ` + perGPU("DCGM_FI_DEV_GPU_UTIL") + `
  ))[$__range:1m]
) < 5`)},
			links: links(toGPURow("node", "gpu_index"))}, "mean utilization"))
	return b.DashboardBuilder
}
