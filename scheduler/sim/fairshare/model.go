package fairshare

import (
	"fmt"
	"math"
	"time"
)

// Profile is a GPU activity time series: Values[i] in [0,1] holds for
// [i×Step, (i+1)×Step) and the series repeats after its end. A constant
// activity is one value. Profiles are immutable once built and shared by the
// jobs that use them (each with its own phase).
type Profile struct {
	step   time.Duration
	values []float64
	prefix []float64 // prefix[i] = Σ values[:i]
	label  string
}

// NewProfile builds a profile from activity values in [0,1] sampled every
// step. label names its origin in errors and reports (a pod, "constant").
func NewProfile(label string, step time.Duration, values []float64) (*Profile, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("profile %s: no values", label)
	}
	if step <= 0 {
		return nil, fmt.Errorf("profile %s: step %v must be positive", label, step)
	}
	p := &Profile{step: step, values: values, prefix: make([]float64, len(values)+1), label: label}
	for i, v := range values {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return nil, fmt.Errorf("profile %s: value %d is %v, want an activity in [0,1]", label, i, v)
		}
		p.prefix[i+1] = p.prefix[i] + v
	}
	return p, nil
}

// ConstantProfile is a profile that is always a.
func ConstantProfile(a float64) (*Profile, error) {
	return NewProfile(fmt.Sprintf("constant %g", a), time.Hour, []float64{a})
}

// Label names the profile's origin.
func (p *Profile) Label() string { return p.label }

// Step is the profile's sampling interval.
func (p *Profile) Step() time.Duration { return p.step }

// Len is the number of values in one period.
func (p *Profile) Len() int { return len(p.values) }

// Mean is the profile's mean activity over one period.
func (p *Profile) Mean() float64 { return p.prefix[len(p.values)] / float64(len(p.values)) }

// integral is ∫ activity from 0 to x (x in steps, x ≥ 0), with wrap-around.
func (p *Profile) integral(x float64) float64 {
	n := float64(len(p.values))
	periods := math.Floor(x / n)
	r := x - periods*n
	k := int(r)
	if k >= len(p.values) { // rounding at the period's end
		k = len(p.values) - 1
	}
	return periods*p.prefix[len(p.values)] + p.prefix[k] + (r-float64(k))*p.values[k]
}

// Activity is the mean activity over [from, to) of a job's life, where the
// job's life starts at phase into the profile. to must be after from.
func (p *Profile) Activity(phase, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	if len(p.values) == 1 {
		return p.values[0]
	}
	s := float64(p.step)
	a := float64(phase+from) / s
	b := float64(phase+to) / s
	v := (p.integral(b) - p.integral(a)) / (b - a)
	return math.Min(1, math.Max(0, v))
}

// Job is one batch job of the replay. Times are offsets from the workload's
// Start.
type Job struct {
	// ID is the job's index in Workload.Jobs; it breaks priority ties.
	ID      int
	Name    string
	Arrival time.Duration
	// Duration is how long the job runs once started.
	Duration time.Duration
	// Walltime is the limit the job asked for, ≥ Duration: what backfill
	// plans with (Slurm never knows the real duration in advance).
	Walltime time.Duration
	GPUs     int
	Account  string
	User     string
	Profile  *Profile
	// Phase is where in its profile the job starts.
	Phase time.Duration
}

// Cluster is the replayed cluster: Nodes nodes of GPUsPerNode GPUs each (a
// flat pool of N GPUs is 1 node of N GPUs).
type Cluster struct {
	Nodes       int `json:"nodes"`
	GPUsPerNode int `json:"gpus_per_node"`
}

// GPUs is the cluster's GPU count.
func (c Cluster) GPUs() int { return c.Nodes * c.GPUsPerNode }

// Validate reports the first problem with the cluster shape.
func (c Cluster) Validate() error {
	if c.Nodes <= 0 || c.GPUsPerNode <= 0 {
		return fmt.Errorf("cluster %d nodes × %d GPUs: both must be positive", c.Nodes, c.GPUsPerNode)
	}
	if c.Nodes > 1<<20 || c.GPUsPerNode > 1<<16 {
		return fmt.Errorf("cluster %d nodes × %d GPUs: too large for the replay", c.Nodes, c.GPUsPerNode)
	}
	return nil
}

// Workload is what a replay runs: jobs, the accounts' entitlements, the
// cluster, and the window over which shares are measured.
type Workload struct {
	// Name says where the workload came from.
	Name string
	// Start is the wall-clock time of offset 0 (ledger samples carry it).
	Start time.Time
	Jobs  []Job
	// Shares are the accounts' raw fair-share shares (entitlement is each
	// account's share of their sum). Every job's account must have one.
	Shares  map[string]int64
	Cluster Cluster
	// Window is the interval [WindowStart, WindowEnd) over which GPU-hours
	// and shares are measured; WindowEnd 0 means the whole replay, until the
	// last job ends.
	WindowStart, WindowEnd time.Duration
	// Notes describe how the workload was composed (printed with the table).
	Notes []string
}

// Validate reports the first problem with the workload.
func (w *Workload) Validate() error {
	if err := w.Cluster.Validate(); err != nil {
		return fmt.Errorf("workload %s: %w", w.Name, err)
	}
	if len(w.Jobs) == 0 {
		return fmt.Errorf("workload %s: no jobs", w.Name)
	}
	if w.WindowEnd != 0 && w.WindowEnd <= w.WindowStart {
		return fmt.Errorf("workload %s: window [%v, %v) is empty", w.Name, w.WindowStart, w.WindowEnd)
	}
	for a, s := range w.Shares {
		if s < 0 {
			return fmt.Errorf("workload %s: account %q has negative shares %d", w.Name, a, s)
		}
	}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if j.ID != i {
			return fmt.Errorf("workload %s: job %d (%s) has ID %d, want its index", w.Name, i, j.Name, j.ID)
		}
		switch {
		case j.Arrival < 0:
			return fmt.Errorf("workload %s: job %s: arrival %v is negative", w.Name, j.Name, j.Arrival)
		case j.Duration <= 0:
			return fmt.Errorf("workload %s: job %s: duration %v must be positive", w.Name, j.Name, j.Duration)
		case j.Walltime < j.Duration:
			return fmt.Errorf("workload %s: job %s: walltime %v is shorter than its duration %v", w.Name, j.Name, j.Walltime, j.Duration)
		case j.GPUs <= 0:
			return fmt.Errorf("workload %s: job %s: %d GPUs, want at least 1", w.Name, j.Name, j.GPUs)
		case j.Profile == nil:
			return fmt.Errorf("workload %s: job %s has no utilization profile", w.Name, j.Name)
		case j.Phase < 0:
			return fmt.Errorf("workload %s: job %s: phase %v is negative", w.Name, j.Name, j.Phase)
		}
		if !fitsEmpty(w.Cluster, j.GPUs) {
			return fmt.Errorf("workload %s: job %s asks for %d GPUs, more than the cluster (%d nodes × %d GPUs) can ever give it",
				w.Name, j.Name, j.GPUs, w.Cluster.Nodes, w.Cluster.GPUsPerNode)
		}
		if _, ok := w.Shares[j.Account]; !ok {
			return fmt.Errorf("workload %s: job %s: account %q has no shares", w.Name, j.Name, j.Account)
		}
	}
	return nil
}

// fitsEmpty reports whether a job of g GPUs fits the empty cluster.
func fitsEmpty(c Cluster, g int) bool {
	return g <= c.GPUs()
}
