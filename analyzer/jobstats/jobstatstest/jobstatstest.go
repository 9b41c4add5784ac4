// Package jobstatstest builds a small synthetic job whose job stats are known,
// derived by hand below, for the tests of analyzer/jobstats, the server's API
// and the command.
package jobstatstest

import (
	"sort"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// The job, and its neighbour on node-b that must not show.
const (
	Job   = "4242"
	Other = "99"
	H100  = "NVIDIA H100 80GB HBM3"
	A100  = "NVIDIA A100-SXM4-80GB"
)

// Samples is job 4242 (account vision, user alice) on three GPUs, one sample
// a minute at t0 + k min for k = 0..119 (t0 on a whole minute). At a 60 s step
// the job holds each GPU in the 120 steps (t0−1m, t0], …, (t0+118m, t0+119m]:
// the span t0−1m to t0+119m, 2 h a GPU, 6 GPU-hours.
//
//	node-a/0 GPU-a0 (H100): SM active 0.6, utilization 90 %, FB used 40,000
//	    MiB then 60,000 from k = 60 (peak 60,000 of FB_TOTAL 81,559), power
//	    500 W, energy counter 1e9 mJ + k·3e7 mJ: growth 119·3e7 mJ = 3,570,000
//	    J. Xid 13 (RESTART_APP) born at k = 50 (value 1): 1 Xid; Xid 31 at 4
//	    since k = −10: no growth, not counted.
//	node-a/1 GPU-a1 (H100): SM active 0.01, utilization 0, FB used 500,
//	    power 70 W, no energy counter: 70 W · 7,200 s = 504,000 J. Below 5 %
//	    throughout: did nothing, one idle stretch of 2 h (t0−1m to t0+119m).
//	node-b/0 GPU-b0 (A100): no SM activity (no profiling); utilization 80 %
//	    for k < 60, 2 % from k = 60: mean 41 %, activity 0.41 (gpu_util); one
//	    idle stretch of 1 h (t0+59m to t0+119m); FB used 20,000, free 60,000,
//	    reserved 559: size 80,559; power 300 W: 2,160,000 J.
//
// Health: ib-flap on node-a (no GPU index: both a0 and a1) for k = 30..40;
// thermal-throttle on node-b GPU 1 (the other job's) throughout: not shown.
// Job 99 holds node-b/1 GPU-b1, busy, with an Xid 48: not shown.
//
// Hence: 3 GPUs, 1 did nothing (a1), 1 more idle 30 min or more (b0), mean
// activity (0.6 + 0.01 + 0.41) / 3 = 34 %, 1 Xid: the verdict "3 GPUs
// allocated, 1 did nothing, 1 idle for 30m0s or more; mean activity 34%; 1 Xid".
func Samples(t0 time.Time) []telemetry.Sample {
	var out []telemetry.Sample
	add := func(name string, ls telemetry.Labels, k int, v float64) {
		out = append(out, telemetry.Sample{Name: name, Labels: ls, Value: v, Time: t0.Add(time.Duration(k) * time.Minute)})
	}
	type gpu struct {
		node, uuid, model, job string
		index                  int
	}
	gpus := []gpu{{"node-a", "GPU-a0", H100, Job, 0}, {"node-a", "GPU-a1", H100, Job, 1}, {"node-b", "GPU-b0", A100, Job, 0}, {"node-b", "GPU-b1", A100, Other, 1}}
	for _, g := range gpus {
		idx := strconv.Itoa(g.index)
		dcgm := telemetry.NewLabels(telemetry.LabelNode, g.node, telemetry.DCGMLabelHostname, g.node, telemetry.DCGMLabelUUID, g.uuid,
			telemetry.DCGMLabelGPU, idx, telemetry.DCGMLabelModelName, g.model)
		alloc := telemetry.NewLabels(telemetry.LabelNode, g.node, telemetry.LabelGPUIndex, idx, telemetry.LabelGPUUUID, g.uuid,
			telemetry.LabelJobID, g.job, telemetry.LabelAccount, "vision", telemetry.LabelUser, "alice")
		info := telemetry.NewLabels(telemetry.LabelNode, g.node, telemetry.LabelGPUIndex, idx, telemetry.LabelGPUUUID, g.uuid, telemetry.LabelModel, g.model)
		for k := -10; k < 130; k++ {
			add(telemetry.MetricGPUInfo, info, k, 1)
			if k < 0 || k >= 120 {
				continue
			}
			add(telemetry.MetricGPUAllocationInfo, alloc, k, 1)
			switch g.uuid {
			case "GPU-a0":
				add(telemetry.DCGMProfSMActive, dcgm, k, 0.6)
				add(telemetry.DCGMGPUUtil, dcgm, k, 90)
				add(telemetry.DCGMFBUsed, dcgm, k, map[bool]float64{false: 40000, true: 60000}[k >= 60])
				add(telemetry.DCGMFBTotal, dcgm, k, 81559)
				add(telemetry.DCGMPowerUsage, dcgm, k, 500)
				add(telemetry.DCGMTotalEnergyConsumption, dcgm, k, 1e9+float64(k)*3e7)
			case "GPU-a1":
				add(telemetry.DCGMProfSMActive, dcgm, k, 0.01)
				add(telemetry.DCGMGPUUtil, dcgm, k, 0)
				add(telemetry.DCGMFBUsed, dcgm, k, 500)
				add(telemetry.DCGMFBTotal, dcgm, k, 81559)
				add(telemetry.DCGMPowerUsage, dcgm, k, 70)
			case "GPU-b0":
				add(telemetry.DCGMGPUUtil, dcgm, k, map[bool]float64{false: 80, true: 2}[k >= 60])
				add(telemetry.DCGMFBUsed, dcgm, k, 20000)
				add(telemetry.DCGMFBFree, dcgm, k, 60000)
				add(telemetry.DCGMFBReserved, dcgm, k, 559)
				add(telemetry.DCGMPowerUsage, dcgm, k, 300)
			case "GPU-b1":
				add(telemetry.DCGMGPUUtil, dcgm, k, 100)
				add(telemetry.DCGMPowerUsage, dcgm, k, 650)
				if k >= 20 {
					add(telemetry.MetricXidErrorsTotal, telemetry.NewLabels(telemetry.LabelNode, g.node, telemetry.LabelGPUIndex, idx, telemetry.LabelGPUUUID, g.uuid, telemetry.LabelXid, "48", telemetry.LabelAction, string(telemetry.ActionDrainAndReset)), k, 1)
				}
				add(telemetry.MetricHealthCondition, telemetry.NewLabels(telemetry.LabelNode, g.node, telemetry.LabelGPUIndex, idx,
					telemetry.LabelCondition, string(telemetry.ConditionThermalThrottle), telemetry.LabelSeverity, "warning"), k, 1)
			}
		}
	}
	for k := -10; k < 130; k++ {
		a0 := func(xid string) telemetry.Labels {
			return telemetry.NewLabels(telemetry.LabelNode, "node-a", telemetry.LabelGPUIndex, "0", telemetry.LabelGPUUUID, "GPU-a0", telemetry.LabelXid, xid, telemetry.LabelAction, string(telemetry.ActionRestartApp))
		}
		add(telemetry.MetricXidErrorsTotal, a0("31"), k, 4)
		if k >= 50 {
			add(telemetry.MetricXidErrorsTotal, a0("13"), k, 1)
		}
		if k >= 30 && k <= 40 {
			add(telemetry.MetricHealthCondition, telemetry.NewLabels(telemetry.LabelNode, "node-a", telemetry.LabelIBDevice, "mlx5_0", telemetry.LabelIBPort, "1",
				telemetry.LabelCondition, string(telemetry.ConditionIBFlap), telemetry.LabelSeverity, "warning"), k, 1)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}
