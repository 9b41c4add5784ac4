package packing

import (
	"fmt"
	"sort"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
)

// Class is a pod shape of the target workload and its share of the pods.
type Class struct {
	MilliCPU int64
	NumGPU   int
	MilliGPU int64
	GPUSpec  string
	Freq     float64 // in (0, 1]; the classes' Freq sum to 1
}

// Workload is the target workload FGD measures fragmentation against: the most
// popular pod shapes of the trace and how often each occurs.
type Workload []Class

// DefaultPopularity is the share of pods (%) the typical shapes must cover, the
// simulator's podPopularityThreshold in the paper's runs.
const DefaultPopularity = 95

// TypicalWorkload counts the pods by shape (milli CPU, GPU count, milli GPU per
// GPU, GPU spec; memory plays no part), orders the shapes by decreasing count
// (ties by the simulator's PodResource order, reversed), keeps the most popular
// ones until they cover popularityPct % of the pods, and renormalizes their
// frequencies; this is the simulator's GetTypicalPods with isInvolvedCpuPods true,
// podIncreaseStep 1 and gpuResWeight 0.
func TypicalWorkload(pods []sim.Pod, popularityPct float64) (Workload, error) {
	if len(pods) == 0 {
		return nil, fmt.Errorf("cannot derive a target workload from no pods")
	}
	if popularityPct <= 0 || popularityPct > 100 {
		return nil, fmt.Errorf("popularity threshold must be in (0, 100], got %v", popularityPct)
	}
	type key struct {
		cpu   int64
		milli int64
		num   int
		spec  string
	}
	counts := map[key]float64{}
	for i := range pods {
		p := &pods[i]
		spec := p.GPUSpec
		if p.NumGPU == 0 {
			spec = "" // the simulator's pods carry a GPU model only when they ask for GPUs
		}
		counts[key{p.MilliCPU, p.MilliGPU, p.NumGPU, spec}]++
	}
	total := float64(len(pods))
	w := make(Workload, 0, len(counts))
	for k, n := range counts {
		w = append(w, Class{MilliCPU: k.cpu, NumGPU: k.num, MilliGPU: k.milli, GPUSpec: k.spec, Freq: n})
	}
	// Decreasing count; equal counts in decreasing (cpu, milli GPU, GPU count, spec).
	sort.Slice(w, func(i, j int) bool {
		a, b := w[i], w[j]
		if a.Freq != b.Freq {
			return a.Freq > b.Freq
		}
		if a.MilliCPU != b.MilliCPU {
			return a.MilliCPU > b.MilliCPU
		}
		if a.MilliGPU != b.MilliGPU {
			return a.MilliGPU > b.MilliGPU
		}
		if a.NumGPU != b.NumGPU {
			return a.NumGPU > b.NumGPU
		}
		return a.GPUSpec > b.GPUSpec
	})
	want := popularityPct * total / 100
	var cum float64
	n := 0
	for cum < want && n < len(w) {
		cum += w[n].Freq
		w[n].Freq /= total
		n++
	}
	if n >= len(w) {
		return w, nil
	}
	w = w[:n]
	for i := range w {
		w[i].Freq /= cum / total
	}
	return w, nil
}
