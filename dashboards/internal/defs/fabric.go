package defs

//lint:file-ignore SA1019 The SDK marks its v1 dashboard model deprecated in favour of dashboardv2, which only recent Grafana (12, behind its dynamic-dashboards feature) reads; v1 JSON is what Grafana provisions from files, old and new.

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// byLeaf attributes a per-node expression to the node's leaf switch group
// (gpuwatch_topology_node_info's leaf) and sums it by leaf.
func byLeaf(expr string) string {
	return fmt.Sprintf(`sum by (leaf) (
  %s
    * on (node) group_left (leaf)
  max by (node, leaf) (gpuwatch_topology_node_info{leaf=~"$leaf"})
)`, expr)
}

// fabric is the InfiniBand and NVLink fabric.
func fabric() *dashboard.DashboardBuilder {
	b := newBoard(newDashboard(UIDFabric, "gpuwatch / Fabric",
		"The fabric: InfiniBand bandwidth, errors and port state per port and per leaf switch (leaves from gpuwatch_topology_node_info), and NVLink throughput and errors per node.").
		WithVariable(varLeaf.builder()).
		WithVariable(varLeafNodes.builder()))
	const sel = `node=~"$node"`
	rate := func(metric, sel string) string {
		return `rate(` + metric + `{` + sel + `}[$__rate_interval])`
	}
	// The per-port error table merges its queries by node, device and port:
	// gpuwatch's own InfiniBand counters spell them ib_device and ib_port.
	gwPort := func(metric string) string {
		return `label_replace(label_replace(increase(` + metric + `{` + sel + `}[$__range]), "device", "$1", "ib_device", "(.*)"), "port", "$1", "ib_port", "(.*)")`
	}
	b.row("InfiniBand per port").
		add(timeSeries(panel{title: "Receive throughput per port", unit: unitBytesSec,
			desc:    "Bytes per second received on each InfiniBand port (node_infiniband_port_data_received_bytes_total). Click a series to open its node.",
			targets: []target{q(`sum by (node, device, port) (`+rate("node_infiniband_port_data_received_bytes_total", sel)+`)`, "{{node}} {{device}}/{{port}}")},
			links:   links(toNode("node"))})).
		add(timeSeries(panel{title: "Transmit throughput per port", unit: unitBytesSec,
			desc:    "Bytes per second sent on each InfiniBand port (node_infiniband_port_data_transmitted_bytes_total). Click a series to open its node.",
			targets: []target{q(`sum by (node, device, port) (`+rate("node_infiniband_port_data_transmitted_bytes_total", sel)+`)`, "{{node}} {{device}}/{{port}}")},
			links:   links(toNode("node"))})).
		add(func() *tablePanel {
			t := labelTable(panel{title: "Error counters per port", unit: unitCount, w: 24,
				desc: "Each port's error counters over the time range: link downs, link error recoveries, receive errors, transmit discards (node_infiniband_*) and symbol errors (gpuwatch_infiniband_symbol_errors_total). Click a row to open the node.",
				targets: []target{
					instant(`sum by (node, device, port) (increase(node_infiniband_link_downed_total{` + sel + `}[$__range]))`),
					instant(`sum by (node, device, port) (increase(node_infiniband_link_error_recovery_total{` + sel + `}[$__range]))`),
					instant(`sum by (node, device, port) (increase(node_infiniband_port_errors_received_total{` + sel + `}[$__range]))`),
					instant(`sum by (node, device, port) (increase(node_infiniband_port_discards_transmitted_total{` + sel + `}[$__range]))`),
					instant(`sum by (node, device, port) (` + gwPort("gpuwatch_infiniband_symbol_errors_total") + `)`),
				},
				links: links(toNodeRow("node"))}, "")
			t.Transformations([]dashboard.DataTransformerConfig{
				{Id: "merge", Options: map[string]any{}},
				{Id: "organize", Options: map[string]any{
					"excludeByName": map[string]bool{"Time": true},
					"renameByName": map[string]string{"Value #A": "link downed", "Value #B": "link error recovery",
						"Value #C": "receive errors", "Value #D": "transmit discards", "Value #E": "symbol errors"}}},
			})
			return t
		}()).
		add(timeline(panel{title: "Port state", unit: unitState, mappings: ibPortStates, w: 24, h: 12,
			desc:    "Each port's logical state over time (node_infiniband_state_id): ACTIVE in service, DOWN a pulled or failed cable, a flapping port flickers.",
			targets: []target{q(`node_infiniband_state_id{`+sel+`}`, "{{node}} {{device}}/{{port}}")},
			links:   links(toNode("node"))}))
	b.row("InfiniBand per leaf switch").
		add(timeSeries(panel{title: "Throughput per leaf", unit: unitBytesSec,
			desc: "Bytes per second through the ports of the nodes under each leaf switch group (InfiniBand port counters joined with gpuwatch_topology_node_info's leaf).",
			targets: []target{
				q(byLeaf(rate("node_infiniband_port_data_received_bytes_total", sel)), "{{leaf}} receive"),
				q(byLeaf(rate("node_infiniband_port_data_transmitted_bytes_total", sel)), "{{leaf}} transmit"),
			}})).
		add(timeSeries(panel{title: "Errors per leaf", unit: unitPerSec,
			desc: "Link downs, receive errors and symbol errors per second on the ports under each leaf switch group: errors on many ports of one leaf point at the switch, on one port at its cable.",
			targets: []target{
				q(byLeaf(rate("node_infiniband_link_downed_total", sel)), "{{leaf}} link downed"),
				q(byLeaf(rate("node_infiniband_port_errors_received_total", sel)), "{{leaf}} receive errors"),
				q(byLeaf(rate("gpuwatch_infiniband_symbol_errors_total", sel)), "{{leaf}} symbol errors"),
			}})).
		add(timeSeries(panel{title: "Ports not active per leaf", unit: unitPorts,
			desc:    "Ports under each leaf switch group that are not ACTIVE (node_infiniband_state_id ≠ 4).",
			targets: []target{q(byLeaf(`(node_infiniband_state_id{`+sel+`} != bool 4)`), "{{leaf}}")}})).
		add(timeSeries(panel{title: "InfiniBand errors per node", unit: unitPerSec,
			desc: "Link downs, receive errors and symbol errors per second summed over each node's ports. Click a series to open the node.",
			targets: []target{
				q(`sum by (node) (`+rate("node_infiniband_link_downed_total", sel)+`)`, "{{node}} link downed"),
				q(`sum by (node) (`+rate("node_infiniband_port_errors_received_total", sel)+`)`, "{{node}} receive errors"),
				q(`sum by (node) (`+rate("gpuwatch_infiniband_symbol_errors_total", sel)+`)`, "{{node}} symbol errors"),
			},
			links: links(toNode("node"))}))
	b.row("NVLink").
		add(timeSeries(panel{title: "NVLink throughput per node", unit: unitBytesSec,
			desc: "Bytes per second over all NVLinks of each node's GPUs (gpuwatch_nvlink_*_bytes_total). Click a series to open the node.",
			targets: []target{
				q(`sum by (node) (`+rate("gpuwatch_nvlink_transmitted_bytes_total", sel)+`)`, "{{node}} transmit"),
				q(`sum by (node) (`+rate("gpuwatch_nvlink_received_bytes_total", sel)+`)`, "{{node}} receive"),
			},
			links: links(toNode("node"))})).
		add(timeSeries(panel{title: "NVLink errors per node", unit: unitPerSec,
			desc: "NVLink CRC flit errors, replays and recoveries per second summed over each node's links (gpuwatch_nvlink_*_errors_total). The node dashboard has them per GPU.",
			targets: []target{
				q(`sum by (node) (`+rate("gpuwatch_nvlink_crc_flit_errors_total", sel)+`)`, "{{node}} CRC flit"),
				q(`sum by (node) (`+rate("gpuwatch_nvlink_replay_errors_total", sel)+`)`, "{{node}} replay"),
				q(`sum by (node) (`+rate("gpuwatch_nvlink_recovery_errors_total", sel)+`)`, "{{node}} recovery"),
			},
			links: links(toNode("node"))})).
		add(timeSeries(panel{title: "NVLinks down per node", unit: unitLinks,
			desc:    "NVLinks of each node's GPUs that are down (1 − gpuwatch_nvlink_up, summed). Click a series to open the node.",
			targets: []target{q(`sum by (node) (1 - gpuwatch_nvlink_up{`+sel+`})`, "{{node}}")},
			links:   links(toNode("node"))}))
	return b.DashboardBuilder
}

const unitPorts = "suffix: ports"
