package fairshare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is a comparison of charge policies on one workload; it marshals to
// JSON as is (no NaN or Inf anywhere).
type Result struct {
	Workload WorkloadSummary `json:"workload"`
	Runs     []PolicyResult  `json:"runs"`
}

// WorkloadSummary describes the replayed workload.
type WorkloadSummary struct {
	Name     string   `json:"name"`
	Jobs     int      `json:"jobs"`
	Accounts int      `json:"accounts"`
	Cluster  Cluster  `json:"cluster"`
	GPUs     int      `json:"gpus"`
	Start    string   `json:"start"`
	Notes    []string `json:"notes,omitempty"`
	// DemandGPUHours is Σ GPUs × duration over all jobs.
	DemandGPUHours float64 `json:"demand_gpu_hours"`
	// OfferedLoad is demand GPU-hours over the GPU-hours the cluster has
	// between the first and last arrival.
	OfferedLoad float64 `json:"offered_load"`
}

// PolicyResult is one replay's outcome.
type PolicyResult struct {
	Charge      string  `json:"charge"`
	BlendWeight float64 `json:"blend_weight,omitempty"`
	IdleFloor   float64 `json:"idle_floor"`
	Algorithm   string  `json:"algorithm"`
	// WindowStartHours and WindowEndHours bound the interval over which
	// GPU-hours and shares are measured (hours from the workload's start).
	WindowStartHours float64         `json:"window_start_hours"`
	WindowEndHours   float64         `json:"window_end_hours"`
	Accounts         []AccountResult `json:"accounts"`
	Cluster          ClusterResult   `json:"cluster"`
}

// AccountResult is one account's outcome. Shares are fractions of the
// cluster-wide total inside the window; Entitlement is the account's
// normalized shares.
type AccountResult struct {
	Account     string  `json:"account"`
	Jobs        int     `json:"jobs"`
	Entitlement float64 `json:"entitlement"`
	// AllocatedGPUHours is GPUs held × time; MeasuredGPUHours weights it by
	// the profile's activity; IdleGPUHours is their difference.
	AllocatedGPUHours float64 `json:"allocated_gpu_hours"`
	MeasuredGPUHours  float64 `json:"measured_gpu_hours"`
	IdleGPUHours      float64 `json:"idle_allocated_gpu_hours"`
	AllocatedShare    float64 `json:"allocated_share"`
	MeasuredShare     float64 `json:"measured_share"`
	// MeasuredRatio is MeasuredShare / Entitlement (0 with no entitlement).
	MeasuredRatio  float64 `json:"measured_share_over_entitlement"`
	AllocatedRatio float64 `json:"allocated_share_over_entitlement"`
	// Activity is MeasuredGPUHours / AllocatedGPUHours.
	Activity float64 `json:"activity"`
	// Wait and Turnaround in hours over the account's jobs.
	MeanWaitHours       float64 `json:"mean_wait_hours"`
	P95WaitHours        float64 `json:"p95_wait_hours"`
	MeanTurnaroundHours float64 `json:"mean_turnaround_hours"`
	P95TurnaroundHours  float64 `json:"p95_turnaround_hours"`
}

// ClusterResult is the cluster-wide outcome.
type ClusterResult struct {
	// JainMeasured is Jain's index (Σx)²/(n·Σx²) over x = measured share /
	// entitlement of the accounts that have jobs and shares; 1 is perfectly
	// proportional. JainAllocated is the same over allocated shares.
	JainMeasured  float64 `json:"jain_measured"`
	JainAllocated float64 `json:"jain_allocated"`
	// MeasuredUtilization is measured GPU-hours over the window's GPU-hours;
	// AllocatedUtilization the allocated ones.
	MeasuredUtilization  float64 `json:"measured_utilization"`
	AllocatedUtilization float64 `json:"allocated_utilization"`
	AllocatedGPUHours    float64 `json:"allocated_gpu_hours"`
	MeasuredGPUHours     float64 `json:"measured_gpu_hours"`
	IdleGPUHours         float64 `json:"idle_allocated_gpu_hours"`
	MeanWaitHours        float64 `json:"mean_wait_hours"`
	P95WaitHours         float64 `json:"p95_wait_hours"`
	MeanTurnaroundHours  float64 `json:"mean_turnaround_hours"`
	P95TurnaroundHours   float64 `json:"p95_turnaround_hours"`
	Backfilled           int     `json:"backfilled_jobs"`
	MakespanHours        float64 `json:"makespan_hours"`
	FactorUpdates        int     `json:"factor_updates"`
}

func hours(d time.Duration) float64 { return d.Hours() }

// Summarize describes a workload.
func Summarize(w *Workload) WorkloadSummary {
	s := WorkloadSummary{Name: w.Name, Jobs: len(w.Jobs), Accounts: len(w.Shares), Cluster: w.Cluster, GPUs: w.Cluster.GPUs(),
		Start: w.Start.UTC().Format(time.RFC3339), Notes: w.Notes}
	var first, last time.Duration = math.MaxInt64, 0
	for _, j := range w.Jobs {
		s.DemandGPUHours += float64(j.GPUs) * hours(j.Duration)
		first = min(first, j.Arrival)
		last = max(last, j.Arrival)
	}
	if span := hours(last - first); span > 0 {
		s.OfferedLoad = s.DemandGPUHours / (span * float64(w.Cluster.GPUs()))
	}
	return s
}

// Evaluate turns a replay's trace into per-account and cluster results.
func Evaluate(w *Workload, cfg Config, tr *Trace) PolicyResult {
	cfg = cfg.withDefaults()
	res := PolicyResult{Charge: string(cfg.Policy.Charge), IdleFloor: cfg.Policy.IdleFloor, Algorithm: string(cfg.Algorithm)}
	if cfg.Policy.Charge == "blend" {
		res.BlendWeight = cfg.Policy.BlendWeight
	}
	var makespan time.Duration
	for _, o := range tr.Jobs {
		makespan = max(makespan, o.End)
	}
	ws, we := w.WindowStart, w.WindowEnd
	if we == 0 {
		ws, we = 0, makespan
	}
	res.WindowStartHours, res.WindowEndHours = hours(ws), hours(we)

	type acc struct {
		AccountResult
		waits, turns []float64
	}
	byName := map[string]*acc{}
	var totalShares float64
	for a, s := range w.Shares {
		byName[a] = &acc{AccountResult: AccountResult{Account: a}}
		totalShares += float64(s)
	}
	var allWaits, allTurns []float64
	c := &res.Cluster
	for i, j := range w.Jobs {
		o := tr.Jobs[i]
		a := byName[j.Account]
		a.Jobs++
		wait, turn := hours(o.Start-j.Arrival), hours(o.End-j.Arrival)
		a.waits = append(a.waits, wait)
		a.turns = append(a.turns, turn)
		allWaits = append(allWaits, wait)
		allTurns = append(allTurns, turn)
		if o.Backfilled {
			c.Backfilled++
		}
		from, to := max(o.Start, ws), min(o.End, we)
		if to <= from {
			continue
		}
		alloc := float64(j.GPUs) * hours(to-from)
		a.AllocatedGPUHours += alloc
		a.MeasuredGPUHours += alloc * j.Profile.Activity(j.Phase, from-o.Start, to-o.Start)
	}
	for _, a := range byName {
		c.AllocatedGPUHours += a.AllocatedGPUHours
		c.MeasuredGPUHours += a.MeasuredGPUHours
	}
	var xm, xa []float64
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := byName[n]
		a.IdleGPUHours = a.AllocatedGPUHours - a.MeasuredGPUHours
		if totalShares > 0 {
			a.Entitlement = float64(w.Shares[n]) / totalShares
		}
		a.AllocatedShare = ratio(a.AllocatedGPUHours, c.AllocatedGPUHours)
		a.MeasuredShare = ratio(a.MeasuredGPUHours, c.MeasuredGPUHours)
		a.MeasuredRatio = ratio(a.MeasuredShare, a.Entitlement)
		a.AllocatedRatio = ratio(a.AllocatedShare, a.Entitlement)
		a.Activity = ratio(a.MeasuredGPUHours, a.AllocatedGPUHours)
		a.MeanWaitHours, a.P95WaitHours = mean(a.waits), p95(a.waits)
		a.MeanTurnaroundHours, a.P95TurnaroundHours = mean(a.turns), p95(a.turns)
		if a.Jobs > 0 && a.Entitlement > 0 {
			xm = append(xm, a.MeasuredRatio)
			xa = append(xa, a.AllocatedRatio)
		}
		res.Accounts = append(res.Accounts, a.AccountResult)
	}
	c.IdleGPUHours = c.AllocatedGPUHours - c.MeasuredGPUHours
	c.JainMeasured, c.JainAllocated = Jain(xm), Jain(xa)
	capacity := float64(w.Cluster.GPUs()) * hours(we-ws)
	c.MeasuredUtilization = ratio(c.MeasuredGPUHours, capacity)
	c.AllocatedUtilization = ratio(c.AllocatedGPUHours, capacity)
	c.MeanWaitHours, c.P95WaitHours = mean(allWaits), p95(allWaits)
	c.MeanTurnaroundHours, c.P95TurnaroundHours = mean(allTurns), p95(allTurns)
	c.MakespanHours = hours(makespan)
	c.FactorUpdates = tr.FactorUpdates
	return res
}

func ratio(a, b float64) float64 {
	if !(b > 0) {
		return 0
	}
	return a / b
}

// Jain is Jain's fairness index (Σx)²/(n·Σx²): 1 when all x are equal, 1/n
// when one takes everything; 0 for no values or all zero.
func Jain(x []float64) float64 {
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	if len(x) == 0 || !(s2 > 0) {
		return 0
	}
	return s * s / (float64(len(x)) * s2)
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// p95 is the nearest-rank 95th percentile: the ⌈0.95·n⌉-th smallest value.
func p95(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	k := int(math.Ceil(0.95*float64(len(s)))) - 1
	return s[max(k, 0)]
}

// WriteTable prints the comparison: the workload, one cluster-wide row per
// policy, then per account the shares and waits under each policy side by
// side.
func (r *Result) WriteTable(w io.Writer) error {
	var b strings.Builder
	ws := r.Workload
	fmt.Fprintf(&b, "workload: %s\n", ws.Name)
	fmt.Fprintf(&b, "cluster: %d nodes × %d GPUs = %d GPUs; %d jobs, %d accounts; demand %.0f GPU-hours, offered load %.2f\n",
		ws.Cluster.Nodes, ws.Cluster.GPUsPerNode, ws.GPUs, ws.Jobs, ws.Accounts, ws.DemandGPUHours, ws.OfferedLoad)
	for _, n := range ws.Notes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	if len(r.Runs) > 0 {
		fmt.Fprintf(&b, "shares measured over hours [%.1f, %.1f) of the replay\n", r.Runs[0].WindowStartHours, r.Runs[0].WindowEndHours)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "charge\tjain(meas/ent)\tjain(alloc/ent)\tmeas util\talloc util\tidle alloc GPU-h\tmean wait h\tp95 wait h\tmean turn h\tp95 turn h\tbackfilled\t")
	for _, p := range r.Runs {
		c := p.Cluster
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t\n", label(p), c.JainMeasured, c.JainAllocated,
			c.MeasuredUtilization, c.AllocatedUtilization, c.IdleGPUHours, c.MeanWaitHours, c.P95WaitHours, c.MeanTurnaroundHours, c.P95TurnaroundHours, c.Backfilled)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nper account: entitled = normalized shares; activity = measured/allocated GPU-hours under the first policy;\n")
	b.WriteString("then per policy: measured share (÷ entitlement), allocated share, mean / p95 wait hours\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "account\tjobs\tentitled\tactivity\t"
	for _, p := range r.Runs {
		l := label(p)
		hdr += l + " meas\t" + l + " alloc\t" + l + " wait\t"
	}
	fmt.Fprintln(tw, hdr)
	if len(r.Runs) > 0 {
		for i, a := range r.Runs[0].Accounts {
			fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t", a.Account, a.Jobs, a.Entitlement, a.Activity)
			for _, p := range r.Runs {
				x := p.Accounts[i]
				fmt.Fprintf(tw, "%.3f (%.2f)\t%.3f\t%.2f / %.2f\t", x.MeasuredShare, x.MeasuredRatio, x.AllocatedShare, x.MeanWaitHours, x.P95WaitHours)
			}
			fmt.Fprintln(tw)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func label(p PolicyResult) string {
	if p.Charge == "blend" {
		return fmt.Sprintf("blend%.2g", p.BlendWeight)
	}
	return p.Charge
}
