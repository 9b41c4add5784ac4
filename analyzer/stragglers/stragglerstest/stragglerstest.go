// Package stragglerstest simulates multi-GPU jobs with known stragglers (a
// thermally throttled GPU, a power-capped node, a sick link) and a healthy
// noisy job, for the tests of analyzer/stragglers, the server's API and the
// command.
package stragglerstest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Every is the simulated agents' sampling interval.
const Every = 15 * time.Second

// gpuSim is one simulated GPU: its healthy levels times its factors, with
// noise, and its throttle-reasons mask.
type gpuSim struct {
	node, uuid string
	index      int
	// Factors on the healthy SM clock, activity and power (1: healthy),
	// applied from lagFrom on (0: the whole window).
	clock, active, power float64
	lagFrom              time.Duration
	throttle             uint64
	noise                float64 // relative, uniform ±
	noSMActive           bool    // reports DCGM_FI_DEV_GPU_UTIL only
}

// Fleet simulates the window [t0, t0+10m]:
//
//   - job train-a, 8 GPUs on node-1: GPU-a3 thermally throttled (SM clock
//     and power 30 % down, hw_thermal_slowdown);
//   - job train-b, 16 GPUs on node-2 and node-3: node-3 power capped (power
//     30 %, clock 15 % down, sw_power_cap);
//   - pod ml/healthy (Kubernetes attribution), 8 GPUs on node-4 reporting
//     GPU_UTIL only: per-GPU offsets up to ±4 % and ±8 % noise per sample,
//     nothing else;
//   - job train-e, 4 GPUs on node-5: GPU-e2 (a sick link) 45 % less busy at
//     the same clock for the last 6 minutes;
//   - job solo, 1 GPU on node-6: never compared.
func Fleet(t0 time.Time) []telemetry.Sample {
	rng := rand.New(rand.NewPCG(16, 4))
	type job struct {
		id, pod, ns string
		gpus        []gpuSim
	}
	healthy := func(node, prefix string, from, n int) []gpuSim {
		var out []gpuSim
		for i := range n {
			out = append(out, gpuSim{node: node, uuid: fmt.Sprintf("GPU-%s%d", prefix, from+i), index: i, clock: 1, active: 1, power: 1, noise: 0.02})
		}
		return out
	}
	a := healthy("node-1", "a", 0, 8)
	a[3].clock, a[3].power, a[3].throttle = 0.7, 0.7, 0x40
	b := append(healthy("node-2", "b", 0, 8), healthy("node-3", "b", 8, 8)...)
	for i := 8; i < 16; i++ {
		b[i].clock, b[i].power, b[i].throttle = 0.85, 0.7, 0x4
	}
	c := healthy("node-4", "c", 0, 8)
	for i := range c {
		f := 0.96 + 0.08*float64(i)/7
		c[i].clock, c[i].active, c[i].power, c[i].noise, c[i].noSMActive = f, f, f, 0.08, true
	}
	e := healthy("node-5", "e", 0, 4)
	e[2].active, e[2].lagFrom = 0.55, 4*time.Minute
	jobs := []job{{id: "train-a", gpus: a}, {id: "train-b", gpus: b}, {pod: "healthy", ns: "ml", gpus: c},
		{id: "train-e", gpus: e}, {id: "solo", gpus: healthy("node-6", "s", 0, 1)}}

	var out []telemetry.Sample
	for k := range int(10 * time.Minute / Every) {
		at := t0.Add(time.Duration(k)*Every + 5*time.Second)
		for _, j := range jobs {
			for _, g := range j.gpus {
				ls := func(extra ...string) telemetry.Labels {
					return telemetry.NewLabels(append([]string{telemetry.LabelNode, g.node, telemetry.LabelGPUIndex, fmt.Sprint(g.index), telemetry.LabelGPUUUID, g.uuid}, extra...)...)
				}
				add := func(name string, v float64, ls telemetry.Labels) {
					out = append(out, telemetry.Sample{Name: name, Labels: ls, Value: v, Time: at})
				}
				f := func(factor float64) float64 {
					if at.Sub(t0) < g.lagFrom {
						factor = 1
					}
					return factor * (1 + g.noise*(2*rng.Float64()-1))
				}
				if j.id != "" {
					add(telemetry.MetricGPUAllocationInfo, 1, ls(telemetry.LabelJobID, j.id))
				} else {
					add(telemetry.MetricGPUAllocationInfo, 1, ls(telemetry.LabelPod, j.pod, telemetry.LabelNamespace, j.ns))
				}
				add(telemetry.DCGMSMClock, 1980*f(g.clock), ls())
				add(telemetry.DCGMPowerUsage, 690*f(g.power), ls())
				if g.noSMActive {
					add(telemetry.DCGMGPUUtil, 90*f(g.active), ls())
				} else {
					add(telemetry.DCGMProfSMActive, 0.9*f(g.active), ls())
				}
				add(telemetry.DCGMClockThrottleReasons, float64(g.throttle), ls())
			}
		}
	}
	return out
}

// Want is each job's stragglers as "gpu:signal,signal:reason,reason", sorted.
var Want = map[string][]string{
	"train-a":    {"GPU-a3:sm_clock,power:hw_thermal_slowdown"},
	"train-b":    {"GPU-b10:sm_clock,power:sw_power_cap", "GPU-b11:sm_clock,power:sw_power_cap", "GPU-b12:sm_clock,power:sw_power_cap", "GPU-b13:sm_clock,power:sw_power_cap", "GPU-b14:sm_clock,power:sw_power_cap", "GPU-b15:sm_clock,power:sw_power_cap", "GPU-b8:sm_clock,power:sw_power_cap", "GPU-b9:sm_clock,power:sw_power_cap"},
	"ml/healthy": nil,
	"train-e":    {"GPU-e2:sm_active:"},
}

// Summary is a job's stragglers as Want writes them.
func Summary(j stragglers.Job) []string {
	var out []string
	for _, s := range j.Stragglers {
		var sig []string
		for _, e := range s.Evidence {
			sig = append(sig, e.Signal)
		}
		out = append(out, s.GPU+":"+strings.Join(sig, ",")+":"+strings.Join(s.ThrottleReasons, ","))
	}
	sort.Strings(out) // GPU-b10 before GPU-b8, as in Want
	return out
}
