package packing

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
)

// Names of the registered policies.
const (
	NameRandom   = "random"
	NameBestFit  = "bestfit"
	NameFGD      = "fgd"
	NameGPUWatch = "gpuwatch"
)

// New returns the named policy; FGD and gpuwatch measure fragmentation against w.
// This map is the registry of policies.
func New(name string, w Workload) (sim.Policy, error) {
	ctors := map[string]func() sim.Policy{
		NameRandom:   func() sim.Policy { return Random{} },
		NameBestFit:  func() sim.Policy { return BestFit{} },
		NameFGD:      func() sim.Policy { return NewFGD(w) },
		NameGPUWatch: func() sim.Policy { return NewGPUWatch(w) },
	}
	ctor, ok := ctors[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if (name == NameFGD || name == NameGPUWatch) && len(w) == 0 {
		return nil, fmt.Errorf("policy %s needs a non-empty target workload", name)
	}
	return ctor(), nil
}

// Names lists the registered policies.
func Names() []string {
	n := []string{NameRandom, NameBestFit, NameFGD, NameGPUWatch}
	sort.Strings(n)
	return n
}

// Random places on a feasible node drawn uniformly at random, as the simulator's
// RandomScore does in PreScore (one rand.Intn over the feasible nodes). A
// GPU-sharing pod goes to a random GPU among those it fits on (gpuSelMethod
// "random").
type Random struct{}

// Name implements sim.Policy.
func (Random) Name() string { return NameRandom }

// Score implements sim.Policy; Random picks instead of scoring, so every node
// scores the same.
func (Random) Score(*sim.NodeState, *sim.Pod) float64 { return 0 }

// Pick implements sim.Picker.
func (Random) Pick(feasible []int, _ *sim.Pod, rng *rand.Rand) int {
	return feasible[rng.Intn(len(feasible))]
}

// PickGPUs implements sim.Policy.
func (Random) PickGPUs(s *sim.NodeState, p *sim.Pod, rng *rand.Rand) []int {
	if !p.SharesGPU() {
		return sim.FirstFreeGPUs(s.GPUFree, p.NumGPU)
	}
	pick, n := -1, 0
	for g, f := range s.GPUFree {
		if f >= p.MilliGPU {
			n++
			if rng.Intn(n) == 0 {
				pick = g
			}
		}
	}
	if pick < 0 {
		return nil
	}
	return []int{pick}
}

// Maximum node sizes the simulator normalizes BestFit by (MaxSpecCpu, MaxSpecGpu).
const (
	maxSpecMilliCPU = 128000
	maxSpecMilliGPU = 8000
)

// BestFit prefers the node with the least CPU and GPU left after placing, each
// normalized by the largest node, weighted half and half; the score is the
// simulator's BestFitScore, an integer in [0, 100]. A GPU-sharing pod goes to the
// tightest GPU it fits on (gpuSelMethod "best").
type BestFit struct{}

// Name implements sim.Policy.
func (BestFit) Name() string { return NameBestFit }

// Score implements sim.Policy.
func (BestFit) Score(s *sim.NodeState, p *sim.Pod) float64 {
	left := float64(s.MilliCPUFree-p.MilliCPU)/maxSpecMilliCPU*0.5 +
		float64(s.GPUFreeTotal()-p.TotalMilliGPU())/maxSpecMilliGPU*0.5
	return float64(int64((1 - left) * 100))
}

// PickGPUs implements sim.Policy.
func (BestFit) PickGPUs(s *sim.NodeState, p *sim.Pod, _ *rand.Rand) []int {
	if !p.SharesGPU() {
		return sim.FirstFreeGPUs(s.GPUFree, p.NumGPU)
	}
	if g := tightestGPU(s.GPUFree, p.MilliGPU); g >= 0 {
		return []int{g}
	}
	return nil
}

// tightestGPU is the lowest-indexed GPU with the least free milli that still
// holds milli, or -1.
func tightestGPU(free []int64, milli int64) int {
	pick := -1
	for g, f := range free {
		if f >= milli && (pick < 0 || f < free[pick]) {
			pick = g
		}
	}
	return pick
}

// FGD is fragmentation gradient descent: place where the node's expected GPU
// fragmentation under the target workload drops the most. The score is the
// simulator's FGDScore, int(100·sigmoid(Δfrag/1000)), an integer in [0, 100]; a
// GPU-sharing pod goes to the GPU with the best score (lowest index on ties),
// other GPU pods to the lowest-indexed free GPUs.
type FGD struct{ w Workload }

// NewFGD returns FGD against the target workload w.
func NewFGD(w Workload) *FGD { return &FGD{w: w} }

// Name implements sim.Policy.
func (*FGD) Name() string { return NameFGD }

// Score implements sim.Policy.
func (f *FGD) Score(s *sim.NodeState, p *sim.Pod) float64 {
	sc, _ := fgdChoice(resOf(s), p, f.w, fgdIntScore)
	return sc
}

// PickGPUs implements sim.Policy.
func (f *FGD) PickGPUs(s *sim.NodeState, p *sim.Pod, _ *rand.Rand) []int {
	if !p.SharesGPU() {
		return sim.FirstFreeGPUs(s.GPUFree, p.NumGPU)
	}
	if _, g := fgdChoice(resOf(s), p, f.w, fgdIntScore); g >= 0 {
		return []int{g}
	}
	return nil
}

// fgdIntScore is the simulator's quantization of a fragmentation decrease.
func fgdIntScore(drop float64) float64 {
	return float64(int64(sigmoid(drop/1000) * 100))
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// fgdChoice scores placing p on n by the fragmentation drop mapped through
// score; for a GPU-sharing pod it tries each GPU that fits and returns the best
// (first on ties) and its index, for other pods the packed placement and -1.
func fgdChoice(n nodeRes, p *sim.Pod, w Workload, score func(float64) float64) (float64, int) {
	before := frag(n, w)
	if !p.SharesGPU() {
		return score(before - frag(afterPacked(n, p), w)), -1
	}
	best, pick := 0.0, -1
	after := nodeRes{cpuFree: n.cpuFree - p.MilliCPU, gpuFree: make([]int64, len(n.gpuFree)), model: n.model}
	for g, free := range n.gpuFree {
		if free < p.MilliGPU {
			continue
		}
		copy(after.gpuFree, n.gpuFree)
		after.gpuFree[g] -= p.MilliGPU
		if sc := score(before - frag(after, w)); pick < 0 || sc > best {
			best, pick = sc, g
		}
	}
	return best, pick
}
