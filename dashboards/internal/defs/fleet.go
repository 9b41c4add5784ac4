package defs

//lint:file-ignore SA1019 The SDK marks its v1 dashboard model deprecated in favour of dashboardv2, which only recent Grafana (12, behind its dynamic-dashboards feature) reads; v1 JSON is what Grafana provisions from files, old and new.

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// fleet is the fleet overview: health, allocated vs measured use, power,
// nodes out of service and why, alerts, Xids. Its fleet-wide series are the
// recording rules of alerts/fleet.rules.yml (gpuwatch:fleet_*, gpuwatch:node_*),
// so that a day's panel reads one series per node or one for the fleet.
func fleet() *dashboard.DashboardBuilder {
	b := newBoard(newDashboard(UIDFleet, "gpuwatch / Fleet overview",
		"The whole fleet at a glance: GPUs by health state, allocated vs measured use, power, nodes out of service and why, firing alerts, Xids by the catalog's action class. Click a node to open it."))
	b.row("Health").
		add(single(panel{title: "GPUs reporting", unit: unitGPUs,
			desc:    "GPUs whose agent reported utilization (recording rule gpuwatch:fleet_gpus:count = count(DCGM_FI_DEV_GPU_UTIL)). A lost GPU or a rebooting node drops out.",
			targets: []target{q(`gpuwatch:fleet_gpus:count`, "GPUs")}})).
		add(single(panel{title: "Nodes out of service", unit: unitNodes,
			desc:    "Nodes whose agent reports them draining, drained or in probation (gpuwatch_node_health_state ≥ 2): taking no new work.",
			targets: []target{q(`sum(gpuwatch_node_health_state >= bool 2)`, "nodes")}})).
		add(single(panel{title: "Alerts firing", unit: unitCount,
			desc:    "Alerts firing now (the ALERTS series the server's rule evaluation writes). The table below lists them.",
			targets: []target{q(`count(ALERTS{alertstate="firing"})`, "alerts")}}).NoValue("0")).
		add(single(panel{title: "Fleet power", unit: unitWatts,
			desc:    "Power drawn by every GPU of the fleet (recording rule gpuwatch:fleet_power_watts:sum).",
			targets: []target{q(`gpuwatch:fleet_power_watts:sum`, "power")}})).
		add(stacked(panel{title: "GPUs by health state", unit: unitGPUs,
			desc:    "GPUs by the agents' health state (recording rule gpuwatch:fleet_gpus:by_health_state): healthy, suspect (a warning condition), draining, drained, probation.",
			targets: []target{q(`gpuwatch:fleet_gpus:by_health_state`, "{{state}}")}})).
		add(timeline(panel{title: "Node health state", unit: unitState, mappings: healthStates,
			desc:    "Each node's health state as its agent reports it (gpuwatch_node_health_state). Click a node to open it.",
			targets: []target{q(`max by (node) (gpuwatch_node_health_state)`, "{{node}}")},
			links:   links(toNode("node"))})).
		add(labelTable(panel{title: "Out-of-service nodes and why", unit: unitLabels,
			desc: "Nodes draining, drained or in probation now, with the health conditions that put them there: the condition, its target (GPU, link, port), severity and the catalog's action. Click a row to open the node.",
			targets: []target{instant(`
max by (node, target, condition, severity, action) (gpuwatch_health_condition)
  and on (node) (gpuwatch_node_health_state >= 2)`)},
			links: links(toNodeRow("node"))}, "")).
		add(labelTable(panel{title: "Firing alerts", unit: unitLabels,
			desc:    "Alerts firing now, with their labels (ALERTS{alertstate=\"firing\"}): the server's built-in rules, or the Prometheus/vmalert that evaluates alerts/*.rules.yml.",
			targets: []target{instant(`ALERTS{alertstate="firing"}`)}}, "", "alertstate"))
	b.row("Utilization").
		add(timeSeries(panel{title: "Allocated vs measured GPUs", unit: unitGPUs,
			desc: "GPUs reporting, GPUs allocated to a job or pod, and GPUs' worth of measured work (the sum of utilization ÷ 100) on allocated GPUs and on all: the gap between allocated and measured is capacity held but not used (recording rules gpuwatch:fleet_*).",
			targets: []target{
				q(`gpuwatch:fleet_gpus:count`, "reporting"),
				q(`gpuwatch:fleet_gpus_allocated:count`, "allocated"),
				q(`gpuwatch:fleet_gpus_allocated_measured:sum`, "measured on allocated GPUs"),
				q(`gpuwatch:fleet_gpus_measured:sum`, "measured on all GPUs"),
			}})).
		add(timeSeries(panel{title: "Allocation efficiency", unit: unitRatio, min: ptr(0.0), max: ptr(1.0),
			desc:    "Measured work on allocated GPUs ÷ allocated GPUs: how much of what the scheduler handed out was used.",
			targets: []target{q(`gpuwatch:fleet_gpus_allocated_measured:sum / gpuwatch:fleet_gpus_allocated:count`, "measured ÷ allocated")}})).
		add(timeSeries(panel{title: "GPU utilization by node", unit: unitPercent,
			desc:    "Mean GPU utilization of each node's GPUs (recording rule gpuwatch:node_gpu_utilization:avg). Click a node to open it.",
			targets: []target{q(`gpuwatch:node_gpu_utilization:avg`, "{{node}}")},
			links:   links(toNode("node"))})).
		add(timeSeries(panel{title: "Power by node", unit: unitWatts,
			desc:    "Power drawn by each node's GPUs (recording rule gpuwatch:node_power_watts:sum). Click a node to open it.",
			targets: []target{q(`gpuwatch:node_power_watts:sum`, "{{node}}")},
			links:   links(toNode("node"))}))
	b.row("Faults").
		add(timeSeries(panel{title: "Xid rate by action class", unit: unitPerMin,
			desc:    "Xid events per minute across the fleet by the action NVIDIA's Xid catalog resolves for them (recording rule gpuwatch:fleet_xid_errors:rate5m over gpuwatch_xid_errors_total; the action label comes with the agents that label Xids by their action).",
			targets: []target{q(`60 * gpuwatch:fleet_xid_errors:rate5m`, "Xids {{action}}")}})).
		add(labelTable(panel{title: "Xid events by GPU", unit: unitCount,
			desc:    "Xid events each GPU's agent has counted since it started (gpuwatch_xid_errors_total, NVML events and the kernel log deduplicated), by Xid. Click a row to open the GPU.",
			targets: []target{instant(`sum by (node, gpu_index, xid) (gpuwatch_xid_errors_total)`)},
			links:   links(toGPURow("node", "gpu_index"))}, "events"))
	return b.DashboardBuilder
}
