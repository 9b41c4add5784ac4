package telemetry

import "slices"

// The metric catalog: every series the gpuwatch agent exports, in three families.
//
//   - dcgm-exporter's DCGM_FI_* names, types and help text, with dcgm-exporter's
//     labels (DCGMGPULabels), so existing dashboards and alerts keep working. This
//     covers dcgm-exporter's default set and the fields on-call needs that its
//     default-counters.csv leaves commented out (ECC, retired pages, violations,
//     NVLink errors, DCP profiling). metrics_test.go checks names, types and help
//     against dcgm-exporter's own catalogs and a real scrape.
//   - node_exporter's node_infiniband_* names, types, help and labels (device, port)
//     for InfiniBand port counters.
//   - gpuwatch's own gpuwatch_* series, with lower_snake label keys from labels.go.
//
// The catalog is data: the exporter writes HELP and TYPE from it, sources look up
// what they emit, and docs/metrics.md points here.

// MetricType is a Prometheus metric type.
type MetricType string

// Metric types the catalog uses.
const (
	MetricGauge   MetricType = "gauge"
	MetricCounter MetricType = "counter"
)

// Source names the agent source that produces a series; the values are the collector
// package names and the "source" label of the self-metrics.
type Source string

// Sources.
const (
	SourceNVML        Source = "nvml"
	SourceDCGM        Source = "dcgm"
	SourceNVLink      Source = "nvlink"
	SourceInfiniBand  Source = "infiniband"
	SourceXid         Source = "xid"
	SourceTopology    Source = "topology"
	SourceAttribution Source = "attribution"
	SourcePCI         Source = "pci"    // the PCI bus in sysfs, read without NVML
	SourceHealth      Source = "health" // the agent's health engine
	SourceSelf        Source = "self"   // the agent observing itself
)

// Sources returns every declared source.
func Sources() []Source {
	return []Source{SourceNVML, SourceDCGM, SourceNVLink, SourceInfiniBand, SourceXid,
		SourceTopology, SourceAttribution, SourcePCI, SourceHealth, SourceSelf}
}

// MetricFamily says whose naming a series follows.
type MetricFamily string

// Families.
const (
	FamilyDCGMExporter MetricFamily = "dcgm-exporter" // DCGM_FI_* names and labels
	FamilyNodeExporter MetricFamily = "node_exporter" // node_infiniband_* names and labels
	FamilyGPUWatch     MetricFamily = "gpuwatch"      // gpuwatch_* names, lower_snake labels
)

// MetricDesc describes one exported series.
type MetricDesc struct {
	Name   string       `json:"name"`
	Type   MetricType   `json:"type"`
	Unit   string       `json:"unit,omitempty"` // "MHz", "C", "W", "mJ", "%", "MiB", "ns", "bytes", "bytes/s", "ratio", "seconds"
	Help   string       `json:"help"`           // dcgm-exporter's or node_exporter's text where they have one
	Source Source       `json:"source"`
	Family MetricFamily `json:"family"`
	// DCGMFieldID is the DCGM field (dcgm_fields.h) for DCGM_FI_* series, 0 otherwise.
	DCGMFieldID int `json:"dcgm_field_id,omitempty"`
	// NVMLFieldID is the NVML field-value id where the agent reads the value through
	// nvmlDeviceGetFieldValues rather than a dedicated call, 0 otherwise.
	NVMLFieldID int `json:"nvml_field_id,omitempty"`
	// Labels are the label keys the series carries. DCGM_FI_* series also carry
	// GPU_I_PROFILE and GPU_I_ID on MIG instances and pod, namespace and container
	// when attribution maps a pod; gpuwatch_* labels that do not apply are empty.
	Labels []string `json:"labels"`
}

// dcgm-exporter names (DCGM field names) for the DCGM_FI_* series gpuwatch exports.
const (
	DCGMSMClock                       = "DCGM_FI_DEV_SM_CLOCK"
	DCGMMemClock                      = "DCGM_FI_DEV_MEM_CLOCK"
	DCGMMemoryTemp                    = "DCGM_FI_DEV_MEMORY_TEMP"
	DCGMGPUTemp                       = "DCGM_FI_DEV_GPU_TEMP"
	DCGMSlowdownTemp                  = "DCGM_FI_DEV_SLOWDOWN_TEMP"
	DCGMShutdownTemp                  = "DCGM_FI_DEV_SHUTDOWN_TEMP"
	DCGMPowerUsage                    = "DCGM_FI_DEV_POWER_USAGE"
	DCGMTotalEnergyConsumption        = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
	DCGMPowerMgmtLimit                = "DCGM_FI_DEV_POWER_MGMT_LIMIT"
	DCGMEnforcedPowerLimit            = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"
	DCGMPState                        = "DCGM_FI_DEV_PSTATE"
	DCGMFanSpeed                      = "DCGM_FI_DEV_FAN_SPEED"
	DCGMPCIeReplayCounter             = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
	DCGMPCIeMaxLinkGen                = "DCGM_FI_DEV_PCIE_MAX_LINK_GEN"
	DCGMPCIeMaxLinkWidth              = "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH"
	DCGMPCIeLinkGen                   = "DCGM_FI_DEV_PCIE_LINK_GEN"
	DCGMPCIeLinkWidth                 = "DCGM_FI_DEV_PCIE_LINK_WIDTH"
	DCGMGPUUtil                       = "DCGM_FI_DEV_GPU_UTIL"
	DCGMMemCopyUtil                   = "DCGM_FI_DEV_MEM_COPY_UTIL"
	DCGMEncUtil                       = "DCGM_FI_DEV_ENC_UTIL"
	DCGMDecUtil                       = "DCGM_FI_DEV_DEC_UTIL"
	DCGMXidErrors                     = "DCGM_FI_DEV_XID_ERRORS"
	DCGMPowerViolation                = "DCGM_FI_DEV_POWER_VIOLATION"
	DCGMThermalViolation              = "DCGM_FI_DEV_THERMAL_VIOLATION"
	DCGMSyncBoostViolation            = "DCGM_FI_DEV_SYNC_BOOST_VIOLATION"
	DCGMBoardLimitViolation           = "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION"
	DCGMLowUtilViolation              = "DCGM_FI_DEV_LOW_UTIL_VIOLATION"
	DCGMReliabilityViolation          = "DCGM_FI_DEV_RELIABILITY_VIOLATION"
	DCGMClockThrottleReasons          = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
	DCGMFBTotal                       = "DCGM_FI_DEV_FB_TOTAL"
	DCGMFBFree                        = "DCGM_FI_DEV_FB_FREE"
	DCGMFBUsed                        = "DCGM_FI_DEV_FB_USED"
	DCGMFBReserved                    = "DCGM_FI_DEV_FB_RESERVED"
	DCGMFBUsedPercent                 = "DCGM_FI_DEV_FB_USED_PERCENT"
	DCGMECCSBEVolTotal                = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
	DCGMECCDBEVolTotal                = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
	DCGMECCSBEAggTotal                = "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"
	DCGMECCDBEAggTotal                = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"
	DCGMRetiredSBE                    = "DCGM_FI_DEV_RETIRED_SBE"
	DCGMRetiredDBE                    = "DCGM_FI_DEV_RETIRED_DBE"
	DCGMRetiredPending                = "DCGM_FI_DEV_RETIRED_PENDING"
	DCGMUncorrectableRemappedRows     = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
	DCGMCorrectableRemappedRows       = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"
	DCGMRowRemapFailure               = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
	DCGMRowRemapPending               = "DCGM_FI_DEV_ROW_REMAP_PENDING"
	DCGMNVLinkCRCFlitErrorCountTotal  = "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
	DCGMNVLinkCRCDataErrorCountTotal  = "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"
	DCGMNVLinkReplayErrorCountTotal   = "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"
	DCGMNVLinkRecoveryErrorCountTotal = "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"
	DCGMNVLinkBandwidthTotal          = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
	DCGMVGPULicenseStatus             = "DCGM_FI_DEV_VGPU_LICENSE_STATUS"
	DCGMPersistenceMode               = "DCGM_FI_DEV_PERSISTENCE_MODE"
	DCGMMIGMode                       = "DCGM_FI_DEV_MIG_MODE"
	DCGMGPURecoveryAction             = "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION"
	DCGMProfGrEngineActive            = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	DCGMProfSMActive                  = "DCGM_FI_PROF_SM_ACTIVE"
	DCGMProfSMOccupancy               = "DCGM_FI_PROF_SM_OCCUPANCY"
	DCGMProfPipeTensorActive          = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
	DCGMProfDRAMActive                = "DCGM_FI_PROF_DRAM_ACTIVE"
	DCGMProfPipeFP64Active            = "DCGM_FI_PROF_PIPE_FP64_ACTIVE"
	DCGMProfPipeFP32Active            = "DCGM_FI_PROF_PIPE_FP32_ACTIVE"
	DCGMProfPipeFP16Active            = "DCGM_FI_PROF_PIPE_FP16_ACTIVE"
	DCGMProfPCIeTxBytes               = "DCGM_FI_PROF_PCIE_TX_BYTES"
	DCGMProfPCIeRxBytes               = "DCGM_FI_PROF_PCIE_RX_BYTES"
	DCGMProfNVLinkTxBytes             = "DCGM_FI_PROF_NVLINK_TX_BYTES"
	DCGMProfNVLinkRxBytes             = "DCGM_FI_PROF_NVLINK_RX_BYTES"
)

// node_exporter names for InfiniBand port series.
const (
	NodeIBInfo                                 = "node_infiniband_info"
	NodeIBStateID                              = "node_infiniband_state_id"
	NodeIBPhysicalStateID                      = "node_infiniband_physical_state_id"
	NodeIBRateBytesPerSecond                   = "node_infiniband_rate_bytes_per_second"
	NodeIBLinkDownedTotal                      = "node_infiniband_link_downed_total"
	NodeIBLinkErrorRecoveryTotal               = "node_infiniband_link_error_recovery_total"
	NodeIBPortDataReceivedBytesTotal           = "node_infiniband_port_data_received_bytes_total"
	NodeIBPortDataTransmittedBytesTotal        = "node_infiniband_port_data_transmitted_bytes_total"
	NodeIBPortPacketsReceivedTotal             = "node_infiniband_port_packets_received_total"
	NodeIBPortPacketsTransmittedTotal          = "node_infiniband_port_packets_transmitted_total"
	NodeIBUnicastPacketsReceivedTotal          = "node_infiniband_unicast_packets_received_total"
	NodeIBUnicastPacketsTransmittedTotal       = "node_infiniband_unicast_packets_transmitted_total"
	NodeIBMulticastPacketsReceivedTotal        = "node_infiniband_multicast_packets_received_total"
	NodeIBMulticastPacketsTransmittedTotal     = "node_infiniband_multicast_packets_transmitted_total"
	NodeIBPortErrorsReceivedTotal              = "node_infiniband_port_errors_received_total"
	NodeIBPortDiscardsReceivedTotal            = "node_infiniband_port_discards_received_total"
	NodeIBPortDiscardsTransmittedTotal         = "node_infiniband_port_discards_transmitted_total"
	NodeIBPortConstraintErrorsReceivedTotal    = "node_infiniband_port_constraint_errors_received_total"
	NodeIBPortConstraintErrorsTransmittedTotal = "node_infiniband_port_constraint_errors_transmitted_total"
	NodeIBPortTransmitWaitTotal                = "node_infiniband_port_transmit_wait_total"
)

// gpuwatch's own series.
const (
	// The agent itself.
	MetricBuildInfo                         = "gpuwatch_build_info"
	MetricSourceUp                          = "gpuwatch_source_up"
	MetricSourceDurationSeconds             = "gpuwatch_source_duration_seconds"
	MetricSourceErrorsTotal                 = "gpuwatch_source_errors_total"
	MetricSourceLastSuccessTimestampSeconds = "gpuwatch_source_last_success_timestamp_seconds"

	// The agent's remote-write shipper (collector/shipper).
	MetricShipperSamplesSentTotal         = "gpuwatch_shipper_samples_sent_total"
	MetricShipperSamplesDroppedTotal      = "gpuwatch_shipper_samples_dropped_total"
	MetricShipperQueueBytes               = "gpuwatch_shipper_queue_bytes"
	MetricShipperQueueSamples             = "gpuwatch_shipper_queue_samples"
	MetricShipperSendErrorsTotal          = "gpuwatch_shipper_send_errors_total"
	MetricShipperLastSendTimestampSeconds = "gpuwatch_shipper_last_send_timestamp_seconds"

	// Inventory and faults.
	MetricGPUInfo        = "gpuwatch_gpu_info"
	MetricNodeGPUs       = "gpuwatch_node_gpus"
	MetricGPULost        = "gpuwatch_gpu_lost"
	MetricXidErrorsTotal = "gpuwatch_xid_errors_total"
	// The GPU's registration in the NVLink fabric (NVSwitch systems, Hopper and
	// later): NVML's nvmlGpuFabricInfo_t state and status.
	MetricGPUFabricState  = "gpuwatch_gpu_fabric_state"
	MetricGPUFabricStatus = "gpuwatch_gpu_fabric_status"
	// NVSwitch errors (SXid) from the kernel log.
	MetricNVSwitchSXidErrorsTotal = "gpuwatch_nvswitch_sxid_errors_total"
	// Xid source self-observation: flood repeats dropped, kernel-log records lost.
	MetricXidSuppressedLinesTotal = "gpuwatch_xid_suppressed_lines_total"
	MetricXidKmsgRecordsLostTotal = "gpuwatch_xid_kmsg_records_lost_total"

	// Health.
	MetricGPUHealthState        = "gpuwatch_gpu_health_state"
	MetricNodeHealthState       = "gpuwatch_node_health_state"
	MetricHealthCondition       = "gpuwatch_health_condition"
	MetricHealthConditionsTotal = "gpuwatch_health_conditions_total"

	// NVLink, per link.
	MetricNVLinkUp                    = "gpuwatch_nvlink_up"
	MetricNVLinkCRCFlitErrorsTotal    = "gpuwatch_nvlink_crc_flit_errors_total"
	MetricNVLinkCRCDataErrorsTotal    = "gpuwatch_nvlink_crc_data_errors_total"
	MetricNVLinkReplayErrorsTotal     = "gpuwatch_nvlink_replay_errors_total"
	MetricNVLinkRecoveryErrorsTotal   = "gpuwatch_nvlink_recovery_errors_total"
	MetricNVLinkTransmittedBytesTotal = "gpuwatch_nvlink_transmitted_bytes_total"
	MetricNVLinkReceivedBytesTotal    = "gpuwatch_nvlink_received_bytes_total"

	// InfiniBand error counters node_exporter does not export.
	MetricIBSymbolErrorsTotal                 = "gpuwatch_infiniband_symbol_errors_total"
	MetricIBLocalLinkIntegrityErrorsTotal     = "gpuwatch_infiniband_local_link_integrity_errors_total"
	MetricIBExcessiveBufferOverrunErrorsTotal = "gpuwatch_infiniband_excessive_buffer_overrun_errors_total"
	MetricIBRemotePhysicalErrorsTotal         = "gpuwatch_infiniband_remote_physical_errors_received_total"
	// mlx5 hw_counters (RDMA transport and congestion counters), one series per file.
	MetricIBHWStatisticTotal = "gpuwatch_infiniband_hw_statistic_total"

	// Topology, as info series (value 1).
	MetricTopologyNodeInfo    = "gpuwatch_topology_node_info"
	MetricTopologyGPUInfo     = "gpuwatch_topology_gpu_info"
	MetricTopologyGPULinkInfo = "gpuwatch_topology_gpu_link_info"
	MetricTopologyGPUNICInfo  = "gpuwatch_topology_gpu_nic_info"

	// Attribution.
	MetricGPUAllocationInfo = "gpuwatch_gpu_allocation_info"
	MetricGPUProcesses      = "gpuwatch_gpu_processes"
)

// Series the server derives and records into its store (not an agent's): the
// analyzer writes them, the control plane reads them.
const (
	// MetricStragglerGPU is gpuwatch_straggler_gpu{job_id,node,gpu_uuid,signal}:
	// a GPU's relative lag behind the other GPUs of its job (0.25: 25 % behind)
	// on a signal, present while it is a straggler (analyzer/stragglers).
	// Placement's feeder reads it as straggler marks.
	MetricStragglerGPU = "gpuwatch_straggler_gpu"
	// LabelSignal is its signal label: sm_clock, sm_active, gpu_util, power.
	LabelSignal = "signal"
)

// Label sets shared by many gpuwatch_* series.
var (
	gpuLabels    = []string{LabelNode, LabelGPUIndex, LabelGPUUUID}
	linkLabels   = []string{LabelNode, LabelGPUIndex, LabelGPUUUID, LabelLink}
	ibLabels     = []string{LabelNode, LabelIBDevice, LabelIBPort}
	sourceLabels = []string{LabelNode, LabelSource}
	nodeExpIB    = []string{NodeExpLabelDevice, NodeExpLabelPort} // node_exporter's own keys
)

func dcgm(name string, field int, typ MetricType, unit string, src Source, help string) MetricDesc {
	return MetricDesc{Name: name, Type: typ, Unit: unit, Help: help, Source: src,
		Family: FamilyDCGMExporter, DCGMFieldID: field, Labels: dcgmGPULabels}
}

func nodeIB(name string, typ MetricType, unit, help string) MetricDesc {
	return MetricDesc{Name: name, Type: typ, Unit: unit, Help: help, Source: SourceInfiniBand,
		Family: FamilyNodeExporter, Labels: nodeExpIB}
}

func own(name string, typ MetricType, unit string, src Source, help string, labels ...string) MetricDesc {
	return MetricDesc{Name: name, Type: typ, Unit: unit, Help: help, Source: src,
		Family: FamilyGPUWatch, Labels: labels}
}

// catalog is the metric catalog; Metrics hands out copies.
var catalog = withGPUIdentity([]MetricDesc{
	// Clocks, temperatures, power.
	dcgm(DCGMSMClock, 100, MetricGauge, "MHz", SourceNVML, "SM clock frequency (in MHz)."),
	dcgm(DCGMMemClock, 101, MetricGauge, "MHz", SourceNVML, "Memory clock frequency (in MHz)."),
	dcgm(DCGMMemoryTemp, 140, MetricGauge, "C", SourceNVML, "Memory temperature (in C)."),
	dcgm(DCGMGPUTemp, 150, MetricGauge, "C", SourceNVML, "GPU temperature (in C)."),
	dcgm(DCGMSlowdownTemp, 158, MetricGauge, "C", SourceNVML, "Slowdown temperature for the device (in C)."),
	dcgm(DCGMShutdownTemp, 159, MetricGauge, "C", SourceNVML, "Shutdown temperature for the device (in C)."),
	dcgm(DCGMPowerUsage, 155, MetricGauge, "W", SourceNVML, "Power draw (in W)."),
	dcgm(DCGMTotalEnergyConsumption, 156, MetricCounter, "mJ", SourceNVML, "Total energy consumption since boot (in mJ)."),
	dcgm(DCGMPowerMgmtLimit, 160, MetricGauge, "W", SourceNVML, "Current power limit for the device (in W)."),
	dcgm(DCGMEnforcedPowerLimit, 164, MetricGauge, "W", SourceNVML, "Effective power limit the driver enforces after taking all limiters into account (in W)."),
	dcgm(DCGMPState, 190, MetricGauge, "", SourceNVML, "Performance state (P-State) 0-15, 0 is the highest."),
	dcgm(DCGMFanSpeed, 191, MetricGauge, "%", SourceNVML, "Fan speed for the device (in %)."),

	// PCIe.
	dcgm(DCGMPCIeReplayCounter, 202, MetricCounter, "", SourceNVML, "Total number of PCIe retries."),
	dcgm(DCGMPCIeMaxLinkGen, 235, MetricGauge, "", SourceNVML, "PCIe maximum link generation."),
	dcgm(DCGMPCIeMaxLinkWidth, 236, MetricGauge, "", SourceNVML, "PCIe maximum link width (lanes)."),
	dcgm(DCGMPCIeLinkGen, 237, MetricGauge, "", SourceNVML, "PCIe current link generation."),
	dcgm(DCGMPCIeLinkWidth, 238, MetricGauge, "", SourceNVML, "PCIe current link width (lanes)."),

	// Utilization.
	dcgm(DCGMGPUUtil, 203, MetricGauge, "%", SourceNVML, "GPU utilization (in %)."),
	dcgm(DCGMMemCopyUtil, 204, MetricGauge, "%", SourceNVML, "Memory utilization (in %)."),
	dcgm(DCGMEncUtil, 206, MetricGauge, "%", SourceNVML, "Encoder utilization (in %)."),
	dcgm(DCGMDecUtil, 207, MetricGauge, "%", SourceNVML, "Decoder utilization (in %)."),

	// Errors and violations.
	dcgm(DCGMXidErrors, 230, MetricGauge, "", SourceXid, "Value of the last XID error encountered."),
	dcgm(DCGMPowerViolation, 240, MetricCounter, "ns", SourceNVML, "Throttling duration due to power constraints (in ns)."),
	dcgm(DCGMThermalViolation, 241, MetricCounter, "ns", SourceNVML, "Throttling duration due to thermal constraints (in ns)."),
	dcgm(DCGMSyncBoostViolation, 242, MetricCounter, "ns", SourceNVML, "Throttling duration due to sync-boost constraints (in ns)."),
	dcgm(DCGMBoardLimitViolation, 243, MetricCounter, "ns", SourceNVML, "Throttling duration due to board limit constraints (in ns)."),
	dcgm(DCGMLowUtilViolation, 244, MetricCounter, "ns", SourceNVML, "Throttling duration due to low utilization (in ns)."),
	dcgm(DCGMReliabilityViolation, 245, MetricCounter, "ns", SourceNVML, "Throttling duration due to reliability constraints (in ns)."),
	dcgm(DCGMClockThrottleReasons, 112, MetricGauge, "", SourceNVML, "Current clock throttle reasons (bitmask of DCGM_CLOCKS_THROTTLE_REASON_*)"),

	// Memory usage.
	dcgm(DCGMFBTotal, 250, MetricGauge, "MiB", SourceNVML, "Framebuffer memory total (in MiB)."),
	dcgm(DCGMFBFree, 251, MetricGauge, "MiB", SourceNVML, "Framebuffer memory free (in MiB)."),
	dcgm(DCGMFBUsed, 252, MetricGauge, "MiB", SourceNVML, "Framebuffer memory used (in MiB)."),
	dcgm(DCGMFBReserved, 253, MetricGauge, "MiB", SourceNVML, "Framebuffer memory reserved (in MiB)."),
	dcgm(DCGMFBUsedPercent, 254, MetricGauge, "ratio", SourceNVML, "Fraction of framebuffer memory used: used / (total - reserved), 0.0-1.0."),

	// ECC.
	dcgm(DCGMECCSBEVolTotal, 310, MetricCounter, "", SourceNVML, "Total number of single-bit volatile ECC errors."),
	dcgm(DCGMECCDBEVolTotal, 311, MetricCounter, "", SourceNVML, "Total number of double-bit volatile ECC errors."),
	dcgm(DCGMECCSBEAggTotal, 312, MetricCounter, "", SourceNVML, "Total number of single-bit persistent ECC errors."),
	dcgm(DCGMECCDBEAggTotal, 313, MetricCounter, "", SourceNVML, "Total number of double-bit persistent ECC errors."),

	// Retired pages (before Ampere) and remapped rows (Ampere and later).
	dcgm(DCGMRetiredSBE, 390, MetricCounter, "", SourceNVML, "Total number of retired pages due to single-bit errors."),
	dcgm(DCGMRetiredDBE, 391, MetricCounter, "", SourceNVML, "Total number of retired pages due to double-bit errors."),
	dcgm(DCGMRetiredPending, 392, MetricCounter, "", SourceNVML, "Total number of pages pending retirement."),
	dcgm(DCGMUncorrectableRemappedRows, 393, MetricCounter, "", SourceNVML, "Number of remapped rows for uncorrectable errors"),
	dcgm(DCGMCorrectableRemappedRows, 394, MetricCounter, "", SourceNVML, "Number of remapped rows for correctable errors"),
	dcgm(DCGMRowRemapFailure, 395, MetricGauge, "", SourceNVML, "Whether remapping of rows has failed"),
	dcgm(DCGMRowRemapPending, 396, MetricGauge, "", SourceNVML, "Whether remapping of rows is pending"),

	// NVLink, summed over the GPU's links (per-link series are gpuwatch_nvlink_*).
	dcgm(DCGMNVLinkCRCFlitErrorCountTotal, 409, MetricCounter, "", SourceNVLink, "Total number of NVLink flow-control CRC errors."),
	dcgm(DCGMNVLinkCRCDataErrorCountTotal, 419, MetricCounter, "", SourceNVLink, "Total number of NVLink data CRC errors."),
	dcgm(DCGMNVLinkReplayErrorCountTotal, 429, MetricCounter, "", SourceNVLink, "Total number of NVLink retries."),
	dcgm(DCGMNVLinkRecoveryErrorCountTotal, 439, MetricCounter, "", SourceNVLink, "Total number of NVLink recovery errors."),
	dcgm(DCGMNVLinkBandwidthTotal, 449, MetricCounter, "", SourceNVLink, "Total number of NVLink bandwidth counters for all lanes."),

	// Modes and state.
	dcgm(DCGMVGPULicenseStatus, 526, MetricGauge, "", SourceNVML, "vGPU License status"),
	dcgm(DCGMPersistenceMode, 66, MetricGauge, "", SourceNVML, "Persistence mode: 1 enabled, 0 disabled."),
	dcgm(DCGMMIGMode, 67, MetricGauge, "", SourceNVML, "MIG mode: 1 enabled, 0 disabled."),
	withNVMLField(230, dcgm(DCGMGPURecoveryAction, 1523, MetricGauge, "", SourceNVML,
		"GPU recovery action the driver requires: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset.")),

	// Datacenter profiling (DCP), from DCGM only.
	dcgm(DCGMProfGrEngineActive, 1001, MetricGauge, "ratio", SourceDCGM, "Ratio of time the graphics engine is active."),
	dcgm(DCGMProfSMActive, 1002, MetricGauge, "ratio", SourceDCGM, "The ratio of cycles an SM has at least 1 warp assigned."),
	dcgm(DCGMProfSMOccupancy, 1003, MetricGauge, "ratio", SourceDCGM, "The ratio of number of warps resident on an SM."),
	dcgm(DCGMProfPipeTensorActive, 1004, MetricGauge, "ratio", SourceDCGM, "Ratio of cycles the tensor (HMMA) pipe is active."),
	dcgm(DCGMProfDRAMActive, 1005, MetricGauge, "ratio", SourceDCGM, "Ratio of cycles the device memory interface is active sending or receiving data."),
	dcgm(DCGMProfPipeFP64Active, 1006, MetricGauge, "ratio", SourceDCGM, "Ratio of cycles the fp64 pipes are active."),
	dcgm(DCGMProfPipeFP32Active, 1007, MetricGauge, "ratio", SourceDCGM, "Ratio of cycles the fp32 pipes are active."),
	dcgm(DCGMProfPipeFP16Active, 1008, MetricGauge, "ratio", SourceDCGM, "Ratio of cycles the fp16 pipes are active."),
	dcgm(DCGMProfPCIeTxBytes, 1009, MetricGauge, "bytes/s", SourceDCGM, "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
	dcgm(DCGMProfPCIeRxBytes, 1010, MetricGauge, "bytes/s", SourceDCGM, "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
	dcgm(DCGMProfNVLinkTxBytes, 1011, MetricGauge, "bytes/s", SourceDCGM, "The rate of data transmitted over NVLink - including both protocol headers and data payloads - in bytes per second."),
	dcgm(DCGMProfNVLinkRxBytes, 1012, MetricGauge, "bytes/s", SourceDCGM, "The rate of data received over NVLink - including both protocol headers and data payloads - in bytes per second."),

	// InfiniBand ports, node_exporter's names and help. The data counters count octets:
	// sysfs reports port_rcv_data and port_xmit_data in 4-byte words and the source
	// multiplies by 4, as node_exporter (procfs) does.
	{Name: NodeIBInfo, Type: MetricGauge, Help: "Non-numeric data from /sys/class/infiniband/<device>, value is always 1.",
		Source: SourceInfiniBand, Family: FamilyNodeExporter, Labels: []string{NodeExpLabelBoardID, NodeExpLabelDevice, NodeExpLabelFirmwareVersion, NodeExpLabelHCAType}},
	nodeIB(NodeIBStateID, MetricGauge, "", "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)"),
	nodeIB(NodeIBPhysicalStateID, MetricGauge, "", "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: disable, 4: shift, 5: link up, 6: link error recover, 7: phytest)"),
	nodeIB(NodeIBRateBytesPerSecond, MetricGauge, "bytes/s", "Maximum signal transfer rate"),
	nodeIB(NodeIBLinkDownedTotal, MetricCounter, "", "Number of times the link failed to recover from an error state and went down"),
	nodeIB(NodeIBLinkErrorRecoveryTotal, MetricCounter, "", "Number of times the link successfully recovered from an error state"),
	nodeIB(NodeIBPortDataReceivedBytesTotal, MetricCounter, "bytes", "Number of data octets received on all links"),
	nodeIB(NodeIBPortDataTransmittedBytesTotal, MetricCounter, "bytes", "Number of data octets transmitted on all links"),
	nodeIB(NodeIBPortPacketsReceivedTotal, MetricCounter, "", "Number of packets received on all VLs by this port (including errors)"),
	nodeIB(NodeIBPortPacketsTransmittedTotal, MetricCounter, "", "Number of packets transmitted on all VLs from this port (including errors)"),
	nodeIB(NodeIBUnicastPacketsReceivedTotal, MetricCounter, "", "Number of unicast packets received (including errors)"),
	nodeIB(NodeIBUnicastPacketsTransmittedTotal, MetricCounter, "", "Number of unicast packets transmitted (including errors)"),
	nodeIB(NodeIBMulticastPacketsReceivedTotal, MetricCounter, "", "Number of multicast packets received (including errors)"),
	nodeIB(NodeIBMulticastPacketsTransmittedTotal, MetricCounter, "", "Number of multicast packets transmitted (including errors)"),
	nodeIB(NodeIBPortErrorsReceivedTotal, MetricCounter, "", "Number of packets containing an error that were received on this port"),
	nodeIB(NodeIBPortDiscardsReceivedTotal, MetricCounter, "", "Number of inbound packets discarded by the port because the port is down or congested"),
	nodeIB(NodeIBPortDiscardsTransmittedTotal, MetricCounter, "", "Number of outbound packets discarded by the port because the port is down or congested"),
	nodeIB(NodeIBPortConstraintErrorsReceivedTotal, MetricCounter, "", "Number of packets received on the switch physical port that are discarded"),
	nodeIB(NodeIBPortConstraintErrorsTransmittedTotal, MetricCounter, "", "Number of packets not transmitted from the switch physical port"),
	nodeIB(NodeIBPortTransmitWaitTotal, MetricCounter, "", "Number of ticks during which the port had data to transmit but no data was sent during the entire tick"),

	// The agent itself.
	own(MetricBuildInfo, MetricGauge, "", SourceSelf, "gpuwatch build information; value is always 1.",
		LabelNode, LabelVersion, LabelRevision, LabelGoVersion),
	own(MetricSourceUp, MetricGauge, "", SourceSelf, "Whether the source's last collection succeeded (1) or failed (0).", sourceLabels...),
	own(MetricSourceDurationSeconds, MetricGauge, "seconds", SourceSelf, "Duration of the source's last collection in seconds.", sourceLabels...),
	own(MetricSourceErrorsTotal, MetricCounter, "", SourceSelf, "Number of failed collections of the source.", sourceLabels...),
	own(MetricSourceLastSuccessTimestampSeconds, MetricGauge, "seconds", SourceSelf, "Unix time of the source's last successful collection.", sourceLabels...),
	own(MetricShipperSamplesSentTotal, MetricCounter, "", SourceSelf, "Number of samples the remote-write shipper delivered (the store answered 2xx).", LabelNode),
	own(MetricShipperSamplesDroppedTotal, MetricCounter, "", SourceSelf, "Number of samples the remote-write shipper dropped, by reason: queue_full (oldest data dropped to stay under the queue bound), rejected (the store answered 4xx other than 429), corrupt (an unreadable record in an on-disk queue segment).", LabelNode, LabelReason),
	own(MetricShipperQueueBytes, MetricGauge, "bytes", SourceSelf, "Bytes of compressed samples waiting in the remote-write queue.", LabelNode),
	own(MetricShipperQueueSamples, MetricGauge, "", SourceSelf, "Number of samples waiting in the remote-write queue.", LabelNode),
	own(MetricShipperSendErrorsTotal, MetricCounter, "", SourceSelf, "Number of failed remote-write requests (network errors and non-2xx answers, retried or not).", LabelNode),
	own(MetricShipperLastSendTimestampSeconds, MetricGauge, "seconds", SourceSelf, "Unix time of the remote-write shipper's last successful request.", LabelNode),

	// Inventory and faults.
	own(MetricGPUInfo, MetricGauge, "", SourceNVML, "GPU inventory; value is always 1.",
		LabelNode, LabelGPUIndex, LabelGPUUUID, LabelPCIBusID, LabelModel, LabelDriverVersion, LabelVBIOSVersion, LabelSerial),
	own(MetricNodeGPUs, MetricGauge, "", SourceNVML, "Number of NVIDIA GPUs on the node, by who counts them: source=\"nvml\" (NVML's device count; 0 when NVML did not start), \"pci\" (NVIDIA display and 3D controllers on the PCI bus, read from sysfs without NVML), \"expected\" (the most the node has had, remembered by the health engine).",
		LabelNode, LabelSource),
	own(MetricGPUFabricState, MetricGauge, "", SourceNVML, "The GPU's registration in the NVLink fabric (NVML nvmlGpuFabricState_t): 1 not started, 2 in progress, 3 completed; absent where NVML has no fabric (not an NVSwitch system, or before Hopper).", gpuLabels...),
	own(MetricGPUFabricStatus, MetricGauge, "", SourceNVML, "The result of the GPU's fabric registration once completed, an NVML return code: 0 success; anything else is a fabric manager failure.", gpuLabels...),
	own(MetricGPULost, MetricGauge, "", SourceNVML, "Whether the GPU has fallen off the bus or NVML reports it lost (1), else 0.",
		LabelNode, LabelGPUIndex, LabelGPUUUID, LabelPCIBusID),
	own(MetricXidErrorsTotal, MetricCounter, "", SourceXid, "Number of Xid events by Xid and the action NVIDIA's Xid catalog resolves for it (after the message's decode), from NVML events and the kernel log, deduplicated.",
		LabelNode, LabelGPUIndex, LabelGPUUUID, LabelPCIBusID, LabelXid, LabelAction),
	own(MetricXidSuppressedLinesTotal, MetricCounter, "", SourceXid, "Number of Xid lines and events dropped as flood repeats: identical (GPU, Xid, message) to one counted within the dedup window.",
		LabelNode, LabelGPUIndex, LabelGPUUUID, LabelPCIBusID, LabelXid),
	own(MetricXidKmsgRecordsLostTotal, MetricCounter, "", SourceXid, "Number of kernel log records overwritten before the xid source read them (gaps in /dev/kmsg sequence numbers after EPIPE).",
		LabelNode),
	own(MetricNVSwitchSXidErrorsTotal, MetricCounter, "", SourceXid, "Number of NVSwitch errors (SXid) in the kernel log by NVSwitch and SXid; fatal=\"true\" for the ones the driver prints as Fatal.",
		LabelNode, LabelNVSwitch, LabelPCIBusID, LabelSXid, LabelFatal),

	// Health.
	own(MetricGPUHealthState, MetricGauge, "", SourceHealth, "GPU health state: 0 healthy, 1 suspect, 2 draining, 3 drained, 4 probation.", gpuLabels...),
	own(MetricNodeHealthState, MetricGauge, "", SourceHealth, "Node health state: 0 healthy, 1 suspect, 2 draining, 3 drained, 4 probation.", LabelNode),
	own(MetricHealthCondition, MetricGauge, "", SourceHealth, "An active health condition; value is always 1 while it lasts.",
		LabelNode, LabelGPUIndex, LabelLink, LabelNVSwitch, LabelIBDevice, LabelIBPort,
		LabelTarget, LabelCondition, LabelSeverity, LabelAction),
	own(MetricHealthConditionsTotal, MetricCounter, "", SourceHealth, "Number of health conditions raised.",
		LabelNode, LabelCondition, LabelSeverity),

	// NVLink, per link.
	own(MetricNVLinkUp, MetricGauge, "", SourceNVLink, "Whether the NVLink is active (1) or not (0).", linkLabels...),
	own(MetricNVLinkCRCFlitErrorsTotal, MetricCounter, "", SourceNVLink, "Number of NVLink flow-control CRC errors on the link.", linkLabels...),
	own(MetricNVLinkCRCDataErrorsTotal, MetricCounter, "", SourceNVLink, "Number of NVLink data CRC errors on the link.", linkLabels...),
	own(MetricNVLinkReplayErrorsTotal, MetricCounter, "", SourceNVLink, "Number of NVLink replays (retries) on the link.", linkLabels...),
	own(MetricNVLinkRecoveryErrorsTotal, MetricCounter, "", SourceNVLink, "Number of NVLink recovery events on the link.", linkLabels...),
	own(MetricNVLinkTransmittedBytesTotal, MetricCounter, "bytes", SourceNVLink, "Bytes transmitted on the link, headers and payload.", linkLabels...),
	own(MetricNVLinkReceivedBytesTotal, MetricCounter, "bytes", SourceNVLink, "Bytes received on the link, headers and payload.", linkLabels...),

	// InfiniBand error counters node_exporter leaves out (sysfs counters/…).
	own(MetricIBSymbolErrorsTotal, MetricCounter, "", SourceInfiniBand, "Number of minor link errors detected on one or more physical lanes (symbol_error).", ibLabels...),
	own(MetricIBLocalLinkIntegrityErrorsTotal, MetricCounter, "", SourceInfiniBand, "Number of times the local physical errors exceeded the threshold (local_link_integrity_errors).", ibLabels...),
	own(MetricIBExcessiveBufferOverrunErrorsTotal, MetricCounter, "", SourceInfiniBand, "Number of times buffer overrun errors exceeded the threshold (excessive_buffer_overrun_errors).", ibLabels...),
	own(MetricIBRemotePhysicalErrorsTotal, MetricCounter, "", SourceInfiniBand, "Number of packets received marked with the EBP delimiter (port_rcv_remote_physical_errors).", ibLabels...),
	own(MetricIBHWStatisticTotal, MetricCounter, "", SourceInfiniBand, "Value of an mlx5 hw_counters file of the port (RDMA transport and congestion counters: out_of_buffer, local_ack_timeout_err, np_cnp_sent, …); the counter label is the file name.",
		LabelNode, LabelIBDevice, LabelIBPort, LabelCounter),

	// Topology.
	own(MetricTopologyNodeInfo, MetricGauge, "", SourceTopology, "Where the node sits in the fleet; value is always 1.",
		LabelNode, LabelNVLinkDomain, LabelLeaf, LabelSpine, LabelBlock),
	own(MetricTopologyGPUInfo, MetricGauge, "", SourceTopology, "A GPU's place in the node; value is always 1.",
		LabelNode, LabelGPUIndex, LabelGPUUUID, LabelPCIBusID, LabelNUMANode),
	own(MetricTopologyGPULinkInfo, MetricGauge, "", SourceTopology, "How two GPUs of the node are connected (nvidia-smi topo vocabulary); value is always 1.",
		LabelNode, LabelGPUIndex, LabelPeerGPUIndex, LabelLinkType, LabelNVLinkCount),
	own(MetricTopologyGPUNICInfo, MetricGauge, "", SourceTopology, "PCIe distance from a GPU to a NIC, and whether it is the GPU's rail NIC; value is always 1.",
		LabelNode, LabelGPUIndex, LabelIBDevice, LabelLinkType, LabelRail),

	// Attribution.
	own(MetricGPUAllocationInfo, MetricGauge, "", SourceAttribution, "The job or pod the GPU is allocated to; value is always 1 while allocated.",
		LabelNode, LabelGPUIndex, LabelGPUUUID, LabelJobID, LabelAccount, LabelUser, LabelPartition,
		LabelPod, LabelNamespace, LabelContainer),
	own(MetricGPUProcesses, MetricGauge, "", SourceAttribution, "Number of processes (compute and graphics) running on the GPU.", gpuLabels...),
})

func withNVMLField(id int, d MetricDesc) MetricDesc {
	d.NVMLFieldID = id
	return d
}

// withGPUIdentity completes the label list of every gpuwatch_* series keyed by a
// GPU with the GPU's identity, gpu_uuid and pci_bus_id, which the agent's exporter
// adds from its inventory to every such series: sources name the GPU by index only.
func withGPUIdentity(ds []MetricDesc) []MetricDesc {
	for i := range ds {
		d := &ds[i]
		at := slices.Index(d.Labels, LabelGPUIndex)
		if d.Family != FamilyGPUWatch || at < 0 {
			continue
		}
		for _, k := range []string{LabelPCIBusID, LabelGPUUUID} {
			if !slices.Contains(d.Labels, k) {
				d.Labels = slices.Insert(slices.Clone(d.Labels), at+1, k)
			}
		}
	}
	return ds
}

// metricIndex maps names to catalog positions; built once, never written after.
var metricIndex = func() map[string]int {
	m := make(map[string]int, len(catalog))
	for i, d := range catalog {
		m[d.Name] = i
	}
	return m
}()

// Metrics returns the catalog: every series the agent exports, in catalog order.
// The result is a copy; changing it changes nothing else.
func Metrics() []MetricDesc {
	out := make([]MetricDesc, len(catalog))
	for i, d := range catalog {
		d.Labels = slices.Clone(d.Labels)
		out[i] = d
	}
	return out
}

// LookupMetric returns the description of the series called name.
func LookupMetric(name string) (MetricDesc, bool) {
	i, ok := metricIndex[name]
	if !ok {
		return MetricDesc{}, false
	}
	d := catalog[i]
	d.Labels = slices.Clone(d.Labels)
	return d, true
}

// LookupDCGMField returns the DCGM_FI_* series for DCGM field id.
func LookupDCGMField(id int) (MetricDesc, bool) {
	for _, d := range catalog {
		if d.DCGMFieldID == id && id != 0 {
			d.Labels = slices.Clone(d.Labels)
			return d, true
		}
	}
	return MetricDesc{}, false
}
