package nvml

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// healthSeries are the series CollectHealth emits; Collect emits the rest.
var healthSeries = map[string]bool{
	telemetry.DCGMECCSBEVolTotal: true, telemetry.DCGMECCDBEVolTotal: true,
	telemetry.DCGMECCSBEAggTotal: true, telemetry.DCGMECCDBEAggTotal: true,
	telemetry.DCGMRetiredSBE: true, telemetry.DCGMRetiredDBE: true, telemetry.DCGMRetiredPending: true,
	telemetry.DCGMCorrectableRemappedRows: true, telemetry.DCGMUncorrectableRemappedRows: true,
	telemetry.DCGMRowRemapPending: true, telemetry.DCGMRowRemapFailure: true,
	telemetry.DCGMGPURecoveryAction: true, telemetry.MetricGPULost: true,
}

// notOnSXM lists the catalog series of source nvml the simulated (and real)
// A100/H100 SXM boards do not have, with the reason.
var notOnSXM = map[string]string{
	telemetry.DCGMFanSpeed:       "SXM modules have no fan: GetFanSpeed answers NOT_SUPPORTED",
	telemetry.DCGMRetiredSBE:     "A100/H100 remap rows instead of retiring pages: FI_DEV_RETIRED_* answer NOT_SUPPORTED",
	telemetry.DCGMRetiredDBE:     "A100/H100 remap rows instead of retiring pages",
	telemetry.DCGMRetiredPending: "A100/H100 remap rows instead of retiring pages",
}

func TestEveryNVMLMetric(t *testing.T) {
	for _, shape := range []simhw.ShapeName{simhw.ShapeHGXH100, simhw.ShapeDGXA100} {
		t.Run(string(shape), func(t *testing.T) {
			r := newRig(t, shape)
			if err := r.node.StartJob(simhw.Job{ID: "101", Kind: simhw.JobTraining}, 0, 1, 2, 3); err != nil {
				t.Fatal(err)
			}
			r.advance(t, 2*time.Minute)
			src, inv := r.source(t, Options{})
			if src.Name() != "nvml" {
				t.Errorf("Name = %q", src.Name())
			}
			full := mustCollect(t, src.Collect)
			health := mustCollect(t, src.CollectHealth)

			for _, s := range full {
				if healthSeries[s.Name] {
					t.Errorf("Collect emitted health series %s", s.Name)
				}
			}
			for _, s := range health {
				if !healthSeries[s.Name] {
					t.Errorf("CollectHealth emitted %s, which is not a health series", s.Name)
				}
			}
			all := append(append(samples{}, full...), health...)
			count := map[string]int{}
			for _, s := range all {
				d, ok := telemetry.LookupMetric(s.Name)
				if !ok {
					t.Errorf("%s is not in the catalog", s.Name)
					continue
				}
				if d.Source != telemetry.SourceNVML {
					t.Errorf("%s belongs to source %s", s.Name, d.Source)
				}
				if !s.Time.Equal(testClock) {
					t.Errorf("%s time %v, want the read time %v", s.Name, s.Time, testClock)
				}
				count[s.Name+s.Labels.Get(telemetry.LabelGPUIndex)]++
				switch s.Name {
				case telemetry.MetricNodeGPUs:
					if len(s.Labels) != 1 || s.Labels.Get(telemetry.LabelSource) != "nvml" {
						t.Errorf("%s labels %v, want source=nvml", s.Name, s.Labels)
					}
				case telemetry.MetricGPUInfo:
				default:
					if len(s.Labels) != 1 || s.Labels[0].Name != telemetry.LabelGPUIndex {
						t.Errorf("%s labels %v, want gpu_index only", s.Name, s.Labels)
					}
				}
			}
			for k, n := range count {
				if n != 1 {
					t.Errorf("%s emitted %d times", k, n)
				}
			}
			for _, d := range telemetry.Metrics() {
				if d.Source != telemetry.SourceNVML {
					continue
				}
				for g := range inv.GPUs {
					idx := strconv.Itoa(g)
					if d.Name == telemetry.MetricNodeGPUs {
						idx = ""
					}
					_, ok := all.get(d.Name, idx)
					why, skip := notOnSXM[d.Name]
					if shape == simhw.ShapeDGXA100 && (d.Name == telemetry.MetricGPUFabricState || d.Name == telemetry.MetricGPUFabricStatus) {
						why, skip = "GPU fabric info is Hopper and later: A100 answers NOT_SUPPORTED", true
					}
					if skip {
						if ok {
							t.Errorf("%s emitted, but %s", d.Name, why)
						}
						continue
					}
					if !ok {
						t.Errorf("%s not emitted for GPU %s", d.Name, idx)
					}
				}
			}

			// Values against what the simulation says.
			sh := r.node.Shape()
			truth := r.node.GPUs()
			if v := all.must(t, telemetry.MetricNodeGPUs, ""); v != 8 {
				t.Errorf("node GPUs = %v", v)
			}
			for g := range 8 {
				idx := strconv.Itoa(g)
				eq := func(name string, want float64) {
					t.Helper()
					if got := all.must(t, name, idx); got != want {
						t.Errorf("GPU %d %s = %v, want %v", g, name, got, want)
					}
				}
				eq(telemetry.DCGMFBTotal, float64(sh.MemoryMiB))
				eq(telemetry.DCGMFBReserved, float64(sh.ReservedMiB))
				eq(telemetry.DCGMPowerMgmtLimit, sh.PowerLimitW)
				eq(telemetry.DCGMEnforcedPowerLimit, sh.PowerLimitW)
				eq(telemetry.DCGMSlowdownTemp, sh.SlowdownC)
				eq(telemetry.DCGMShutdownTemp, sh.ShutdownC)
				eq(telemetry.DCGMPCIeLinkGen, float64(sh.PCIeGen))
				eq(telemetry.DCGMPCIeMaxLinkWidth, 16)
				eq(telemetry.DCGMSMClock, float64(truth[g].SMClockMHz))
				eq(telemetry.DCGMMemClock, float64(sh.MemMHz))
				eq(telemetry.DCGMPersistenceMode, 1)
				if shape == simhw.ShapeHGXH100 {
					eq(telemetry.MetricGPUFabricState, 3) // completed
					eq(telemetry.MetricGPUFabricStatus, 0)
				}
				eq(telemetry.DCGMMIGMode, 0)
				eq(telemetry.DCGMVGPULicenseStatus, 0)
				eq(telemetry.DCGMPState, 0)
				eq(telemetry.DCGMClockThrottleReasons, float64(truth[g].ThrottleReason))
				eq(telemetry.DCGMFBUsed, float64(truth[g].MemUsedBytes>>20))
				eq(telemetry.MetricGPULost, 0)
				eq(telemetry.DCGMGPURecoveryAction, 0)
				eq(telemetry.DCGMRowRemapPending, 0)
				if e := all.must(t, telemetry.DCGMTotalEnergyConsumption, idx); e <= 0 {
					t.Errorf("GPU %d energy %v", g, e)
				}
				if p := all.must(t, telemetry.DCGMPowerUsage, idx); p < sh.IdlePowerW/2 || p > sh.PowerLimitW {
					t.Errorf("GPU %d power %v W", g, p)
				}
				if u := all.must(t, telemetry.DCGMFBUsedPercent, idx); u < 0 || u > 1 {
					t.Errorf("GPU %d FB used fraction %v", g, u)
				}
				used := all.must(t, telemetry.DCGMFBUsed, idx) + all.must(t, telemetry.DCGMFBFree, idx) + all.must(t, telemetry.DCGMFBReserved, idx)
				if d := used - float64(sh.MemoryMiB); d < -3 || d > 0 {
					t.Errorf("GPU %d used+free+reserved = %v MiB, total %d", g, used, sh.MemoryMiB)
				}
				util := all.must(t, telemetry.DCGMGPUUtil, idx)
				if g < 4 && util < 50 || g >= 4 && util != 0 {
					t.Errorf("GPU %d utilization %v (training on 0-3)", g, util)
				}
			}
			info := inv.GPUs[5]
			for _, s := range full {
				if s.Name == telemetry.MetricGPUInfo && s.Labels.Get(telemetry.LabelGPUIndex) == "5" {
					if s.Value != 1 || s.Labels.Get(telemetry.LabelModel) != info.Model ||
						s.Labels.Get(telemetry.LabelDriverVersion) != sh.DriverVersion ||
						s.Labels.Get(telemetry.LabelVBIOSVersion) != info.VBIOS || s.Labels.Get(telemetry.LabelSerial) != info.Serial {
						t.Errorf("gpu_info = %v %v", s.Labels, s.Value)
					}
					d, _ := telemetry.LookupMetric(s.Name)
					for _, l := range s.Labels {
						if !contains(d.Labels, l.Name) {
							t.Errorf("gpu_info label %s is not one of the catalog's %v", l.Name, d.Labels)
						}
					}
				}
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func TestLostGPU(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src, _ := r.source(t, Options{})
	mustCollect(t, src.Collect)
	mustCollect(t, src.CollectHealth)

	r.inject(t, simhw.Fault{Kind: simhw.FaultGPULost, GPU: 2})
	r.advance(t, 10*time.Second)
	health := mustCollect(t, src.CollectHealth) // a lost GPU is not a source error
	full := mustCollect(t, src.Collect)
	for g := range 8 {
		idx := strconv.Itoa(g)
		want := 0.0
		if g == 2 {
			want = 1
		}
		if v := health.must(t, telemetry.MetricGPULost, idx); v != want {
			t.Errorf("GPU %d lost = %v, want %v", g, v, want)
		}
		if g == 2 {
			for _, s := range append(full.forGPU(idx), health.forGPU(idx)...) {
				if s.Name != telemetry.MetricGPULost && s.Name != telemetry.MetricGPUInfo {
					t.Errorf("lost GPU 2 still reports %s", s.Name)
				}
			}
			continue
		}
		health.must(t, telemetry.DCGMECCDBEVolTotal, idx)
		full.must(t, telemetry.DCGMPowerUsage, idx)
		full.must(t, telemetry.DCGMFBTotal, idx)
	}
	if !src.Lost(2) || src.Lost(1) {
		t.Errorf("Lost(2) = %v, Lost(1) = %v", src.Lost(2), src.Lost(1))
	}
	full.must(t, telemetry.MetricGPUInfo, "2") // the inventory still lists it

	// A reset brings it back.
	r.inject(t, simhw.Fault{Kind: simhw.FaultRecover, GPU: 2})
	r.advance(t, 10*time.Second)
	health = mustCollect(t, src.CollectHealth)
	if v := health.must(t, telemetry.MetricGPULost, "2"); v != 0 {
		t.Errorf("recovered GPU 2 lost = %v", v)
	}
	full = mustCollect(t, src.Collect)
	full.must(t, telemetry.DCGMPowerUsage, "2")
}

func TestLostAtDiscovery(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	r.inject(t, simhw.Fault{Kind: simhw.FaultGPULost, GPU: 6})
	src, inv := r.source(t, Options{})
	if !inv.GPUs[6].Lost {
		t.Fatal("GPU 6 not lost at discovery")
	}
	health := mustCollect(t, src.CollectHealth)
	if v := health.must(t, telemetry.MetricGPULost, "6"); v != 1 {
		t.Errorf("GPU 6 lost = %v", v)
	}
	health.must(t, telemetry.DCGMECCSBEAggTotal, "5")
	r.inject(t, simhw.Fault{Kind: simhw.FaultRecover, GPU: 6})
	health = mustCollect(t, src.CollectHealth)
	if v := health.must(t, telemetry.MetricGPULost, "6"); v != 0 {
		t.Errorf("recovered GPU 6 lost = %v", v)
	}
}

func TestHungGPU(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src, _ := r.source(t, Options{})
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 119, GPU: 4})
	full, err := collect(t, src.Collect)
	if err == nil || !strings.Contains(err.Error(), "GPU 4") || !strings.Contains(err.Error(), "ERROR_TIMEOUT") {
		t.Errorf("Collect error = %v, want a timeout naming GPU 4", err)
	}
	if n := strings.Count(err.Error(), "GPU 4"); n != 1 {
		t.Errorf("hung GPU reported %d times, want once (its other reads skipped): %v", n, err)
	}
	for g := range 8 {
		if g == 4 {
			continue
		}
		full.must(t, telemetry.DCGMPowerUsage, strconv.Itoa(g))
	}
	if _, ok := full.get(telemetry.DCGMPowerUsage, "4"); ok {
		t.Error("hung GPU 4 reported power")
	}
	health, err := collect(t, src.CollectHealth)
	if err == nil {
		t.Error("CollectHealth on a hung GPU: no error")
	}
	if v := health.must(t, telemetry.MetricGPULost, "4"); v != 0 {
		t.Errorf("hung GPU reads as lost %v", v)
	}
}

func TestFaults(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	if err := r.node.StartJob(simhw.Job{ID: "7", Kind: simhw.JobTraining}, 0, 1, 2, 3, 4, 5, 6, 7); err != nil {
		t.Fatal(err)
	}
	r.advance(t, time.Minute)
	src, _ := r.source(t, Options{})
	h0 := mustCollect(t, src.CollectHealth)
	f0 := mustCollect(t, src.Collect)

	r.inject(t, simhw.Fault{Kind: simhw.FaultECCDBE, GPU: 1, Count: 2})
	r.inject(t, simhw.Fault{Kind: simhw.FaultRowRemapPending, GPU: 3})
	r.inject(t, simhw.Fault{Kind: simhw.FaultThermal, GPU: 5})
	r.inject(t, simhw.Fault{Kind: simhw.FaultPower, GPU: 6, Watts: 300})
	r.advance(t, 3*time.Minute)
	h1 := mustCollect(t, src.CollectHealth)
	f1 := mustCollect(t, src.Collect)

	delta := func(a, b samples, name, gpu string) float64 {
		return b.must(t, name, gpu) - a.must(t, name, gpu)
	}
	if d := delta(h0, h1, telemetry.DCGMECCDBEVolTotal, "1"); d != 2 {
		t.Errorf("GPU 1 DBE volatile grew by %v, want 2", d)
	}
	if d := delta(h0, h1, telemetry.DCGMECCDBEAggTotal, "1"); d != 2 {
		t.Errorf("GPU 1 DBE aggregate grew by %v, want 2", d)
	}
	if v := h1.must(t, telemetry.DCGMRowRemapPending, "1"); v != 1 {
		t.Errorf("GPU 1 remap pending = %v", v)
	}
	if v := h1.must(t, telemetry.DCGMUncorrectableRemappedRows, "1"); v < 1 {
		t.Errorf("GPU 1 uncorrectable remapped rows = %v", v)
	}
	if v := h1.must(t, telemetry.DCGMGPURecoveryAction, "1"); v != float64(gonvml.GPU_RECOVERY_ACTION_GPU_RESET) {
		t.Errorf("GPU 1 recovery action = %v, want GPU reset", v)
	}
	if v := h1.must(t, telemetry.DCGMRowRemapPending, "3"); v != 1 {
		t.Errorf("GPU 3 remap pending = %v", v)
	}
	if v := h1.must(t, telemetry.DCGMRowRemapPending, "0"); v != 0 {
		t.Errorf("healthy GPU 0 remap pending = %v", v)
	}
	reasons := uint64(f1.must(t, telemetry.DCGMClockThrottleReasons, "5"))
	if reasons&gonvml.ClocksThrottleReasonHwThermalSlowdown == 0 {
		t.Errorf("GPU 5 throttle reasons %#x lack HW thermal slowdown", reasons)
	}
	if d := delta(f0, f1, telemetry.DCGMThermalViolation, "5"); d <= 0 {
		t.Errorf("GPU 5 thermal violation grew by %v ns", d)
	}
	if temp := f1.must(t, telemetry.DCGMGPUTemp, "5"); temp < f1.must(t, telemetry.DCGMSlowdownTemp, "5") {
		t.Errorf("GPU 5 temperature %v below slowdown", temp)
	}
	if d := delta(f0, f1, telemetry.DCGMPowerViolation, "6"); d <= 0 {
		t.Errorf("GPU 6 power violation grew by %v ns", d)
	}
	if p := f1.must(t, telemetry.DCGMPowerUsage, "6"); p > 301 {
		t.Errorf("GPU 6 power %v W above its 300 W cap", p)
	}
	if d := delta(f0, f1, telemetry.DCGMThermalViolation, "0"); d != 0 {
		t.Errorf("healthy GPU 0 thermal violation grew by %v", d)
	}
}

// countingLib hands out devices that count GetFanSpeed calls.
type countingLib struct {
	gonvml.Interface
	fan *int
}

type countingDevice struct {
	gonvml.Device
	fan *int
}

func (l countingLib) DeviceGetHandleByIndex(i int) (gonvml.Device, gonvml.Return) {
	d, r := l.Interface.DeviceGetHandleByIndex(i)
	if r != gonvml.SUCCESS {
		return d, r
	}
	return countingDevice{d, l.fan}, r
}

func (d countingDevice) GetFanSpeed() (uint32, gonvml.Return) {
	*d.fan++
	return d.Device.GetFanSpeed()
}

func TestNotSupportedRememberedAndReprobed(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	fan := 0
	lib := countingLib{r.lib, &fan}
	inv, err := Discover(lib, "n")
	if err != nil {
		t.Fatal(err)
	}
	src := New(lib, inv, Options{Reprobe: 5})
	for range 4 {
		mustCollect(t, src.Collect)
	}
	if fan != 8 {
		t.Errorf("GetFanSpeed called %d times in 4 cycles on 8 fanless GPUs, want 8", fan)
	}
	mustCollect(t, src.Collect) // cycle 5 re-probes
	if fan != 16 {
		t.Errorf("GetFanSpeed called %d times after the re-probe, want 16", fan)
	}
}

func TestFieldValue(t *testing.T) {
	var fv gonvml.FieldValue
	for _, tc := range []struct {
		typ  gonvml.ValueType
		set  func()
		want float64
	}{
		{gonvml.VALUE_TYPE_UNSIGNED_INT, func() { fv.Value = [8]byte{0x2a} }, 42},
		{gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG, func() { fv.Value = [8]byte{0, 0, 0, 0, 1} }, 1 << 32},
		{gonvml.VALUE_TYPE_SIGNED_INT, func() { fv.Value = [8]byte{0xff, 0xff, 0xff, 0xff} }, -1},
		{gonvml.VALUE_TYPE_SIGNED_LONG_LONG, func() { fv.Value = [8]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} }, -2},
		{gonvml.VALUE_TYPE_UNSIGNED_SHORT, func() { fv.Value = [8]byte{1, 1, 9, 9} }, 257},
		{gonvml.VALUE_TYPE_DOUBLE, func() { fv.Value = [8]byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f} }, 1.5},
	} {
		fv = gonvml.FieldValue{ValueType: uint32(tc.typ)}
		tc.set()
		if got, ok := fieldValue(&fv); !ok || got != tc.want {
			t.Errorf("type %d: %v %v, want %v", tc.typ, got, ok, tc.want)
		}
	}
	fv.ValueType = 99
	if _, ok := fieldValue(&fv); ok {
		t.Error("unknown value type decoded")
	}
}

func TestNoGPUs(t *testing.T) {
	src := New(nil, nil, Options{})
	if err := src.Collect(context.Background(), func(telemetry.Sample) {}); err == nil {
		t.Error("Collect without GPUs: no error")
	}
}
