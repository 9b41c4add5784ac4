package defs

//lint:file-ignore SA1019 The SDK marks its v1 dashboard model deprecated in favour of dashboardv2, which only recent Grafana (12, behind its dynamic-dashboards feature) reads; v1 JSON is what Grafana provisions from files, old and new.

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"
)

// Selectors of one node's GPUs: DCGM_FI_* series name the GPU gpu (the
// shipper adds node to them, as to every series an agent writes), gpuwatch_*
// series gpu_index.
const (
	selNodeDCGM = `node=~"$node", gpu=~"$gpu"`
	selNodeGW   = `node=~"$node", gpu_index=~"$gpu"`
)

// ibPortStates are node_exporter's InfiniBand port states (state_id).
var ibPortStates = stateMappings(
	st{"1", "DOWN", "red"},
	st{"2", "INIT", "orange"},
	st{"3", "ARMED", "yellow"},
	st{"4", "ACTIVE", "green"},
	st{"5", "ACTIVE_DEFER", "blue"},
)

// node is one node: every GPU, NVLink, InfiniBand, Xids, conditions, drains.
func node() *dashboard.DashboardBuilder {
	b := newBoard(newDashboard(UIDNode, "gpuwatch / Node",
		"One node: each of its GPUs, the NVLink matrix and errors, its InfiniBand ports, Xids, health conditions and drain history. Click a GPU to open it.").
		WithVariable(varNode.builder()).
		WithVariable(varGPUs.builder()))
	toGPUDCGM := links(toGPU("node", "gpu"))
	toGPUGW := links(toGPU("node", "gpu_index"))
	b.row("GPUs").
		add(labelTable(panel{title: "GPUs", unit: unitState, mappings: healthStates, w: 24, h: 7,
			desc: "The node's GPUs as its agent's inventory names them (gpuwatch_gpu_info) with each GPU's health state now (gpuwatch_gpu_health_state). Click a row to open the GPU.",
			targets: []target{instant(`
max by (node, gpu_index, gpu_uuid) (gpuwatch_gpu_health_state{` + selNodeGW + `})
  * on (gpu_uuid) group_left (model, serial, vbios_version, driver_version, pci_bus_id)
max by (gpu_uuid, model, serial, vbios_version, driver_version, pci_bus_id) (gpuwatch_gpu_info{node=~"$node"})`)},
			links: links(toGPURow("node", "gpu_index"))}, "health")).
		add(timeline(panel{title: "GPU health state", unit: unitState, mappings: healthStates,
			desc:    "Each GPU's health state over time (gpuwatch_gpu_health_state). Click a GPU to open it.",
			targets: []target{q(`max by (node, gpu_index) (gpuwatch_gpu_health_state{`+selNodeGW+`})`, "GPU {{gpu_index}}")},
			links:   toGPUGW})).
		add(timeSeries(panel{title: "GPU utilization", unit: unitPercent, min: ptr(0.0), max: ptr(100.0),
			desc:    "Percent of time over the last sample period a kernel ran on the GPU (DCGM_FI_DEV_GPU_UTIL). Click a GPU to open it.",
			targets: []target{q(`DCGM_FI_DEV_GPU_UTIL{`+selNodeDCGM+`}`, "GPU {{gpu}}")},
			links:   toGPUDCGM})).
		add(timeSeries(panel{title: "Power", unit: unitWatts,
			desc:    "Power drawn by each GPU (DCGM_FI_DEV_POWER_USAGE).",
			targets: []target{q(`DCGM_FI_DEV_POWER_USAGE{`+selNodeDCGM+`}`, "GPU {{gpu}}")},
			links:   toGPUDCGM})).
		add(timeSeries(panel{title: "GPU temperature", unit: unitCelsius,
			desc:    "Each GPU's core temperature (DCGM_FI_DEV_GPU_TEMP). H100s slow down near 90 °C; the GPU detail shows the thresholds.",
			targets: []target{q(`DCGM_FI_DEV_GPU_TEMP{`+selNodeDCGM+`}`, "GPU {{gpu}}")},
			links:   toGPUDCGM})).
		add(timeSeries(panel{title: "Framebuffer used", unit: unitMiB,
			desc:    "GPU memory in use (DCGM_FI_DEV_FB_USED).",
			targets: []target{q(`DCGM_FI_DEV_FB_USED{`+selNodeDCGM+`}`, "GPU {{gpu}}")},
			links:   toGPUDCGM}))
	b.row("NVLink").
		add(nvlinkMatrix()).
		add(timeSeries(panel{title: "NVLinks up", unit: unitLinks,
			desc:    "NVLinks of each GPU that are up (gpuwatch_nvlink_up summed over links; an H100 has 18).",
			targets: []target{q(`sum by (node, gpu_index) (gpuwatch_nvlink_up{`+selNodeGW+`})`, "GPU {{gpu_index}}")},
			links:   toGPUGW})).
		add(timeSeries(panel{title: "NVLink throughput", unit: unitBytesSec,
			desc: "Bytes per second each GPU sends and receives over all its NVLinks (gpuwatch_nvlink_transmitted_bytes_total, gpuwatch_nvlink_received_bytes_total).",
			targets: []target{
				q(`sum by (node, gpu_index) (rate(gpuwatch_nvlink_transmitted_bytes_total{`+selNodeGW+`}[$__rate_interval]))`, "GPU {{gpu_index}} transmit"),
				q(`sum by (node, gpu_index) (rate(gpuwatch_nvlink_received_bytes_total{`+selNodeGW+`}[$__rate_interval]))`, "GPU {{gpu_index}} receive"),
			},
			links: toGPUGW})).
		add(timeSeries(panel{title: "NVLink errors", unit: unitPerSec,
			desc: "NVLink CRC flit errors, replays and recoveries per second of each GPU, summed over its links (gpuwatch_nvlink_*_errors_total); the GPU detail has them by link.",
			targets: []target{
				q(`sum by (node, gpu_index) (rate(gpuwatch_nvlink_crc_flit_errors_total{`+selNodeGW+`}[$__rate_interval]))`, "GPU {{gpu_index}} CRC flit"),
				q(`sum by (node, gpu_index) (rate(gpuwatch_nvlink_replay_errors_total{`+selNodeGW+`}[$__rate_interval]))`, "GPU {{gpu_index}} replay"),
				q(`sum by (node, gpu_index) (rate(gpuwatch_nvlink_recovery_errors_total{`+selNodeGW+`}[$__rate_interval]))`, "GPU {{gpu_index}} recovery"),
			},
			links: toGPUGW}))
	b.row("InfiniBand").
		add(timeSeries(panel{title: "InfiniBand throughput", unit: unitBytesSec,
			desc: "Bytes per second through each InfiniBand port (node_infiniband_port_data_*_bytes_total, node_exporter's names).",
			targets: []target{
				q(`rate(node_infiniband_port_data_transmitted_bytes_total{node=~"$node"}[$__rate_interval])`, "{{device}}/{{port}} transmit"),
				q(`rate(node_infiniband_port_data_received_bytes_total{node=~"$node"}[$__rate_interval])`, "{{device}}/{{port}} receive"),
			}})).
		add(timeline(panel{title: "InfiniBand port state", unit: unitState, mappings: ibPortStates,
			desc:    "Each InfiniBand port's logical state (node_infiniband_state_id): ACTIVE is in service; DOWN a pulled or failed cable.",
			targets: []target{q(`node_infiniband_state_id{node=~"$node"}`, "{{device}}/{{port}}")}})).
		add(timeSeries(panel{title: "InfiniBand errors", unit: unitPerSec, w: 24,
			desc: "Per port: link downs, link error recoveries, receive errors (node_infiniband_*) and symbol errors (gpuwatch_infiniband_symbol_errors_total) per second. Flapping cables show as link downs, marginal ones as symbol errors.",
			targets: []target{
				q(`rate(node_infiniband_link_downed_total{node=~"$node"}[$__rate_interval])`, "{{device}}/{{port}} link downed"),
				q(`rate(node_infiniband_link_error_recovery_total{node=~"$node"}[$__rate_interval])`, "{{device}}/{{port}} link error recovery"),
				q(`rate(node_infiniband_port_errors_received_total{node=~"$node"}[$__rate_interval])`, "{{device}}/{{port}} receive errors"),
				q(`rate(gpuwatch_infiniband_symbol_errors_total{node=~"$node"}[$__rate_interval])`, "{{ib_device}}/{{ib_port}} symbol errors"),
			}}))
	b.row("Faults and drains").
		add(timeline(panel{title: "Last Xid per GPU", unit: unitState, mappings: stateMappings(st{"0", "none", "green"}),
			desc:    "The last Xid each GPU reported (DCGM_FI_DEV_XID_ERRORS, dcgm-exporter's meaning: the Xid number, 0 when none). The table beside counts every event.",
			targets: []target{q(`DCGM_FI_DEV_XID_ERRORS{`+selNodeDCGM+`}`, "GPU {{gpu}}")},
			links:   toGPUDCGM}).ShowValue(common.VisibilityModeAuto)).
		add(labelTable(panel{title: "Xid events", unit: unitCount,
			desc:    "Xid events the node's agent counted since it started, per GPU and Xid (gpuwatch_xid_errors_total). Click a row to open the GPU.",
			targets: []target{instant(`sum by (node, gpu_index, xid) (gpuwatch_xid_errors_total{node=~"$node"})`)},
			links:   links(toGPURow("node", "gpu_index"))}, "events")).
		add(timeline(panel{title: "Health conditions", unit: unitState, mappings: stateMappings(st{"1", "active", "orange"}), w: 24,
			desc:    "When each health condition of the node was active (gpuwatch_health_condition): its target (GPU, NVLink, InfiniBand port), the condition, its severity and the catalog's action.",
			targets: []target{q(`max by (target, condition, severity, action) (gpuwatch_health_condition{node=~"$node"})`, "{{target}} {{condition}} ({{severity}}, {{action}})")}})).
		add(timeline(panel{title: "Drain history", unit: unitState, mappings: healthStates, w: 24, h: 4,
			desc:    "The node's health state over time (gpuwatch_node_health_state): suspect, draining, drained, probation and back to healthy. The Health and drains dashboard has the drain controller's side.",
			targets: []target{q(`max by (node) (gpuwatch_node_health_state{node=~"$node"})`, "{{node}}")}}))
	return b.DashboardBuilder
}

// nvlinkMatrix is the node's GPU-to-GPU NVLink matrix: how many NVLinks join
// each pair of GPUs (gpuwatch_topology_gpu_link_info), one row per GPU.
func nvlinkMatrix() *table.PanelBuilder {
	return apply(table.NewPanelBuilder(), panel{title: "NVLink matrix", unit: unitLinks,
		desc:    "NVLinks between each pair of the node's GPUs, from the agent's topology (gpuwatch_topology_gpu_link_info's nvlink_count; through NVSwitches on HGX, so every pair shows all of a GPU's links). Rows are GPUs, columns their peers.",
		targets: []target{instant(`max by (gpu_index, peer_gpu_index, nvlink_count) (gpuwatch_topology_gpu_link_info{node=~"$node"})`)}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "groupingToMatrix", Options: map[string]any{
			"columnField": "peer_gpu_index", "rowField": "gpu_index", "valueField": "nvlink_count", "emptyValue": "empty"}}).
		CellHeight(common.TableCellHeightSm)
}

const unitLinks = "suffix: links"
