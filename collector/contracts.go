package collector

import (
	"context"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// The seams between the agent's parts. Sources, the health engine and the exporter
// meet only through these types.
//
// Label convention: a source labels a GPU-scoped sample with telemetry.LabelGPUIndex
// (the NVML index) and with the keys that tell its series apart inside the GPU (link,
// xid, ...); it does not repeat the GPU's identity. The exporter adds the identity
// (UUID, PCI bus id, model, driver, device, host name) from the Inventory, spelled as
// the metric's family wants it (dcgm-exporter's keys on DCGM_FI_* series, lower_snake
// on gpuwatch_* series). Node-scoped samples carry no node label: the exporter adds it.

// GPUInfo is one GPU's identity as NVML reported it at discovery.
type GPUInfo struct {
	Index    int                `json:"index"`
	UUID     string             `json:"uuid"`
	PCIBusID telemetry.PCIBusID `json:"pci_bus_id"`
	Minor    int                `json:"minor"` // /dev/nvidia<minor>; dcgm-exporter's "device" label
	Model    string             `json:"model"`
	VBIOS    string             `json:"vbios_version,omitempty"`
	Serial   string             `json:"serial,omitempty"`
	// Lost is true when the GPU answered ERROR_GPU_IS_LOST during discovery; its
	// identity then holds what could still be read (at least the index).
	Lost bool `json:"lost,omitempty"`
}

// Inventory is the node's GPUs, discovered once at start. It is immutable once built.
type Inventory struct {
	Node          string    `json:"node"`
	DriverVersion string    `json:"driver_version"`
	CUDAVersion   string    `json:"cuda_version,omitempty"`
	GPUs          []GPUInfo `json:"gpus"`
}

// ByIndex returns the GPU with NVML index i.
func (inv *Inventory) ByIndex(i int) (GPUInfo, bool) {
	if inv == nil {
		return GPUInfo{}, false
	}
	for _, g := range inv.GPUs {
		if g.Index == i {
			return g, true
		}
	}
	return GPUInfo{}, false
}

// ByUUID returns the GPU with the given UUID.
func (inv *Inventory) ByUUID(uuid string) (GPUInfo, bool) {
	if inv == nil || uuid == "" {
		return GPUInfo{}, false
	}
	for _, g := range inv.GPUs {
		if g.UUID == uuid {
			return g, true
		}
	}
	return GPUInfo{}, false
}

// ByPCI returns the GPU at the given PCI address.
func (inv *Inventory) ByPCI(p telemetry.PCIBusID) (GPUInfo, bool) {
	if inv == nil || p.IsZero() {
		return GPUInfo{}, false
	}
	for _, g := range inv.GPUs {
		if g.PCIBusID == p {
			return g, true
		}
	}
	return GPUInfo{}, false
}

// Xid event origins.
const (
	OriginNVML = "nvml" // an NVML critical-error event
	OriginKmsg = "kmsg" // an NVRM line in the kernel log
)

// XidEvent is one Xid reported by NVML's event set or by the kernel log.
type XidEvent struct {
	Time     time.Time          // when it happened (kernel log) or was received (NVML)
	GPUIndex int                // NVML index; -1 when no GPU of the inventory matches
	PCIBusID telemetry.PCIBusID // zero when unknown
	UUID     string             // empty when unknown
	Xid      int
	Message  string // the driver's text after "N, "; NVML events carry none
	Origin   string // OriginNVML or OriginKmsg
}

// XidSink receives Xid events. The xid source is the sink NVML events go to (it
// merges them with the kernel log); the health engine is the sink the xid source
// forwards accepted, deduplicated events to. ObserveXid must not block.
type XidSink interface {
	ObserveXid(XidEvent)
}

// SXidEvent is one NVSwitch error (SXid) the driver printed in the kernel log:
//
//	nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
type SXidEvent struct {
	Time     time.Time          // the log line's time
	NVSwitch int                // the driver's instance: nvidia-nvswitch<N>
	PCIBusID telemetry.PCIBusID // the NVSwitch's PCI address
	SXid     int
	Fatal    bool   // the driver printed it as Fatal
	Link     int    // the NVSwitch port the line names; -1 when none
	Message  string // the text after "Fatal, " or "Non-fatal, "
}

// SXidSink receives the SXid events the xid source reads (deduplicated like
// Xids); the health engine is one. ObserveSXid must not block.
type SXidSink interface {
	ObserveSXid(SXidEvent)
}

// HealthCollector is implemented by a Source with health-critical fields (lost GPUs,
// ECC, row remapping, NVLink state, recovery action) that the run loop reads on the
// short health schedule. The series CollectHealth emits are never emitted by Collect:
// the snapshot of the source is the union of the two.
type HealthCollector interface {
	CollectHealth(ctx context.Context, emit func(telemetry.Sample)) error
}

// Snapshot is one published view of everything the agent knows. It is immutable
// once published; readers share it without copying.
type Snapshot struct {
	Time      time.Time          // when the cycle that produced it finished
	Inventory *Inventory         // nil before discovery
	Samples   []telemetry.Sample // every source's latest samples, each with its own Time
	Sources   []SourceStatus     // one per registered source, in registry order
	// Parts divides Samples into the consecutive runs each collection produced
	// (a source's full or health-schedule samples, a deriver's), in order. A
	// part's Gen is unique to the collection: two snapshots holding a part with
	// the same Gen hold the same samples there (a full collection rides along
	// unchanged in every health snapshot until the next one), so a consumer that
	// has seen it may skip it. Samples past the last part, and parts with Gen 0,
	// are of unknown origin. Nil in snapshots not built by the Runner.
	Parts []SamplePart
}

// SamplePart is one run of a Snapshot's Samples: those from the previous part's
// End (or 0) up to End, from the collection numbered Gen.
type SamplePart struct {
	End int
	Gen uint64
}

// SourceStatus is a source's self-observation.
type SourceStatus struct {
	Name        string        `json:"name"`
	Up          bool          `json:"up"`
	Err         string        `json:"error,omitempty"`
	Duration    time.Duration `json:"duration"`
	LastSuccess time.Time     `json:"last_success,omitzero"`
	// LastData is when the source last emitted samples, even from a collection
	// that failed in part (one unreadable file): the source is not silent.
	LastData time.Time `json:"last_data,omitzero"`
	Errors   uint64    `json:"errors"`
	Samples  int       `json:"samples"`
}

// Deriver computes series from a cycle's snapshot: the health engine is one. The run
// loop calls Derive after every source has collected and before publishing, so
// derived series are as fresh as their inputs.
type Deriver interface {
	Name() string
	Derive(ctx context.Context, snap *Snapshot, emit func(telemetry.Sample)) error
}

// Allocation says who uses a GPU.
type Allocation struct {
	GPUIndex  int       `json:"gpu_index"`
	JobID     string    `json:"job_id,omitempty"` // Slurm job id
	User      string    `json:"user,omitempty"`
	Account   string    `json:"account,omitempty"`
	Partition string    `json:"partition,omitempty"`
	Pod       string    `json:"pod,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Container string    `json:"container,omitempty"`
	PIDs      []uint32  `json:"pids,omitempty"`
	Observed  time.Time `json:"observed"`
}

// Attributor answers who uses each GPU from a cache refreshed in the background; it
// never blocks on the hardware, the kubelet or /proc.
type Attributor interface {
	Allocations() []Allocation
}
