package simhw

import (
	"encoding/binary"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// newTestFleet builds a fleet of n nodes of shape with a fixed seed.
func newTestFleet(t testing.TB, shape ShapeName, n int) *Fleet {
	t.Helper()
	f, err := NewFleet(FleetSpec{Nodes: n, Shape: shape, Seed: 42})
	if err != nil {
		t.Fatalf("NewFleet: %v", err)
	}
	return f
}

// initNVML initializes a node's NVML library for the test.
func initNVML(t testing.TB, n *Node) nvml.Interface {
	t.Helper()
	lib := n.NVML()
	if r := lib.Init(); r != nvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	t.Cleanup(func() { lib.Shutdown() })
	return lib
}

func device(t testing.TB, lib nvml.Interface, i int) nvml.Device {
	t.Helper()
	d, r := lib.DeviceGetHandleByIndex(i)
	if r != nvml.SUCCESS {
		t.Fatalf("DeviceGetHandleByIndex(%d): %v", i, r)
	}
	return d
}

// res carries an NVML call's value and return code: get(d.GetName()).must(t, "name").
type res[T any] struct {
	v T
	r nvml.Return
}

func get[T any](v T, r nvml.Return) res[T] { return res[T]{v, r} }

func (x res[T]) must(t testing.TB, what string) T {
	t.Helper()
	if x.r != nvml.SUCCESS {
		t.Fatalf("%s: %v", what, x.r)
	}
	return x.v
}

func fieldU64(fv nvml.FieldValue) uint64 {
	if fv.ValueType == uint32(nvml.VALUE_TYPE_UNSIGNED_INT) {
		return uint64(binary.NativeEndian.Uint32(fv.Value[:4]))
	}
	return binary.NativeEndian.Uint64(fv.Value[:])
}

// readField reads one field value, failing the test unless it answers want.
func readField(t testing.TB, d nvml.Device, id, scope uint32) (uint64, nvml.Return) {
	t.Helper()
	fvs := []nvml.FieldValue{{FieldId: id, ScopeId: scope}}
	if r := d.GetFieldValues(fvs); r != nvml.SUCCESS {
		return 0, r
	}
	return fieldU64(fvs[0]), nvml.Return(fvs[0].NvmlReturn)
}

var busIDRE = regexp.MustCompile(`^00000000:[0-9A-F]{2}:00\.0$`)

func cString(b []int8) string {
	var out []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// TestNVMLShapes calls every NVML method the agent uses on every GPU of both
// shapes and checks the values against the real hardware.
func TestNVMLShapes(t *testing.T) {
	tests := []struct {
		shape      ShapeName
		name       string
		arch       nvml.DeviceArchitecture
		ccMajor    int
		memMiB     uint64
		links      int
		nvlVersion uint32
		powerMW    uint32
		pcieGen    int
		maxSM      uint32
		memMHz     uint32
		fabric     nvml.Return
	}{
		{ShapeHGXH100, "NVIDIA H100 80GB HBM3", nvml.DEVICE_ARCH_HOPPER, 9, 81559, 18, uint32(nvml.NVLINK_VERSION_4_0), 700000, 5, 1980, 2619, nvml.SUCCESS},
		{ShapeDGXA100, "NVIDIA A100-SXM4-80GB", nvml.DEVICE_ARCH_AMPERE, 8, 81920, 12, uint32(nvml.NVLINK_VERSION_3_0), 400000, 4, 1410, 1593, nvml.ERROR_NOT_SUPPORTED},
	}
	for _, tt := range tests {
		t.Run(string(tt.shape), func(t *testing.T) {
			f := newTestFleet(t, tt.shape, 1)
			n := f.Nodes()[0]
			if err := n.StartJob(Job{ID: "1", Kind: JobTraining}, 0, 1, 2, 3, 4, 5, 6, 7); err != nil {
				t.Fatal(err)
			}
			if err := f.Advance(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			lib := initNVML(t, n)
			if v := get(lib.SystemGetDriverVersion()).must(t, "driver"); v != defaultDriver {
				t.Errorf("driver = %q", v)
			}
			if v := get(lib.SystemGetNVMLVersion()).must(t, "nvml version"); v != "12."+defaultDriver {
				t.Errorf("NVML version = %q", v)
			}
			if v := get(lib.SystemGetCudaDriverVersion()).must(t, "cuda"); v != 12080 {
				t.Errorf("CUDA = %d", v)
			}
			count := get(lib.DeviceGetCount()).must(t, "count")
			if count != 8 {
				t.Fatalf("count = %d", count)
			}
			uuids := map[string]bool{}
			for i := 0; i < count; i++ {
				d := device(t, lib, i)
				checkDevice(t, lib, d, i, tt.name, tt.arch, tt.ccMajor, tt.memMiB, tt.links, tt.nvlVersion, tt.powerMW, tt.pcieGen, tt.maxSM, tt.memMHz, tt.fabric)
				uuids[get(d.GetUUID()).must(t, "uuid")] = true
			}
			if len(uuids) != count {
				t.Errorf("UUIDs not unique: %v", uuids)
			}
		})
	}
}

func checkDevice(t *testing.T, lib nvml.Interface, d nvml.Device, i int, name string, arch nvml.DeviceArchitecture,
	ccMajor int, memMiB uint64, links int, nvlVersion, powerMW uint32, pcieGen int, maxSM, memMHz uint32, fabric nvml.Return) {
	t.Helper()
	if v := get(d.GetName()).must(t, "name"); v != name {
		t.Errorf("GPU %d name = %q, want %q", i, v, name)
	}
	uuid := get(d.GetUUID()).must(t, "uuid")
	if !regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(uuid) {
		t.Errorf("GPU %d UUID = %q", i, uuid)
	}
	serial := get(d.GetSerial()).must(t, "serial")
	if !regexp.MustCompile(`^\d{13}$`).MatchString(serial) {
		t.Errorf("GPU %d serial = %q", i, serial)
	}
	if v := get(d.GetIndex()).must(t, "index"); v != i {
		t.Errorf("index = %d, want %d", v, i)
	}
	if v := get(d.GetMinorNumber()).must(t, "minor"); v != i {
		t.Errorf("minor = %d, want %d", v, i)
	}
	pci := get(d.GetPciInfo()).must(t, "pci")
	bus := cString(pci.BusId[:])
	if !busIDRE.MatchString(bus) {
		t.Errorf("GPU %d BusId = %q, want NVML form 00000000:XX:00.0", i, bus)
	}
	for _, lookup := range []struct {
		what string
		get  func() (nvml.Device, nvml.Return)
	}{
		{"uuid", func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByUUID(uuid) }},
		{"serial", func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleBySerial(serial) }},
		{"pci", func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByPciBusId(bus) }},
		{"pci short", func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByPciBusId(bus[4:]) }},
	} {
		if h, r := lookup.get(); r != nvml.SUCCESS || h != d {
			t.Errorf("GPU %d handle by %s: %v", i, lookup.what, r)
		}
	}
	if v := get(d.GetArchitecture()).must(t, "arch"); v != arch {
		t.Errorf("arch = %v", v)
	}
	if v := get(d.GetBrand()).must(t, "brand"); v != nvml.BRAND_NVIDIA {
		t.Errorf("brand = %v", v)
	}
	if maj, _, r := d.GetCudaComputeCapability(); r != nvml.SUCCESS || maj != ccMajor {
		t.Errorf("compute capability = %d (%v)", maj, r)
	}
	mem := get(d.GetMemoryInfo()).must(t, "memory")
	if mem.Total != memMiB<<20 || mem.Used > mem.Total || mem.Free+mem.Used != mem.Total {
		t.Errorf("memory = %+v, want total %d MiB", mem, memMiB)
	}
	mem2 := get(d.GetMemoryInfo_v2()).must(t, "memory v2")
	if mem2.Total != mem.Total || mem2.Reserved+mem2.Used+mem2.Free != mem2.Total || mem2.Used == 0 {
		t.Errorf("memory v2 = %+v", mem2)
	}
	bar1 := get(d.GetBAR1MemoryInfo()).must(t, "bar1")
	if bar1.Bar1Total != 131072<<20 {
		t.Errorf("BAR1 = %+v", bar1)
	}
	util := get(d.GetUtilizationRates()).must(t, "util")
	if util.Gpu > 100 || util.Memory > 100 || util.Gpu < 80 {
		t.Errorf("utilization under training = %+v", util)
	}
	for _, c := range []nvml.ClockType{nvml.CLOCK_SM, nvml.CLOCK_MEM, nvml.CLOCK_GRAPHICS, nvml.CLOCK_VIDEO} {
		cur := get(d.GetClockInfo(c)).must(t, "clock")
		mx := get(d.GetMaxClockInfo(c)).must(t, "max clock")
		cl := get(d.GetClock(c, nvml.CLOCK_ID_CURRENT)).must(t, "clock id")
		if cur == 0 || cur > mx || cl != cur {
			t.Errorf("clock %v = %d (GetClock %d), max %d", c, cur, cl, mx)
		}
	}
	if v := get(d.GetMaxClockInfo(nvml.CLOCK_SM)).must(t, "max sm"); v != maxSM {
		t.Errorf("max SM = %d, want %d", v, maxSM)
	}
	if v := get(d.GetClockInfo(nvml.CLOCK_MEM)).must(t, "mem clock"); v != memMHz {
		t.Errorf("mem clock = %d, want %d", v, memMHz)
	}
	temp := get(d.GetTemperature(nvml.TEMPERATURE_GPU)).must(t, "temp")
	if temp < 25 || temp > 95 {
		t.Errorf("temperature = %d", temp)
	}
	memTemp, r := readField(t, d, nvml.FI_DEV_MEMORY_TEMP, 0)
	if r != nvml.SUCCESS || memTemp < uint64(temp) {
		t.Errorf("memory temperature = %d (%v), GPU %d", memTemp, r, temp)
	}
	power := get(d.GetPowerUsage()).must(t, "power")
	limit := get(d.GetEnforcedPowerLimit()).must(t, "limit")
	if limit != powerMW || power > limit || power < 50000 {
		t.Errorf("power = %d mW, limit %d mW, want limit %d", power, limit, powerMW)
	}
	if v := get(d.GetPowerManagementLimit()).must(t, "pm limit"); v != powerMW {
		t.Errorf("power management limit = %d", v)
	}
	if lo, hi, r := d.GetPowerManagementLimitConstraints(); r != nvml.SUCCESS || lo >= hi || hi != powerMW {
		t.Errorf("limit constraints = %d..%d (%v)", lo, hi, r)
	}
	if e := get(d.GetTotalEnergyConsumption()).must(t, "energy"); e == 0 {
		t.Errorf("energy = 0")
	}
	get(d.GetPcieReplayCounter()).must(t, "replay")
	get(d.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES)).must(t, "pcie tx")
	get(d.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES)).must(t, "pcie rx")
	if v := get(d.GetCurrPcieLinkGeneration()).must(t, "pcie gen"); v != pcieGen {
		t.Errorf("PCIe gen = %d, want %d", v, pcieGen)
	}
	if v := get(d.GetCurrPcieLinkWidth()).must(t, "pcie width"); v != 16 {
		t.Errorf("PCIe width = %d", v)
	}
	if _, r := d.GetFanSpeed(); r != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("fan speed on SXM: %v, want NOT_SUPPORTED", r)
	}
	if v := get(d.GetPerformanceState()).must(t, "pstate"); v != nvml.PSTATE_0 {
		t.Errorf("pstate = %v", v)
	}
	reasons := get(d.GetCurrentClocksEventReasons()).must(t, "reasons")
	if tr := get(d.GetCurrentClocksThrottleReasons()).must(t, "throttle reasons"); tr != reasons {
		t.Errorf("throttle reasons %x != event reasons %x", tr, reasons)
	}
	for _, p := range []nvml.PerfPolicyType{nvml.PERF_POLICY_POWER, nvml.PERF_POLICY_THERMAL, nvml.PERF_POLICY_SYNC_BOOST,
		nvml.PERF_POLICY_BOARD_LIMIT, nvml.PERF_POLICY_LOW_UTILIZATION, nvml.PERF_POLICY_RELIABILITY} {
		get(d.GetViolationStatus(p)).must(t, "violation")
	}
	for _, et := range []nvml.MemoryErrorType{nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.MEMORY_ERROR_TYPE_UNCORRECTED} {
		for _, ct := range []nvml.EccCounterType{nvml.VOLATILE_ECC, nvml.AGGREGATE_ECC} {
			total := get(d.GetTotalEccErrors(et, ct)).must(t, "ecc")
			dram := get(d.GetMemoryErrorCounter(et, ct, nvml.MEMORY_LOCATION_DRAM)).must(t, "ecc dram")
			if dram > total {
				t.Errorf("DRAM ECC %d > total %d", dram, total)
			}
		}
	}
	if _, r := d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR); r != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("retired pages: %v, want NOT_SUPPORTED (row remapping)", r)
	}
	if _, r := d.GetRetiredPagesPendingStatus(); r != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("retired pages pending: %v, want NOT_SUPPORTED", r)
	}
	if corr, unc, pend, fail, r := d.GetRemappedRows(); r != nvml.SUCCESS || corr != 0 || unc != 0 || pend || fail {
		t.Errorf("remapped rows = %d %d %v %v (%v)", corr, unc, pend, fail, r)
	}
	if v := get(d.GetPersistenceMode()).must(t, "persistence"); v != nvml.FEATURE_ENABLED {
		t.Errorf("persistence = %v", v)
	}
	if cur, _, r := d.GetMigMode(); r != nvml.SUCCESS || cur != nvml.DEVICE_MIG_DISABLE {
		t.Errorf("MIG = %d (%v)", cur, r)
	}
	if v := get(d.GetVirtualizationMode()).must(t, "virtualization mode"); v != nvml.GPU_VIRTUALIZATION_MODE_NONE {
		t.Errorf("virtualization mode = %v, want NONE (bare metal)", v)
	}
	procs := get(d.GetComputeRunningProcesses()).must(t, "procs")
	if len(procs) != 1 || procs[0].Pid == 0 || procs[0].UsedGpuMemory == 0 {
		t.Errorf("compute processes = %+v", procs)
	}
	if name := get(lib.SystemGetProcessName(int(procs[0].Pid))).must(t, "process name"); name != "python3" {
		t.Errorf("process name = %q", name)
	}
	if g := get(d.GetGraphicsRunningProcesses()).must(t, "graphics procs"); len(g) != 0 {
		t.Errorf("graphics processes = %+v", g)
	}

	// NVLink.
	if v, r := readField(t, d, nvml.FI_DEV_NVLINK_LINK_COUNT, 0); r != nvml.SUCCESS || v != uint64(links) {
		t.Errorf("NVLink count = %d (%v), want %d", v, r, links)
	}
	for l := 0; l < links; l++ {
		if s := get(d.GetNvLinkState(l)).must(t, "nvlink state"); s != nvml.FEATURE_ENABLED {
			t.Errorf("link %d state = %v", l, s)
		}
		if v := get(d.GetNvLinkVersion(l)).must(t, "nvlink version"); v != nvlVersion {
			t.Errorf("link %d version = %d, want %d", l, v, nvlVersion)
		}
		rp := get(d.GetNvLinkRemotePciInfo(l)).must(t, "nvlink remote")
		if !busIDRE.MatchString(cString(rp.BusId[:])) {
			t.Errorf("link %d remote = %q", l, cString(rp.BusId[:]))
		}
		if v := get(d.GetNvLinkRemoteDeviceType(l)).must(t, "remote type"); v != nvml.NVLINK_DEVICE_TYPE_SWITCH {
			t.Errorf("link %d remote type = %v", l, v)
		}
		for _, c := range []nvml.NvLinkErrorCounter{nvml.NVLINK_ERROR_DL_REPLAY, nvml.NVLINK_ERROR_DL_RECOVERY,
			nvml.NVLINK_ERROR_DL_CRC_FLIT, nvml.NVLINK_ERROR_DL_CRC_DATA} {
			get(d.GetNvLinkErrorCounter(l, c)).must(t, "nvlink errors")
		}
		if _, _, r := d.GetNvLinkUtilizationCounter(l, 0); r != nvml.ERROR_NOT_SUPPORTED {
			t.Errorf("link %d utilization counter: %v, want NOT_SUPPORTED", l, r)
		}
	}
	if _, r := d.GetNvLinkState(links); r != nvml.ERROR_NOT_SUPPORTED && links < nvml.NVLINK_MAX_LINKS {
		t.Errorf("link %d (beyond count) state: %v, want NOT_SUPPORTED", links, r)
	}
	if tx, r := readField(t, d, nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, aggregateScope); r != nvml.SUCCESS || tx == 0 {
		t.Errorf("NVLink TX under 8-GPU training = %d KiB (%v)", tx, r)
	}
	if _, r := d.GetGpuFabricInfo(); r != fabric {
		t.Errorf("fabric info: %v, want %v", r, fabric)
	}

	// Topology.
	for j := 0; j < 8; j++ {
		o := device(t, lib, j)
		lvl := get(d.GetTopologyCommonAncestor(o)).must(t, "ancestor")
		want := nvml.TOPOLOGY_SYSTEM
		switch {
		case i == j:
			want = nvml.TOPOLOGY_INTERNAL
		case i/4 == j/4:
			want = nvml.TOPOLOGY_NODE
		}
		if lvl != want {
			t.Errorf("common ancestor %d-%d = %v, want %v", i, j, lvl, want)
		}
		if i != j {
			if s := get(d.GetP2PStatus(o, nvml.P2P_CAPS_INDEX_NVLINK)).must(t, "p2p"); s != nvml.P2P_STATUS_OK {
				t.Errorf("P2P over NVLink %d-%d = %v", i, j, s)
			}
		}
	}
	near := get(d.GetTopologyNearestGpus(nvml.TOPOLOGY_NODE)).must(t, "nearest")
	if len(near) != 3 {
		t.Errorf("nearest GPUs at NODE = %d, want 3", len(near))
	}
	if v := get(d.GetNumaNodeId()).must(t, "numa"); v != i/4 {
		t.Errorf("NUMA = %d, want %d", v, i/4)
	}
	mask := get(d.GetCpuAffinity(256)).must(t, "affinity")
	if mask[0] == 0 && i < 4 {
		t.Errorf("CPU affinity of GPU %d has no CPU 0-63: %x", i, mask)
	}
}

// TestNoMethodPanics calls every method of nvml.Device and nvml.Interface with
// zero arguments: the ones the simulation does not model must answer, not panic.
func TestNoMethodPanics(t *testing.T) {
	for _, shape := range []ShapeName{ShapeHGXH100, ShapeDGXA100} {
		f := newTestFleet(t, shape, 1)
		lib := initNVML(t, f.Nodes()[0])
		d := device(t, lib, 0)
		callAll(t, reflect.TypeFor[nvml.Device](), reflect.ValueOf(d))
		callAll(t, reflect.TypeFor[nvml.Interface](), reflect.ValueOf(lib))
		if _, _, r := d.GetSamples(nvml.TOTAL_POWER_SAMPLES, 0); r != nvml.ERROR_NOT_SUPPORTED {
			t.Errorf("unmodelled method: %v, want NOT_SUPPORTED", r)
		}
		if name, r := lib.DeviceGetName(d); r != nvml.SUCCESS || name == "" {
			t.Errorf("Interface.DeviceGetName delegation: %q %v", name, r)
		}
	}
}

func callAll(t *testing.T, it reflect.Type, v reflect.Value) {
	t.Helper()
	skip := map[string]bool{"Init": true, "InitWithFlags": true, "Shutdown": true, "EventSetWait": true}
	for i := 0; i < it.NumMethod(); i++ {
		m := it.Method(i)
		if skip[m.Name] {
			continue
		}
		args := make([]reflect.Value, m.Type.NumIn())
		for k := range args {
			args[k] = reflect.Zero(m.Type.In(k))
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s panicked: %v", m.Name, p)
				}
			}()
			v.MethodByName(m.Name).Call(args)
		}()
	}
}

func TestUninitialized(t *testing.T) {
	f := newTestFleet(t, ShapeHGXH100, 1)
	lib := f.Nodes()[0].NVML()
	if _, r := lib.DeviceGetCount(); r != nvml.ERROR_UNINITIALIZED {
		t.Errorf("DeviceGetCount before Init: %v", r)
	}
	lib.Init()
	d, _ := lib.DeviceGetHandleByIndex(0)
	lib.Shutdown()
	if _, r := d.GetName(); r != nvml.ERROR_UNINITIALIZED {
		t.Errorf("GetName after Shutdown: %v", r)
	}
	if r := lib.Shutdown(); r != nvml.ERROR_UNINITIALIZED {
		t.Errorf("second Shutdown: %v", r)
	}
}

func TestFieldValues(t *testing.T) {
	f := newTestFleet(t, ShapeHGXH100, 1)
	lib := initNVML(t, f.Nodes()[0])
	d := device(t, lib, 0)
	fvs := []nvml.FieldValue{
		{FieldId: nvml.FI_DEV_GET_GPU_RECOVERY_ACTION},
		{FieldId: nvml.FI_DEV_NVLINK_ERROR_DL_CRC, ScopeId: 17},
		{FieldId: nvml.FI_DEV_NVLINK_ERROR_DL_CRC, ScopeId: 18},
		{FieldId: nvml.FI_DEV_RETIRED_DBE},
		{FieldId: nvml.FI_DEV_REMAPPED_PENDING},
		{FieldId: nvml.FI_DEV_C2C_LINK_COUNT},
		{FieldId: nvml.FI_MAX},
		{FieldId: nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L11},
		{FieldId: nvml.FI_DEV_ECC_DBE_AGG_TOTAL},
	}
	if r := d.GetFieldValues(fvs); r != nvml.SUCCESS {
		t.Fatal(r)
	}
	want := []nvml.Return{nvml.SUCCESS, nvml.SUCCESS, nvml.ERROR_INVALID_ARGUMENT, nvml.ERROR_NOT_SUPPORTED,
		nvml.SUCCESS, nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT, nvml.SUCCESS, nvml.SUCCESS}
	for i, fv := range fvs {
		if nvml.Return(fv.NvmlReturn) != want[i] {
			t.Errorf("field %d: %v, want %v", fv.FieldId, nvml.Return(fv.NvmlReturn), want[i])
		}
		if fv.Timestamp != f.Now().UnixMicro() {
			t.Errorf("field %d timestamp = %d", fv.FieldId, fv.Timestamp)
		}
	}
	if got := fieldU64(fvs[0]); got != uint64(nvml.GPU_RECOVERY_ACTION_NONE) {
		t.Errorf("recovery action = %d", got)
	}

	// An R535 driver predates the recovery action field.
	old := HGXH100()
	old.DriverVersion, old.CUDAVersion = "535.154.05", 12020
	f2, err := NewFleet(FleetSpec{Nodes: 1, CustomShape: &old})
	if err != nil {
		t.Fatal(err)
	}
	lib2 := initNVML(t, f2.Nodes()[0])
	if _, r := readField(t, device(t, lib2, 0), nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 0); r != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("recovery action on R535: %v, want NOT_SUPPORTED", r)
	}
}
