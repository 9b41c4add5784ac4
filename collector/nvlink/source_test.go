package nvlink

import (
	"context"
	"strconv"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/nvml"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

var testClock = time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)

type rig struct {
	fleet *simhw.Fleet
	node  *simhw.Node
	lib   gonvml.Interface
	inv   *collector.Inventory
}

func newRig(t testing.TB, shape simhw.ShapeName) *rig {
	t.Helper()
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: shape, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	lib := n.NVML()
	if r := lib.Init(); r != gonvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	t.Cleanup(func() { lib.Shutdown() })
	inv, err := nvml.Discover(lib, n.Name())
	if err != nil {
		t.Fatal(err)
	}
	return &rig{fleet: f, node: n, lib: lib, inv: inv}
}

func (r *rig) source(lib gonvml.Interface) *Source {
	if lib == nil {
		lib = r.lib
	}
	s := New(lib, r.inv, func() time.Time { return testClock })
	return s
}

func (r *rig) advance(t testing.TB, d time.Duration) {
	t.Helper()
	if err := r.fleet.Advance(d); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) inject(t testing.TB, f simhw.Fault) {
	t.Helper()
	if err := r.node.Inject(f); err != nil {
		t.Fatal(err)
	}
}

type samples []telemetry.Sample

func run(t testing.TB, f func(context.Context, func(telemetry.Sample)) error) samples {
	t.Helper()
	var out samples
	if err := f(context.Background(), func(s telemetry.Sample) { out = append(out, s) }); err != nil {
		t.Fatalf("collect: %v", err)
	}
	return out
}

// get finds name on gpu and link ("" for a per-GPU series).
func (ss samples) get(name, gpu, link string) (float64, bool) {
	for _, s := range ss {
		if s.Name == name && s.Labels.Get(telemetry.LabelGPUIndex) == gpu && s.Labels.Get(telemetry.LabelLink) == link {
			return s.Value, true
		}
	}
	return 0, false
}

func (ss samples) must(t testing.TB, name string, gpu, link int) float64 {
	t.Helper()
	l := ""
	if link >= 0 {
		l = strconv.Itoa(link)
	}
	v, ok := ss.get(name, strconv.Itoa(gpu), l)
	if !ok {
		t.Fatalf("%s{gpu_index=%d,link=%q} not emitted", name, gpu, l)
	}
	return v
}

var healthNames = map[string]bool{
	telemetry.MetricNVLinkUp: true, telemetry.MetricNVLinkCRCFlitErrorsTotal: true,
	telemetry.MetricNVLinkCRCDataErrorsTotal: true, telemetry.MetricNVLinkReplayErrorsTotal: true,
	telemetry.MetricNVLinkRecoveryErrorsTotal: true, telemetry.DCGMNVLinkCRCFlitErrorCountTotal: true,
	telemetry.DCGMNVLinkCRCDataErrorCountTotal: true, telemetry.DCGMNVLinkReplayErrorCountTotal: true,
	telemetry.DCGMNVLinkRecoveryErrorCountTotal: true,
}

func TestEveryLink(t *testing.T) {
	for _, shape := range []simhw.ShapeName{simhw.ShapeHGXH100, simhw.ShapeDGXA100} {
		t.Run(string(shape), func(t *testing.T) {
			r := newRig(t, shape)
			if err := r.node.StartJob(simhw.Job{ID: "1", Kind: simhw.JobTraining}, 0, 1, 2, 3, 4, 5, 6, 7); err != nil {
				t.Fatal(err)
			}
			r.advance(t, time.Minute)
			src := r.source(nil)
			if src.Name() != "nvlink" {
				t.Errorf("Name = %q", src.Name())
			}
			health := run(t, src.CollectHealth)
			full := run(t, src.Collect)
			sh := r.node.Shape()
			links := sh.NVLinks()
			perGPU := map[string]int{}
			for _, s := range append(append(samples{}, health...), full...) {
				d, ok := telemetry.LookupMetric(s.Name)
				if !ok || d.Source != telemetry.SourceNVLink {
					t.Errorf("%s: not an nvlink catalog series", s.Name)
				}
				if !s.Time.Equal(testClock) {
					t.Errorf("%s time %v", s.Name, s.Time)
				}
				want := 1
				if d.Family == telemetry.FamilyGPUWatch {
					want = 2
				}
				if len(s.Labels) != want || s.Labels.Get(telemetry.LabelGPUIndex) == "" {
					t.Errorf("%s labels %v", s.Name, s.Labels)
				}
				perGPU[s.Name+"/"+s.Labels.Get(telemetry.LabelGPUIndex)]++
			}
			for _, s := range health {
				if !healthNames[s.Name] {
					t.Errorf("CollectHealth emitted %s", s.Name)
				}
			}
			for _, s := range full {
				if healthNames[s.Name] {
					t.Errorf("Collect emitted health series %s", s.Name)
				}
			}
			for _, d := range telemetry.Metrics() {
				if d.Source != telemetry.SourceNVLink {
					continue
				}
				want := links
				if d.Family == telemetry.FamilyDCGMExporter {
					want = 1
				}
				for g := range 8 {
					if n := perGPU[d.Name+"/"+strconv.Itoa(g)]; n != want {
						t.Errorf("GPU %d: %s emitted %d times, want %d", g, d.Name, n, want)
					}
				}
			}
			for g := range 8 {
				var sums [4]float64
				var bytes float64
				for l := range links {
					if v := health.must(t, telemetry.MetricNVLinkUp, g, l); v != 1 {
						t.Errorf("GPU %d link %d up = %v", g, l, v)
					}
					for i, c := range errorCounters {
						sums[i] += health.must(t, c.name, g, l)
					}
					tx := full.must(t, telemetry.MetricNVLinkTransmittedBytesTotal, g, l)
					rx := full.must(t, telemetry.MetricNVLinkReceivedBytesTotal, g, l)
					if tx <= 0 || rx <= 0 {
						t.Errorf("GPU %d link %d moved %v/%v bytes under an 8-GPU job", g, l, tx, rx)
					}
					bytes += tx + rx
				}
				for i, c := range errorCounters {
					if v := health.must(t, c.sum, g, -1); v != sums[i] {
						t.Errorf("GPU %d %s = %v, links sum to %v", g, c.sum, v, sums[i])
					}
				}
				if v := full.must(t, telemetry.DCGMNVLinkBandwidthTotal, g, -1); v != bytes {
					t.Errorf("GPU %d bandwidth total %v, links sum to %v", g, v, bytes)
				}
			}

			// Traffic grows.
			r.advance(t, time.Minute)
			full2 := run(t, src.Collect)
			if a, b := full.must(t, telemetry.MetricNVLinkTransmittedBytesTotal, 3, 2), full2.must(t, telemetry.MetricNVLinkTransmittedBytesTotal, 3, 2); b <= a {
				t.Errorf("GPU 3 link 2 TX bytes %v then %v", a, b)
			}
		})
	}
}

func TestNVLinkFaults(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src := r.source(nil)
	h0 := run(t, src.CollectHealth)
	r.inject(t, simhw.Fault{Kind: simhw.FaultNVLinkDown, GPU: 2, Link: 7})
	r.inject(t, simhw.Fault{Kind: simhw.FaultNVLinkCRC, GPU: 4, Link: 3, Count: 500, Duration: 30 * time.Second})
	r.advance(t, time.Minute)
	h1 := run(t, src.CollectHealth)
	for g := range 8 {
		for l := range 18 {
			want := 1.0
			if g == 2 && l == 7 {
				want = 0
			}
			if v := h1.must(t, telemetry.MetricNVLinkUp, g, l); v != want {
				t.Errorf("GPU %d link %d up = %v, want %v", g, l, v, want)
			}
		}
	}
	delta := func(name string, g, l int) float64 { return h1.must(t, name, g, l) - h0.must(t, name, g, l) }
	if d := delta(telemetry.MetricNVLinkRecoveryErrorsTotal, 2, 7); d != 1 {
		t.Errorf("downed link recovery errors grew by %v, want 1", d)
	}
	if d := delta(telemetry.DCGMNVLinkRecoveryErrorCountTotal, 2, -1); d != 1 {
		t.Errorf("GPU 2 recovery total grew by %v, want 1", d)
	}
	if d := delta(telemetry.MetricNVLinkCRCFlitErrorsTotal, 4, 3); d != 500 {
		t.Errorf("GPU 4 link 3 CRC flit errors grew by %v, want 500", d)
	}
	if d := delta(telemetry.DCGMNVLinkCRCFlitErrorCountTotal, 4, -1); d != 500 {
		t.Errorf("GPU 4 CRC flit total grew by %v, want 500", d)
	}
	if d := delta(telemetry.MetricNVLinkCRCDataErrorsTotal, 4, 3); d <= 0 {
		t.Errorf("GPU 4 link 3 CRC data errors grew by %v", d)
	}
	if d := delta(telemetry.MetricNVLinkCRCFlitErrorsTotal, 4, 4); d != 0 {
		t.Errorf("GPU 4 link 4 CRC flit errors grew by %v, want 0", d)
	}
}

func TestRemotes(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src := r.source(nil)
	if len(src.Remotes()) != 0 {
		t.Error("remotes before the first collection")
	}
	run(t, src.CollectHealth)
	sh := r.node.Shape()
	rs := src.Remotes()
	if len(rs) != 8*18 {
		t.Fatalf("%d remotes, want 144", len(rs))
	}
	for i, e := range rs {
		g, l := i/18, i%18
		want, _ := telemetry.ParsePCIBusID("0000:" + strconv.FormatUint(uint64(sh.NVSwitchBus[sh.LinkToSwitch[l]]), 16) + ":00.0")
		if e.GPUIndex != g || e.Link != l || e.Type != RemoteSwitch || e.PeerGPUIndex != -1 || e.PCIBusID != want {
			t.Errorf("remote %d = %+v, want GPU %d link %d NVSwitch at %s", i, e, g, l, want)
		}
	}
}

func TestLostGPU(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	r.inject(t, simhw.Fault{Kind: simhw.FaultGPULost, GPU: 1})
	src := r.source(nil)
	h := run(t, src.CollectHealth) // a lost GPU is not this source's error
	if _, ok := h.get(telemetry.MetricNVLinkUp, "1", "0"); ok {
		t.Error("lost GPU 1 reports links")
	}
	h.must(t, telemetry.MetricNVLinkUp, 0, 17)
	r.inject(t, simhw.Fault{Kind: simhw.FaultRecover, GPU: 1})
	h = run(t, src.CollectHealth)
	h.must(t, telemetry.MetricNVLinkUp, 1, 17) // probed once it answers
	if n := len(src.Remotes()); n != 144 {
		t.Errorf("%d remotes after the GPU came back", n)
	}
	r.inject(t, simhw.Fault{Kind: simhw.FaultGPULost, GPU: 5})
	h = run(t, src.CollectHealth)
	if _, ok := h.get(telemetry.MetricNVLinkUp, "5", "0"); ok {
		t.Error("GPU 5 lost after the probe still reports links")
	}
	full := run(t, src.Collect)
	full.must(t, telemetry.DCGMNVLinkBandwidthTotal, 4, -1)
}

func TestHungGPU(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src := r.source(nil)
	run(t, src.CollectHealth)
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 119, GPU: 6})
	var got samples
	err := src.CollectHealth(context.Background(), func(s telemetry.Sample) { got = append(got, s) })
	if err == nil {
		t.Fatal("no error from a hung GPU")
	}
	if _, ok := got.get(telemetry.MetricNVLinkUp, "6", "0"); ok {
		t.Error("hung GPU reported a link")
	}
	got.must(t, telemetry.MetricNVLinkUp, 7, 0)
}

// counterLib hands out devices without the throughput fields whose utilization
// counter 0 counts bytes, as on drivers before the fields existed.
type counterLib struct{ gonvml.Interface }

type counterDevice struct{ gonvml.Device }

func (l counterLib) DeviceGetHandleByIndex(i int) (gonvml.Device, gonvml.Return) {
	d, r := l.Interface.DeviceGetHandleByIndex(i)
	if r != gonvml.SUCCESS {
		return d, r
	}
	return counterDevice{d}, r
}

func (d counterDevice) GetFieldValues(fv []gonvml.FieldValue) gonvml.Return {
	for i := range fv {
		fv[i].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
	}
	return gonvml.SUCCESS
}

func (d counterDevice) GetNvLinkUtilizationControl(l, c int) (gonvml.NvLinkUtilizationControl, gonvml.Return) {
	if l == 5 {
		return gonvml.NvLinkUtilizationControl{Units: uint32(gonvml.NVLINK_COUNTER_UNIT_PACKETS)}, gonvml.SUCCESS
	}
	return gonvml.NvLinkUtilizationControl{Units: uint32(gonvml.NVLINK_COUNTER_UNIT_BYTES)}, gonvml.SUCCESS
}

func (d counterDevice) GetNvLinkUtilizationCounter(l, c int) (uint64, uint64, gonvml.Return) {
	return uint64(1000 * l), uint64(2000 * l), gonvml.SUCCESS
}

func TestUtilizationCounterFallback(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src := r.source(counterLib{r.lib})
	full := run(t, src.Collect)
	if v := full.must(t, telemetry.MetricNVLinkTransmittedBytesTotal, 0, 3); v != 6000 {
		t.Errorf("TX = %v, want 6000", v)
	}
	if v := full.must(t, telemetry.MetricNVLinkReceivedBytesTotal, 0, 3); v != 3000 {
		t.Errorf("RX = %v, want 3000", v)
	}
	if _, ok := full.get(telemetry.MetricNVLinkTransmittedBytesTotal, "0", "5"); ok {
		t.Error("a link whose counter counts packets reported bytes")
	}
	if _, ok := full.get(telemetry.DCGMNVLinkBandwidthTotal, "0", ""); ok {
		t.Error("bandwidth total emitted with a link missing")
	}
	// The plain simulation has neither: H100 without fields would report nothing.
	plain := r.source(nil)
	run(t, plain.Collect)
	for _, g := range plain.gpus {
		if g.tp != tpFields {
			t.Errorf("GPU %d read mode %d, want the throughput fields", g.info.Index, g.tp)
		}
	}
}

func TestNoGPUs(t *testing.T) {
	if err := New(nil, nil, nil).Collect(context.Background(), func(telemetry.Sample) {}); err == nil {
		t.Error("no error without GPUs")
	}
}
