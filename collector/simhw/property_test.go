package simhw

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"pgregory.net/rapid"

	"github.com/gpuwatch/gpuwatch/collector/simhw/simib"
	"github.com/gpuwatch/gpuwatch/collector/simhw/simkmsg"
)

// observed is what the property test last read from one GPU through NVML.
type observed struct {
	counters map[string]uint64
	energy   uint64
	at       time.Time
	seen     bool
}

// TestPropertyInvariants drives a node with random faults, jobs and time steps
// and checks, through NVML and the IB ports only, that:
//   - a lost GPU stays lost until a recover reaches it, and only lost GPUs are lost;
//   - no counter goes backwards (energy, aggregate ECC, violation time, PCIe
//     replays, NVLink error counters, InfiniBand counters);
//   - energy grows by at least idle power × dt and at most power limit × dt;
//   - utilization stays in [0, 100] and used memory within the total.
func TestPropertyInvariants(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		shape := rapid.SampledFrom([]ShapeName{ShapeHGXH100, ShapeDGXA100}).Draw(rt, "shape")
		f, err := NewFleet(FleetSpec{Nodes: 1, Shape: shape, Seed: rapid.Int64().Draw(rt, "seed")})
		if err != nil {
			rt.Fatal(err)
		}
		n := f.Nodes()[0]
		sh := n.Shape()
		lib := n.NVML()
		lib.Init()
		defer lib.Shutdown()
		devs := make([]nvml.Device, sh.GPUs())
		for i := range devs {
			devs[i], _ = lib.DeviceGetHandleByIndex(i)
		}
		lost := make([]bool, sh.GPUs())
		obs := make([]observed, sh.GPUs())
		ib := map[string]uint64{}
		jobID := 0

		check := func(step string) {
			for i, d := range devs {
				_, r := d.GetName()
				if (r == nvml.ERROR_GPU_IS_LOST) != lost[i] {
					rt.Fatalf("%s: GPU %d GetName = %v, model says lost=%v", step, i, r, lost[i])
				}
				if lost[i] {
					continue
				}
				readGPU(rt, step, i, d, sh, &obs[i], n.Now())
			}
			for _, h := range n.HCAs() {
				for _, p := range h.Ports {
					for _, c := range simib.CounterNames() {
						v, _ := p.Counter(c)
						key := fmt.Sprintf("%s/%d/%s", h.Name, p.Num, c)
						if v < ib[key] {
							rt.Fatalf("%s: IB %s went back from %d to %d", step, key, ib[key], v)
						}
						ib[key] = v
					}
				}
			}
		}
		check("start")

		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for s := 0; s < steps; s++ {
			switch rapid.IntRange(0, 3).Draw(rt, "action") {
			case 0, 1:
				dt := rapid.SampledFrom([]time.Duration{time.Second, 7 * time.Second, time.Minute, 10 * time.Minute}).Draw(rt, "dt")
				if err := f.Advance(dt); err != nil {
					rt.Fatal(err)
				}
			case 2:
				flt := drawFault(rt, sh)
				if err := n.Inject(flt); err != nil {
					rt.Fatalf("Inject(%+v): %v", flt, err)
				}
				switch {
				case flt.Kind == FaultGPULost || (flt.Kind == FaultXid && flt.Xid == 79):
					lost[flt.GPU] = true
				case flt.Kind == FaultRecover && flt.GPU == AllGPUs:
					clear(lost)
				case flt.Kind == FaultRecover:
					lost[flt.GPU] = false
				}
			case 3:
				if jobs := n.Jobs(); len(jobs) > 0 && rapid.Bool().Draw(rt, "stop") {
					if err := n.StopJob(jobs[0].ID); err != nil {
						rt.Fatal(err)
					}
					break
				}
				free := n.freeGPUs()
				if len(free) == 0 {
					break
				}
				k := rapid.IntRange(1, len(free)).Draw(rt, "gpus")
				jobID++
				kind := rapid.SampledFrom([]JobKind{JobTraining, JobInference, JobIdleHold}).Draw(rt, "kind")
				if err := n.StartJob(Job{ID: fmt.Sprint(jobID), Kind: kind, MultiNode: rapid.Bool().Draw(rt, "multi")}, free[:k]...); err != nil {
					rt.Fatal(err)
				}
			}
			check(fmt.Sprintf("step %d", s))
		}
	})
}

func drawFault(rt *rapid.T, sh Shape) Fault {
	kinds := FaultKinds()
	if !sh.FabricInfo {
		kinds = slices.DeleteFunc(kinds, func(k FaultKind) bool { return k == FaultFabricManager })
	}
	kind := rapid.SampledFrom(kinds).Draw(rt, "kind")
	f := Fault{Kind: kind, GPU: rapid.IntRange(0, sh.GPUs()-1).Draw(rt, "gpu")}
	if kind.allowsAllGPUs() && rapid.Bool().Draw(rt, "all gpus") {
		f.GPU = AllGPUs
	}
	if kind.nodeOnly() {
		f.GPU = AllGPUs
		if kind == FaultSXid {
			f.SXid = rapid.SampledFrom(simkmsg.KnownSXids).Draw(rt, "sxid").Code
			f.NVSwitch = rapid.IntRange(0, len(sh.NVSwitchBus)-1).Draw(rt, "nvswitch")
			f.Link = rapid.IntRange(0, 63).Draw(rt, "switch port")
		}
		return f
	}
	if !kind.gpuLevel() {
		f.GPU = AllGPUs
		if rapid.Bool().Draw(rt, "by gpu") {
			f.GPU = rapid.IntRange(0, sh.GPUs()-1).Draw(rt, "rail")
		} else if rapid.Bool().Draw(rt, "one hca") {
			f.HCA = fmt.Sprint(rapid.IntRange(0, sh.GPUs()-1).Draw(rt, "hca"))
		}
	}
	f.Xid = rapid.SampledFrom([]int{13, 31, 43, 48, 62, 63, 64, 74, 79, 94, 95, 119, 120, 154}).Draw(rt, "xid")
	f.Link = rapid.IntRange(0, sh.NVLinks()-1).Draw(rt, "link")
	f.Count = rapid.IntRange(0, 3000).Draw(rt, "count")
	f.Duration = rapid.SampledFrom([]time.Duration{0, 10 * time.Second, time.Minute, 5 * time.Minute}).Draw(rt, "duration")
	if kind == FaultXid && f.Xid == 154 {
		f.Action = rapid.SampledFrom([]string{"", "none", "gpu-reset", "node-reboot", "drain-p2p", "drain-and-reset"}).Draw(rt, "action")
	}
	return f
}

// readGPU reads one answering GPU and checks the invariants against the last read.
func readGPU(rt *rapid.T, step string, i int, d nvml.Device, sh Shape, o *observed, now time.Time) {
	cur := map[string]uint64{}
	put := func(name string, v uint64, r nvml.Return) {
		if r == nvml.SUCCESS {
			cur[name] = v
		}
	}
	energy, er := d.GetTotalEnergyConsumption()
	if er == nvml.ERROR_TIMEOUT {
		return // a hung GPU's telemetry is unreadable
	}
	if er != nvml.SUCCESS {
		rt.Fatalf("%s: GPU %d energy: %v", step, i, er)
	}
	for _, et := range []nvml.MemoryErrorType{nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.MEMORY_ERROR_TYPE_UNCORRECTED} {
		v, r := d.GetTotalEccErrors(et, nvml.AGGREGATE_ECC)
		put(fmt.Sprintf("ecc-agg-%d", et), v, r)
	}
	for p := nvml.PERF_POLICY_POWER; p <= nvml.PERF_POLICY_RELIABILITY; p++ {
		v, r := d.GetViolationStatus(p)
		put(fmt.Sprintf("violation-%d", p), v.ViolationTime, r)
	}
	replay, r := d.GetPcieReplayCounter()
	put("pcie-replay", uint64(replay), r)
	for l := 0; l < sh.NVLinks(); l++ {
		for c := nvml.NVLINK_ERROR_DL_REPLAY; c <= nvml.NVLINK_ERROR_DL_CRC_DATA; c++ {
			v, r := d.GetNvLinkErrorCounter(l, c)
			put(fmt.Sprintf("nvlink-%d-%d", l, c), v, r)
		}
	}
	fvs := []nvml.FieldValue{{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: aggregateScope}}
	if d.GetFieldValues(fvs) == nvml.SUCCESS {
		put("nvlink-tx", fieldU64(fvs[0]), nvml.Return(fvs[0].NvmlReturn))
	}
	for name, v := range cur {
		if o.seen && v < o.counters[name] {
			rt.Fatalf("%s: GPU %d %s went back from %d to %d", step, i, name, o.counters[name], v)
		}
	}
	if o.seen {
		dt := now.Sub(o.at).Seconds()
		got := float64(energy) - float64(o.energy)
		if lo := sh.IdlePowerW*dt*1000 - 2; got < lo {
			rt.Fatalf("%s: GPU %d energy grew %.0f mJ in %.0fs, less than idle power allows (%.0f)", step, i, got, dt, lo)
		}
		if hi := sh.PowerLimitW*dt*1000 + 2; got > hi {
			rt.Fatalf("%s: GPU %d energy grew %.0f mJ in %.0fs, more than the power limit allows (%.0f)", step, i, got, dt, hi)
		}
	}
	if u, r := d.GetUtilizationRates(); r == nvml.SUCCESS && (u.Gpu > 100 || u.Memory > 100) {
		rt.Fatalf("%s: GPU %d utilization %+v", step, i, u)
	}
	if m, r := d.GetMemoryInfo(); r == nvml.SUCCESS && (m.Used > m.Total || m.Free+m.Used != m.Total) {
		rt.Fatalf("%s: GPU %d memory %+v", step, i, m)
	}
	*o = observed{counters: cur, energy: energy, at: now, seen: true}
}
