package defs

//lint:file-ignore SA1019 The SDK marks its v1 dashboard model deprecated in favour of dashboardv2, which only recent Grafana (12, behind its dynamic-dashboards feature) reads; v1 JSON is what Grafana provisions from files, old and new.

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// throttleReasons are the bits of DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (NVML's
// clocks event reasons) the GPU detail shows.
var throttleReasons = []struct {
	bit  int
	name string
}{
	{0x1, "GPU idle"},
	{0x4, "SW power cap"},
	{0x8, "HW slowdown"},
	{0x10, "sync boost"},
	{0x20, "SW thermal slowdown"},
	{0x40, "HW thermal slowdown"},
	{0x80, "HW power brake"},
}

// recoveryActions are NVML's GPU recovery actions (field 230).
var recoveryActions = stateMappings(
	st{"0", "none", "green"},
	st{"1", "GPU reset", "orange"},
	st{"2", "node reboot", "red"},
	st{"3", "drain P2P", "yellow"},
	st{"4", "drain and reset", "orange"},
)

// gpu is one GPU in detail.
func gpu() *dashboard.DashboardBuilder {
	b := newBoard(newDashboard(UIDGPU, "gpuwatch / GPU detail",
		"One GPU: clocks and why they are throttled, power, temperatures, ECC and row remapping, health, utilization and DCGM's profiling fields, its NVLinks and PCIe, and the job it runs.").
		WithVariable(varNode.builder()).
		WithVariable(varGPU.builder()))
	throttle := make([]target, 0, len(throttleReasons))
	for _, r := range throttleReasons {
		throttle = append(throttle, q(fmt.Sprintf(`floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{%s} / %d) %% 2`, selNodeDCGM, r.bit), r.name))
	}
	violation := func(metric, name string) target {
		return q(`rate(`+metric+`{`+selNodeDCGM+`}[$__rate_interval]) / 1e9`, name)
	}
	b.row("Clocks and throttling").
		add(timeSeries(panel{title: "Clocks", unit: unitHertz,
			desc: "SM and memory clocks (DCGM_FI_DEV_SM_CLOCK, DCGM_FI_DEV_MEM_CLOCK). A slowdown (heat, a power brake) cuts the SM clock.",
			targets: []target{
				q(`DCGM_FI_DEV_SM_CLOCK{`+selNodeDCGM+`} * 1000000`, "SM"),
				q(`DCGM_FI_DEV_MEM_CLOCK{`+selNodeDCGM+`} * 1000000`, "memory"),
			}})).
		add(timeline(panel{title: "Throttle reasons", unit: unitState,
			mappings: stateMappings(st{"0", "off", "transparent"}, st{"1", "on", "orange"}),
			desc:     "Why the clocks are held down now, bit by bit of DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (NVML's clock event reasons). HW slowdown with HW thermal or HW power brake is a hardware protection, not a setting.",
			targets:  throttle})).
		add(timeSeries(panel{title: "Throttled time by reason", unit: unitRatio, min: ptr(0.0),
			desc: "Share of time the GPU was held below its clocks, by reason (DCGM_FI_DEV_*_VIOLATION, nanoseconds of violation per second).",
			targets: []target{
				violation("DCGM_FI_DEV_POWER_VIOLATION", "power"),
				violation("DCGM_FI_DEV_THERMAL_VIOLATION", "thermal"),
				violation("DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "sync boost"),
				violation("DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "board limit"),
				violation("DCGM_FI_DEV_LOW_UTIL_VIOLATION", "low utilization"),
				violation("DCGM_FI_DEV_RELIABILITY_VIOLATION", "reliability"),
			}})).
		add(timeSeries(panel{title: "Power", unit: unitWatts,
			desc: "Power drawn against the management limit and the limit enforced now (DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_POWER_MGMT_LIMIT, DCGM_FI_DEV_ENFORCED_POWER_LIMIT). An enforced limit under the management limit is a power brake or a cap.",
			targets: []target{
				q(`DCGM_FI_DEV_POWER_USAGE{`+selNodeDCGM+`}`, "drawn"),
				q(`DCGM_FI_DEV_POWER_MGMT_LIMIT{`+selNodeDCGM+`}`, "management limit"),
				q(`DCGM_FI_DEV_ENFORCED_POWER_LIMIT{`+selNodeDCGM+`}`, "enforced limit"),
			}}))
	b.row("Temperatures").
		add(timeSeries(panel{title: "Temperatures", unit: unitCelsius, w: 24,
			desc: "GPU core and HBM temperatures against the GPU's slowdown and shutdown thresholds (DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_MEMORY_TEMP, DCGM_FI_DEV_SLOWDOWN_TEMP, DCGM_FI_DEV_SHUTDOWN_TEMP).",
			targets: []target{
				q(`DCGM_FI_DEV_GPU_TEMP{`+selNodeDCGM+`}`, "GPU"),
				q(`DCGM_FI_DEV_MEMORY_TEMP{`+selNodeDCGM+`}`, "memory"),
				q(`DCGM_FI_DEV_SLOWDOWN_TEMP{`+selNodeDCGM+`}`, "slowdown threshold"),
				q(`DCGM_FI_DEV_SHUTDOWN_TEMP{`+selNodeDCGM+`}`, "shutdown threshold"),
			}}))
	b.row("Memory errors and health").
		add(timeSeries(panel{title: "ECC errors", unit: unitCount,
			desc: "ECC errors counted by the GPU: single-bit (corrected) and double-bit (uncorrected), since the last reset (volatile) and over the GPU's life (aggregate) (DCGM_FI_DEV_ECC_*_TOTAL). Single-bit errors by the thousand an hour predict a remap; one double-bit error needs a reset.",
			targets: []target{
				q(`DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{`+selNodeDCGM+`}`, "single-bit, volatile"),
				q(`DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{`+selNodeDCGM+`}`, "double-bit, volatile"),
				q(`DCGM_FI_DEV_ECC_SBE_AGG_TOTAL{`+selNodeDCGM+`}`, "single-bit, aggregate"),
				q(`DCGM_FI_DEV_ECC_DBE_AGG_TOTAL{`+selNodeDCGM+`}`, "double-bit, aggregate"),
			}})).
		add(timeSeries(panel{title: "Row remapping", unit: unitCount,
			desc: "HBM rows remapped for correctable and uncorrectable errors, a remap waiting for a GPU reset, and a failed remap (DCGM_FI_DEV_*_REMAPPED_ROWS, DCGM_FI_DEV_ROW_REMAP_PENDING, DCGM_FI_DEV_ROW_REMAP_FAILURE). A failure means the GPU goes back to the vendor.",
			targets: []target{
				q(`DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{`+selNodeDCGM+`}`, "rows remapped, correctable"),
				q(`DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{`+selNodeDCGM+`}`, "rows remapped, uncorrectable"),
				q(`DCGM_FI_DEV_ROW_REMAP_PENDING{`+selNodeDCGM+`}`, "remap pending (reset needed)"),
				q(`DCGM_FI_DEV_ROW_REMAP_FAILURE{`+selNodeDCGM+`}`, "remap failed"),
			}})).
		add(timeline(panel{title: "Health state", unit: unitState, mappings: healthStates, h: 4,
			desc:    "The GPU's health state as its agent decides it (gpuwatch_gpu_health_state).",
			targets: []target{q(`max by (node, gpu_index) (gpuwatch_gpu_health_state{`+selNodeGW+`})`, "GPU {{gpu_index}}")}})).
		add(timeline(panel{title: "Driver recovery action", unit: unitState, mappings: recoveryActions, h: 4,
			desc:    "The recovery the driver asks for (DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION, NVML field 230, R565 drivers on): none, GPU reset, node reboot, drain P2P, drain and reset.",
			targets: []target{q(`DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION{`+selNodeDCGM+`}`, "GPU {{gpu}}")}})).
		add(timeline(panel{title: "Health conditions", unit: unitState, mappings: stateMappings(st{"1", "active", "orange"}), w: 24,
			desc:    "When each of the GPU's health conditions was active (gpuwatch_health_condition), with severity and the catalog's action.",
			targets: []target{q(`max by (condition, severity, action) (gpuwatch_health_condition{`+selNodeGW+`})`, "{{condition}} ({{severity}}, {{action}})")}}))
	b.row("Utilization and profiling").
		add(timeSeries(panel{title: "Utilization", unit: unitPercent, min: ptr(0.0), max: ptr(100.0),
			desc: "Percent of time a kernel ran and the memory copy engine was busy (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_MEM_COPY_UTIL). A GPU running any kernel reads busy: the profiling fields beside it say how much of it works.",
			targets: []target{
				q(`DCGM_FI_DEV_GPU_UTIL{`+selNodeDCGM+`}`, "GPU"),
				q(`DCGM_FI_DEV_MEM_COPY_UTIL{`+selNodeDCGM+`}`, "memory copy"),
			}})).
		add(timeSeries(panel{title: "Framebuffer", unit: unitMiB,
			desc: "GPU memory used, free and reserved by the driver (DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE, DCGM_FI_DEV_FB_RESERVED).",
			targets: []target{
				q(`DCGM_FI_DEV_FB_USED{`+selNodeDCGM+`}`, "used"),
				q(`DCGM_FI_DEV_FB_FREE{`+selNodeDCGM+`}`, "free"),
				q(`DCGM_FI_DEV_FB_RESERVED{`+selNodeDCGM+`}`, "reserved"),
			}})).
		add(timeSeries(panel{title: "Profiling: engine and pipe activity", unit: unitRatio, min: ptr(0.0), max: ptr(1.0),
			desc: "DCGM's profiling fields (DCGM_FI_PROF_*, only where a DCGM host engine runs): graphics engine, SM activity and occupancy, tensor, FP64, FP32 and FP16 pipes, DRAM activity. SM activity is what fair share charges.",
			targets: []target{
				q(`DCGM_FI_PROF_GR_ENGINE_ACTIVE{`+selNodeDCGM+`}`, "graphics engine"),
				q(`DCGM_FI_PROF_SM_ACTIVE{`+selNodeDCGM+`}`, "SM active"),
				q(`DCGM_FI_PROF_SM_OCCUPANCY{`+selNodeDCGM+`}`, "SM occupancy"),
				q(`DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{`+selNodeDCGM+`}`, "tensor pipe"),
				q(`DCGM_FI_PROF_PIPE_FP64_ACTIVE{`+selNodeDCGM+`}`, "FP64 pipe"),
				q(`DCGM_FI_PROF_PIPE_FP32_ACTIVE{`+selNodeDCGM+`}`, "FP32 pipe"),
				q(`DCGM_FI_PROF_PIPE_FP16_ACTIVE{`+selNodeDCGM+`}`, "FP16 pipe"),
				q(`DCGM_FI_PROF_DRAM_ACTIVE{`+selNodeDCGM+`}`, "DRAM"),
			}})).
		add(timeSeries(panel{title: "Profiling: PCIe and NVLink traffic", unit: unitBytesSec,
			desc: "Bytes per second over PCIe and NVLink as DCGM's profiling counts them (DCGM_FI_PROF_PCIE_*_BYTES, DCGM_FI_PROF_NVLINK_*_BYTES, only with a DCGM host engine).",
			targets: []target{
				q(`DCGM_FI_PROF_PCIE_TX_BYTES{`+selNodeDCGM+`}`, "PCIe transmit"),
				q(`DCGM_FI_PROF_PCIE_RX_BYTES{`+selNodeDCGM+`}`, "PCIe receive"),
				q(`DCGM_FI_PROF_NVLINK_TX_BYTES{`+selNodeDCGM+`}`, "NVLink transmit"),
				q(`DCGM_FI_PROF_NVLINK_RX_BYTES{`+selNodeDCGM+`}`, "NVLink receive"),
			}}))
	b.row("Interconnect").
		add(timeSeries(panel{title: "NVLink throughput by link", unit: unitBytesSec,
			desc: "Bytes per second over each of the GPU's NVLinks (gpuwatch_nvlink_transmitted_bytes_total, gpuwatch_nvlink_received_bytes_total).",
			targets: []target{
				q(`sum by (link) (rate(gpuwatch_nvlink_transmitted_bytes_total{`+selNodeGW+`}[$__rate_interval]))`, "link {{link}} transmit"),
				q(`sum by (link) (rate(gpuwatch_nvlink_received_bytes_total{`+selNodeGW+`}[$__rate_interval]))`, "link {{link}} receive"),
			}})).
		add(timeSeries(panel{title: "NVLink errors by link", unit: unitPerSec,
			desc: "CRC flit errors, replays and recoveries per second on each NVLink (gpuwatch_nvlink_*_errors_total). Climbing CRC errors on one link is a cable or a connector.",
			targets: []target{
				q(`sum by (link) (rate(gpuwatch_nvlink_crc_flit_errors_total{`+selNodeGW+`}[$__rate_interval]))`, "link {{link}} CRC flit"),
				q(`sum by (link) (rate(gpuwatch_nvlink_replay_errors_total{`+selNodeGW+`}[$__rate_interval]))`, "link {{link}} replay"),
				q(`sum by (link) (rate(gpuwatch_nvlink_recovery_errors_total{`+selNodeGW+`}[$__rate_interval]))`, "link {{link}} recovery"),
			}})).
		add(timeSeries(panel{title: "PCIe replays", unit: unitPerSec,
			desc:    "PCIe replays per second (DCGM_FI_DEV_PCIE_REPLAY_COUNTER): a link retrying packets, often a riser or a slot.",
			targets: []target{q(`rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{`+selNodeDCGM+`}[$__rate_interval])`, "replays")}})).
		add(timeSeries(panel{title: "PCIe link", unit: unitCount,
			desc: "The PCIe link's generation and width now against the most the GPU supports (DCGM_FI_DEV_PCIE_LINK_GEN, _WIDTH, _MAX_LINK_GEN, _MAX_LINK_WIDTH): a GPU trained below its maximum moves data slower.",
			targets: []target{
				q(`DCGM_FI_DEV_PCIE_LINK_GEN{`+selNodeDCGM+`}`, "generation"),
				q(`DCGM_FI_DEV_PCIE_MAX_LINK_GEN{`+selNodeDCGM+`}`, "maximum generation"),
				q(`DCGM_FI_DEV_PCIE_LINK_WIDTH{`+selNodeDCGM+`}`, "width (lanes)"),
				q(`DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH{`+selNodeDCGM+`}`, "maximum width (lanes)"),
			}}))
	b.row("Allocation").
		add(labelTable(panel{title: "Allocated to", unit: unitLabels, w: 24, h: 5,
			desc:    "The job (Slurm) or pod (Kubernetes) the GPU is allocated to now, as the agent's attribution sees it (gpuwatch_gpu_allocation_info).",
			targets: []target{instant(`max by (job_id, account, user, partition, pod, namespace) (gpuwatch_gpu_allocation_info{` + selNodeGW + `})`)}}, ""))
	return b.DashboardBuilder
}
