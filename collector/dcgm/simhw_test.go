package dcgm_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/dcgm"
	nvmlsrc "github.com/gpuwatch/gpuwatch/collector/nvml"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

var _ dcgm.Library = (*simhw.DCGM)(nil)

// simNode is one simulated HGX H100 with a training job on GPUs 0-3, an
// inference job on GPU 4, an idle-hold job on GPU 5 and GPUs 6-7 free, and the
// production DCGM source connected to its simulated host engine.
func simNode(t *testing.T, seed int64) (*simhw.Fleet, *simhw.Node, *dcgm.Source) {
	t.Helper()
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Seed: seed, Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	for _, j := range []struct {
		job  simhw.Job
		gpus []int
	}{
		{simhw.Job{ID: "100", Kind: simhw.JobTraining}, []int{0, 1, 2, 3}},
		{simhw.Job{ID: "101", Kind: simhw.JobInference}, []int{4}},
		{simhw.Job{ID: "102", Kind: simhw.JobIdleHold}, []int{5}},
	} {
		if err := n.StartJob(j.job, j.gpus...); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Advance(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	lib := n.NVML()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		t.Fatalf("simulated NVML Init: %v", ret)
	}
	t.Cleanup(func() { lib.Shutdown() })
	inv, err := nvmlsrc.Discover(lib, n.Name())
	if err != nil {
		t.Fatal(err)
	}
	src := dcgm.New(dcgm.Options{Library: n.DCGM(), Inventory: inv, Now: f.Now})
	t.Cleanup(func() { src.Close() })
	return f, n, src
}

// read collects once and returns each GPU's value of each series.
func read(t *testing.T, src *dcgm.Source) map[string]map[int]float64 {
	t.Helper()
	out := map[string]map[int]float64{}
	err := src.Collect(context.Background(), func(s telemetry.Sample) {
		i, err := strconv.Atoi(s.Labels.Get(telemetry.LabelGPUIndex))
		if err != nil {
			t.Fatalf("%s without a gpu_index: %v", s.Name, s.Labels)
		}
		if out[s.Name] == nil {
			out[s.Name] = map[int]float64{}
		}
		out[s.Name][i] = s.Value
	})
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	return out
}

// TestSourceOnSimulatedDCGM: the production source, unchanged, reads every
// profiling field of every GPU from the simulated host engine, and the values
// follow the workload: training keeps the tensor pipes busy, an idle GPU and an
// idle-hold job read 0, inference is bursty.
func TestSourceOnSimulatedDCGM(t *testing.T) {
	f, _, src := simNode(t, 7)
	got := read(t, src)
	for _, d := range telemetry.Metrics() {
		if d.Source != telemetry.SourceDCGM {
			continue
		}
		if len(got[d.Name]) != 8 {
			t.Errorf("%s: %d GPUs, want 8", d.Name, len(got[d.Name]))
		}
		for gpu, v := range got[d.Name] {
			if d.Unit == "ratio" && (v < 0 || v > 1) {
				t.Errorf("%s GPU %d = %g: a ratio outside [0, 1]", d.Name, gpu, v)
			}
		}
	}
	tensor, sm := got[telemetry.DCGMProfPipeTensorActive], got[telemetry.DCGMProfSMActive]
	for _, g := range []int{0, 1, 2, 3} {
		if tensor[g] < 0.4 || sm[g] < 0.7 {
			t.Errorf("training GPU %d: tensor %g, SM active %g; want ≥ 0.4 and ≥ 0.7", g, tensor[g], sm[g])
		}
		if got[telemetry.DCGMProfNVLinkTxBytes][g] <= 0 {
			t.Errorf("training GPU %d moves no NVLink bytes", g)
		}
	}
	for _, g := range []int{5, 6, 7} {
		for _, name := range []string{telemetry.DCGMProfPipeTensorActive, telemetry.DCGMProfSMActive, telemetry.DCGMProfGrEngineActive, telemetry.DCGMProfDRAMActive} {
			if v := got[name][g]; v != 0 {
				t.Errorf("idle GPU %d: %s = %g, want 0", g, name, v)
			}
		}
	}
	// Inference: over a minute of seconds, the tensor activity both bursts and
	// waits.
	var lo, hi int
	for range 60 {
		if err := f.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		v := read(t, src)[telemetry.DCGMProfPipeTensorActive][4]
		switch {
		case v < 0.1:
			lo++
		case v > 0.2:
			hi++
		}
	}
	if lo < 10 || hi < 10 {
		t.Errorf("inference GPU: %d quiet and %d busy seconds of 60; want bursts (≥ 10 of each)", lo, hi)
	}
}

// TestSimulatedDCGMDeterministic: the same seed and clock give the same values.
func TestSimulatedDCGMDeterministic(t *testing.T) {
	_, _, a := simNode(t, 3)
	_, _, b := simNode(t, 3)
	ra, rb := read(t, a), read(t, b)
	for name, byGPU := range ra {
		for g, v := range byGPU {
			if rb[name][g] != v {
				t.Errorf("%s GPU %d: %g and %g from the same seed", name, g, v, rb[name][g])
			}
		}
	}
}

// TestSimulatedDCGMHealth: injected faults come back as DCGM health incidents
// on the systems DCGM reports them under, and a recover clears them.
func TestSimulatedDCGMHealth(t *testing.T) {
	f, n, src := simNode(t, 11)
	read(t, src)
	if inc := src.Incidents(); len(inc) != 0 {
		t.Fatalf("healthy node has incidents: %+v", inc)
	}
	faults := []simhw.Fault{
		{GPU: 1, Kind: simhw.FaultECCDBE},
		{GPU: 2, Kind: simhw.FaultNVLinkDown, Link: 3},
		{GPU: 3, Kind: simhw.FaultThermal},
		{GPU: 4, Kind: simhw.FaultGPULost},
		{GPU: 5, Kind: simhw.FaultXid, Xid: 119},
		{GPU: 6, Kind: simhw.FaultPower},
		{GPU: 7, Kind: simhw.FaultRowRemapPending},
		{GPU: simhw.AllGPUs, Kind: simhw.FaultSXid, SXid: 24007, NVSwitch: 1, Link: 9},
		{GPU: 0, Kind: simhw.FaultNVLinkCRC, Link: 2, Count: 30000, Duration: 5 * time.Minute}, // 100/s: at the threshold
		{GPU: 6, Kind: simhw.FaultNVLinkCRC, Link: 5, Count: 60000, Duration: 5 * time.Minute}, // 200/s: above
	}
	for _, x := range faults {
		if err := n.Inject(x); err != nil {
			t.Fatal(err)
		}
	}
	// The thermal slowdown needs the GPU to heat up (a 40 s time constant).
	if err := f.Advance(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	read(t, src)
	type key struct {
		gpu      int
		system   string
		result   string
		codeName string
	}
	var have []key
	for _, i := range src.Incidents() {
		have = append(have, key{i.GPUIndex, i.System, i.Result, i.CodeName})
	}
	want := []key{
		{1, "mem", "fail", "DCGM_FR_VOLATILE_DBE_DETECTED"},
		{2, "nvlink", "fail", "DCGM_FR_NVLINK_DOWN"},
		{3, "thermal", "warn", "DCGM_FR_CLOCKS_EVENT_THERMAL"},
		{4, "pcie", "fail", "DCGM_FR_XID_ERROR"},
		{5, "driver", "fail", "DCGM_FR_XID_ERROR"},
		{6, "power", "warn", "DCGM_FR_CLOCKS_EVENT_POWER"},
		{6, "nvlink", "warn", "DCGM_FR_NVLINK_ERROR_THRESHOLD"},
		{7, "mem", "warn", "DCGM_FR_PENDING_ROW_REMAP"},
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			t.Errorf("no incident %+v; have %+v", w, have)
		}
	}
	for _, h := range have {
		if h.gpu == 0 {
			t.Errorf("GPU 0's CRC storm at DCGM's threshold raised %+v", h)
		}
	}
	sw := false
	for _, i := range src.Incidents() {
		if i.System == "nvswitch_fatal" && i.Entity == "NvSwitch 1" {
			sw = true
			if c := i.Condition(telemetry.NodeID(n.Name())); c.Target.String() != n.Name()+"/nvswitch1" {
				t.Errorf("SXid incident's condition targets %s", c.Target)
			}
		}
	}
	if !sw {
		t.Errorf("no nvswitch_fatal incident on NvSwitch 1 for a fatal SXid; have %+v", have)
	}
	if err := n.Inject(simhw.Fault{GPU: simhw.AllGPUs, Kind: simhw.FaultRecover}); err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	read(t, src)
	if inc := src.Incidents(); len(inc) != 0 {
		t.Errorf("incidents after recover: %+v", inc)
	}
}
