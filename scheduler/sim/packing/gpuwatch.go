package packing

import (
	"math/rand"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
)

// GPUWatch is gpuwatch's packing policy, FGD with two changes measured on the
// openb traces (docs/BENCHMARKS.md):
//
//   - Among nodes with the same FGD score, the node with fewer GPUs wins (then
//     the engine's rank, as for FGD). FGD's 101 integer levels leave many nodes
//     tied; sending ties to small nodes keeps large nodes whole for the multi-GPU
//     pods only they can take.
//   - A GPU-sharing pod goes to the GPU whose fragmentation drop is largest at
//     full precision, not after FGD's rounding to an integer score, which
//     otherwise hands near-ties to the lowest-indexed GPU.
type GPUWatch struct{ w Workload }

// NewGPUWatch returns gpuwatch's policy against the target workload w.
func NewGPUWatch(w Workload) *GPUWatch { return &GPUWatch{w: w} }

// Name implements sim.Policy.
func (*GPUWatch) Name() string { return NameGPUWatch }

// smallNodeLevels separates FGD's score levels so that the GPU-count tie-break
// (capped at 99) never reorders two different levels.
const smallNodeLevels = 100

// Score implements sim.Policy: FGD's integer score, ties to the smaller node.
func (g *GPUWatch) Score(s *sim.NodeState, p *sim.Pod) float64 {
	sc, _ := fgdChoice(resOf(s), p, g.w, fgdIntScore)
	return sc*smallNodeLevels - float64(min(len(s.GPUFree), smallNodeLevels-1))
}

// PickGPUs implements sim.Policy.
func (g *GPUWatch) PickGPUs(s *sim.NodeState, p *sim.Pod, _ *rand.Rand) []int {
	if !p.SharesGPU() {
		return sim.FirstFreeGPUs(s.GPUFree, p.NumGPU)
	}
	if _, gpu := fgdChoice(resOf(s), p, g.w, exactDrop); gpu >= 0 {
		return []int{gpu}
	}
	return nil
}

// exactDrop scores a GPU choice by the fragmentation drop itself.
func exactDrop(drop float64) float64 { return drop }
