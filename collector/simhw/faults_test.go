package simhw

import (
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/simhw/simib"
)

// faultEnv is what a fault case can observe: only hardware-boundary views.
type faultEnv struct {
	node   *Node
	lib    nvml.Interface
	dev    []nvml.Device
	events []nvml.EventData
	waitR  []nvml.Return // non-SUCCESS answers of Wait before the final timeout
	kmsg   string        // kernel log lines logged after the fleet started
	before map[string]uint64
}

func (e *faultEnv) xids() []uint64 {
	var out []uint64
	for _, ev := range e.events {
		if ev.EventType == nvml.EventTypeXidCriticalError {
			out = append(out, ev.EventData)
		}
	}
	return out
}

func (e *faultEnv) hasEvent(typ, data uint64) bool {
	for _, ev := range e.events {
		if ev.EventType == typ && ev.EventData == data {
			return true
		}
	}
	return false
}

func port(t *testing.T, n *Node, hca int) *simib.Port {
	t.Helper()
	return n.HCAs()[hca].Port(1)
}

func counter(t *testing.T, p *simib.Port, name string) uint64 {
	t.Helper()
	v, ok := p.Counter(name)
	if !ok {
		t.Fatalf("no IB counter %s", name)
	}
	return v
}

func field(t *testing.T, d nvml.Device, id uint32, scope uint32) uint64 {
	t.Helper()
	v, r := readField(t, d, id, scope)
	if r != nvml.SUCCESS {
		t.Fatalf("field %d: %v", id, r)
	}
	return v
}

// TestFaults injects each fault kind and checks its effect through NVML, the
// kernel log and the InfiniBand ports.
func TestFaults(t *testing.T) {
	gpu2 := func(f Fault) Fault { f.GPU = 2; return f }
	tests := []struct {
		name  string
		steps []Fault
		after time.Duration
		check func(t *testing.T, e *faultEnv)
	}{
		{
			name:  "xid 13 is logged and delivered, nothing else changes",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 13})},
			check: func(t *testing.T, e *faultEnv) {
				if !strings.Contains(e.kmsg, "NVRM: Xid (PCI:0000:3a:00): 13, pid=") {
					t.Errorf("kernel log lacks the Xid 13 line:\n%s", e.kmsg)
				}
				if xs := e.xids(); len(xs) != 1 || xs[0] != 13 || e.events[0].Device != e.dev[2] {
					t.Errorf("Xid events = %v", xs)
				}
				if v := field(t, e.dev[2], nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); v != 0 {
					t.Errorf("recovery action = %d", v)
				}
			},
		},
		{
			name:  "xid 31 and 43 are application faults",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 31}), gpu2(Fault{Kind: FaultXid, Xid: 43})},
			check: func(t *testing.T, e *faultEnv) {
				if xs := e.xids(); len(xs) != 2 || xs[0] != 31 || xs[1] != 43 {
					t.Errorf("Xid events = %v", xs)
				}
				if u := get(e.dev[2].GetUtilizationRates()).must(t, "util"); u.Gpu < 50 {
					t.Errorf("GPU stopped working after an application fault: %d%%", u.Gpu)
				}
			},
		},
		{
			name:  "xid 48: DBE counted, row remap pending, GPU reset required, work stops",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 48})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				d := e.dev[2]
				for _, c := range []nvml.EccCounterType{nvml.VOLATILE_ECC, nvml.AGGREGATE_ECC} {
					if v := get(d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, c)).must(t, "dbe"); v != 1 {
						t.Errorf("DBE count (%v) = %d, want 1", c, v)
					}
				}
				if v := field(t, d, nvml.FI_DEV_ECC_DBE_VOL_TOTAL, 0); v != 1 {
					t.Errorf("FI_DEV_ECC_DBE_VOL_TOTAL = %d", v)
				}
				_, unc, pending, failed, _ := d.GetRemappedRows()
				if unc != 1 || !pending || failed {
					t.Errorf("remapped rows: unc %d pending %v failed %v", unc, pending, failed)
				}
				if v := field(t, d, nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); v != uint64(nvml.GPU_RECOVERY_ACTION_GPU_RESET) {
					t.Errorf("recovery action = %d, want GPU reset", v)
				}
				if u := get(d.GetUtilizationRates()).must(t, "util"); u.Gpu != 0 {
					t.Errorf("utilization after DBE = %d, want 0", u.Gpu)
				}
				for _, x := range []string{"): 48, ", "): 63, ", "): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"} {
					if !strings.Contains(e.kmsg, x) {
						t.Errorf("kernel log lacks %q:\n%s", x, e.kmsg)
					}
				}
				if !e.hasEvent(nvml.EventTypeXidCriticalError, 48) || !e.hasEvent(nvml.EventTypeDoubleBitEccError, 0) ||
					!e.hasEvent(nvml.EventTypeGpuRecoveryAction, uint64(nvml.GPU_RECOVERY_ACTION_GPU_RESET)) {
					t.Errorf("events = %+v", e.events)
				}
				if v := get(e.dev[3].GetUtilizationRates()).must(t, "util"); v.Gpu == 0 {
					t.Errorf("GPU 3 stopped too")
				}
			},
		},
		{
			name:  "ecc-dbe counts Count errors",
			steps: []Fault{gpu2(Fault{Kind: FaultECCDBE, Count: 3})},
			check: func(t *testing.T, e *faultEnv) {
				if v := get(e.dev[2].GetMemoryErrorCounter(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC, nvml.MEMORY_LOCATION_DRAM)).must(t, "dbe"); v != 3 {
					t.Errorf("DRAM DBE = %d, want 3", v)
				}
			},
		},
		{
			name:  "row-remap-pending: drain and reset",
			steps: []Fault{gpu2(Fault{Kind: FaultRowRemapPending})},
			check: func(t *testing.T, e *faultEnv) {
				corr, _, pending, _, _ := e.dev[2].GetRemappedRows()
				if corr != 1 || !pending || field(t, e.dev[2], nvml.FI_DEV_REMAPPED_PENDING, 0) != 1 {
					t.Errorf("corr %d pending %v", corr, pending)
				}
				if v := field(t, e.dev[2], nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); v != uint64(nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET) {
					t.Errorf("recovery action = %d", v)
				}
				if !e.hasEvent(nvml.EventTypeDramRetirementEvent, 0) || !strings.Contains(e.kmsg, "): 63, ") {
					t.Errorf("no remap event or Xid 63 line")
				}
			},
		},
		{
			name:  "row-remap-failure survives a reset",
			steps: []Fault{gpu2(Fault{Kind: FaultRowRemapFailure}), gpu2(Fault{Kind: FaultRecover})},
			check: func(t *testing.T, e *faultEnv) {
				if _, _, _, failed, _ := e.dev[2].GetRemappedRows(); !failed {
					t.Errorf("remap failure cleared by reset")
				}
				if !e.hasEvent(nvml.EventTypeXidCriticalError, 64) || !e.hasEvent(nvml.EventTypeDramRetirementFailure, 0) {
					t.Errorf("events = %+v", e.events)
				}
			},
		},
		{
			name:  "xid 74 takes the link down and needs a reset",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 74, Link: 3})},
			check: func(t *testing.T, e *faultEnv) {
				d := e.dev[2]
				if s := get(d.GetNvLinkState(3)).must(t, "state"); s != nvml.FEATURE_DISABLED {
					t.Errorf("link 3 state = %v", s)
				}
				if v := get(d.GetNvLinkErrorCounter(3, nvml.NVLINK_ERROR_DL_RECOVERY)).must(t, "recovery"); v == 0 {
					t.Errorf("no recovery error counted")
				}
				if v := field(t, d, nvml.FI_DEV_NVLINK_GET_STATE, 3); v != 0 {
					t.Errorf("FI_DEV_NVLINK_GET_STATE = %d", v)
				}
				if !e.hasEvent(nvml.EventTypeXidCriticalError, 74) {
					t.Errorf("no Xid 74 event")
				}
				if v := field(t, d, nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); v != uint64(nvml.GPU_RECOVERY_ACTION_GPU_RESET) {
					t.Errorf("recovery action = %d", v)
				}
			},
		},
		{
			name:  "xid 79: that GPU is lost, the others answer; only the kernel log has the Xid",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 79})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				checkLost(t, e, 2)
				if !strings.Contains(e.kmsg, "): 79, ") || !strings.Contains(e.kmsg, "GPU has fallen off the bus") {
					t.Errorf("kernel log:\n%s", e.kmsg)
				}
				if !strings.Contains(e.kmsg, "to 0x2 (Node Reboot Required)") {
					t.Errorf("no Xid 154 node reboot:\n%s", e.kmsg)
				}
				if len(e.xids()) != 0 {
					t.Errorf("Xid events for a lost GPU: %v", e.xids())
				}
				if len(e.waitR) != 1 || e.waitR[0] != nvml.ERROR_GPU_IS_LOST {
					t.Errorf("Wait answers = %v, want one ERROR_GPU_IS_LOST", e.waitR)
				}
			},
		},
		{
			name:  "gpu-lost then recover: answers again, recovery action none",
			steps: []Fault{gpu2(Fault{Kind: FaultGPULost}), gpu2(Fault{Kind: FaultRecover})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				if _, r := e.dev[2].GetName(); r != nvml.SUCCESS {
					t.Fatalf("GetName after recover: %v", r)
				}
				if v := field(t, e.dev[2], nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); v != 0 {
					t.Errorf("recovery action = %d", v)
				}
				if u := get(e.dev[2].GetUtilizationRates()).must(t, "util"); u.Gpu == 0 {
					t.Errorf("job did not resume after recover")
				}
			},
		},
		{
			name:  "xid 94: contained, drain and reset",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 94})},
			check: func(t *testing.T, e *faultEnv) {
				if v := field(t, e.dev[2], nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); v != uint64(nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET) {
					t.Errorf("recovery action = %d", v)
				}
				if !e.hasEvent(nvml.EventTypeXidCriticalError, 94) {
					t.Errorf("no Xid 94 event")
				}
			},
		},
		{
			name:  "xid 95: uncontained, GPU reset, work stops",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 95})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				if v := field(t, e.dev[2], nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); v != uint64(nvml.GPU_RECOVERY_ACTION_GPU_RESET) {
					t.Errorf("recovery action = %d", v)
				}
				if u := get(e.dev[2].GetUtilizationRates()).must(t, "util"); u.Gpu != 0 {
					t.Errorf("util = %d", u.Gpu)
				}
			},
		},
		{
			name:  "xid 119: GSP hang times out telemetry, identity still answers, not delivered",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 119})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				d := e.dev[2]
				if _, r := d.GetPowerUsage(); r != nvml.ERROR_TIMEOUT {
					t.Errorf("GetPowerUsage on hung GPU: %v", r)
				}
				if _, r := d.GetUUID(); r != nvml.SUCCESS {
					t.Errorf("GetUUID on hung GPU: %v", r)
				}
				if e.hasEvent(nvml.EventTypeXidCriticalError, 119) || !strings.Contains(e.kmsg, "): 119, ") {
					t.Errorf("Xid 119 should be in the log only")
				}
			},
		},
		{
			name:  "xid 119 with a duration recovers by itself",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 119, Duration: 30 * time.Second})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				if _, r := e.dev[2].GetPowerUsage(); r != nvml.SUCCESS {
					t.Errorf("GetPowerUsage after the hang: %v", r)
				}
			},
		},
		{
			name:  "xid 154 sets the recovery action",
			steps: []Fault{gpu2(Fault{Kind: FaultXid, Xid: 154, Action: "node-reboot"})},
			check: func(t *testing.T, e *faultEnv) {
				if v := field(t, e.dev[2], nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); v != uint64(nvml.GPU_RECOVERY_ACTION_NODE_REBOOT) {
					t.Errorf("recovery action = %d", v)
				}
				if !strings.Contains(e.kmsg, "to 0x2 (Node Reboot Required)") || !e.hasEvent(nvml.EventTypeXidCriticalError, 154) {
					t.Errorf("kernel log:\n%s", e.kmsg)
				}
			},
		},
		{
			name:  "ecc-sbe-storm counts corrected errors over its duration",
			steps: []Fault{gpu2(Fault{Kind: FaultECCSBEStorm, Count: 600, Duration: time.Minute})},
			after: 2 * time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				v := get(e.dev[2].GetMemoryErrorCounter(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC, nvml.MEMORY_LOCATION_DRAM)).must(t, "sbe")
				if v != 600 {
					t.Errorf("volatile SBE = %d, want 600", v)
				}
				if !e.hasEvent(nvml.EventTypeSingleBitEccError, 0) || !e.hasEvent(nvml.EventTypeSingleBitEccErrorStorm, 0) {
					t.Errorf("no SBE events")
				}
			},
		},
		{
			name:  "thermal: hot, clocks down, thermal slowdown and violation time",
			steps: []Fault{gpu2(Fault{Kind: FaultThermal})},
			after: 5 * time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				d := e.dev[2]
				temp := get(d.GetTemperature(nvml.TEMPERATURE_GPU)).must(t, "temp")
				slow := get(d.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN)).must(t, "slowdown")
				if temp < slow {
					t.Errorf("temperature %d below slowdown %d", temp, slow)
				}
				if sm := get(d.GetClockInfo(nvml.CLOCK_SM)).must(t, "sm"); sm >= 1980*3/4 {
					t.Errorf("SM clock %d not throttled", sm)
				}
				if r := get(d.GetCurrentClocksEventReasons()).must(t, "reasons"); r&nvml.ClocksThrottleReasonHwThermalSlowdown == 0 {
					t.Errorf("reasons %#x lack HW thermal slowdown", r)
				}
				if v := get(d.GetViolationStatus(nvml.PERF_POLICY_THERMAL)).must(t, "violation"); v.ViolationTime == 0 {
					t.Errorf("no thermal violation time")
				}
			},
		},
		{
			name:  "power: power brake, capped power, violation time",
			steps: []Fault{gpu2(Fault{Kind: FaultPower, Watts: 300})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				d := e.dev[2]
				if p := get(d.GetPowerUsage()).must(t, "power"); p > 300000 {
					t.Errorf("power %d mW above the 300 W brake", p)
				}
				if r := get(d.GetCurrentClocksEventReasons()).must(t, "reasons"); r&nvml.ClocksThrottleReasonHwPowerBrakeSlowdown == 0 {
					t.Errorf("reasons %#x lack power brake", r)
				}
				for _, p := range []nvml.PerfPolicyType{nvml.PERF_POLICY_POWER, nvml.PERF_POLICY_BOARD_LIMIT} {
					if v := get(d.GetViolationStatus(p)).must(t, "violation"); v.ViolationTime < uint64(50*time.Second) {
						t.Errorf("violation %v = %v", p, v.ViolationTime)
					}
				}
			},
		},
		{
			name:  "nvlink-down: inactive, remote still known, P2P over the other links",
			steps: []Fault{gpu2(Fault{Kind: FaultNVLinkDown, Link: 5})},
			check: func(t *testing.T, e *faultEnv) {
				d := e.dev[2]
				if s := get(d.GetNvLinkState(5)).must(t, "state"); s != nvml.FEATURE_DISABLED {
					t.Errorf("state = %v", s)
				}
				get(d.GetNvLinkRemotePciInfo(5)).must(t, "remote of a down link")
				if s := get(d.GetP2PStatus(e.dev[3], nvml.P2P_CAPS_INDEX_NVLINK)).must(t, "p2p"); s != nvml.P2P_STATUS_OK {
					t.Errorf("P2P = %v", s)
				}
			},
		},
		{
			name:  "nvlink-crc: CRC errors on the link and in the totals",
			steps: []Fault{gpu2(Fault{Kind: FaultNVLinkCRC, Link: 14, Count: 500, Duration: 30 * time.Second})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				d := e.dev[2]
				if v := get(d.GetNvLinkErrorCounter(14, nvml.NVLINK_ERROR_DL_CRC_FLIT)).must(t, "crc"); v < 500 {
					t.Errorf("CRC flit on link 14 = %d", v)
				}
				if v := field(t, d, nvml.FI_DEV_NVLINK_ERROR_DL_CRC, 14); v < 500 {
					t.Errorf("FI_DEV_NVLINK_ERROR_DL_CRC = %d", v)
				}
				if v := field(t, d, nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, 0); v < 500 {
					t.Errorf("CRC total = %d", v)
				}
			},
		},
		{
			name:  "ib-down takes the rail's port down",
			steps: []Fault{{GPU: AllGPUs, Kind: FaultIBDown, HCA: "mlx5_4"}},
			check: func(t *testing.T, e *faultEnv) {
				p := port(t, e.node, 4)
				if s, _ := p.State(); s != simib.StateDown {
					t.Errorf("state = %v", s)
				}
				if counter(t, p, "link_downed") != e.before["mlx5_4/link_downed"]+1 {
					t.Errorf("link_downed did not count")
				}
				if !port(t, e.node, 3).Up() {
					t.Errorf("mlx5_3 went down too")
				}
			},
		},
		{
			name:  "ib-down with a duration comes back; gpu picks the rail",
			steps: []Fault{{GPU: 6, Kind: FaultIBDown, Duration: 30 * time.Second}},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				if !port(t, e.node, 6).Up() {
					t.Errorf("mlx5_6 still down")
				}
				if counter(t, port(t, e.node, 6), "link_downed") != e.before["mlx5_6/link_downed"]+1 {
					t.Errorf("link_downed did not count")
				}
			},
		},
		{
			name:  "ib-flap and ib-symbol-errors",
			steps: []Fault{{GPU: AllGPUs, Kind: FaultIBFlap, HCA: "1", Count: 3}, {GPU: AllGPUs, Kind: FaultIBSymbolErrors, HCA: "mlx5_1", Count: 50}},
			check: func(t *testing.T, e *faultEnv) {
				p := port(t, e.node, 1)
				if got := counter(t, p, "link_downed") - e.before["mlx5_1/link_downed"]; got != 3 {
					t.Errorf("link_downed +%d, want +3", got)
				}
				if got := counter(t, p, "symbol_error") - e.before["mlx5_1/symbol_error"]; got != 50 {
					t.Errorf("symbol_error +%d, want +50", got)
				}
				if !p.Up() {
					t.Errorf("port down after flaps")
				}
			},
		},
		{
			name: "recover resets volatile ECC and pending remaps, keeps aggregate counters",
			steps: []Fault{gpu2(Fault{Kind: FaultECCDBE}), gpu2(Fault{Kind: FaultThermal}),
				gpu2(Fault{Kind: FaultRecover})},
			after: time.Minute,
			check: func(t *testing.T, e *faultEnv) {
				d := e.dev[2]
				if v := get(d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)).must(t, "vol"); v != 0 {
					t.Errorf("volatile DBE after reset = %d", v)
				}
				if v := get(d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)).must(t, "agg"); v != 1 {
					t.Errorf("aggregate DBE after reset = %d", v)
				}
				_, unc, pending, _, _ := d.GetRemappedRows()
				if unc != 1 || pending {
					t.Errorf("after reset: unc %d pending %v", unc, pending)
				}
				if sm := get(d.GetClockInfo(nvml.CLOCK_SM)).must(t, "sm"); sm < 1800 {
					t.Errorf("SM clock after recover = %d", sm)
				}
			},
		},
		{
			name:  "node-level recover brings IB ports back",
			steps: []Fault{{GPU: AllGPUs, Kind: FaultIBDown}, {GPU: AllGPUs, Kind: FaultRecover}},
			check: func(t *testing.T, e *faultEnv) {
				for i := range e.node.HCAs() {
					if !port(t, e.node, i).Up() {
						t.Errorf("mlx5_%d down", i)
					}
				}
			},
		},
		{
			name:  "driver-not-loaded: NVML does not start; a node-level recover loads the driver",
			steps: []Fault{{GPU: AllGPUs, Kind: FaultDriverNotLoaded}},
			check: func(t *testing.T, e *faultEnv) {
				lib := e.node.NVML()
				if r := lib.Init(); r != nvml.ERROR_DRIVER_NOT_LOADED {
					t.Errorf("Init = %v, want ERROR_DRIVER_NOT_LOADED", r)
				}
				// The library the test initialised before the fault keeps working:
				// the module cannot be unloaded under it.
				if n := get(e.lib.DeviceGetCount()).must(t, "count"); n != 8 {
					t.Errorf("count = %d", n)
				}
				if err := e.node.Inject(Fault{GPU: AllGPUs, Kind: FaultRecover}); err != nil {
					t.Fatal(err)
				}
				if r := lib.Init(); r != nvml.SUCCESS {
					t.Errorf("Init after recover = %v", r)
				}
				lib.Shutdown()
			},
		},
		{
			name:  "gpu-missing: NVML lists one GPU less, the rest move up, the log says why",
			steps: []Fault{gpu2(Fault{Kind: FaultGPUMissing})},
			check: func(t *testing.T, e *faultEnv) {
				if n := get(e.lib.DeviceGetCount()).must(t, "count"); n != 7 {
					t.Errorf("count = %d, want 7", n)
				}
				d2 := device(t, e.lib, 2)
				if u := get(d2.GetUUID()).must(t, "uuid"); u != get(e.dev[3].GetUUID()).must(t, "uuid") {
					t.Errorf("index 2 is %s, want the GPU that was index 3", u)
				}
				if i := get(d2.GetIndex()).must(t, "index"); i != 2 {
					t.Errorf("GetIndex = %d", i)
				}
				if m := get(d2.GetMinorNumber()).must(t, "minor"); m != 3 {
					t.Errorf("minor = %d, want 3 (/dev/nvidia3 keeps its number)", m)
				}
				if _, r := e.lib.DeviceGetHandleByUUID(get(e.dev[2].GetUUID()).must(t, "uuid")); r != nvml.ERROR_NOT_FOUND {
					t.Errorf("missing GPU by UUID: %v", r)
				}
				if _, r := e.lib.DeviceGetHandleByIndex(7); r != nvml.ERROR_INVALID_ARGUMENT {
					t.Errorf("index 7: %v", r)
				}
				for _, x := range []string{"NVRM: GPU 0000:3a:00.0: RmInitAdapter failed!", "rm_init_adapter failed, device minor number 2"} {
					if !strings.Contains(e.kmsg, x) {
						t.Errorf("kernel log lacks %q:\n%s", x, e.kmsg)
					}
				}
				if err := e.node.Inject(gpu2(Fault{Kind: FaultRecover})); err != nil {
					t.Fatal(err)
				}
				if n := get(e.lib.DeviceGetCount()).must(t, "count"); n != 8 {
					t.Errorf("count after recover = %d", n)
				}
			},
		},
		{
			name:  "fabric-manager: every GPU out of the NVLink fabric until recover",
			steps: []Fault{{GPU: AllGPUs, Kind: FaultFabricManager}},
			check: func(t *testing.T, e *faultEnv) {
				for i, d := range e.dev {
					if fi := get(d.GetGpuFabricInfo()).must(t, "fabric"); fi.State != nvml.GPU_FABRIC_STATE_NOT_STARTED {
						t.Errorf("GPU %d fabric state %d, want not started", i, fi.State)
					}
				}
				if err := e.node.Inject(Fault{GPU: AllGPUs, Kind: FaultRecover}); err != nil {
					t.Fatal(err)
				}
				if fi := get(e.dev[0].GetGpuFabricInfo()).must(t, "fabric"); fi.State != nvml.GPU_FABRIC_STATE_COMPLETED || fi.Status != 0 {
					t.Errorf("after recover: %+v", fi)
				}
			},
		},
		{
			name:  "persistence-mode-off on one GPU",
			steps: []Fault{gpu2(Fault{Kind: FaultPersistenceOff})},
			check: func(t *testing.T, e *faultEnv) {
				for i, d := range e.dev {
					want := nvml.FEATURE_ENABLED
					if i == 2 {
						want = nvml.FEATURE_DISABLED
					}
					if m := get(d.GetPersistenceMode()).must(t, "pm"); m != want {
						t.Errorf("GPU %d persistence %v, want %v", i, m, want)
					}
				}
			},
		},
		{
			name: "sxid: fatal takes the NVLink on that switch port down, non-fatal only logs",
			steps: []Fault{{GPU: AllGPUs, Kind: FaultSXid, SXid: 20009, NVSwitch: 1, Link: 4},
				{GPU: AllGPUs, Kind: FaultSXid, SXid: 20034, NVSwitch: 1, Link: 9}},
			check: func(t *testing.T, e *faultEnv) {
				for _, x := range []string{
					"nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate",
					"nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 09 LTSSM Fault Up",
					"nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Severity 1 Engine instance 09 Sub-engine instance 00",
				} {
					if !strings.Contains(e.kmsg, x) {
						t.Errorf("kernel log lacks %q:\n%s", x, e.kmsg)
					}
				}
				// H100: 4 links of each GPU on switch 1 (links 5-8), ports numbered
				// per switch in GPU order: port 9 is GPU 2's second link there (6).
				down := 0
				for i, d := range e.dev {
					for l := 0; l < 18; l++ {
						if st := get(d.GetNvLinkState(l)).must(t, "state"); st != nvml.FEATURE_ENABLED {
							down++
							if i != 2 || l != 6 {
								t.Errorf("GPU %d link %d down", i, l)
							}
						}
					}
				}
				if down != 1 {
					t.Errorf("%d links down, want 1", down)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTestFleet(t, ShapeHGXH100, 1)
			n := f.Nodes()[0]
			if err := n.StartJob(Job{ID: "77", Kind: JobTraining}, 0, 1, 2, 3, 4, 5, 6, 7); err != nil {
				t.Fatal(err)
			}
			if err := f.Advance(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			e := &faultEnv{node: n, lib: initNVML(t, n), before: map[string]uint64{}}
			for i := 0; i < 8; i++ {
				e.dev = append(e.dev, device(t, e.lib, i))
			}
			for i, h := range n.HCAs() {
				for _, c := range []string{"link_downed", "symbol_error"} {
					e.before[h.Name+"/"+c] = counter(t, port(t, n, i), c)
				}
			}
			set := get(e.lib.EventSetCreate()).must(t, "event set")
			for _, d := range e.dev {
				if r := d.RegisterEvents(nvml.EventTypeAll, set); r != nvml.SUCCESS {
					t.Fatalf("RegisterEvents: %v", r)
				}
			}
			seq := n.KernelLog().Next()
			for _, flt := range tt.steps {
				if err := n.Inject(flt); err != nil {
					t.Fatal(err)
				}
				if err := f.Advance(time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Advance(tt.after); err != nil {
				t.Fatal(err)
			}
			for {
				ev, r := set.Wait(0)
				if r == nvml.ERROR_TIMEOUT {
					break
				}
				if r != nvml.SUCCESS {
					e.waitR = append(e.waitR, r)
					continue
				}
				e.events = append(e.events, ev)
			}
			var lines []string
			for _, r := range n.KernelLog().Since(seq) {
				lines = append(lines, r.Message)
			}
			e.kmsg = strings.Join(lines, "\n")
			tt.check(t, e)
		})
	}
}

// checkLost checks that GPU lost answers ERROR_GPU_IS_LOST on every call while the
// other GPUs answer and the device count stays.
func checkLost(t *testing.T, e *faultEnv, lost int) {
	t.Helper()
	if n := get(e.lib.DeviceGetCount()).must(t, "count"); n != 8 {
		t.Errorf("device count = %d", n)
	}
	d := device(t, e.lib, lost)
	for name, r := range map[string]nvml.Return{
		"GetName":       second(d.GetName()),
		"GetUUID":       second(d.GetUUID()),
		"GetPowerUsage": second(d.GetPowerUsage()),
		"GetTemp":       second(d.GetTemperature(nvml.TEMPERATURE_GPU)),
		"GetNvLink":     second(d.GetNvLinkState(0)),
		"GetFields":     d.GetFieldValues([]nvml.FieldValue{{FieldId: nvml.FI_DEV_MEMORY_TEMP}}),
		"unmodelled":    second(d.GetVirtualizationMode()),
		"RegisterEvent": d.RegisterEvents(nvml.EventTypeXidCriticalError, nil),
	} {
		if r != nvml.ERROR_GPU_IS_LOST {
			t.Errorf("%s on the lost GPU: %v, want ERROR_GPU_IS_LOST", name, r)
		}
	}
	for i, o := range e.dev {
		if i == lost {
			continue
		}
		if _, r := o.GetPowerUsage(); r != nvml.SUCCESS {
			t.Errorf("GPU %d: %v", i, r)
		}
		if _, r := o.GetTopologyCommonAncestor(d); r != nvml.ERROR_GPU_IS_LOST {
			t.Errorf("ancestor with a lost GPU: %v", r)
		}
	}
}

func second[T any](_ T, r nvml.Return) nvml.Return { return r }

func TestEventsXid13NotXid79(t *testing.T) {
	f := newTestFleet(t, ShapeDGXA100, 1)
	n := f.Nodes()[0]
	lib := initNVML(t, n)
	set := get(lib.EventSetCreate()).must(t, "set")
	d0, d1 := device(t, lib, 0), device(t, lib, 1)
	for _, d := range []nvml.Device{d0, d1} {
		if r := d.RegisterEvents(nvml.EventTypeXidCriticalError|nvml.EventTypeSingleBitEccError|nvml.EventTypeDoubleBitEccError, set); r != nvml.SUCCESS {
			t.Fatal(r)
		}
	}
	if _, r := set.Wait(0); r != nvml.ERROR_TIMEOUT {
		t.Fatalf("Wait on an empty set: %v", r)
	}
	for _, flt := range []Fault{{GPU: 0, Kind: FaultXid, Xid: 13}, {GPU: 1, Kind: FaultXid, Xid: 79}, {GPU: 0, Kind: FaultXid, Xid: 120}} {
		if err := n.Inject(flt); err != nil {
			t.Fatal(err)
		}
	}
	ev, r := set.Wait(100)
	if r != nvml.SUCCESS || ev.EventType != nvml.EventTypeXidCriticalError || ev.EventData != 13 || ev.Device != d0 {
		t.Fatalf("first event = %+v (%v), want Xid 13 on GPU 0", ev, r)
	}
	if ev.GpuInstanceId != 0xFFFFFFFF {
		t.Errorf("GpuInstanceId = %#x", ev.GpuInstanceId)
	}
	// Then: ERROR_GPU_IS_LOST once for GPU 1, and Xid 154 for GPU 0 (the driver
	// announces the reset Xid 120 requires); never Xid 79 or 120.
	lost, xid154 := 0, 0
	for {
		ev, r := set.Wait(0)
		if r == nvml.ERROR_TIMEOUT {
			break
		}
		switch {
		case r == nvml.ERROR_GPU_IS_LOST:
			lost++
		case r == nvml.SUCCESS && ev.EventData == 154 && ev.Device == d0:
			xid154++
		default:
			t.Errorf("unexpected %+v (%v)", ev, r)
		}
	}
	if lost != 1 || xid154 != 1 {
		t.Errorf("GPU_IS_LOST %d times, Xid 154 %d times; want 1 and 1", lost, xid154)
	}

	// Wait with a timeout returns when simulated time passes it, without sleeping.
	done := make(chan nvml.Return)
	go func() { _, r := set.Wait(60_000); done <- r }()
	for {
		select {
		case r := <-done:
			if r != nvml.ERROR_TIMEOUT {
				t.Fatalf("Wait = %v", r)
			}
			return
		default:
			if err := f.Advance(10 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
}
