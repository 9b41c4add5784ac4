package fairshare

import (
	"context"
	"math"
	"testing"
	"time"

	fs "github.com/gpuwatch/gpuwatch/scheduler/fairshare"
)

const h = time.Hour

var epoch = time.Date(2020, 5, 1, 0, 0, 0, 0, time.UTC)

type spec struct {
	name     string
	account  string
	arrival  time.Duration
	dur      time.Duration
	gpus     int
	activity float64
}

func workload(t *testing.T, c Cluster, shares map[string]int64, specs []spec) *Workload {
	t.Helper()
	w := &Workload{Name: t.Name(), Start: epoch, Cluster: c, Shares: shares}
	for i, s := range specs {
		p, err := ConstantProfile(s.activity)
		if err != nil {
			t.Fatal(err)
		}
		w.Jobs = append(w.Jobs, Job{ID: i, Name: s.name, Arrival: s.arrival, Duration: s.dur, Walltime: s.dur,
			GPUs: s.gpus, Account: s.account, User: s.account + "-u", Profile: p})
	}
	return w
}

func policy(charge fs.ChargePolicy) fs.Policy {
	p := fs.Policy{Charge: charge, IdleFloor: fs.DefaultIdleFloor}
	if charge == fs.ChargeBlend {
		p.BlendWeight = DefaultBlendWeight
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestIdleVersusBusyByHand: 1 node of 2 GPUs; accounts idle (10% activity)
// and busy (90%), equal shares; each submits four 1-GPU, 1-hour jobs at t=0,
// interleaved idle, busy, idle, busy, ... Charges and factors are recomputed
// hourly, exactly when jobs end; the half-life is 1000 h so decay is too
// small to change an order.
//
// t=0: no usage, both factors equal (Fair Tree: both LF=+Inf tie, rank 2/2),
// so arrival order decides: I1 and B1 start.
// t=1h, charge: allocation charges I 1, B 1 → tie → I2, B2 start, and so on:
// one job of each per hour. Waits: 0,1,2,3 h for both accounts, mean 1.5.
//
// measured charges max(activity, 0.1): I 0.1, B 0.9. LF = S/U: I 0.5/0.1 =
// 5 > B 0.5/0.9, so I ranks first (factor 1) and B second (0.5): I2 and I3
// start at 1h. t=2h: I 0.1+0.2 = 0.3 < B 0.9 → I4 and B2 start; t=3h: B3,
// B4. Waits I: 0,1,1,2 (mean 1); B: 0,2,3,3 (mean 2).
// blend 0.5 charges w·measured + (1-w)·allocation: I 0.55, B 0.95 per
// GPU-hour. t=1h: I 0.55 < B 0.95 → I2, I3 start. t=2h: I 0.55+1.1 = 1.65 >
// B 0.95 → B2, B3 start. t=3h: I 1.65 < B 2.85 → I4, B4. Waits I: 0,1,1,3
// (mean 1.25); B: 0,2,2,3.
//
// Over the window [0,2h): allocation gives each account 2 GPU-hours, so
// measured GPU-hours are I 0.2, B 1.8: measured shares 0.1 and 0.9, ratios
// to the 0.5 entitlement 0.2 and 1.8, Jain = 2²/(2·(0.04+3.24)) = 0.6098.
// measured and blend give I 3 GPU-hours (0.3 measured) and B 1 (0.9): shares
// 0.25 and 0.75, ratios 0.5 and 1.5, Jain = 4/(2·2.5) = 0.8. The idle account's
// allocation share rises (0.5 → 0.75) while its measured share stays lower
// than the busy one's.
func TestIdleVersusBusyByHand(t *testing.T) {
	var specs []spec
	for i := range 4 {
		specs = append(specs,
			spec{name: "I" + string(rune('1'+i)), account: "idle", dur: h, gpus: 1, activity: 0.1},
			spec{name: "B" + string(rune('1'+i)), account: "busy", dur: h, gpus: 1, activity: 0.9})
	}
	cluster := Cluster{Nodes: 1, GPUsPerNode: 2}
	shares := map[string]int64{"idle": 1, "busy": 1}
	cases := []struct {
		charge                   fs.ChargePolicy
		idleStarts, busyStarts   []time.Duration
		idleMeasShare, jainMeas  float64
		idleAllocShare, idleWait float64
	}{
		{fs.ChargeAllocation, []time.Duration{0, h, 2 * h, 3 * h}, []time.Duration{0, h, 2 * h, 3 * h}, 0.1, 4 / 6.56, 0.5, 1.5},
		{fs.ChargeMeasured, []time.Duration{0, h, h, 2 * h}, []time.Duration{0, 2 * h, 3 * h, 3 * h}, 0.25, 0.8, 0.75, 1},
		{fs.ChargeBlend, []time.Duration{0, h, h, 3 * h}, []time.Duration{0, 2 * h, 2 * h, 3 * h}, 0.25, 0.8, 0.75, 1.25},
	}
	for _, tc := range cases {
		t.Run(string(tc.charge), func(t *testing.T) {
			w := workload(t, cluster, shares, specs)
			w.WindowEnd = 2 * h
			cfg := Config{Policy: policy(tc.charge), Interval: h, HalfLife: 1000 * h}
			tr, err := Replay(context.Background(), w, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				if got := tr.Jobs[2*i].Start; got != tc.idleStarts[i] {
					t.Errorf("I%d starts at %v, want %v", i+1, got, tc.idleStarts[i])
				}
				if got := tr.Jobs[2*i+1].Start; got != tc.busyStarts[i] {
					t.Errorf("B%d starts at %v, want %v", i+1, got, tc.busyStarts[i])
				}
			}
			res := Evaluate(w, cfg, tr)
			var idle, busy AccountResult
			for _, a := range res.Accounts {
				if a.Account == "idle" {
					idle = a
				} else {
					busy = a
				}
			}
			if !near(idle.MeasuredShare, tc.idleMeasShare) || !near(busy.MeasuredShare, 1-tc.idleMeasShare) {
				t.Errorf("measured shares idle %v busy %v, want %v and %v", idle.MeasuredShare, busy.MeasuredShare, tc.idleMeasShare, 1-tc.idleMeasShare)
			}
			if !near(idle.AllocatedShare, tc.idleAllocShare) {
				t.Errorf("idle allocated share %v, want %v", idle.AllocatedShare, tc.idleAllocShare)
			}
			if !near(res.Cluster.JainMeasured, tc.jainMeas) {
				t.Errorf("Jain over measured share/entitlement %v, want %v", res.Cluster.JainMeasured, tc.jainMeas)
			}
			if !near(idle.MeanWaitHours, tc.idleWait) {
				t.Errorf("idle mean wait %v h, want %v", idle.MeanWaitHours, tc.idleWait)
			}
			// Measured utilization over [0,2h) on 2 GPUs: (measured I + B)/4.
			if want := (idle.MeasuredGPUHours + busy.MeasuredGPUHours) / 4; !near(res.Cluster.MeasuredUtilization, want) {
				t.Errorf("measured utilization %v, want %v", res.Cluster.MeasuredUtilization, want)
			}
			if !near(res.Cluster.AllocatedUtilization, 1) {
				t.Errorf("allocated utilization %v, want 1 (saturated)", res.Cluster.AllocatedUtilization)
			}
		})
	}
}

// TestEASYBackfillByHand checks EASY backfill on hand cases (walltime =
// duration, one account so fair share never reorders; queue order is
// arrival order).
func TestEASYBackfillByHand(t *testing.T) {
	cases := []struct {
		name    string
		cluster Cluster
		jobs    []spec
		// want start times per job, and which jobs were backfilled
		starts     []time.Duration
		backfilled []bool
	}{
		{
			// 4 GPUs. A (2 GPUs, 10 h) runs; H (4 GPUs) is the head: it can
			// start when A ends, shadow 10 h, with 0 GPUs to spare.
			// L (2 GPUs, 20 h) fits now but would hold 2 GPUs past 10 h:
			// H would slip to 20 h, so L waits (starts after H, at 11 h).
			// S (1 GPU, 5 h) ends before the shadow: backfills at 0.
			name:    "short job backfills, long one would delay the head",
			cluster: Cluster{Nodes: 1, GPUsPerNode: 4},
			jobs: []spec{
				{name: "A", dur: 10 * h, gpus: 2},
				{name: "H", arrival: time.Second, dur: h, gpus: 4},
				{name: "L", arrival: 2 * time.Second, dur: 20 * h, gpus: 2},
				{name: "S", arrival: 3 * time.Second, dur: 5 * h, gpus: 1},
			},
			starts:     []time.Duration{0, 10 * h, 11 * h, 3 * time.Second},
			backfilled: []bool{false, false, false, true},
		},
		{
			// 6 GPUs. A (4 GPUs, 10 h) runs; H (4 GPUs) waits for the
			// shadow at 10 h, when 6 are free: 2 to spare. L (2 GPUs,
			// 20 h) runs past the shadow but within the spare GPUs: it
			// backfills and H still starts at 10 h.
			name:    "long job fits in the GPUs the head leaves over",
			cluster: Cluster{Nodes: 1, GPUsPerNode: 6},
			jobs: []spec{
				{name: "A", dur: 10 * h, gpus: 4},
				{name: "H", arrival: time.Second, dur: h, gpus: 4},
				{name: "L", arrival: 2 * time.Second, dur: 20 * h, gpus: 2},
			},
			starts:     []time.Duration{0, 10 * h, 2 * time.Second},
			backfilled: []bool{false, false, true},
		},
		{
			// 2 nodes × 4 GPUs. R2 (3 GPUs, 3 h) best-fits node0 (tie,
			// lowest index); R1 (2 GPUs, 10 h) then fits only node1. Free:
			// node0 1, node1 2 — 3 GPUs, but H (4 GPUs ≤ 4 per node, so one
			// node) waits. By walltimes node0 frees at 3 h: shadow 3 h, free
			// then node0 4, node1 2. S (1 GPU, 5 h) best-fits node0 (1 free)
			// and would still hold it at 3 h, leaving no node with 4: S must
			// wait. T (2 GPUs, 5 h) fits only node1: node0 still frees at
			// 3 h, so T backfills. H starts at 3 h on node0; S then finds a
			// GPU only when H ends, at 4 h. (A count-only shadow would have
			// said "3 free now, 4 at 3 h" too, but would not see that S on
			// node0 blocks H.)
			name:    "node-aware shadow",
			cluster: Cluster{Nodes: 2, GPUsPerNode: 4},
			jobs: []spec{
				{name: "R2", dur: 3 * h, gpus: 3},
				{name: "R1", dur: 10 * h, gpus: 2},
				{name: "H", arrival: time.Second, dur: h, gpus: 4},
				{name: "S", arrival: 2 * time.Second, dur: 5 * h, gpus: 1},
				{name: "T", arrival: 3 * time.Second, dur: 5 * h, gpus: 2},
			},
			starts:     []time.Duration{0, 0, 3 * h, 4 * h, 3 * time.Second},
			backfilled: []bool{false, false, false, false, true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.jobs {
				tc.jobs[i].account = "acct"
				tc.jobs[i].activity = 1
			}
			w := workload(t, tc.cluster, map[string]int64{"acct": 1}, tc.jobs)
			tr, err := Replay(context.Background(), w, Config{Policy: policy(fs.ChargeAllocation), Interval: h})
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range tr.Jobs {
				if o.Start != tc.starts[i] || o.Backfilled != tc.backfilled[i] {
					t.Errorf("%s: start %v backfilled %v, want %v %v", tc.jobs[i].name, o.Start, o.Backfilled, tc.starts[i], tc.backfilled[i])
				}
			}
		})
	}
}
