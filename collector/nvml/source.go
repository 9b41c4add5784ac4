package nvml

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Options configures the source. The zero value is usable.
type Options struct {
	// EventWait is how long one nvmlEventSetWait blocks in WatchEvents before the
	// loop checks its context again (default 500 ms).
	EventWait time.Duration
	// Reprobe is how many cycles (of Collect, and separately of CollectHealth)
	// pass before reads a GPU answered ERROR_NOT_SUPPORTED to are tried again
	// (default 100; negative: never). MIG mode changes, for one, make utilization
	// reads come and go.
	Reprobe int
	// Now is the clock that stamps samples and events (default time.Now).
	Now func() time.Time
}

// Source reads the node's GPUs through NVML. Collect and CollectHealth may run
// concurrently with WatchEvents; the run loop never runs Collect concurrently with
// itself, nor CollectHealth with itself.
type Source struct {
	lib  gonvml.Interface
	inv  *collector.Inventory
	opts Options
	gpus []*gpuState

	fullCycles, healthCycles int

	xidEvents, eccEvents, lostEvents atomic.Uint64
	registered                       func() // test hook: WatchEvents has registered its GPUs
}

var (
	_ collector.Source          = (*Source)(nil)
	_ collector.HealthCollector = (*Source)(nil)
)

// gpuState is what the source keeps per GPU between cycles.
type gpuState struct {
	info       collector.GPUInfo
	labels     telemetry.Labels // gpu_index only; shared by every sample, read-only
	infoLabels telemetry.Labels // gpuwatch_gpu_info's own labels

	mu  sync.Mutex // guards dev
	dev gonvml.Device

	lost atomic.Bool

	// Reads the GPU answered ERROR_NOT_SUPPORTED to, one bit per read; fullNS is
	// touched only by Collect, healthNS only by CollectHealth.
	fullNS, healthNS uint64
	health           []gonvml.FieldValue // preallocated health batch
	memTemp          []gonvml.FieldValue // preallocated one-field batch
}

// New returns the source for the GPUs of inv. lib must be initialized and stay so
// while the source is used.
func New(lib gonvml.Interface, inv *collector.Inventory, opts Options) *Source {
	if opts.EventWait <= 0 {
		opts.EventWait = 500 * time.Millisecond
	}
	if opts.Reprobe == 0 {
		opts.Reprobe = 100
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Source{lib: lib, inv: inv, opts: opts}
	driver := ""
	if inv != nil {
		driver = inv.DriverVersion
		for _, info := range inv.GPUs {
			idx := strconv.Itoa(info.Index)
			g := &gpuState{
				info:   info,
				labels: telemetry.NewLabels(telemetry.LabelGPUIndex, idx),
				infoLabels: slices.Clip(telemetry.NewLabels(
					telemetry.LabelGPUIndex, idx,
					telemetry.LabelModel, info.Model,
					telemetry.LabelDriverVersion, driver,
					telemetry.LabelVBIOSVersion, info.VBIOS,
					telemetry.LabelSerial, info.Serial)),
				health:  make([]gonvml.FieldValue, len(healthFields)),
				memTemp: []gonvml.FieldValue{{FieldId: gonvml.FI_DEV_MEMORY_TEMP}},
			}
			g.labels = slices.Clip(g.labels)
			for i, f := range healthFields {
				g.health[i].FieldId = f.id
			}
			g.lost.Store(info.Lost)
			s.gpus = append(s.gpus, g)
		}
	}
	return s
}

// Name is "nvml".
func (s *Source) Name() string { return string(telemetry.SourceNVML) }

// Lost reports whether GPU index i was lost at its last read.
func (s *Source) Lost(i int) bool {
	for _, g := range s.gpus {
		if g.info.Index == i {
			return g.lost.Load()
		}
	}
	return false
}

// handle returns GPU g's NVML handle, asking NVML again when an earlier attempt
// failed (a GPU lost at discovery may come back after a reset). It returns nil
// when there is none: with an error naming the failure, or without one when the
// GPU is lost (which marks it lost).
func (s *Source) handle(g *gpuState) (gonvml.Device, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dev != nil {
		return g.dev, nil
	}
	dev, r := s.lib.DeviceGetHandleByIndex(g.info.Index)
	switch r {
	case gonvml.SUCCESS:
		g.dev = dev
		return dev, nil
	case gonvml.ERROR_GPU_IS_LOST:
		g.lost.Store(true)
		return nil, nil
	}
	return nil, fmt.Errorf("nvml: GPU %d: DeviceGetHandleByIndex: %s", g.info.Index, r.Error())
}

// Reads of Collect, one bit each in gpuState.fullNS.
const (
	rdSMClock = iota
	rdMemClock
	rdMemTemp
	rdGPUTemp
	rdSlowdown
	rdShutdown
	rdPower
	rdEnergy
	rdMgmtLimit
	rdEnforced
	rdPState
	rdFan
	rdReplay
	rdMaxGen
	rdMaxWidth
	rdGen
	rdWidth
	rdUtil
	rdEnc
	rdDec
	rdEventReasons
	rdThrottleReasons
	rdMemV2
	rdMemV1
	rdPersistence
	rdMIG
	rdVirt
	rdLicense
	rdFabric
	rdViolation // six bits, one per policy
)

// violations maps NVML perf policies to the DCGM violation series.
var violations = [...]struct {
	policy     gonvml.PerfPolicyType
	name, call string
}{
	{gonvml.PERF_POLICY_POWER, telemetry.DCGMPowerViolation, "GetViolationStatus(POWER)"},
	{gonvml.PERF_POLICY_THERMAL, telemetry.DCGMThermalViolation, "GetViolationStatus(THERMAL)"},
	{gonvml.PERF_POLICY_SYNC_BOOST, telemetry.DCGMSyncBoostViolation, "GetViolationStatus(SYNC_BOOST)"},
	{gonvml.PERF_POLICY_BOARD_LIMIT, telemetry.DCGMBoardLimitViolation, "GetViolationStatus(BOARD_LIMIT)"},
	{gonvml.PERF_POLICY_LOW_UTILIZATION, telemetry.DCGMLowUtilViolation, "GetViolationStatus(LOW_UTILIZATION)"},
	{gonvml.PERF_POLICY_RELIABILITY, telemetry.DCGMReliabilityViolation, "GetViolationStatus(RELIABILITY)"},
}

// pass is one cycle's reads of one GPU.
type pass struct {
	g    *gpuState
	ns   *uint64
	t    time.Time
	emit func(telemetry.Sample)
	stop bool // the GPU is lost or hung: skip the rest of it this cycle
	lost bool
	errs []error
}

func (p *pass) skip(bit int) bool { return p.stop || *p.ns&(1<<uint(bit)) != 0 }

// ok sorts a return code: true on success; ERROR_NOT_SUPPORTED (and a symbol the
// installed driver lacks) remembers the read as unsupported; ERROR_GPU_IS_LOST
// marks the GPU lost; ERROR_TIMEOUT stops the GPU's reads for this cycle.
func (p *pass) ok(bit int, call string, r gonvml.Return) bool {
	switch r {
	case gonvml.SUCCESS:
		return true
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
		if bit >= 0 {
			*p.ns |= 1 << uint(bit)
		}
	case gonvml.ERROR_GPU_IS_LOST:
		p.lost, p.stop = true, true
	case gonvml.ERROR_TIMEOUT:
		p.stop = true
		p.fail(call, r)
	default:
		p.fail(call, r)
	}
	return false
}

func (p *pass) fail(call string, r gonvml.Return) {
	p.errs = append(p.errs, fmt.Errorf("nvml: GPU %d: %s: %s", p.g.info.Index, call, r.Error()))
}

func (p *pass) put(name string, v float64) {
	p.emit(telemetry.Sample{Name: name, Labels: p.g.labels, Value: v, Time: p.t})
}

// u32 reads one uint32 value and emits it times scale.
func (p *pass) u32(bit int, call, name string, scale float64, f func() (uint32, gonvml.Return)) {
	if p.skip(bit) {
		return
	}
	if v, r := f(); p.ok(bit, call, r) {
		p.put(name, float64(v)*scale)
	}
}

// i reads one int value and emits it.
func (p *pass) i(bit int, call, name string, f func() (int, gonvml.Return)) {
	if p.skip(bit) {
		return
	}
	if v, r := f(); p.ok(bit, call, r) {
		p.put(name, float64(v))
	}
}

// Collect emits the full-schedule series: every DCGM_FI_* series of source nvml
// but the health ones, gpuwatch_gpu_info and gpuwatch_node_gpus.
func (s *Source) Collect(ctx context.Context, emit func(telemetry.Sample)) error {
	now := s.opts.Now()
	count := len(s.gpus)
	if s.lib == nil {
		return collector.ErrNoDevices
	}
	if n, r := s.lib.DeviceGetCount(); r == gonvml.SUCCESS {
		count = n
	}
	// The count goes out even when NVML lists no GPU: that is the reading a
	// node whose driver failed to initialise every GPU gives.
	emit(telemetry.Sample{Name: telemetry.MetricNodeGPUs, Labels: countLabels, Value: float64(count), Time: now})
	if len(s.gpus) == 0 {
		return collector.ErrNoDevices
	}
	s.fullCycles++
	reprobe := s.opts.Reprobe > 0 && s.fullCycles%s.opts.Reprobe == 0
	var errs []error
	for _, g := range s.gpus {
		emit(telemetry.Sample{Name: telemetry.MetricGPUInfo, Labels: g.infoLabels, Value: 1, Time: now})
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("nvml: GPU %d and later not read: %w", g.info.Index, err))
			break
		}
		if reprobe {
			g.fullNS = 0
		}
		dev, err := s.handle(g)
		if err != nil {
			errs = append(errs, err)
		}
		if dev == nil {
			continue
		}
		p := pass{g: g, ns: &g.fullNS, t: s.opts.Now(), emit: emit}
		collectGPU(&p, dev)
		g.lost.Store(p.lost)
		errs = append(errs, p.errs...)
	}
	return errors.Join(errs...)
}

// collectGPU reads one GPU's full-schedule values. The first read doubles as the
// lost/hung probe: after it fails that way the rest is skipped.
func collectGPU(p *pass, dev gonvml.Device) {
	const mW = 1.0 / 1000
	p.u32(rdSMClock, "GetClockInfo(SM)", telemetry.DCGMSMClock, 1, func() (uint32, gonvml.Return) { return dev.GetClockInfo(gonvml.CLOCK_SM) })
	p.u32(rdMemClock, "GetClockInfo(MEM)", telemetry.DCGMMemClock, 1, func() (uint32, gonvml.Return) { return dev.GetClockInfo(gonvml.CLOCK_MEM) })
	if !p.skip(rdMemTemp) {
		fv := p.g.memTemp
		fv[0].FieldId = gonvml.FI_DEV_MEMORY_TEMP
		r := dev.GetFieldValues(fv)
		if r == gonvml.SUCCESS {
			r = gonvml.Return(fv[0].NvmlReturn)
		}
		if p.ok(rdMemTemp, "GetFieldValues(FI_DEV_MEMORY_TEMP)", r) {
			if v, ok := fieldValue(&fv[0]); ok {
				p.put(telemetry.DCGMMemoryTemp, v)
			}
		}
	}
	p.u32(rdGPUTemp, "GetTemperature(GPU)", telemetry.DCGMGPUTemp, 1, func() (uint32, gonvml.Return) { return dev.GetTemperature(gonvml.TEMPERATURE_GPU) })
	p.u32(rdSlowdown, "GetTemperatureThreshold(SLOWDOWN)", telemetry.DCGMSlowdownTemp, 1, func() (uint32, gonvml.Return) {
		return dev.GetTemperatureThreshold(gonvml.TEMPERATURE_THRESHOLD_SLOWDOWN)
	})
	p.u32(rdShutdown, "GetTemperatureThreshold(SHUTDOWN)", telemetry.DCGMShutdownTemp, 1, func() (uint32, gonvml.Return) {
		return dev.GetTemperatureThreshold(gonvml.TEMPERATURE_THRESHOLD_SHUTDOWN)
	})
	p.u32(rdPower, "GetPowerUsage", telemetry.DCGMPowerUsage, mW, dev.GetPowerUsage)
	if !p.skip(rdEnergy) {
		if v, r := dev.GetTotalEnergyConsumption(); p.ok(rdEnergy, "GetTotalEnergyConsumption", r) {
			p.put(telemetry.DCGMTotalEnergyConsumption, float64(v))
		}
	}
	p.u32(rdMgmtLimit, "GetPowerManagementLimit", telemetry.DCGMPowerMgmtLimit, mW, dev.GetPowerManagementLimit)
	p.u32(rdEnforced, "GetEnforcedPowerLimit", telemetry.DCGMEnforcedPowerLimit, mW, dev.GetEnforcedPowerLimit)
	if !p.skip(rdPState) {
		if v, r := dev.GetPerformanceState(); p.ok(rdPState, "GetPerformanceState", r) && v >= gonvml.PSTATE_0 && v <= gonvml.PSTATE_15 {
			p.put(telemetry.DCGMPState, float64(v))
		}
	}
	p.u32(rdFan, "GetFanSpeed", telemetry.DCGMFanSpeed, 1, dev.GetFanSpeed)
	p.i(rdReplay, "GetPcieReplayCounter", telemetry.DCGMPCIeReplayCounter, dev.GetPcieReplayCounter)
	p.i(rdMaxGen, "GetMaxPcieLinkGeneration", telemetry.DCGMPCIeMaxLinkGen, dev.GetMaxPcieLinkGeneration)
	p.i(rdMaxWidth, "GetMaxPcieLinkWidth", telemetry.DCGMPCIeMaxLinkWidth, dev.GetMaxPcieLinkWidth)
	p.i(rdGen, "GetCurrPcieLinkGeneration", telemetry.DCGMPCIeLinkGen, dev.GetCurrPcieLinkGeneration)
	p.i(rdWidth, "GetCurrPcieLinkWidth", telemetry.DCGMPCIeLinkWidth, dev.GetCurrPcieLinkWidth)
	if !p.skip(rdUtil) {
		if u, r := dev.GetUtilizationRates(); p.ok(rdUtil, "GetUtilizationRates", r) {
			p.put(telemetry.DCGMGPUUtil, float64(u.Gpu))
			p.put(telemetry.DCGMMemCopyUtil, float64(u.Memory))
		}
	}
	if !p.skip(rdEnc) {
		if v, _, r := dev.GetEncoderUtilization(); p.ok(rdEnc, "GetEncoderUtilization", r) {
			p.put(telemetry.DCGMEncUtil, float64(v))
		}
	}
	if !p.skip(rdDec) {
		if v, _, r := dev.GetDecoderUtilization(); p.ok(rdDec, "GetDecoderUtilization", r) {
			p.put(telemetry.DCGMDecUtil, float64(v))
		}
	}
	for k, v := range violations {
		bit := rdViolation + k
		if p.skip(bit) {
			continue
		}
		if t, r := dev.GetViolationStatus(v.policy); p.ok(bit, v.call, r) {
			p.put(v.name, float64(t.ViolationTime))
		}
	}
	switch {
	case !p.skip(rdEventReasons):
		if v, r := dev.GetCurrentClocksEventReasons(); p.ok(rdEventReasons, "GetCurrentClocksEventReasons", r) {
			p.put(telemetry.DCGMClockThrottleReasons, float64(v))
		}
	case !p.skip(rdThrottleReasons): // drivers before R535 have only the old name
		if v, r := dev.GetCurrentClocksThrottleReasons(); p.ok(rdThrottleReasons, "GetCurrentClocksThrottleReasons", r) {
			p.put(telemetry.DCGMClockThrottleReasons, float64(v))
		}
	}
	collectMemory(p, dev)
	if !p.skip(rdPersistence) {
		if v, r := dev.GetPersistenceMode(); p.ok(rdPersistence, "GetPersistenceMode", r) {
			p.put(telemetry.DCGMPersistenceMode, enabled(v == gonvml.FEATURE_ENABLED))
		}
	}
	if !p.skip(rdMIG) {
		if cur, _, r := dev.GetMigMode(); p.ok(rdMIG, "GetMigMode", r) {
			p.put(telemetry.DCGMMIGMode, enabled(cur == gonvml.DEVICE_MIG_ENABLE))
		}
	}
	collectLicense(p, dev)
	collectFabric(p, dev)
}

// collectFabric emits the GPU's NVLink fabric registration where NVML has one
// (Hopper and later on NVSwitch systems; elsewhere NOT_SUPPORTED or state
// NOT_SUPPORTED, and nothing is emitted). The status is the registration's
// result and means something only once the state is COMPLETED.
func collectFabric(p *pass, dev gonvml.Device) {
	if p.skip(rdFabric) {
		return
	}
	f, r := dev.GetGpuFabricInfo()
	if !p.ok(rdFabric, "GetGpuFabricInfo", r) {
		return
	}
	if f.State == gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED {
		*p.ns |= 1 << rdFabric
		return
	}
	p.put(telemetry.MetricGPUFabricState, float64(f.State))
	if f.State == gonvml.GPU_FABRIC_STATE_COMPLETED {
		p.put(telemetry.MetricGPUFabricStatus, float64(f.Status))
	}
}

// collectMemory emits the framebuffer series in MiB. nvmlMemory_v2 reports the
// driver's reservation apart; with only v1 (Used includes it) FB_RESERVED is left
// out and the used fraction is used / total.
func collectMemory(p *pass, dev gonvml.Device) {
	const mib = 1 << 20
	if !p.skip(rdMemV2) {
		if m, r := dev.GetMemoryInfo_v2(); p.ok(rdMemV2, "GetMemoryInfo_v2", r) {
			p.put(telemetry.DCGMFBTotal, float64(m.Total/mib))
			p.put(telemetry.DCGMFBFree, float64(m.Free/mib))
			p.put(telemetry.DCGMFBUsed, float64(m.Used/mib))
			p.put(telemetry.DCGMFBReserved, float64(m.Reserved/mib))
			if m.Total > m.Reserved {
				p.put(telemetry.DCGMFBUsedPercent, float64(m.Used)/float64(m.Total-m.Reserved))
			}
			return
		}
		if !p.skip(rdMemV2) || p.stop {
			return // failed for another reason than NOT_SUPPORTED
		}
	}
	if !p.skip(rdMemV1) {
		if m, r := dev.GetMemoryInfo(); p.ok(rdMemV1, "GetMemoryInfo", r) {
			p.put(telemetry.DCGMFBTotal, float64(m.Total/mib))
			p.put(telemetry.DCGMFBFree, float64(m.Free/mib))
			p.put(telemetry.DCGMFBUsed, float64(m.Used/mib))
			if m.Total > 0 {
				p.put(telemetry.DCGMFBUsedPercent, float64(m.Used)/float64(m.Total))
			}
		}
	}
}

// collectLicense emits DCGM_FI_DEV_VGPU_LICENSE_STATUS: 1 when a vGPU guest holds
// a licence for an enabled feature, else 0 (bare metal and passthrough read 0, as
// dcgm-exporter shows them).
func collectLicense(p *pass, dev gonvml.Device) {
	if p.skip(rdVirt) {
		return
	}
	mode, r := dev.GetVirtualizationMode()
	if !p.ok(rdVirt, "GetVirtualizationMode", r) {
		return
	}
	if mode != gonvml.GPU_VIRTUALIZATION_MODE_VGPU {
		p.put(telemetry.DCGMVGPULicenseStatus, 0)
		return
	}
	if p.skip(rdLicense) {
		return
	}
	f, r := dev.GetGridLicensableFeatures()
	if !p.ok(rdLicense, "GetGridLicensableFeatures", r) {
		return
	}
	licensed := false
	for i := 0; i < int(f.LicensableFeaturesCount) && i < len(f.GridLicensableFeatures); i++ {
		ft := &f.GridLicensableFeatures[i]
		if ft.FeatureEnabled != 0 && ft.FeatureState != 0 {
			licensed = true
		}
	}
	p.put(telemetry.DCGMVGPULicenseStatus, enabled(licensed))
}

// countLabels labels NVML's GPU count; shared, read-only.
var countLabels = telemetry.NewLabels(telemetry.LabelSource, string(telemetry.SourceNVML))

func enabled(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// fieldValue decodes a field value by its ValueType.
func fieldValue(fv *gonvml.FieldValue) (float64, bool) {
	b := fv.Value[:]
	switch gonvml.ValueType(fv.ValueType) {
	case gonvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.NativeEndian.Uint64(b)), true
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.NativeEndian.Uint32(b)), true
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.NativeEndian.Uint64(b)), true
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.NativeEndian.Uint64(b))), true
	case gonvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.NativeEndian.Uint32(b))), true
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.NativeEndian.Uint16(b)), true
	}
	return 0, false
}
