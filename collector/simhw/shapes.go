package simhw

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ShapeName names one of the server shapes the simulator knows.
type ShapeName string

// The shapes a FleetSpec can ask for.
const (
	ShapeHGXH100 ShapeName = "hgx-h100" // 8× H100 SXM5 80GB, 4 NVSwitch (NVLink 4), 8× ConnectX-7
	ShapeDGXA100 ShapeName = "dgx-a100" // 8× A100 SXM4 80GB, 6 NVSwitch (NVLink 3), 8× ConnectX (as ConnectX-7)
)

// Shape describes one server model: what NVML reports for its GPUs and how they are
// wired. Values come from real nvidia-smi dumps (../shared/data/gpud-testdata,
// ../shared/data/nvidia-smi-xml) and NVIDIA's published specifications. A Shape is
// plain data; tests may copy one and change fields (a different driver, say) and hand
// it to FleetSpec.Custom.
type Shape struct {
	Name         ShapeName
	ProductName  string // nvmlDeviceGetName
	Architecture nvml.DeviceArchitecture
	ComputeMajor int
	ComputeMinor int

	PCIDeviceID    uint32  // nvmlPciInfo_t.pciDeviceId (device << 16 | vendor)
	PCISubsystemID uint32  // nvmlPciInfo_t.pciSubSystemId
	GPUBus         []uint8 // PCI bus of GPU i; len(GPUBus) is the GPU count
	HCABus         []uint8 // PCI bus of the rail-i HCA (same PCIe switch as GPU i)
	NUMANodes      int     // GPUs are split evenly over this many NUMA nodes (sockets)
	CoresPerSocket int     // physical cores per socket; two hardware threads each
	VBIOSVersion   string  // nvmlDeviceGetVbiosVersion
	BoardPart      string  // nvmlDeviceGetBoardPartNumber
	InforomImage   string  // nvmlDeviceGetInforomImageVersion
	SerialPrefix   string  // serials are 13 digits starting with this
	NVSwitchBus    []uint8 // PCI bus of each NVSwitch; len is the NVSwitch count
	NVSwitchPCIID  uint32  // PCI device id of the NVSwitch
	LinkToSwitch   []int   // NVSwitch index of NVLink l; len is the NVLink count
	NVLinkVersion  nvml.NvlinkVersion
	NVLinkMBps     uint32 // per link and direction, as FI_DEV_NVLINK_SPEED_MBPS_* report it
	MemoryMiB      uint64 // FB total
	ReservedMiB    uint64 // FB reserved by driver and firmware
	BAR1MiB        uint64
	PowerLimitW    float64 // default = enforced = max limit
	MinPowerLimitW float64
	IdlePowerW     float64 // draw of an idle GPU with persistence mode on
	PCIeGen        int
	PCIeWidth      int
	MaxSMMHz       uint32 // max boost; graphics clock equals SM clock
	IdleSMMHz      uint32
	MemMHz         uint32
	MaxVideoMHz    uint32
	IdleVideoMHz   uint32
	ShutdownC      float64 // temperature thresholds (nvmlDeviceGetTemperatureThreshold)
	SlowdownC      float64
	GPUMaxC        float64
	MemMaxC        float64
	AmbientC       float64 // inlet-side temperature a GPU settles to at zero power
	CPerWatt       float64 // steady-state temperature rise per watt drawn
	DriverVersion  string
	CUDAVersion    int  // nvmlSystemGetCudaDriverVersion, e.g. 12080
	FabricInfo     bool // nvmlDeviceGetGpuFabricInfo answers (Hopper and newer)
	PowerAverage   bool // FI_DEV_POWER_AVERAGE answers (not on GA100)
}

// The driver the simulated fleet runs. R565 or newer is needed for the recovery-action
// field (FI_DEV_GET_GPU_RECOVERY_ACTION, 230) and for Xid 154, both of which the health
// model reads; 570.133.20 (CUDA 12.8) is a real data-center release of that branch.
const (
	defaultDriver = "570.133.20"
	defaultCUDA   = 12080
)

// HGXH100 is an 8-GPU HGX H100 80GB board: NVIDIA H100 80GB HBM3 (Hopper, SM 9.0), 18
// NVLink 4 links per GPU spread 5/4/4/5 over 4 NVSwitches, 700 W, PCIe Gen5 x16,
// GPUs 0–3 on NUMA node 0 and 4–7 on NUMA node 1 (2× 56-core Xeon).
func HGXH100() Shape {
	return Shape{
		Name:           ShapeHGXH100,
		ProductName:    "NVIDIA H100 80GB HBM3",
		Architecture:   nvml.DEVICE_ARCH_HOPPER,
		ComputeMajor:   9,
		ComputeMinor:   0,
		PCIDeviceID:    0x233010DE,
		PCISubsystemID: 0x16C110DE,
		GPUBus:         []uint8{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb},
		HCABus:         []uint8{0x17, 0x29, 0x39, 0x5c, 0x99, 0xaa, 0xb9, 0xda},
		NUMANodes:      2,
		CoresPerSocket: 56,
		VBIOSVersion:   "96.00.74.00.0D",
		BoardPart:      "692-2G520-0200-000",
		InforomImage:   "G520.0200.00.05",
		SerialPrefix:   "165012",
		NVSwitchBus:    []uint8{0x05, 0x06, 0x07, 0x08},
		NVSwitchPCIID:  0x22A310DE,
		LinkToSwitch:   []int{0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3},
		NVLinkVersion:  nvml.NVLINK_VERSION_4_0,
		NVLinkMBps:     26562,
		MemoryMiB:      81559,
		ReservedMiB:    551,
		BAR1MiB:        131072,
		PowerLimitW:    700,
		MinPowerLimitW: 200,
		IdlePowerW:     70,
		PCIeGen:        5,
		PCIeWidth:      16,
		MaxSMMHz:       1980,
		IdleSMMHz:      345,
		MemMHz:         2619,
		MaxVideoMHz:    1545,
		IdleVideoMHz:   765,
		ShutdownC:      92,
		SlowdownC:      89,
		GPUMaxC:        87,
		MemMaxC:        95,
		AmbientC:       30,
		CPerWatt:       0.06,
		DriverVersion:  defaultDriver,
		CUDAVersion:    defaultCUDA,
		FabricInfo:     true,
		PowerAverage:   true,
	}
}

// DGXA100 is a DGX A100 640GB: NVIDIA A100-SXM4-80GB (Ampere, SM 8.0), 12 NVLink 3
// links per GPU, two to each of 6 NVSwitches, 400 W, PCIe Gen4 x16. Real DGX A100s
// expose 8 NUMA nodes (NPS4); the simulator keeps the two-socket split of the HGX
// shape (GPUs 0–3 NUMA 0, 4–7 NUMA 1) and uses ConnectX-7 HCAs for the rails
// because that is the HCA model simib implements.
func DGXA100() Shape {
	return Shape{
		Name:           ShapeDGXA100,
		ProductName:    "NVIDIA A100-SXM4-80GB",
		Architecture:   nvml.DEVICE_ARCH_AMPERE,
		ComputeMajor:   8,
		ComputeMinor:   0,
		PCIDeviceID:    0x20B210DE,
		PCISubsystemID: 0x147F10DE,
		GPUBus:         []uint8{0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd},
		HCABus:         []uint8{0x06, 0x0e, 0x46, 0x4d, 0x86, 0x8f, 0xb6, 0xbc},
		NUMANodes:      2,
		CoresPerSocket: 64,
		VBIOSVersion:   "92.00.36.00.02",
		BoardPart:      "692-2G506-0212-002",
		InforomImage:   "G506.0212.00.01",
		SerialPrefix:   "165052",
		NVSwitchBus:    []uint8{0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9},
		NVSwitchPCIID:  0x1AF110DE,
		LinkToSwitch:   []int{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5},
		NVLinkVersion:  nvml.NVLINK_VERSION_3_0,
		NVLinkMBps:     25000,
		MemoryMiB:      81920,
		ReservedMiB:    869,
		BAR1MiB:        131072,
		PowerLimitW:    400,
		MinPowerLimitW: 100,
		IdlePowerW:     55,
		PCIeGen:        4,
		PCIeWidth:      16,
		MaxSMMHz:       1410,
		IdleSMMHz:      210,
		MemMHz:         1593,
		MaxVideoMHz:    1290,
		IdleVideoMHz:   795,
		ShutdownC:      92,
		SlowdownC:      89,
		GPUMaxC:        85,
		MemMaxC:        95,
		AmbientC:       28,
		CPerWatt:       0.1,
		DriverVersion:  defaultDriver,
		CUDAVersion:    defaultCUDA,
		FabricInfo:     false,
		PowerAverage:   false,
	}
}

// MaxGPUs is the most GPUs a node of any shape has; scenario files are checked
// against it before they meet a fleet.
const MaxGPUs = 8

// ShapeByName returns the shape called name.
func ShapeByName(name ShapeName) (Shape, error) {
	switch name {
	case ShapeHGXH100:
		return HGXH100(), nil
	case ShapeDGXA100:
		return DGXA100(), nil
	}
	return Shape{}, fmt.Errorf("unknown shape %q (want %s or %s)", name, ShapeHGXH100, ShapeDGXA100)
}

// GPUs is the number of GPUs per node.
func (s *Shape) GPUs() int { return len(s.GPUBus) }

// NVLinks is the number of NVLinks per GPU.
func (s *Shape) NVLinks() int { return len(s.LinkToSwitch) }

// NUMAOf returns the NUMA node of GPU i.
func (s *Shape) NUMAOf(i int) int {
	per := (s.GPUs() + s.NUMANodes - 1) / s.NUMANodes
	return i / per
}

// validate checks that a (possibly hand-edited) shape is usable.
func (s *Shape) validate() error {
	switch {
	case s.GPUs() == 0 || s.GPUs() > MaxGPUs:
		return fmt.Errorf("GPUBus: want 1 to %d GPUs, got %d", MaxGPUs, s.GPUs())
	case len(s.HCABus) != s.GPUs():
		return fmt.Errorf("HCABus: want one HCA per GPU (%d), got %d", s.GPUs(), len(s.HCABus))
	case s.NUMANodes <= 0:
		return fmt.Errorf("NUMANodes: want > 0, got %d", s.NUMANodes)
	case s.NVLinks() > nvml.NVLINK_MAX_LINKS:
		return fmt.Errorf("LinkToSwitch: at most %d NVLinks, got %d", nvml.NVLINK_MAX_LINKS, s.NVLinks())
	case s.IdlePowerW <= 0 || s.PowerLimitW < s.IdlePowerW:
		return fmt.Errorf("PowerLimitW/IdlePowerW: want 0 < idle (%g) <= limit (%g)", s.IdlePowerW, s.PowerLimitW)
	case s.MemoryMiB <= s.ReservedMiB:
		return fmt.Errorf("MemoryMiB: want more than ReservedMiB (%d), got %d", s.ReservedMiB, s.MemoryMiB)
	}
	for l, sw := range s.LinkToSwitch {
		if sw < 0 || sw >= len(s.NVSwitchBus) {
			return fmt.Errorf("LinkToSwitch[%d]: NVSwitch %d out of range (have %d)", l, sw, len(s.NVSwitchBus))
		}
	}
	return nil
}

// recoveryActionSupported reports whether the shape's driver knows the GPU recovery
// action field and Xid 154 (R565 and newer).
func (s *Shape) recoveryActionSupported() bool {
	major, _, _ := strings.Cut(s.DriverVersion, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n >= 565
}

// nvmlVersion is what nvmlSystemGetNVMLVersion reports for the shape's driver.
func (s *Shape) nvmlVersion() string {
	return fmt.Sprintf("%d.%s", s.CUDAVersion/1000, s.DriverVersion)
}

// busID formats a PCI address the way NVML writes nvmlPciInfo_t.busId:
// 8-digit domain, upper-case hex ("00000000:1B:00.0").
func busID(bus uint8) string { return fmt.Sprintf("00000000:%02X:00.0", bus) }

// sysfsAddr formats a PCI address the way sysfs and the kernel log write it
// ("0000:1b:00.0").
func sysfsAddr(bus uint8) string { return fmt.Sprintf("0000:%02x:00.0", bus) }
