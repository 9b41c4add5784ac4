package openb

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
	"github.com/gpuwatch/gpuwatch/scheduler/sim/packing"
)

// The paper's protocol.
const (
	DefaultTune = 1.3
)

// PaperSeeds are the seeds the paper averages over (-tuneseed 42..51).
var PaperSeeds = []int64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}

// Options is one replay.
type Options struct {
	Nodes  []sim.Node
	Pods   []sim.Pod
	Policy string
	Seed   int64
	// Tune inflates (or trims) the GPU request to Tune × capacity; 0 or less
	// replays the list as is.
	Tune float64
	// NoShuffle submits the pods in name order instead of shuffling them.
	NoShuffle bool
	// Popularity is the share of pods (%) FGD's target workload covers; 0 means
	// packing.DefaultPopularity.
	Popularity float64
}

// Result is one replay's outcome.
type Result struct {
	Policy string `json:"policy"`
	Seed   int64  `json:"seed"`
	// Curve is the GPU allocation ratio (%) at each arrived-demand percentage.
	Curve []sim.Point `json:"curve"`
	// Final is the curve's last column, the allocation ratio at Tune × capacity.
	Final   float64 `json:"final"`
	Arrived int     `json:"arrived_pods"`
	Failed  int     `json:"failed_pods"`
	// FirstFailurePct is the curve column of the first pod that did not fit
	// (-1 when all fit); the columns before it do not depend on the policy.
	FirstFailurePct int       `json:"first_failure_pct"`
	TotalGPUs       int       `json:"total_gpus"`
	Stats           sim.Stats `json:"-"`
}

// Run replays the pods on the nodes with the paper's protocol and returns the
// allocation curve.
func Run(o Options) (*Result, error) {
	if len(o.Nodes) == 0 {
		return nil, errors.New("cannot replay without nodes")
	}
	pol, err := policy(o)
	if err != nil {
		return nil, err
	}
	return run(o, pol)
}

func policy(o Options) (sim.Policy, error) {
	pop := o.Popularity
	if pop == 0 {
		pop = packing.DefaultPopularity
	}
	w, err := packing.TypicalWorkload(o.Pods, pop)
	if err != nil {
		return nil, err
	}
	return packing.New(o.Policy, w)
}

func run(o Options, pol sim.Policy) (*Result, error) {
	c, err := sim.NewCluster(o.Nodes)
	if err != nil {
		return nil, err
	}
	plan, err := Arrivals(o.Pods, o.Nodes, o.Tune, o.Seed, !o.NoShuffle)
	if err != nil {
		return nil, err
	}
	s, err := sim.NewScheduler(c, pol, plan.Rand, sim.Options{Rank: plan.Rank})
	if err != nil {
		return nil, err
	}
	samples := make([]sim.Sample, 0, len(plan.Pods))
	var arrived int64
	firstFail := -1
	for _, p := range plan.Pods {
		arrived += p.TotalMilliGPU()
		if _, err := s.Place(p); err != nil {
			if !errors.Is(err, sim.ErrUnschedulable) {
				return nil, err
			}
			if firstFail < 0 {
				firstFail = sim.DemandPct(arrived, c.TotalGPUs())
			}
		}
		samples = append(samples, sim.Sample{ArrivedMilli: arrived, AllocatedMilli: c.GPUAllocatedMilli()})
	}
	maxPct := int(math.Round(o.Tune * 100))
	if o.Tune <= 0 {
		maxPct = int(math.Round(float64(arrived) / float64(c.GPUCapacityMilli()) * 100))
	}
	curve, err := sim.AllocationCurve(samples, c.TotalGPUs(), maxPct)
	if err != nil {
		return nil, err
	}
	r := &Result{Policy: pol.Name(), Seed: o.Seed, Curve: curve, Arrived: len(plan.Pods), FirstFailurePct: firstFail, TotalGPUs: c.TotalGPUs(), Stats: s.Stats()}
	r.Failed = r.Stats.Failed
	for _, p := range curve {
		if p.OK {
			r.Final = p.AllocPct
		}
	}
	return r, nil
}

// Summary is the mean over seeds.
type Summary struct {
	Policy string    `json:"policy"`
	Seeds  []int64   `json:"seeds"`
	Runs   []*Result `json:"runs"`
	// Curve is the per-column mean of the runs' curves.
	Curve []sim.Point `json:"curve"`
	// Final is the mean of the runs' Final.
	Final float64 `json:"final"`
}

// RunSeeds replays once per seed (in parallel, one run per CPU) and averages.
func RunSeeds(o Options, seeds []int64) (*Summary, error) {
	if len(seeds) == 0 {
		return nil, errors.New("no seeds to replay")
	}
	if len(o.Nodes) == 0 {
		return nil, errors.New("cannot replay without nodes")
	}
	pol, err := policy(o)
	if err != nil {
		return nil, err
	}
	runs := make([]*Result, len(seeds))
	errs := make([]error, len(seeds))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			oo := o
			oo.Seed = seed
			runs[i], errs[i] = run(oo, pol)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sum := &Summary{Policy: pol.Name(), Seeds: seeds, Runs: runs}
	for k := range runs[0].Curve {
		pt := sim.Point{DemandPct: runs[0].Curve[k].DemandPct}
		var total float64
		n := 0
		for _, r := range runs {
			if k < len(r.Curve) && r.Curve[k].OK {
				total += r.Curve[k].AllocPct
				n++
			}
		}
		if n > 0 {
			pt.AllocPct, pt.OK = sim.Round2(total/float64(n)), true
		}
		sum.Curve = append(sum.Curve, pt)
	}
	var total float64
	for _, r := range runs {
		total += r.Final
	}
	sum.Final = total / float64(len(runs))
	return sum, nil
}

// ParseSeeds reads "42", "42-51" or "42,45,47-49".
func ParseSeeds(s string) ([]int64, error) {
	var out []int64
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
		b, errB := strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
		if errA != nil || errB != nil {
			return nil, fmt.Errorf("bad seed %q: want a number or a range like 42-51", part)
		}
		if b < a || b-a >= 10000 {
			return nil, fmt.Errorf("bad seed range %q: want low-high with at most 10000 seeds", part)
		}
		for v := a; v <= b; v++ {
			out = append(out, v)
		}
	}
	return out, nil
}
