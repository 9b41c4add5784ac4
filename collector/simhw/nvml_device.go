package simhw

import (
	"fmt"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Device is one simulated GPU behind nvml.Device. Like Server it embeds go-nvml's
// moq mock; the methods below are the ones the simulation models, and every other
// method answers ERROR_NOT_SUPPORTED (see nvml_fallback.go).
//
// Every method first answers, in this order: ERROR_UNINITIALIZED before Init;
// ERROR_GPU_IS_LOST on a GPU that fell off the bus (Xid 79, fault gpu-lost) until
// a recover fault resets it; ERROR_TIMEOUT for telemetry queries on a GPU whose
// GSP stopped answering (Xid 119), while identity and configuration queries, which
// the driver answers from its own copy, still succeed.
type Device struct {
	mock.Device
	srv *Server
	g   *gpu
}

var _ nvml.Device = (*Device)(nil)

func newDevice(s *Server, g *gpu) *Device {
	d := &Device{srv: s, g: g}
	fillDevice(&d.Device, d)
	return d
}

func (d *Device) node() *Node   { return d.srv.node }
func (d *Device) shape() *Shape { return d.srv.node.shape }

// rlock takes the node's read lock and returns the node for the deferred unlock.
func (d *Device) rlock() *Node {
	n := d.srv.node
	n.mu.RLock()
	return n
}

// check returns what every call gets before its own answer. telemetry marks the
// queries that need the GPU's firmware (and so time out on a hung GPU). The caller
// holds the node lock.
func (d *Device) check(telemetry bool) nvml.Return {
	switch {
	case d.srv.ready() != nvml.SUCCESS:
		return nvml.ERROR_UNINITIALIZED
	case d.g.lost:
		return nvml.ERROR_GPU_IS_LOST
	case telemetry && d.g.hung:
		return nvml.ERROR_TIMEOUT
	}
	return nvml.SUCCESS
}

// peer resolves another device handle of the same node.
func (d *Device) peer(o nvml.Device) (*Device, nvml.Return) {
	p, ok := o.(*Device)
	if !ok || p == nil || p.srv != d.srv {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	if p.g.lost {
		return nil, nvml.ERROR_GPU_IS_LOST
	}
	return p, nvml.SUCCESS
}

// Identity and configuration.

// GetName returns the product name ("NVIDIA H100 80GB HBM3").
func (d *Device) GetName() (string, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return "", r
	}
	return d.shape().ProductName, nvml.SUCCESS
}

// GetUUID returns the GPU UUID ("GPU-xxxxxxxx-…").
func (d *Device) GetUUID() (string, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return "", r
	}
	return d.g.uuid, nvml.SUCCESS
}

// GetSerial returns the 13-digit board serial.
func (d *Device) GetSerial() (string, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return "", r
	}
	return d.g.serial, nvml.SUCCESS
}

// GetIndex returns the NVML index (PCI bus order).
func (d *Device) GetIndex() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return d.srv.index(d), nvml.SUCCESS
}

// GetMinorNumber returns the /dev/nvidiaN minor number: the GPU's place on the
// board, which a GPU the driver failed to initialise keeps.
func (d *Device) GetMinorNumber() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return d.g.index, nvml.SUCCESS
}

// GetModuleId returns the HGX baseboard module id (1-based).
func (d *Device) GetModuleId() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return d.g.moduleID, nvml.SUCCESS
}

// GetBoardId returns the board id (the PCI bus shifted as nvidia-smi shows it).
func (d *Device) GetBoardId() (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return uint32(d.g.bus) << 8, nvml.SUCCESS
}

// GetMultiGpuBoard reports 0: SXM modules are single-GPU boards.
func (d *Device) GetMultiGpuBoard() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return 0, d.check(false)
}

// GetPciInfo returns the PCI identity with BusId in NVML's
// "00000000:18:00.0" form.
func (d *Device) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return nvml.PciInfo{}, r
	}
	sh := d.shape()
	return pciInfo(d.g.bus, sh.PCIDeviceID, sh.PCISubsystemID), nvml.SUCCESS
}

// GetArchitecture returns DEVICE_ARCH_HOPPER or DEVICE_ARCH_AMPERE.
func (d *Device) GetArchitecture() (nvml.DeviceArchitecture, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return d.shape().Architecture, nvml.SUCCESS
}

// GetBrand returns BRAND_NVIDIA, as data-center GPUs of this generation report.
func (d *Device) GetBrand() (nvml.BrandType, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return nvml.BRAND_NVIDIA, nvml.SUCCESS
}

// GetCudaComputeCapability returns 9.0 (H100) or 8.0 (A100).
func (d *Device) GetCudaComputeCapability() (int, int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, 0, r
	}
	return d.shape().ComputeMajor, d.shape().ComputeMinor, nvml.SUCCESS
}

// GetVbiosVersion returns the VBIOS version.
func (d *Device) GetVbiosVersion() (string, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return "", r
	}
	return d.shape().VBIOSVersion, nvml.SUCCESS
}

// GetBoardPartNumber returns the board part number.
func (d *Device) GetBoardPartNumber() (string, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return "", r
	}
	return d.shape().BoardPart, nvml.SUCCESS
}

// GetInforomImageVersion returns the InfoROM image version.
func (d *Device) GetInforomImageVersion() (string, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return "", r
	}
	return d.shape().InforomImage, nvml.SUCCESS
}

// GetGspFirmwareVersion returns the GSP firmware version (the driver version).
func (d *Device) GetGspFirmwareVersion() (string, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return "", r
	}
	return d.shape().DriverVersion, nvml.SUCCESS
}

// GetGspFirmwareMode reports GSP firmware enabled and enabled by default.
func (d *Device) GetGspFirmwareMode() (bool, bool, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return false, false, r
	}
	return true, true, nvml.SUCCESS
}

// GetPersistenceMode reports persistence mode enabled, as on any managed node,
// unless a persistence-mode-off fault disabled it.
func (d *Device) GetPersistenceMode() (nvml.EnableState, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	if d.g.persistenceOff {
		return nvml.FEATURE_DISABLED, nvml.SUCCESS
	}
	return nvml.FEATURE_ENABLED, nvml.SUCCESS
}

// GetMigMode reports MIG disabled (current and pending).
func (d *Device) GetMigMode() (int, int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, 0, r
	}
	return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
}

// GetVirtualizationMode reports GPU_VIRTUALIZATION_MODE_NONE: bare metal, no
// vGPU and no passthrough.
func (d *Device) GetVirtualizationMode() (nvml.GpuVirtualizationMode, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return nvml.GPU_VIRTUALIZATION_MODE_NONE, nvml.SUCCESS
}

// IsMigDeviceHandle reports false: these are full GPUs.
func (d *Device) IsMigDeviceHandle() (bool, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return false, d.check(false)
}

// GetComputeMode reports COMPUTEMODE_DEFAULT.
func (d *Device) GetComputeMode() (nvml.ComputeMode, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return nvml.COMPUTEMODE_DEFAULT, d.check(false)
}

// GetEccMode reports ECC enabled, current and pending.
func (d *Device) GetEccMode() (nvml.EnableState, nvml.EnableState, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, 0, r
	}
	return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
}

// GetDisplayMode reports the display mode enabled, as nvidia-smi shows on HGX.
func (d *Device) GetDisplayMode() (nvml.EnableState, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return nvml.FEATURE_ENABLED, d.check(false)
}

// GetDisplayActive reports no display attached.
func (d *Device) GetDisplayActive() (nvml.EnableState, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return nvml.FEATURE_DISABLED, d.check(false)
}

// GetNumaNodeId returns the NUMA node of the GPU's PCIe root.
func (d *Device) GetNumaNodeId() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return d.g.numa, nvml.SUCCESS
}

// GetCpuAffinity returns the CPUs of the GPU's socket as a bitmask of 64-bit
// words. numCPUs is sized the way go-nvml sizes it for the real library
// ((numCPUs-1)/8+1 words).
func (d *Device) GetCpuAffinity(numCPUs int) ([]uint, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return nil, r
	}
	if numCPUs <= 0 {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return cpuMask(d.shape(), d.g.numa, (numCPUs-1)/8+1), nvml.SUCCESS
}

// GetCpuAffinityWithinScope is GetCpuAffinity; NUMA node and socket coincide here.
func (d *Device) GetCpuAffinityWithinScope(numCPUs int, scope nvml.AffinityScope) ([]uint, nvml.Return) {
	if scope != nvml.AFFINITY_SCOPE_NODE && scope != nvml.AFFINITY_SCOPE_SOCKET {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return d.GetCpuAffinity(numCPUs)
}

// GetMemoryAffinity returns the GPU's NUMA node as a node mask.
func (d *Device) GetMemoryAffinity(numNodes int, scope nvml.AffinityScope) ([]uint, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return nil, r
	}
	if numNodes <= 0 {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	out := make([]uint, (numNodes-1)/8+1)
	out[0] = 1 << uint(d.g.numa)
	return out, nvml.SUCCESS
}

// GetMaxPcieLinkGeneration returns the link's maximum PCIe generation.
func (d *Device) GetMaxPcieLinkGeneration() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return d.shape().PCIeGen, d.check(false)
}

// GetGpuMaxPcieLinkGeneration returns the GPU's maximum PCIe generation.
func (d *Device) GetGpuMaxPcieLinkGeneration() (int, nvml.Return) {
	return d.GetMaxPcieLinkGeneration()
}

// GetMaxPcieLinkWidth returns the maximum link width (16).
func (d *Device) GetMaxPcieLinkWidth() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return d.shape().PCIeWidth, d.check(false)
}

// GetCurrPcieLinkGeneration returns the current PCIe generation. SXM GPUs with
// persistence mode on keep the link at full speed when idle.
func (d *Device) GetCurrPcieLinkGeneration() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return d.shape().PCIeGen, d.check(true)
}

// GetCurrPcieLinkWidth returns the current link width.
func (d *Device) GetCurrPcieLinkWidth() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return d.shape().PCIeWidth, d.check(true)
}

// GetPcieLinkMaxSpeed returns the per-lane rate of the maximum generation in MT/s.
func (d *Device) GetPcieLinkMaxSpeed() (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return pcieMTs(d.shape().PCIeGen), nvml.SUCCESS
}

// GetPcieSpeed returns the current per-lane rate in MT/s.
func (d *Device) GetPcieSpeed() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	return int(pcieMTs(d.shape().PCIeGen)), nvml.SUCCESS
}

// GetSupportedEventTypes returns every event type NVML defines (EventTypeAll).
func (d *Device) GetSupportedEventTypes() (uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return nvml.EventTypeAll, d.check(false)
}

// GetSupportedClocksEventReasons returns every clocks event reason.
func (d *Device) GetSupportedClocksEventReasons() (uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return nvml.ClocksEventReasonAll, d.check(false)
}

// GetSupportedClocksThrottleReasons is GetSupportedClocksEventReasons.
func (d *Device) GetSupportedClocksThrottleReasons() (uint64, nvml.Return) {
	return d.GetSupportedClocksEventReasons()
}

// Clocks.

// GetMaxClockInfo returns the maximum (boost) clock of a domain in MHz.
func (d *Device) GetMaxClockInfo(t nvml.ClockType) (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	return maxClock(d.shape(), t)
}

// GetMaxCustomerBoostClock is GetMaxClockInfo.
func (d *Device) GetMaxCustomerBoostClock(t nvml.ClockType) (uint32, nvml.Return) {
	return d.GetMaxClockInfo(t)
}

// GetApplicationsClock returns the application clock target (the maximum clocks).
func (d *Device) GetApplicationsClock(t nvml.ClockType) (uint32, nvml.Return) {
	return d.GetMaxClockInfo(t)
}

// GetDefaultApplicationsClock returns the default application clocks.
func (d *Device) GetDefaultApplicationsClock(t nvml.ClockType) (uint32, nvml.Return) {
	return d.GetMaxClockInfo(t)
}

// GetClockInfo returns the current clock of a domain in MHz.
func (d *Device) GetClockInfo(t nvml.ClockType) (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	return d.currentClock(t)
}

// GetClock returns a clock of a domain: the current one, the application target
// and default, or the customer boost maximum.
func (d *Device) GetClock(t nvml.ClockType, id nvml.ClockId) (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	switch id {
	case nvml.CLOCK_ID_CURRENT:
		return d.currentClock(t)
	case nvml.CLOCK_ID_APP_CLOCK_TARGET, nvml.CLOCK_ID_APP_CLOCK_DEFAULT, nvml.CLOCK_ID_CUSTOMER_BOOST_MAX:
		return maxClock(d.shape(), t)
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

func (d *Device) currentClock(t nvml.ClockType) (uint32, nvml.Return) {
	switch t {
	case nvml.CLOCK_GRAPHICS, nvml.CLOCK_SM:
		return d.g.smMHz, nvml.SUCCESS
	case nvml.CLOCK_MEM:
		return d.shape().MemMHz, nvml.SUCCESS
	case nvml.CLOCK_VIDEO:
		return d.g.videoMHz, nvml.SUCCESS
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

func maxClock(sh *Shape, t nvml.ClockType) (uint32, nvml.Return) {
	switch t {
	case nvml.CLOCK_GRAPHICS, nvml.CLOCK_SM:
		return sh.MaxSMMHz, nvml.SUCCESS
	case nvml.CLOCK_MEM:
		return sh.MemMHz, nvml.SUCCESS
	case nvml.CLOCK_VIDEO:
		return sh.MaxVideoMHz, nvml.SUCCESS
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

// GetCurrentClocksEventReasons returns the active clocks event reasons bitmask
// (ClocksEventReasonGpuIdle, SwPowerCap, HwSlowdown, HwThermalSlowdown, …).
func (d *Device) GetCurrentClocksEventReasons() (uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	return d.g.reasons, nvml.SUCCESS
}

// GetCurrentClocksThrottleReasons is the pre-R535 name of GetCurrentClocksEventReasons.
func (d *Device) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	return d.GetCurrentClocksEventReasons()
}

// GetPerformanceState returns P0: data-center GPUs in persistence mode stay in P0.
func (d *Device) GetPerformanceState() (nvml.Pstates, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return nvml.PSTATE_0, d.check(true)
}

// GetPowerState is the deprecated name of GetPerformanceState.
func (d *Device) GetPowerState() (nvml.Pstates, nvml.Return) { return d.GetPerformanceState() }

// GetViolationStatus returns, in nanoseconds, how long a policy has held clocks
// below the application clocks. The counters only grow.
func (d *Device) GetViolationStatus(p nvml.PerfPolicyType) (nvml.ViolationTime, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nvml.ViolationTime{}, r
	}
	var v uint64
	switch p {
	case nvml.PERF_POLICY_POWER, nvml.PERF_POLICY_THERMAL, nvml.PERF_POLICY_SYNC_BOOST,
		nvml.PERF_POLICY_BOARD_LIMIT, nvml.PERF_POLICY_LOW_UTILIZATION, nvml.PERF_POLICY_RELIABILITY:
		v = d.g.viol[p]
	case nvml.PERF_POLICY_TOTAL_APP_CLOCKS:
		v = d.g.viol[violTotalApp]
	case nvml.PERF_POLICY_TOTAL_BASE_CLOCKS:
		v = d.g.viol[violTotalBase]
	default:
		return nvml.ViolationTime{}, nvml.ERROR_INVALID_ARGUMENT
	}
	return nvml.ViolationTime{ReferenceTime: uint64(d.node().now.UnixMicro()), ViolationTime: v}, nvml.SUCCESS
}

// Temperature and power.

// GetTemperature returns the GPU core temperature in °C.
func (d *Device) GetTemperature(s nvml.TemperatureSensors) (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	if s != nvml.TEMPERATURE_GPU {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return uint32(math.Round(d.g.tempC)), nvml.SUCCESS
}

// GetTemperatureThreshold returns the shutdown, slowdown, memory-max and GPU-max
// thresholds in °C; the acoustic and GPS thresholds are not supported.
func (d *Device) GetTemperatureThreshold(t nvml.TemperatureThresholds) (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	sh := d.shape()
	switch t {
	case nvml.TEMPERATURE_THRESHOLD_SHUTDOWN:
		return uint32(sh.ShutdownC), nvml.SUCCESS
	case nvml.TEMPERATURE_THRESHOLD_SLOWDOWN:
		return uint32(sh.SlowdownC), nvml.SUCCESS
	case nvml.TEMPERATURE_THRESHOLD_MEM_MAX:
		return uint32(sh.MemMaxC), nvml.SUCCESS
	case nvml.TEMPERATURE_THRESHOLD_GPU_MAX:
		return uint32(sh.GPUMaxC), nvml.SUCCESS
	}
	if t < 0 || t >= nvml.TEMPERATURE_THRESHOLD_COUNT {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return 0, nvml.ERROR_NOT_SUPPORTED
}

// GetPowerUsage returns the current draw in milliwatts.
func (d *Device) GetPowerUsage() (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	return uint32(math.Round(d.g.powerW * 1000)), nvml.SUCCESS
}

// GetTotalEnergyConsumption returns the energy used since the driver loaded, in
// millijoules. It only grows.
func (d *Device) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	return uint64(d.g.energyMJ), nvml.SUCCESS
}

// GetPowerManagementMode reports power management enabled.
func (d *Device) GetPowerManagementMode() (nvml.EnableState, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return nvml.FEATURE_ENABLED, d.check(false)
}

// GetEnforcedPowerLimit returns the enforced limit in milliwatts.
func (d *Device) GetEnforcedPowerLimit() (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return milliwatts(d.shape().PowerLimitW), d.check(false)
}

// GetPowerManagementLimit returns the configured limit in milliwatts.
func (d *Device) GetPowerManagementLimit() (uint32, nvml.Return) { return d.GetEnforcedPowerLimit() }

// GetPowerManagementDefaultLimit returns the default limit in milliwatts.
func (d *Device) GetPowerManagementDefaultLimit() (uint32, nvml.Return) {
	return d.GetEnforcedPowerLimit()
}

// GetPowerManagementLimitConstraints returns the minimum and maximum settable
// limits in milliwatts.
func (d *Device) GetPowerManagementLimitConstraints() (uint32, uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, 0, r
	}
	return milliwatts(d.shape().MinPowerLimitW), milliwatts(d.shape().PowerLimitW), nvml.SUCCESS
}

// Memory and utilization.

// GetMemoryInfo returns frame-buffer use in bytes; Used includes the memory the
// driver reserves, as nvmlMemory_t (v1) defines it.
func (d *Device) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nvml.Memory{}, r
	}
	total, reserved := d.memTotal()
	used := reserved + d.g.memJob
	return nvml.Memory{Total: total, Used: used, Free: total - used}, nvml.SUCCESS
}

// GetMemoryInfo_v2 returns frame-buffer use with the reserved memory apart.
func (d *Device) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nvml.Memory_v2{}, r
	}
	total, reserved := d.memTotal()
	return nvml.Memory_v2{
		Version:  2<<24 | 40, // NVML_STRUCT_VERSION(Memory, 2)
		Total:    total,
		Reserved: reserved,
		Used:     d.g.memJob,
		Free:     total - reserved - d.g.memJob,
	}, nvml.SUCCESS
}

func (d *Device) memTotal() (total, reserved uint64) {
	return d.shape().MemoryMiB << 20, d.shape().ReservedMiB << 20
}

// GetBAR1MemoryInfo returns BAR1 use in bytes.
func (d *Device) GetBAR1MemoryInfo() (nvml.BAR1Memory, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nvml.BAR1Memory{}, r
	}
	total := d.shape().BAR1MiB << 20
	used := uint64(1) << 20
	if d.g.job != nil {
		used += 32 << 20
	}
	return nvml.BAR1Memory{Bar1Total: total, Bar1Used: used, Bar1Free: total - used}, nvml.SUCCESS
}

// GetUtilizationRates returns GPU and memory-controller utilization in percent.
func (d *Device) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nvml.Utilization{}, r
	}
	return nvml.Utilization{Gpu: uint32(math.Round(d.g.util)), Memory: uint32(math.Round(d.g.memUtil))}, nvml.SUCCESS
}

// GetEncoderUtilization returns 0%: the simulated workloads do not encode video.
// The second value is the sampling period in microseconds.
func (d *Device) GetEncoderUtilization() (uint32, uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return 0, 167000, d.check(true)
}

// GetDecoderUtilization returns 0%, like GetEncoderUtilization.
func (d *Device) GetDecoderUtilization() (uint32, uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	return 0, 167000, d.check(true)
}

// GetComputeRunningProcesses lists the PIDs of the jobs on the GPU with the memory
// each uses. GPU and compute instance ids are 0xFFFFFFFF, as without MIG.
func (d *Device) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nil, r
	}
	out := make([]nvml.ProcessInfo, 0, len(d.g.pids))
	for _, pid := range d.g.pids {
		out = append(out, nvml.ProcessInfo{
			Pid:               pid,
			UsedGpuMemory:     d.g.memJob / uint64(len(d.g.pids)),
			GpuInstanceId:     0xFFFFFFFF,
			ComputeInstanceId: 0xFFFFFFFF,
		})
	}
	return out, nvml.SUCCESS
}

// GetGraphicsRunningProcesses returns no processes: nothing renders on these GPUs.
func (d *Device) GetGraphicsRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nil, r
	}
	return []nvml.ProcessInfo{}, nvml.SUCCESS
}

// GetMPSComputeRunningProcesses returns no processes: MPS is not running.
func (d *Device) GetMPSComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return d.GetGraphicsRunningProcesses()
}

// PCIe.

// GetPcieThroughput returns PCIe traffic over the last sampling window in KB/s.
func (d *Device) GetPcieThroughput(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	switch c {
	case nvml.PCIE_UTIL_TX_BYTES:
		return uint32(d.g.pcieTxKBs), nvml.SUCCESS
	case nvml.PCIE_UTIL_RX_BYTES:
		return uint32(d.g.pcieRxKBs), nvml.SUCCESS
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

// GetPcieReplayCounter returns the PCIe replay count since the driver loaded.
func (d *Device) GetPcieReplayCounter() (int, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	return int(d.g.replay), nvml.SUCCESS
}

// ECC and row remapping.

// GetTotalEccErrors sums corrected or uncorrected errors over all memory locations.
func (d *Device) GetTotalEccErrors(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	if !validECC(t, c) {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return d.g.eccTotal(t, c), nvml.SUCCESS
}

// GetMemoryErrorCounter returns the errors of one memory location. L1, L2, device
// memory (DRAM), register file and SRAM are supported; the texture and CBU
// locations of older GPUs are not.
func (d *Device) GetMemoryErrorCounter(t nvml.MemoryErrorType, c nvml.EccCounterType, loc nvml.MemoryLocation) (uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	if !validECC(t, c) || loc < 0 || loc >= nvml.MEMORY_LOCATION_COUNT {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	switch loc {
	case nvml.MEMORY_LOCATION_TEXTURE_MEMORY, nvml.MEMORY_LOCATION_TEXTURE_SHM, nvml.MEMORY_LOCATION_CBU:
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	return d.g.ecc[t][c][loc], nvml.SUCCESS
}

func validECC(t nvml.MemoryErrorType, c nvml.EccCounterType) bool {
	return t >= 0 && t < nvml.MEMORY_ERROR_TYPE_COUNT && (c == nvml.VOLATILE_ECC || c == nvml.AGGREGATE_ECC)
}

// GetRetiredPages answers ERROR_NOT_SUPPORTED: A100 and H100 replace dynamic page
// retirement with row remapping (nvidia-smi shows "Retired Pages: N/A").
func (d *Device) GetRetiredPages(nvml.PageRetirementCause) ([]uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nil, r
	}
	return nil, nvml.ERROR_NOT_SUPPORTED
}

// GetRetiredPages_v2 answers ERROR_NOT_SUPPORTED, like GetRetiredPages.
func (d *Device) GetRetiredPages_v2(c nvml.PageRetirementCause) ([]uint64, []uint64, nvml.Return) {
	_, r := d.GetRetiredPages(c)
	return nil, nil, r
}

// GetRetiredPagesPendingStatus answers ERROR_NOT_SUPPORTED, like GetRetiredPages.
func (d *Device) GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return) {
	_, r := d.GetRetiredPages(0)
	return 0, r
}

// GetRemappedRows returns rows remapped for correctable and uncorrectable errors,
// whether a remap waits for a GPU reset, and whether a remap ever failed.
func (d *Device) GetRemappedRows() (int, int, bool, bool, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, 0, false, false, r
	}
	g := d.g
	return int(g.remapCorr), int(g.remapUnc), g.remapPending, g.remapFailure, nvml.SUCCESS
}

// GetRemappedRows_v2 is GetRemappedRows in the v2 structure.
func (d *Device) GetRemappedRows_v2() (nvml.RemappedRowsInfo_v2, nvml.Return) {
	corr, unc, pending, failed, r := d.GetRemappedRows()
	if r != nvml.SUCCESS {
		return nvml.RemappedRowsInfo_v2{}, r
	}
	return nvml.RemappedRowsInfo_v2{
		CorrActiveRemaps: uint32(corr),
		UncActiveRemaps:  uint32(unc),
		BPending:         b2u(pending),
		BFailureOccurred: b2u(failed),
	}, nvml.SUCCESS
}

// NVLink.

// link resolves an NVLink index: ERROR_INVALID_ARGUMENT beyond NVML's maximum,
// ERROR_NOT_SUPPORTED beyond the GPU's link count.
func (d *Device) link(l int) (*nvlink, nvml.Return) {
	if l < 0 || l >= nvml.NVLINK_MAX_LINKS {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	if l >= len(d.g.links) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	return &d.g.links[l], nvml.SUCCESS
}

// GetNvLinkState reports whether a link is up.
func (d *Device) GetNvLinkState(l int) (nvml.EnableState, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	k, r := d.link(l)
	if r != nvml.SUCCESS {
		return 0, r
	}
	if k.active {
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	return nvml.FEATURE_DISABLED, nvml.SUCCESS
}

// GetNvLinkVersion returns the link's NVLink version as an nvml.NvlinkVersion
// value (NVLINK_VERSION_4_0 = 6 on H100, NVLINK_VERSION_3_0 = 4 on A100).
func (d *Device) GetNvLinkVersion(l int) (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	if _, r := d.link(l); r != nvml.SUCCESS {
		return 0, r
	}
	return uint32(d.shape().NVLinkVersion), nvml.SUCCESS
}

// GetNvLinkCapability reports P2P and P2P atomics supported, system memory access
// not (the links go to NVSwitches, not to the CPU).
func (d *Device) GetNvLinkCapability(l int, c nvml.NvLinkCapability) (uint32, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	if _, r := d.link(l); r != nvml.SUCCESS {
		return 0, r
	}
	switch c {
	case nvml.NVLINK_CAP_P2P_SUPPORTED, nvml.NVLINK_CAP_P2P_ATOMICS, nvml.NVLINK_CAP_VALID:
		return 1, nvml.SUCCESS
	case nvml.NVLINK_CAP_SYSMEM_ACCESS, nvml.NVLINK_CAP_SYSMEM_ATOMICS, nvml.NVLINK_CAP_SLI_BRIDGE:
		return 0, nvml.SUCCESS
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

// GetNvLinkRemotePciInfo returns the PCI identity of the NVSwitch at the far end
// of a link, whether or not the link is up.
func (d *Device) GetNvLinkRemotePciInfo(l int) (nvml.PciInfo, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nvml.PciInfo{}, r
	}
	k, r := d.link(l)
	if r != nvml.SUCCESS {
		return nvml.PciInfo{}, r
	}
	sh := d.shape()
	return pciInfo(sh.NVSwitchBus[k.sw], sh.NVSwitchPCIID, sh.NVSwitchPCIID), nvml.SUCCESS
}

// GetNvLinkRemoteDeviceType reports NVLINK_DEVICE_TYPE_SWITCH for every link.
func (d *Device) GetNvLinkRemoteDeviceType(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	if _, r := d.link(l); r != nvml.SUCCESS {
		return 0, r
	}
	return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
}

// GetNvLinkErrorCounter returns a link's DL replay, recovery, CRC flit, CRC data
// or ECC data error count. The counters only grow (a GPU reset does not clear them
// here; call it a driver that keeps them, which is what the health model assumes).
func (d *Device) GetNvLinkErrorCounter(l int, c nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	k, r := d.link(l)
	if r != nvml.SUCCESS {
		return 0, r
	}
	return k.errorCounter(c)
}

func (k *nvlink) errorCounter(c nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
	switch c {
	case nvml.NVLINK_ERROR_DL_REPLAY:
		return k.replay, nvml.SUCCESS
	case nvml.NVLINK_ERROR_DL_RECOVERY:
		return k.recovery, nvml.SUCCESS
	case nvml.NVLINK_ERROR_DL_CRC_FLIT:
		return k.crcFlit, nvml.SUCCESS
	case nvml.NVLINK_ERROR_DL_CRC_DATA:
		return k.crcData, nvml.SUCCESS
	case nvml.NVLINK_ERROR_DL_ECC_DATA:
		return k.eccData, nvml.SUCCESS
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

// GetNvLinkUtilizationCounter answers ERROR_NOT_SUPPORTED, as on A100 and H100:
// the per-link utilization counters are gone since Ampere; read
// FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX through GetFieldValues instead.
func (d *Device) GetNvLinkUtilizationCounter(l int, counter int) (uint64, uint64, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, 0, r
	}
	if _, r := d.link(l); r != nvml.SUCCESS {
		return 0, 0, r
	}
	return 0, 0, nvml.ERROR_NOT_SUPPORTED
}

// GetGpuFabricInfo reports the GPU's NVLink fabric registration: state completed,
// with the cluster UUID and clique id of its NVLink domain, or not started while a
// fabric-manager fault holds. Hopper only; A100 answers ERROR_NOT_SUPPORTED.
func (d *Device) GetGpuFabricInfo() (nvml.GpuFabricInfo, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return nvml.GpuFabricInfo{}, r
	}
	if !d.shape().FabricInfo {
		return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	n := d.node()
	if d.g.fabricDown {
		// Never registered: the fabric manager is not running. The status is
		// valid only once the state is completed.
		return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_NOT_STARTED, Status: uint32(nvml.ERROR_NOT_READY)}, nvml.SUCCESS
	}
	return nvml.GpuFabricInfo{
		ClusterUuid: n.clusterUUID,
		Status:      uint32(nvml.SUCCESS),
		CliqueId:    n.cliqueID,
		State:       nvml.GPU_FABRIC_STATE_COMPLETED,
	}, nvml.SUCCESS
}

// Topology.

// level is the PCIe/NUMA distance between two GPUs of the node.
func (d *Device) level(p *Device) nvml.GpuTopologyLevel {
	switch {
	case p == d:
		return nvml.TOPOLOGY_INTERNAL
	case p.g.numa == d.g.numa:
		return nvml.TOPOLOGY_NODE
	}
	return nvml.TOPOLOGY_SYSTEM
}

// GetTopologyCommonAncestor returns TOPOLOGY_NODE for two GPUs on the same socket
// and TOPOLOGY_SYSTEM across sockets (the NVSwitch path is not a PCIe ancestor).
func (d *Device) GetTopologyCommonAncestor(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return 0, r
	}
	p, r := d.peer(o)
	if r != nvml.SUCCESS {
		return 0, r
	}
	return d.level(p), nvml.SUCCESS
}

// GetTopologyNearestGpus returns the other GPUs at level or closer.
func (d *Device) GetTopologyNearestGpus(level nvml.GpuTopologyLevel) ([]nvml.Device, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(false); r != nvml.SUCCESS {
		return nil, r
	}
	out := []nvml.Device{}
	for _, p := range d.srv.devices {
		if p != d && d.level(p) <= level {
			out = append(out, p)
		}
	}
	return out, nvml.SUCCESS
}

// GetP2PStatus reports peer-to-peer support between two GPUs: over NVLink (through
// the NVSwitches) while both GPUs have a link up, over PCIe within a socket only.
func (d *Device) GetP2PStatus(o nvml.Device, idx nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
	defer d.rlock().mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return 0, r
	}
	p, r := d.peer(o)
	if r != nvml.SUCCESS {
		return 0, r
	}
	nvlinkOK := d.g.activeLinks() > 0 && p.g.activeLinks() > 0
	pcieOK := d.level(p) <= nvml.TOPOLOGY_NODE
	switch idx {
	case nvml.P2P_CAPS_INDEX_NVLINK:
		if nvlinkOK {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		return nvml.P2P_STATUS_NOT_SUPPORTED, nvml.SUCCESS
	case nvml.P2P_CAPS_INDEX_READ, nvml.P2P_CAPS_INDEX_WRITE, nvml.P2P_CAPS_INDEX_ATOMICS:
		if nvlinkOK || pcieOK {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		return nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED, nvml.SUCCESS
	case nvml.P2P_CAPS_INDEX_PCI:
		if pcieOK {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		return nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED, nvml.SUCCESS
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

// Events.

// RegisterEvents adds the GPU to set for the event types in mask. Any type NVML
// defines can be registered (see GetSupportedEventTypes); the simulation delivers
// XidCriticalError, SingleBitEccError, DoubleBitEccError, SingleBitEccErrorStorm,
// DramRetirementEvent, DramRetirementFailure and GpuRecoveryAction events.
func (d *Device) RegisterEvents(mask uint64, set nvml.EventSet) nvml.Return {
	n := d.rlock()
	defer n.mu.RUnlock()
	if r := d.check(true); r != nvml.SUCCESS {
		return r
	}
	es, ok := set.(*eventSet)
	if !ok || es == nil || es.node != n {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	if mask&^uint64(nvml.EventTypeAll) != 0 {
		return nvml.ERROR_NOT_SUPPORTED
	}
	return es.register(d, mask)
}

// helpers

func pciInfo(bus uint8, dev, sub uint32) nvml.PciInfo {
	p := nvml.PciInfo{Bus: uint32(bus), PciDeviceId: dev, PciSubSystemId: sub}
	putCString(p.BusId[:], busID(bus))
	putCString(p.BusIdLegacy[:], fmt.Sprintf("0000:%02X:00.0", bus))
	return p
}

func putCString(dst []int8, s string) {
	for i := 0; i < len(s) && i < len(dst)-1; i++ {
		dst[i] = int8(s[i])
	}
}

func milliwatts(w float64) uint32 { return uint32(math.Round(w * 1000)) }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// pcieMTs is the per-lane transfer rate of a PCIe generation in MT/s.
func pcieMTs(gen int) uint32 {
	switch gen {
	case 1:
		return 2500
	case 2:
		return 5000
	case 3:
		return 8000
	case 4:
		return 16000
	}
	return 32000
}

// numaOfCPU maps a logical CPU to its socket. Linux numbers the first hardware
// thread of every core socket by socket, then the second threads in the same order
// (socket 0: 0–55 and 112–167 on a 2× 56-core node).
func numaOfCPU(sh *Shape, cpu int) int {
	cores := sh.CoresPerSocket * sh.NUMANodes
	return (cpu % cores) / sh.CoresPerSocket
}

// cpuMask returns the CPUs of a socket as words 64-bit words.
func cpuMask(sh *Shape, numa, words int) []uint {
	out := make([]uint, words)
	cores := sh.CoresPerSocket * sh.NUMANodes
	for thread := 0; thread < 2; thread++ {
		for c := 0; c < sh.CoresPerSocket; c++ {
			cpu := thread*cores + numa*sh.CoresPerSocket + c
			if cpu/64 < words {
				out[cpu/64] |= 1 << uint(cpu%64)
			}
		}
	}
	return out
}
