package defs

//lint:file-ignore SA1019 The SDK marks its v1 dashboard model deprecated in favour of dashboardv2, which only recent Grafana (12, behind its dynamic-dashboards feature) reads; v1 JSON is what Grafana provisions from files, old and new.

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/table"
)

type tablePanel = table.PanelBuilder

// heatmapQuery is a histogram's buckets as Grafana's heatmap format wants them.
func heatmapQuery(expr string) target {
	return target{expr: expr, legend: "{{le}}", format: prometheus.PromQueryFormatHeatmap}
}

// health is the drain controller's dashboard: drains and resumes, the budget,
// actions and fallbacks. The controller's series (gpuwatch_drain_*) are the
// server's own, on its /metrics: they are in the store when something scrapes
// the server into it (deploy/grafana/README.md; `gpuwatch demo` does).
func health() *dashboard.DashboardBuilder {
	b := newBoard(newDashboard(UIDHealth, "gpuwatch / Health and drains",
		"Which nodes the agents found unhealthy and why, what the drain controller did about it (drains, reboots, resumes, refusals and fallbacks), and its safety budget.").
		WithVariable(varNodes.builder()))
	b.row("Nodes").
		add(timeline(panel{title: "Node health state", unit: unitState, mappings: healthStates, w: 24, h: 10,
			desc:    "Each node's health state over time as its agent reports it (gpuwatch_node_health_state): drains (draining, drained), probation after a repair, and resumes back to healthy. Click a node to open it.",
			targets: []target{q(`max by (node) (gpuwatch_node_health_state{node=~"$node"})`, "{{node}}")},
			links:   links(toNode("node"))})).
		add(stacked(panel{title: "Nodes by drain controller state", unit: unitNodes,
			desc:    "Nodes the drain controller knows, by its state for them (gpuwatch_drain_nodes{state}): what the controller has decided, which the agents' view above may precede.",
			targets: []target{q(`sum by (state) (gpuwatch_drain_nodes)`, "{{state}}")}})).
		add(timeSeries(panel{title: "Active health conditions", unit: unitConditions,
			desc:    "Health conditions active on the chosen nodes, by condition and severity (gpuwatch_health_condition).",
			targets: []target{q(`count by (condition, severity) (gpuwatch_health_condition{node=~"$node"})`, "{{condition}} ({{severity}})")}})).
		add(timeline(panel{title: "Conditions per node", unit: unitState, mappings: stateMappings(st{"1", "active", "orange"}), w: 24, h: 10,
			desc:    "When each node's health conditions were active (gpuwatch_health_condition): the reasons behind its drains. Click a row to open the node.",
			targets: []target{q(`max by (node, condition, severity) (gpuwatch_health_condition{node=~"$node"})`, "{{node}} {{condition}} ({{severity}})")},
			links:   links(toNode("node"))}))
	b.row("Budget and actions").
		add(timeSeries(panel{title: "Drain budget", unit: unitNodes,
			desc: "Distinct nodes automation drained within the budget window against the nodes it may drain (gpuwatch_drain_budget_used, gpuwatch_drain_budget_limit). At the limit the circuit breaker trips and further drains wait for a person.",
			targets: []target{
				q(`max(gpuwatch_drain_budget_used)`, "used"),
				q(`max(gpuwatch_drain_budget_limit)`, "limit"),
			}})).
		add(timeline(panel{title: "Circuit breaker", unit: unitState, mappings: onOff("closed", "tripped"), h: 8,
			desc:    "1 while the drain controller's circuit breaker is tripped: a drain was refused for budget (gpuwatch_drain_budget_exhausted). POST /api/gpuwatch/v1/budget/reset closes it.",
			targets: []target{q(`max by (instance) (gpuwatch_drain_budget_exhausted)`, "{{instance}}")}})).
		add(timeSeries(panel{title: "Drain actions", unit: unitCount,
			desc:    "The controller's decisions and actuations since the server started, by action (cordon, drain, evacuate, reboot, resume, exclude-gpu…) and outcome (accepted, refused, retrying, failed, skipped-budget…) (gpuwatch_drain_actions_total).",
			targets: []target{q(`sum by (action, outcome) (gpuwatch_drain_actions_total)`, "{{action}} {{outcome}}")}}).
			LineInterpolation(common.LineInterpolationStepAfter)).
		add(timeSeries(panel{title: "Drain fallbacks", unit: unitCount,
			desc:    "Remedies the scheduler refused for good (a reboot without a RebootProgram) and the containment done instead, since the server started (gpuwatch_drain_fallbacks_total{action,fallback}).",
			targets: []target{q(`sum by (action, fallback) (gpuwatch_drain_fallbacks_total)`, "{{action}} → {{fallback}}")}}).
			LineInterpolation(common.LineInterpolationStepAfter)).
		add(histogramHeatmap(panel{title: "Decision latency", unit: unitSeconds, w: 24,
			desc:    "Time from a health report reaching the controller to its decision, as a heatmap of gpuwatch_drain_decision_latency_seconds's buckets.",
			targets: []target{heatmapQuery(`sum by (le) (increase(gpuwatch_drain_decision_latency_seconds_bucket[$__rate_interval]))`)}}))
	return b.DashboardBuilder
}

const unitConditions = "suffix: conditions"
