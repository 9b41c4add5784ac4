package simhw

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/simhw/simib"
	"github.com/gpuwatch/gpuwatch/collector/simhw/simkmsg"
)

// FaultKind names a fault the simulator can inject.
type FaultKind string

// Fault kinds. docs/faults.md describes each with its observable effects.
const (
	FaultXid             FaultKind = "xid"
	FaultGPULost         FaultKind = "gpu-lost"
	FaultECCDBE          FaultKind = "ecc-dbe"
	FaultECCSBEStorm     FaultKind = "ecc-sbe-storm"
	FaultRowRemapPending FaultKind = "row-remap-pending"
	FaultRowRemapFailure FaultKind = "row-remap-failure"
	FaultThermal         FaultKind = "thermal"
	FaultPower           FaultKind = "power"
	FaultNVLinkDown      FaultKind = "nvlink-down"
	FaultNVLinkCRC       FaultKind = "nvlink-crc"
	FaultIBDown          FaultKind = "ib-down"
	FaultIBFlap          FaultKind = "ib-flap"
	FaultIBSymbolErrors  FaultKind = "ib-symbol-errors"
	FaultDriverNotLoaded FaultKind = "driver-not-loaded"
	FaultGPUMissing      FaultKind = "gpu-missing"
	FaultFabricManager   FaultKind = "fabric-manager"
	FaultSXid            FaultKind = "sxid"
	FaultPersistenceOff  FaultKind = "persistence-mode-off"
	FaultRecover         FaultKind = "recover"
)

// FaultKinds lists every fault kind in documentation order.
func FaultKinds() []FaultKind {
	return []FaultKind{FaultXid, FaultGPULost, FaultECCDBE, FaultECCSBEStorm, FaultRowRemapPending,
		FaultRowRemapFailure, FaultThermal, FaultPower, FaultNVLinkDown, FaultNVLinkCRC, FaultIBDown,
		FaultIBFlap, FaultIBSymbolErrors, FaultDriverNotLoaded, FaultGPUMissing, FaultFabricManager, FaultSXid,
		FaultPersistenceOff, FaultRecover}
}

// AllGPUs as Fault.GPU makes a fault node-level: thermal, power and recover then
// hit every GPU, and the InfiniBand faults every HCA unless HCA names one.
const AllGPUs = -1

// Fault is one hardware fault. Fields a kind does not use are ignored.
type Fault struct {
	// At is when a scenario applies the fault, as an offset from the fleet's
	// start. Node.Inject ignores it and applies the fault now.
	At time.Duration
	// Node names the node in a scenario; "" in a single-node fleet. Node.Inject
	// ignores it.
	Node string
	// GPU is the GPU index, or AllGPUs.
	GPU  int
	Kind FaultKind
	// Xid is the Xid number of kind xid.
	Xid int
	// Link is the NVLink index of nvlink-down, nvlink-crc and Xid 74.
	Link int
	// HCA picks the InfiniBand adapter by name ("mlx5_3") or index ("3"); "" means
	// the rail of GPU, or every HCA when GPU is AllGPUs.
	HCA string
	// Port is the HCA port (default 1).
	Port int
	// Count sizes the fault: errors of a storm (ecc-sbe-storm 1000, nvlink-crc
	// 1000, ib-symbol-errors 100), flaps of ib-flap (1), DBEs of ecc-dbe (1).
	Count int
	// Duration bounds the fault: storms and flaps spread their Count over it
	// (storms default to 1m, flaps and symbol errors to all at once); thermal,
	// power, nvlink-down, ib-down and Xid 119 end after it (0: at recover).
	Duration time.Duration
	// TempC is the temperature thermal drives the GPU to (default: the slowdown
	// threshold + 3 °C).
	TempC float64
	// Watts caps the GPU's power under power (default: half the power limit).
	Watts float64
	// Action is the recovery action Xid 154 announces: none, gpu-reset,
	// node-reboot, drain-p2p or drain-and-reset (default gpu-reset).
	Action string
	// SXid is the NVSwitch error of kind sxid (one of simkmsg.KnownSXids);
	// NVSwitch is the switch (0-based, in PCI order) and Link its port.
	SXid     int
	NVSwitch int
}

// Xids NVML does not deliver as events: they reach only the kernel log (see the
// health model in DESIGN.md). 79 instead makes the next EventSet.Wait answer
// ERROR_GPU_IS_LOST.
func xidDeliveredAsEvent(xid int) bool {
	switch xid {
	case 62, 79, 119, 120:
		return false
	}
	return true
}

var recoveryActions = map[string]nvml.DeviceGpuRecoveryAction{
	"none":            nvml.GPU_RECOVERY_ACTION_NONE,
	"gpu-reset":       nvml.GPU_RECOVERY_ACTION_GPU_RESET,
	"node-reboot":     nvml.GPU_RECOVERY_ACTION_NODE_REBOOT,
	"drain-p2p":       nvml.GPU_RECOVERY_ACTION_DRAIN_P2P,
	"drain-and-reset": nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET,
}

// recoveryRank orders recovery actions by how much they take away.
func recoveryRank(a nvml.DeviceGpuRecoveryAction) int {
	switch a {
	case nvml.GPU_RECOVERY_ACTION_NONE:
		return 0
	case nvml.GPU_RECOVERY_ACTION_DRAIN_P2P, nvml.GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN:
		return 1
	case nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET:
		return 2
	case nvml.GPU_RECOVERY_ACTION_GPU_RESET:
		return 3
	}
	return 4
}

// gpuLevel reports whether a kind acts on GPUs (and so needs GPU or, for the
// kinds that allow it, AllGPUs).
func (k FaultKind) gpuLevel() bool {
	switch k {
	case FaultIBDown, FaultIBFlap, FaultIBSymbolErrors, FaultDriverNotLoaded, FaultSXid:
		return false
	}
	return true
}

// nodeOnly reports whether a kind acts on the node and takes no GPU at all.
func (k FaultKind) nodeOnly() bool { return k == FaultDriverNotLoaded || k == FaultSXid }

// allowsAllGPUs reports whether a GPU-level kind may omit the GPU.
func (k FaultKind) allowsAllGPUs() bool {
	return k == FaultThermal || k == FaultPower || k == FaultRecover || k == FaultFabricManager || k == FaultPersistenceOff
}

func (k FaultKind) valid() bool { return slices.Contains(FaultKinds(), k) }

// check validates f against the node's hardware.
func (n *Node) check(f *Fault) error {
	if !f.Kind.valid() {
		return fmt.Errorf("unknown kind %q (want one of %s)", f.Kind, kindList())
	}
	nG := len(n.gpus)
	switch {
	case f.Kind.nodeOnly() && f.GPU != AllGPUs:
		return fmt.Errorf("kind %s acts on the node: it takes no gpu", f.Kind)
	case f.GPU == AllGPUs:
		if f.Kind.gpuLevel() && !f.Kind.allowsAllGPUs() {
			return fmt.Errorf("kind %s needs gpu", f.Kind)
		}
	case f.GPU < 0 || f.GPU >= nG:
		return fmt.Errorf("gpu %d out of range (0-%d)", f.GPU, nG-1)
	}
	switch {
	case f.Count < 0:
		return fmt.Errorf("count %d: want 0 (default) or more", f.Count)
	case f.Duration < 0:
		return fmt.Errorf("duration %v: want 0 or more", f.Duration)
	}
	switch f.Kind {
	case FaultXid:
		if f.Xid <= 0 || f.Xid > 999 {
			return fmt.Errorf("xid %d: want an Xid number 1-999 (kind xid needs xid)", f.Xid)
		}
		if f.Xid == 154 && f.Action != "" {
			if _, ok := recoveryActions[f.Action]; !ok {
				return fmt.Errorf("action %q: want none, gpu-reset, node-reboot, drain-p2p or drain-and-reset", f.Action)
			}
		}
		if f.Xid == 74 {
			return n.checkLink(f)
		}
	case FaultNVLinkDown, FaultNVLinkCRC:
		return n.checkLink(f)
	case FaultThermal:
		if f.TempC != 0 && (f.TempC < 20 || f.TempC > 120) {
			return fmt.Errorf("temp %g: want 20-120 °C", f.TempC)
		}
	case FaultPower:
		if f.Watts != 0 && (f.Watts < n.shape.IdlePowerW || f.Watts > n.shape.PowerLimitW) {
			return fmt.Errorf("watts %g: want %g-%g W", f.Watts, n.shape.IdlePowerW, n.shape.PowerLimitW)
		}
	case FaultIBDown, FaultIBFlap, FaultIBSymbolErrors:
		_, err := n.ibPorts(f)
		return err
	case FaultSXid:
		if _, ok := simkmsg.LookupSXid(f.SXid); !ok {
			return fmt.Errorf("sxid %d: want one the simulator knows (%s)", f.SXid, sxidList())
		}
		if f.NVSwitch < 0 || f.NVSwitch >= len(n.shape.NVSwitchBus) {
			return fmt.Errorf("nvswitch %d out of range (0-%d)", f.NVSwitch, len(n.shape.NVSwitchBus)-1)
		}
		if f.Link < 0 || f.Link > 63 {
			return fmt.Errorf("link %d: want an NVSwitch port 0-63", f.Link)
		}
	case FaultFabricManager:
		if !n.shape.FabricInfo {
			return fmt.Errorf("kind %s: the %s shape has no NVML GPU fabric state (Hopper and later)", f.Kind, n.shape.Name)
		}
	}
	return nil
}

func sxidList() string {
	var s []string
	for _, x := range simkmsg.KnownSXids {
		sev := "non-fatal"
		if x.Fatal {
			sev = "fatal"
		}
		s = append(s, fmt.Sprintf("%d %s", x.Code, sev))
	}
	return strings.Join(s, ", ")
}

func (n *Node) checkLink(f *Fault) error {
	if f.Link < 0 || f.Link >= n.shape.NVLinks() {
		return fmt.Errorf("link %d out of range (0-%d)", f.Link, n.shape.NVLinks()-1)
	}
	return nil
}

func kindList() string {
	var s []string
	for _, k := range FaultKinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// ibPorts resolves the InfiniBand ports an IB fault hits.
func (n *Node) ibPorts(f *Fault) ([]*simib.Port, error) {
	var hcas []*simib.HCA
	switch {
	case f.HCA != "":
		h := n.hcaByName(f.HCA)
		if h == nil {
			return nil, fmt.Errorf("hca %q: no such HCA (have mlx5_0-mlx5_%d)", f.HCA, len(n.hcas)-1)
		}
		hcas = []*simib.HCA{h}
	case f.GPU >= 0:
		hcas = []*simib.HCA{n.hcas[f.GPU]}
	default:
		hcas = n.hcas
	}
	num := f.Port
	if num == 0 {
		num = 1
	}
	var out []*simib.Port
	for _, h := range hcas {
		p := h.Port(num)
		if p == nil {
			return nil, fmt.Errorf("port %d: %s has no such port", num, h.Name)
		}
		out = append(out, p)
	}
	return out, nil
}

func (n *Node) hcaByName(s string) *simib.HCA {
	if i, err := strconv.Atoi(s); err == nil {
		if i >= 0 && i < len(n.hcas) {
			return n.hcas[i]
		}
		return nil
	}
	for _, h := range n.hcas {
		if h.Name == s {
			return h
		}
	}
	return nil
}

// Inject applies f to the node now. Effects, all observable at the hardware
// boundary (NVML, the kernel log, the InfiniBand sysfs tree):
//
//   - xid: an NVRM Xid line in the kernel log and, except for 62, 79, 119 and 120,
//     an EventTypeXidCriticalError event; plus the Xid's side effects: 48 = ecc-dbe;
//     63 = row-remap-pending; 64 = row-remap-failure; 74 takes Link down with
//     replay/recovery/CRC errors and needs a GPU reset; 79 = gpu-lost; 94 a
//     contained uncorrectable error (DBE counted, row remap pending, recovery
//     action drain-and-reset); 95 an uncontained one (GPU reset required, work
//     stops); 62, 119, 120 stop the GPU until reset, 119 also makes telemetry
//     queries time out (for Duration, or until recover); 154 sets the recovery
//     action to Action.
//   - gpu-lost: the GPU answers ERROR_GPU_IS_LOST until recover; Xid 79 is logged,
//     not delivered; recovery action node-reboot.
//   - ecc-dbe: Count uncorrectable DRAM errors (volatile and aggregate), a row
//     remapped and pending, Xid 48 and 63, DoubleBitEcc and DramRetirement
//     events, recovery action gpu-reset, work stops.
//   - ecc-sbe-storm: Count corrected DRAM errors over Duration.
//   - row-remap-pending / row-remap-failure: a row remapped and pending (Xid 63,
//     drain-and-reset) / the remap failure flag, which the InfoROM keeps across
//     resets (Xid 64, gpu-reset).
//   - thermal: the GPU heats to TempC; at the slowdown threshold clocks drop,
//     HwSlowdown|HwThermalSlowdown are set and the thermal violation time grows.
//   - power: an external power brake: clocks drop, power is capped at Watts,
//     HwSlowdown|HwPowerBrakeSlowdown are set, power and board-limit violation
//     time grows.
//   - nvlink-down: Link goes inactive (its NVSwitch end still reported).
//   - nvlink-crc: Count CRC flit errors on Link over Duration, with CRC data,
//     replay and recovery errors alongside.
//   - ib-down, ib-flap, ib-symbol-errors: the port goes down (for Duration), flaps
//     Count times, or counts Count symbol errors.
//   - driver-not-loaded: the NVIDIA kernel module did not load: NVML's Init
//     answers ERROR_DRIVER_NOT_LOADED (a library already initialised keeps
//     working, as the module cannot be unloaded under it); the PCI bus still
//     shows every GPU.
//   - gpu-missing: the driver failed to initialise the GPU (RmInitAdapter
//     failed, in the log): NVML's device count drops by one and the GPUs after
//     it move up an index; the PCI bus still shows it.
//   - fabric-manager: the GPU (every GPU when GPU is AllGPUs) is not registered
//     in the NVLink fabric: GPU fabric state NOT_STARTED, as while the fabric
//     manager is down (Hopper shapes only).
//   - sxid: the NVSwitch driver logs SXid on NVSwitch's port Link, with its
//     detail lines; a fatal one takes the GPU NVLink on that port down.
//   - persistence-mode-off: persistence mode reads disabled.
//   - recover: a GPU reset (every GPU and InfiniBand port for a node-level recover):
//     lost and hung GPUs answer again, the recovery action clears, clocks return,
//     pending remaps take effect, volatile ECC counts clear, NVLinks retrain,
//     storms stop, a missing GPU is initialised, the fabric registration
//     completes, persistence mode is on again; a node-level recover also loads
//     the driver. Aggregate counters never go back.
func (n *Node) Inject(f Fault) error {
	if err := n.check(&f); err != nil {
		return fmt.Errorf("inject %s on %s: %w", f.Kind, n.name, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch f.Kind {
	case FaultDriverNotLoaded:
		n.driverUnloaded = true
		return nil
	case FaultSXid:
		n.injectSXid(f)
		return nil
	}
	if !f.Kind.gpuLevel() {
		n.injectIB(f)
		return nil
	}
	targets := n.gpus
	if f.GPU != AllGPUs {
		targets = n.gpus[f.GPU : f.GPU+1]
	}
	for _, g := range targets {
		n.injectGPU(g, f)
	}
	if f.Kind == FaultRecover && f.GPU == AllGPUs {
		n.driverUnloaded = false
		n.switchErrs = nil
		for _, h := range n.hcas {
			for _, p := range h.Ports {
				p.SetDown(false)
			}
		}
		n.ibFaults = nil
	}
	return nil
}

// injectGPU applies a GPU-level fault. The caller holds the lock.
func (n *Node) injectGPU(g *gpu, f Fault) {
	now := n.now
	until := time.Time{}
	if f.Duration > 0 {
		until = now.Add(f.Duration)
	}
	switch f.Kind {
	case FaultXid:
		n.injectXid(g, f, until)
	case FaultGPULost:
		n.loseGPU(g)
	case FaultECCDBE:
		n.dbe(g, max(f.Count, 1))
	case FaultECCSBEStorm:
		count, d := f.Count, f.Duration
		if count == 0 {
			count = 1000
		}
		if d == 0 {
			d = time.Minute
		}
		g.sbeStorm = newSpread(count, d)
		n.emit(g, nvml.EventTypeSingleBitEccErrorStorm, 0)
	case FaultRowRemapPending:
		n.remapPending(g, false)
	case FaultRowRemapFailure:
		n.remapFailure(g)
	case FaultThermal:
		t := f.TempC
		if t == 0 {
			t = n.shape.SlowdownC + 3
		}
		g.thermal = timedLevel{on: true, level: t, until: until}
	case FaultPower:
		w := f.Watts
		if w == 0 {
			w = n.shape.PowerLimitW / 2
		}
		g.power = timedLevel{on: true, level: w, until: until}
	case FaultNVLinkDown:
		l := &g.links[f.Link]
		if l.active {
			l.recovery++
		}
		l.active, l.downUntil = false, until
	case FaultNVLinkCRC:
		count, d := f.Count, f.Duration
		if count == 0 {
			count = 1000
		}
		if d == 0 {
			d = time.Minute
		}
		g.links[f.Link].crcStorm = newSpread(count, d)
	case FaultGPUMissing:
		if !g.hidden {
			g.hidden, g.stalled = true, true
			n.kmsg.GPUInitFailed(now, sysfsAddr(g.bus), g.index)
		}
	case FaultFabricManager:
		g.fabricDown = true
	case FaultPersistenceOff:
		g.persistenceOff = true
	case FaultRecover:
		n.resetGPU(g)
	}
}

// injectSXid logs an NVSwitch error; a fatal one takes the GPU NVLink wired to
// that switch port down until the GPU is reset. The caller holds the lock.
func (n *Node) injectSXid(f Fault) {
	s, _ := simkmsg.LookupSXid(f.SXid) // checked by Inject
	n.kmsg.NVSwitchError(n.now, f.NVSwitch, sysfsAddr(n.shape.NVSwitchBus[f.NVSwitch]), s, f.Link)
	n.noteSXid(s, f.NVSwitch, f.Link)
	if !s.Fatal {
		return
	}
	for _, g := range n.gpus {
		for i := range g.links {
			l := &g.links[i]
			if l.sw == f.NVSwitch && int(l.port) == f.Link {
				if l.active {
					l.recovery++
				}
				l.active, l.downUntil = false, time.Time{}
			}
		}
	}
}

// injectXid logs an Xid with its realistic side effects. The caller holds the lock.
func (n *Node) injectXid(g *gpu, f Fault, until time.Time) {
	if dcgmXid(f.Xid) && !slices.Contains(g.dcgmXids, f.Xid) {
		g.dcgmXids = append(g.dcgmXids, f.Xid)
	}
	switch f.Xid {
	case 48:
		n.dbe(g, max(f.Count, 1))
		return
	case 63:
		n.remapPending(g, false)
		return
	case 64:
		n.remapFailure(g)
		return
	case 79:
		n.loseGPU(g)
		return
	case 154:
		a := nvml.GPU_RECOVERY_ACTION_GPU_RESET
		if f.Action != "" {
			a = recoveryActions[f.Action]
		}
		n.setRecovery(g, a, true)
		return
	}
	n.logXid(g, f.Xid, "")
	switch f.Xid {
	case 74:
		l := &g.links[f.Link]
		l.active = false
		l.recovery++
		l.replay += 32
		l.crcFlit += 64
		l.crcData += 8
		n.setRecovery(g, nvml.GPU_RECOVERY_ACTION_GPU_RESET, false)
	case 94:
		g.addECC(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.MEMORY_LOCATION_DRAM, 1)
		n.emit(g, nvml.EventTypeDoubleBitEccError, 0)
		n.remapPending(g, true)
	case 95:
		g.addECC(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.MEMORY_LOCATION_DRAM, 1)
		n.emit(g, nvml.EventTypeDoubleBitEccError, 0)
		g.stalled = true
		n.setRecovery(g, nvml.GPU_RECOVERY_ACTION_GPU_RESET, false)
		n.remapPending(g, true)
	case 119:
		g.hung, g.hangUntil, g.stalled = true, until, true
		n.setRecovery(g, nvml.GPU_RECOVERY_ACTION_GPU_RESET, false)
	case 62, 120:
		g.stalled = true
		n.setRecovery(g, nvml.GPU_RECOVERY_ACTION_GPU_RESET, false)
	}
}

// logXid writes the NVRM line for xid and delivers the NVML event where NVML does.
func (n *Node) logXid(g *gpu, xid int, detail string) {
	pid, proc := 0, ""
	if g.job != nil && len(g.pids) > 0 {
		pid, proc = int(g.pids[0]), g.job.procName()
	}
	n.kmsg.Xid(n.now, g.busID, xid, pid, proc, detail)
	if xidDeliveredAsEvent(xid) && !g.lost {
		n.emit(g, nvml.EventTypeXidCriticalError, uint64(xid))
	}
}

// loseGPU makes g fall off the bus (Xid 79).
func (n *Node) loseGPU(g *gpu) {
	if g.lost {
		return
	}
	n.logXid(g, 79, "")
	g.lost, g.stalled = true, true
	n.setRecovery(g, nvml.GPU_RECOVERY_ACTION_NODE_REBOOT, false)
	n.emitLost(g)
}

// dbe counts count uncorrectable DRAM errors: Xid 48, a row marked for
// remapping (Xid 63), recovery action gpu-reset; work on the GPU stops.
func (n *Node) dbe(g *gpu, count int) {
	n.logXid(g, 48, "")
	g.addECC(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.MEMORY_LOCATION_DRAM, uint64(count))
	n.emit(g, nvml.EventTypeDoubleBitEccError, 0)
	g.stalled = true
	n.setRecovery(g, nvml.GPU_RECOVERY_ACTION_GPU_RESET, false)
	n.remapPending(g, true)
}

// remapPending marks a row for remapping at the next reset (Xid 63).
func (n *Node) remapPending(g *gpu, uncorrectable bool) {
	if uncorrectable {
		g.remapUnc++
	} else {
		g.remapCorr++
	}
	g.remapPending = true
	n.logXid(g, 63, "")
	n.emit(g, nvml.EventTypeDramRetirementEvent, 0)
	n.setRecovery(g, nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET, false)
}

// remapFailure records a failed row remap (Xid 64), kept in the InfoROM.
func (n *Node) remapFailure(g *gpu) {
	g.remapFailure = true
	n.logXid(g, 64, "")
	n.emit(g, nvml.EventTypeDramRetirementFailure, 0)
	n.setRecovery(g, nvml.GPU_RECOVERY_ACTION_GPU_RESET, false)
}

// setRecovery raises the GPU's recovery action to a (or sets it, when force),
// announcing the change with Xid 154 on drivers that have it.
func (n *Node) setRecovery(g *gpu, a nvml.DeviceGpuRecoveryAction, force bool) {
	if a == g.recovery || (!force && recoveryRank(a) <= recoveryRank(g.recovery)) {
		return
	}
	g.recovery = a
	if !n.shape.recoveryActionSupported() {
		return
	}
	n.kmsg.RecoveryAction(n.now, g.busID, simkmsg.RecoveryAction(a))
	if !g.lost {
		n.emit(g, nvml.EventTypeXidCriticalError, 154)
		n.emit(g, nvml.EventTypeGpuRecoveryAction, uint64(a))
	}
}

// resetGPU is a recover fault on one GPU.
func (n *Node) resetGPU(g *gpu) {
	announce := g.recovery != nvml.GPU_RECOVERY_ACTION_NONE && n.shape.recoveryActionSupported()
	g.reset()
	// The driver re-initializes the GPU: the next Xid prints its mapping again.
	n.kmsg.GPUAttached(n.now, g.busID, g.uuid, g.serial)
	if announce {
		n.kmsg.RecoveryAction(n.now, g.busID, simkmsg.RecoveryNone)
	}
}

// ibFault is an InfiniBand fault in progress on one port.
type ibFault struct {
	port    *simib.Port
	upAt    time.Time // ib-down with a Duration: when the link comes back
	flaps   spread
	symbols spread
}

// injectIB applies an InfiniBand fault. The caller holds the lock.
func (n *Node) injectIB(f Fault) {
	ports, _ := n.ibPorts(&f) // checked by Inject
	for _, p := range ports {
		switch f.Kind {
		case FaultIBDown:
			p.SetDown(true)
			if f.Duration > 0 {
				n.ibFaults = append(n.ibFaults, &ibFault{port: p, upAt: n.now.Add(f.Duration)})
			}
		case FaultIBFlap:
			count := max(f.Count, 1)
			if f.Duration == 0 {
				for range count {
					p.Flap()
				}
				continue
			}
			n.ibFaults = append(n.ibFaults, &ibFault{port: p, flaps: newSpread(count, f.Duration)})
		case FaultIBSymbolErrors:
			count := f.Count
			if count == 0 {
				count = 100
			}
			if f.Duration == 0 {
				p.AddSymbolErrors(uint64(count))
				continue
			}
			n.ibFaults = append(n.ibFaults, &ibFault{port: p, symbols: newSpread(count, f.Duration)})
		}
	}
}

// stepIBFaults advances the InfiniBand faults in progress. The caller holds the lock.
func (n *Node) stepIBFaults(dt time.Duration) {
	kept := n.ibFaults[:0]
	for _, f := range n.ibFaults {
		for range f.flaps.take(dt) {
			f.port.Flap()
		}
		if k := f.symbols.take(dt); k > 0 {
			f.port.AddSymbolErrors(k)
		}
		if !f.upAt.IsZero() && !n.now.Before(f.upAt) {
			f.port.SetDown(false)
			f.upAt = time.Time{}
		}
		if !f.upAt.IsZero() || f.flaps.active() || f.symbols.active() {
			kept = append(kept, f)
		}
	}
	n.ibFaults = kept
}
