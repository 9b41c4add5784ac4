package simhw

import (
	"math"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Violation counters kept per GPU, in nanoseconds. The first six are indexed by
// nvml.PerfPolicyType; the rest back the FI_DEV_CLOCKS_EVENT_REASON_* duration fields.
const (
	violPower       = int(nvml.PERF_POLICY_POWER)
	violThermal     = int(nvml.PERF_POLICY_THERMAL)
	violSyncBoost   = int(nvml.PERF_POLICY_SYNC_BOOST)
	violBoardLimit  = int(nvml.PERF_POLICY_BOARD_LIMIT)
	violLowUtil     = int(nvml.PERF_POLICY_LOW_UTILIZATION)
	violReliability = int(nvml.PERF_POLICY_RELIABILITY)
	violTotalApp    = 6
	violTotalBase   = 7
	violSwThermal   = 8
	violHwThermal   = 9
	violPowerBrake  = 10
	numViol         = 11
)

// The thermal time constant of a GPU and its heatsink: after a step in power the
// temperature covers 63% of the way to its new steady state in this long.
const thermalTau = 40 * time.Second

// gpu is the simulated state of one GPU. Every field is guarded by the owning
// node's mutex. NVML reads never change it, so reading cannot perturb the simulation.
type gpu struct {
	node  *Node
	index int

	// Identity: fixed at fleet creation.
	uuid     string
	serial   string
	bus      uint8
	busID    string // NVML form, "00000000:18:00.0"
	numa     int
	moduleID int

	// Workload.
	job     *jobState
	pids    []uint32 // processes of job on this GPU
	memJob  uint64   // bytes the job allocated on this GPU
	load    float64  // inference load level in percent, chosen at job start
	busyFor time.Duration

	// Physical state, updated by step.
	util      float64 // percent
	memUtil   float64 // percent
	powerW    float64
	tempC     float64
	memTempC  float64
	smMHz     uint32
	videoMHz  uint32
	reasons   uint64 // clocks event reasons
	energyMJ  float64
	viol      [numViol]uint64
	pcieTxKBs float64
	pcieRxKBs float64
	pcieTx    uint64 // bytes, FI_DEV_PCIE_COUNT_TX_BYTES
	pcieRx    uint64
	replay    uint64 // PCIe replay counter
	ibTxBps   float64
	ibRxBps   float64
	nvTxBps   float64 // NVLink bytes/s over all links, for DCGM's profiling fields
	nvRxBps   float64

	// Memory errors: ecc[errType][counterType][location].
	ecc          [2][2][nvml.MEMORY_LOCATION_COUNT]uint64
	remapCorr    uint32
	remapUnc     uint32
	remapPending bool
	remapFailure bool

	links []nvlink

	// Faults.
	lost      bool
	hung      bool // GSP hang (Xid 119): dynamic queries time out
	hangUntil time.Time
	stalled   bool // jobs cannot run until a reset (Xid 48, 62, 95, 119, 120, 79)
	recovery  nvml.DeviceGpuRecoveryAction
	thermal   timedLevel // forced temperature floor in °C
	power     timedLevel // power-brake cap in W
	sbeStorm  spread
	// hidden: the driver failed to initialise the GPU (gpu-missing): NVML does
	// not list it, the PCI bus still shows it.
	hidden bool
	// fabricDown: the GPU is not registered in the NVLink fabric (the fabric
	// manager is down): GPU fabric state NOT_STARTED.
	fabricDown bool
	// persistenceOff: persistence mode disabled (persistence-mode-off).
	persistenceOff bool
	// dcgmXids are the Xids since the last reset that DCGM's driver health
	// watch reports (dcgmXid).
	dcgmXids []int
}

// nvlink is one NVLink of a GPU, wired to a port of an NVSwitch.
type nvlink struct {
	active    bool
	downUntil time.Time // zero: down until recover
	sw        int       // NVSwitch index
	port      uint32    // port on that NVSwitch
	replay    uint64
	recovery  uint64
	crcFlit   uint64
	crcData   uint64
	eccData   uint64
	txKiB     float64
	rxKiB     float64
	crcStorm  spread
}

// timedLevel is a fault that holds a level until an optional end time.
type timedLevel struct {
	on    bool
	level float64
	until time.Time // zero: until recover
}

func (t *timedLevel) expire(now time.Time) {
	if t.on && !t.until.IsZero() && !now.Before(t.until) {
		*t = timedLevel{}
	}
}

// spread emits a fixed number of events evenly over a duration, exactly: after
// the duration has passed, all of them.
type spread struct {
	total, done   uint64
	elapsed, over time.Duration
}

func newSpread(total int, over time.Duration) spread {
	return spread{total: uint64(total), over: over}
}

// take returns how many events fall into the next dt.
func (s *spread) take(dt time.Duration) uint64 {
	if s.done >= s.total {
		return 0
	}
	s.elapsed += dt
	want := s.total
	if s.elapsed < s.over {
		want = uint64(float64(s.total) * float64(s.elapsed) / float64(s.over))
	}
	if want <= s.done {
		return 0
	}
	n := want - s.done
	s.done = want
	return n
}

func (s *spread) active() bool { return s.done < s.total }

// rate is the events per second the spread emits.
func (s *spread) rate() float64 {
	if s.over <= 0 {
		return math.Inf(1)
	}
	return float64(s.total) / s.over.Seconds()
}

// kindProfile is how hard a kind of job drives a GPU.
type kindProfile struct {
	peakPowerFrac float64 // power demand at 100% util as a fraction of the limit
	nvlinkFrac    float64 // NVLink data rate at 100% util as a fraction of link capacity
	ibBps         float64 // per-rail InfiniBand rate at 100% util for multi-node jobs
	hostBps       float64 // PCIe host traffic at 100% util
}

func profileOf(k JobKind) kindProfile {
	switch k {
	case JobTraining:
		// Large-model training runs H100s into their power cap.
		return kindProfile{peakPowerFrac: 1.02, nvlinkFrac: 0.35, ibBps: 30e9, hostBps: 1.5e9}
	case JobInference:
		return kindProfile{peakPowerFrac: 0.75, nvlinkFrac: 0.06, ibBps: 0.5e9, hostBps: 0.3e9}
	}
	return kindProfile{}
}

// step advances the GPU by dt ending at now. It draws the same number of random
// numbers whatever the GPU's state, so one GPU's faults do not reshuffle the noise of
// the others.
func (g *gpu) step(now time.Time, dt time.Duration) {
	sh := g.node.shape
	sec := dt.Seconds()
	r := g.node.rng
	noise1, noise2, noise3 := r.NormFloat64(), r.NormFloat64(), r.Float64()

	g.thermal.expire(now)
	g.power.expire(now)
	if g.hung && !g.hangUntil.IsZero() && !now.Before(g.hangUntil) {
		g.hung, g.hangUntil = false, time.Time{}
	}
	for i := range g.links {
		l := &g.links[i]
		if !l.active && !l.downUntil.IsZero() && !now.Before(l.downUntil) {
			l.active, l.downUntil = true, time.Time{}
		}
	}

	// Demand from the workload.
	var util, memUtil float64
	var prof kindProfile
	running := g.job != nil && !g.lost && !g.hung && !g.stalled
	if running {
		prof = profileOf(g.job.Kind)
		g.busyFor += dt
		switch g.job.Kind {
		case JobTraining:
			util = 96 + 2.5*noise1
			// A checkpoint every 30 minutes idles the GPUs for about 40 s.
			if g.busyFor%(30*time.Minute) < 40*time.Second && g.busyFor > time.Minute {
				util = 4 + 2*noise1
			}
			memUtil = 0.55*util + 4*noise2
		case JobInference:
			wave := math.Sin(2 * math.Pi * g.busyFor.Hours() / 3)
			util = g.load*(0.8+0.2*wave) + 6*noise1
			memUtil = 0.45*util + 3*noise2
		}
	}
	util = clamp(util, 0, 100)
	memUtil = clamp(memUtil, 0, 100)

	idle := sh.IdlePowerW
	limit := sh.PowerLimitW
	demand := idle + 2*noise3
	if g.job != nil && !g.lost {
		demand += 6 // a CUDA context keeps memory and some clocks up
	}
	if util > 0 {
		demand += (limit*prof.peakPowerFrac - idle) * math.Pow(util/100, 0.8)
	}

	// Limits and throttling.
	var reasons uint64
	scale := 1.0
	p := demand
	if util < 1 {
		reasons |= nvml.ClocksEventReasonGpuIdle
	}
	if p > limit {
		reasons |= nvml.ClocksEventReasonSwPowerCap
		scale = math.Sqrt((limit - idle) / (p - idle))
		p = limit
	}
	if g.power.on {
		reasons |= nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown
		scale = math.Min(scale, 0.45)
		p = math.Min(idle+(p-idle)*0.5, g.power.level)
	}
	if g.tempC >= sh.SlowdownC {
		reasons |= nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksThrottleReasonHwThermalSlowdown
		scale = math.Min(scale, 0.6)
		p = idle + (p-idle)*0.6
	} else if g.tempC >= sh.GPUMaxC {
		reasons |= nvml.ClocksEventReasonSwThermalSlowdown
		scale = math.Min(scale, 0.85)
		p = idle + (p-idle)*0.85
	}
	p = clamp(p, idle, limit)
	if g.lost {
		reasons = 0
	}

	// Clocks.
	if util < 1 {
		g.smMHz, g.videoMHz = sh.IdleSMMHz, sh.IdleVideoMHz
	} else {
		g.smMHz = roundClock(float64(sh.MaxSMMHz) * scale)
		g.videoMHz = roundClock(float64(sh.MaxVideoMHz) * scale)
	}

	// Temperature follows power with a first-order lag.
	alpha := 1 - math.Exp(-sec/thermalTau.Seconds())
	target := sh.AmbientC + sh.CPerWatt*p
	if g.thermal.on {
		target = math.Max(target, g.thermal.level)
	}
	g.tempC += (target - g.tempC) * alpha
	g.memTempC += (target + 7 + memUtil*0.08 - g.memTempC) * alpha

	g.util, g.memUtil, g.powerW, g.reasons = util, memUtil, p, reasons
	g.energyMJ += p * sec * 1000

	ns := uint64(dt)
	if reasons&nvml.ClocksEventReasonSwPowerCap != 0 {
		g.viol[violPower] += ns
	}
	if reasons&nvml.ClocksThrottleReasonHwPowerBrakeSlowdown != 0 {
		g.viol[violPower] += ns
		g.viol[violBoardLimit] += ns
		g.viol[violPowerBrake] += ns
	}
	if reasons&(nvml.ClocksThrottleReasonHwThermalSlowdown|nvml.ClocksEventReasonSwThermalSlowdown) != 0 {
		g.viol[violThermal] += ns
		if reasons&nvml.ClocksThrottleReasonHwThermalSlowdown != 0 {
			g.viol[violHwThermal] += ns
			g.viol[violTotalBase] += ns
		} else {
			g.viol[violSwThermal] += ns
		}
	}
	if reasons&nvml.ClocksEventReasonGpuIdle != 0 {
		g.viol[violLowUtil] += ns
	}
	if reasons&^nvml.ClocksEventReasonGpuIdle != 0 {
		g.viol[violTotalApp] += ns
	}

	// Traffic.
	f := util / 100
	var nvBps, ibBps float64
	if running && g.job.gpusHere > 1 {
		nvBps = prof.nvlinkFrac * float64(sh.NVLinkMBps) * 1e6 * float64(sh.NVLinks()) * f
	}
	if running && g.job.MultiNode {
		ibBps = prof.ibBps * f
	}
	host := prof.hostBps*f + 50e3 // driver and monitoring traffic
	g.ibTxBps, g.ibRxBps = ibBps, ibBps*(1+0.02*noise2)
	g.pcieTxKBs = (host*0.3 + g.ibTxBps) / 1000
	g.pcieRxKBs = (host + g.ibRxBps) / 1000
	g.pcieTx += uint64(g.pcieTxKBs * 1000 * sec)
	g.pcieRx += uint64(g.pcieRxKBs * 1000 * sec)
	// Roughly one PCIe replay a day per GPU.
	if noise3 < sec/86400 {
		g.replay++
	}

	active := 0
	for i := range g.links {
		if g.links[i].active {
			active++
		}
	}
	g.nvTxBps, g.nvRxBps = 0, 0
	if active > 0 && nvBps > 0 {
		g.nvTxBps, g.nvRxBps = nvBps, nvBps*(1+0.01*noise1)
	}
	for i := range g.links {
		l := &g.links[i]
		if l.active && active > 0 && nvBps > 0 {
			kib := nvBps / float64(active) * sec / 1024
			l.txKiB += kib
			l.rxKiB += kib * (1 + 0.01*noise1)
		}
		if n := l.crcStorm.take(dt); n > 0 {
			l.crcFlit += n
			l.crcData += n / 8
			l.replay += n
			l.recovery += n / 400
		}
	}

	if n := g.sbeStorm.take(dt); n > 0 {
		g.addECC(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.MEMORY_LOCATION_DRAM, n)
		g.node.emit(g, nvml.EventTypeSingleBitEccError, 0)
	}
}

// addECC counts n memory errors in both the volatile and the aggregate counters.
func (g *gpu) addECC(t nvml.MemoryErrorType, loc nvml.MemoryLocation, n uint64) {
	g.ecc[t][nvml.VOLATILE_ECC][loc] += n
	g.ecc[t][nvml.AGGREGATE_ECC][loc] += n
}

// eccTotal sums one error type and counter type over all locations.
func (g *gpu) eccTotal(t nvml.MemoryErrorType, c nvml.EccCounterType) uint64 {
	var s uint64
	for _, v := range g.ecc[t][c] {
		s += v
	}
	return s
}

// reset models a GPU reset (nvidia-smi -r) or the reboot that follows a lost GPU:
// the GPU answers again, pending row remaps take effect, volatile ECC counts and
// every recovery requirement clear, and NVLinks retrain. Aggregate counters, energy
// and the InfoROM's remap-failure flag survive, as on real hardware.
func (g *gpu) reset() {
	g.lost, g.hung, g.hangUntil, g.stalled = false, false, time.Time{}, false
	g.hidden, g.fabricDown, g.persistenceOff = false, false, false
	g.dcgmXids = nil
	g.recovery = nvml.GPU_RECOVERY_ACTION_NONE
	g.thermal, g.power = timedLevel{}, timedLevel{}
	g.sbeStorm = spread{}
	g.remapPending = false
	for t := range g.ecc {
		for l := range g.ecc[t][nvml.VOLATILE_ECC] {
			g.ecc[t][nvml.VOLATILE_ECC][l] = 0
		}
	}
	for i := range g.links {
		g.links[i].active, g.links[i].downUntil = true, time.Time{}
		g.links[i].crcStorm = spread{}
	}
	g.busyFor = 0
}

// activeLinks counts the GPU's NVLinks that are up.
func (g *gpu) activeLinks() int {
	n := 0
	for i := range g.links {
		if g.links[i].active {
			n++
		}
	}
	return n
}

func clamp(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// roundClock rounds a clock to the 15 MHz steps GPUs clock in.
func roundClock(mhz float64) uint32 {
	return uint32(math.Round(mhz/15) * 15)
}
