package packing

import (
	"cmp"
	"slices"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
)

// The FGD paper's view of one node and one target pod shape: which quadrant the
// pair falls in decides how much of the node's free GPU is fragment for it.
const (
	q1LackBoth  = iota // neither enough CPU nor GPUs
	q2LackGPU          // enough CPU, not enough GPUs
	q3Satisfied        // fits: only GPUs too small for the shape are fragment
	q4LackCPU          // enough GPUs, not enough CPU
	xlSatisfied        // CPU-only shape that fits
	xrLackCPU          // CPU-only shape that does not
	noAccess           // GPU model not acceptable to the shape
	nQuadrants
)

// nodeRes is the part of a node's state fragmentation depends on.
type nodeRes struct {
	cpuFree int64
	gpuFree []int64
	model   string
}

func resOf(s *sim.NodeState) nodeRes {
	return nodeRes{cpuFree: s.MilliCPUFree, gpuFree: s.GPUFree, model: s.Node.Model}
}

// Frag is the node's expected GPU fragmentation (milli-GPU) under the workload:
// for each shape, weighted by its frequency, the free GPU milli the shape cannot
// use; the simulator's NodeGpuShareFragAmountScore, summed per quadrant in the
// same order so the floating-point result is the same.
func Frag(s *sim.NodeState, w Workload) float64 { return frag(resOf(s), w) }

func frag(n nodeRes, w Workload) float64 {
	var total int64
	for _, f := range n.gpuFree {
		total += f
	}
	var q [nQuadrants]float64
	for i := range w {
		c := &w[i]
		switch quadrant(n, c) {
		case q3Satisfied:
			var small int64
			for _, f := range n.gpuFree {
				if f < c.MilliGPU {
					small += f
				}
			}
			q[q2LackGPU] += c.Freq * float64(small)
			q[q3Satisfied] += c.Freq * float64(total-small)
		case q1LackBoth:
			q[q1LackBoth] += c.Freq * float64(total)
		case q2LackGPU:
			q[q2LackGPU] += c.Freq * float64(total)
		case q4LackCPU:
			q[q4LackCPU] += c.Freq * float64(total)
		case xlSatisfied:
			q[xlSatisfied] += c.Freq * float64(total)
		case xrLackCPU:
			q[xrLackCPU] += c.Freq * float64(total)
		case noAccess:
			q[noAccess] += c.Freq * float64(total)
		}
	}
	var out float64
	for i, v := range q {
		if i != q3Satisfied {
			out += v
		}
	}
	return out
}

func quadrant(n nodeRes, c *Class) int {
	cpuOK := n.cpuFree >= c.MilliCPU
	if c.MilliGPU == 0 {
		if cpuOK {
			return xlSatisfied
		}
		return xrLackCPU
	}
	if !sim.SpecAccepts(c.GPUSpec, n.model) {
		return noAccess
	}
	gpuOK := sim.GPUsWithAtLeast(n.gpuFree, c.MilliGPU) >= c.NumGPU
	switch {
	case gpuOK && cpuOK:
		return q3Satisfied
	case gpuOK:
		return q4LackCPU
	case cpuOK:
		return q2LackGPU
	default:
		return q1LackBoth
	}
}

// afterPacked is the node after the pod takes its CPU and, for each requested
// GPU, the GPU with the least free milli that still fits (the simulator's
// NodeResource.Sub, which FGD scores whole-GPU and CPU-only pods with). Like Sub,
// it leaves the node unchanged when the pod does not fit.
func afterPacked(n nodeRes, p *sim.Pod) nodeRes {
	out := nodeRes{cpuFree: n.cpuFree, gpuFree: slices.Clone(n.gpuFree), model: n.model}
	if n.cpuFree < p.MilliCPU || len(n.gpuFree) < p.NumGPU {
		return out
	}
	out.cpuFree -= p.MilliCPU
	if p.NumGPU == 0 {
		return out
	}
	idx := make([]int, len(out.gpuFree))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(out.gpuFree[a], out.gpuFree[b]) })
	left := p.NumGPU
	for _, g := range idx {
		if p.MilliGPU <= out.gpuFree[g] {
			out.gpuFree[g] -= p.MilliGPU
			if left--; left == 0 {
				break
			}
		}
	}
	return out
}
