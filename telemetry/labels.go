package telemetry

// Label keys that dcgm-exporter puts on its GPU series, spelled exactly as it emits
// them (checked against a real scrape in metrics_test.go). gpuwatch emits these, and
// only these, on the DCGM_FI_* series it exports, so dashboards and alerts written for
// dcgm-exporter keep working. They are not lower_snake and must not be used on
// gpuwatch_* series.
const (
	DCGMLabelGPU           = "gpu"                    // NVML index, "0"
	DCGMLabelUUID          = "UUID"                   // "GPU-20c56d28-…"
	DCGMLabelPCIBusID      = "pci_bus_id"             // NVML form, "00000000:1B:00.0" (dcgm-exporter 3.2 and later)
	DCGMLabelDevice        = "device"                 // device node name, "nvidia0"
	DCGMLabelModelName     = "modelName"              // "NVIDIA H100 80GB HBM3"
	DCGMLabelHostname      = "hostname"               // the node's host name (dcgm-exporter 4.8 and later; see DCGMLabelHostnameLegacy)
	DCGMLabelDriverVersion = "DCGM_FI_DRIVER_VERSION" // "550.144.03"
	// DCGMLabelHostnameLegacy is how dcgm-exporter spelled the host-name label
	// before its 4.8 (NVIDIA/dcgm-exporter#655 renamed Hostname to hostname).
	// The agent emits it instead of DCGMLabelHostname when asked
	// (--labels.hostname=Hostname), for dashboards written for the old name;
	// nothing of gpuwatch reads either: rules, feeds, placement and reports key
	// on LabelNode, which every series carries.
	DCGMLabelHostnameLegacy = "Hostname"
	// MIG: present on series of a MIG instance only.
	DCGMLabelGPUInstanceProfile = "GPU_I_PROFILE" // "1g.10gb"
	DCGMLabelGPUInstanceID      = "GPU_I_ID"      // "1"
	// Kubernetes pod attribution, added by dcgm-exporter's pod mapper; the same
	// strings as gpuwatch's own LabelPod, LabelNamespace and LabelContainer.
	DCGMLabelPod       = "pod"
	DCGMLabelNamespace = "namespace"
	DCGMLabelContainer = "container"
)

// dcgmGPULabels backs DCGMGPULabels.
var dcgmGPULabels = []string{
	DCGMLabelGPU, DCGMLabelUUID, DCGMLabelPCIBusID, DCGMLabelDevice,
	DCGMLabelModelName, DCGMLabelHostname, DCGMLabelDriverVersion,
}

// DCGMGPULabels returns the label keys, in dcgm-exporter's order, that every
// DCGM_FI_* GPU series carries. MIG and pod labels are added where they apply;
// gpuwatch adds its own LabelNode to every series it exports.
func DCGMGPULabels() []string { return append([]string(nil), dcgmGPULabels...) }

// Label keys that node_exporter's infiniband collector puts on its
// node_infiniband_* series, spelled as it emits them; gpuwatch emits the same on
// those series (and its own LabelIBDevice, LabelIBPort on gpuwatch_ib_*).
const (
	NodeExpLabelDevice          = "device"           // HCA, "mlx5_0"
	NodeExpLabelPort            = "port"             // port number, "1"
	NodeExpLabelBoardID         = "board_id"         // node_infiniband_info only
	NodeExpLabelFirmwareVersion = "firmware_version" // node_infiniband_info only
	NodeExpLabelHCAType         = "hca_type"         // node_infiniband_info only
)

// gpuwatch's own label keys: lower_snake, shared by gpuwatch_* series, log records
// (slog keys), API documents and the scheduler. A key names one concept everywhere.
const (
	// Where: fleet and node.
	LabelNode         = "node"          // node name as the scheduler knows it; on every series the agent exports
	LabelCluster      = "cluster"       // cluster name, set by the server for multi-cluster stores
	LabelNVLinkDomain = "nvlink_domain" // NVLink domain (e.g. an NVL72 clique) the node belongs to
	LabelSwitch       = "switch"        // a fabric switch: GUID or name
	LabelLeaf         = "leaf"          // leaf switch above the node
	LabelSpine        = "spine"         // spine switch above the leaf
	LabelBlock        = "block"         // block (pod, super-pod) above the spine
	LabelTier         = "tier"          // a Tier: node, nvlink_domain, leaf, spine, block, cluster
	LabelNUMANode     = "numa_node"     // NUMA node of a GPU or NIC

	// What: GPUs, links and ports.
	LabelGPUUUID       = "gpu_uuid"
	LabelGPUIndex      = "gpu_index"      // NVML index on the node
	LabelPeerGPUIndex  = "peer_gpu_index" // the other end of a GPU↔GPU link
	LabelPCIBusID      = "pci_bus_id"     // canonical form, "0000:1b:00.0"
	LabelModel         = "model"          // GPU product name as NVML reports it
	LabelDriverVersion = "driver_version"
	LabelVBIOSVersion  = "vbios_version"
	LabelSerial        = "serial"
	LabelMIGProfile    = "mig_profile"  // MIG GPU instance profile, "1g.10gb"
	LabelMIGInstance   = "mig_instance" // MIG GPU instance id
	LabelLink          = "link"         // NVLink index on a GPU
	LabelLinkType      = "link_type"    // a LinkType: NVLINK, NVSWITCH, PIX, PXB, PHB, NODE, SYS
	LabelNVLinkCount   = "nvlink_count" // bonded NVLinks between two GPUs
	LabelRail          = "rail"         // "true" when the NIC is the GPU's rail NIC
	LabelNVSwitch      = "nvswitch"     // NVSwitch index on the node
	LabelIBDevice      = "ib_device"    // InfiniBand HCA, "mlx5_0"
	LabelIBPort        = "ib_port"      // InfiniBand port number, "1"
	LabelCounter       = "counter"      // a hardware counter's file name, "out_of_buffer" (mlx5 hw_counters)

	// Health.
	LabelXid       = "xid"
	LabelSXid      = "sxid"      // an NVSwitch error number
	LabelFatal     = "fatal"     // "true" when the event is fatal by its own report (an SXid printed as Fatal)
	LabelCondition = "condition" // a ConditionKind
	LabelSeverity  = "severity"  // a Severity
	LabelAction    = "action"    // an Action
	LabelState     = "state"     // a State
	LabelTarget    = "target"    // a Target, "node1/gpu3/nvlink5"

	// Agent self-observation.
	LabelSource    = "source" // a collector source: nvml, dcgm, infiniband, …
	LabelVersion   = "version"
	LabelRevision  = "revision"
	LabelGoVersion = "go_version"
	LabelReason    = "reason" // why something was dropped: queue_full, rejected, corrupt

	// Who: attribution of GPUs to work.
	//
	// LabelJobID is "job_id", not "job": Prometheus attaches its own "job" label (the
	// scrape job) to every scraped series and renames a conflicting exposed one to
	// "exported_job", so a batch job cannot use that key on a series. Log records use
	// the same key for the same thing.
	LabelJobID     = "job_id" // Slurm job id or Kubernetes workload name
	LabelAccount   = "account"
	LabelUser      = "user"
	LabelPartition = "partition"
	LabelQueue     = "queue"
	LabelPod       = "pod"
	LabelNamespace = "namespace"
	LabelContainer = "container"
)

// labelKeys lists every gpuwatch label key above; LabelKeys hands out copies.
var labelKeys = []string{
	LabelNode, LabelCluster, LabelNVLinkDomain, LabelSwitch, LabelLeaf, LabelSpine,
	LabelBlock, LabelTier, LabelNUMANode,
	LabelGPUUUID, LabelGPUIndex, LabelPeerGPUIndex, LabelPCIBusID, LabelModel,
	LabelDriverVersion, LabelVBIOSVersion, LabelSerial, LabelMIGProfile, LabelMIGInstance,
	LabelLink, LabelLinkType, LabelNVLinkCount, LabelRail, LabelNVSwitch, LabelIBDevice,
	LabelIBPort, LabelCounter,
	LabelXid, LabelSXid, LabelFatal, LabelCondition, LabelSeverity, LabelAction, LabelState, LabelTarget,
	LabelSource, LabelVersion, LabelRevision, LabelGoVersion, LabelReason,
	LabelJobID, LabelAccount, LabelUser, LabelPartition, LabelQueue, LabelPod,
	LabelNamespace, LabelContainer,
}

// The labels a Prometheus scrape adds to every series: the target's address and
// the scrape job. The agent's remote write adds the same two (with what a scrape
// of it would give), so a store fed either way holds the same label sets. They
// are not gpuwatch label keys (LabelKeys): gpuwatch never keys on them.
const (
	LabelInstance = "instance"
	LabelJob      = "job"
	// DefaultJob is the job label the agent's remote write gives its series.
	DefaultJob = "gpuwatch"
)

// LabelKeys returns gpuwatch's own label keys. All are lower_snake.
func LabelKeys() []string { return append([]string(nil), labelKeys...) }

// IsLowerSnake reports whether s is a non-empty lower_snake identifier: lower-case
// ASCII letters, digits and single underscores, starting with a letter and not ending
// with an underscore.
func IsLowerSnake(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '_':
			if s[i-1] == '_' {
				return false
			}
		default:
			return false
		}
	}
	return true
}
