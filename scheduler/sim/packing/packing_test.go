package packing

import (
	"math"
	"math/rand"
	"testing"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
)

func node(cpu int64, model string, free ...int64) *sim.NodeState {
	n := &sim.Node{Name: "n", MilliCPU: 64000, MemoryMiB: 1 << 20, GPUs: len(free), Model: model}
	return &sim.NodeState{Node: n, MilliCPUFree: cpu, MemoryMiBFree: 1 << 20, GPUFree: free}
}

func TestFrag(t *testing.T) {
	w := Workload{
		{MilliCPU: 4000, NumGPU: 1, MilliGPU: 500, Freq: 0.5},                     // half-GPU share pods
		{MilliCPU: 8000, NumGPU: 2, MilliGPU: 1000, Freq: 0.25},                   // 2 whole GPUs
		{MilliCPU: 2000, Freq: 0.125},                                             // CPU only
		{MilliCPU: 1000, NumGPU: 1, MilliGPU: 1000, GPUSpec: "V100", Freq: 0.125}, // other model
	}
	tests := []struct {
		name string
		s    *sim.NodeState
		want float64
	}{
		// Free 1000+300 = 1300. Share class fits (Q3): only the 300 GPU is too
		// small → 0.5·300. Two whole GPUs do not fit (Q2) → 0.25·1300. CPU-only
		// fits (XL) → all free GPU is fragment for it, 0.125·1300. Wrong model
		// → 0.125·1300. Total 150 + 325 + 162.5 + 162.5 = 800.
		{"mixed", node(10000, "T4", 1000, 300), 800},
		// CPU 3000 < 4000: share class lacks CPU (Q4) → 0.5·2000; whole class lacks
		// CPU (Q4) → 0.25·2000; CPU-only fits → 0.125·2000; model → 0.125·2000.
		{"cpu short", node(3000, "T4", 1000, 1000), 2000},
		// Two free GPUs and enough CPU: only the CPU-only and model terms remain,
		// 0.25·2000 = 500.
		{"fits", node(10000, "T4", 1000, 1000), 500},
		{"full", node(10000, "T4", 0, 0), 0},
	}
	for _, tt := range tests {
		if got := Frag(tt.s, w); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: Frag = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFGDScoreAndGPU(t *testing.T) {
	w := Workload{{MilliCPU: 1000, NumGPU: 1, MilliGPU: 500, Freq: 1}}
	f := NewFGD(w)
	// Free 1000, 600. Before: both GPUs fit a 500 pod → frag 0. A 500 pod on GPU 0
	// leaves 500, 600 → still 0; on GPU 1 leaves 1000, 100 → the 100 is fragment.
	// GPU 0 drops frag by 0: score int(100·sigmoid(0)) = 50; GPU 1 by -100:
	// int(100·sigmoid(-0.1)) = 47. FGD picks GPU 0.
	s := node(10000, "T4", 1000, 600)
	p := &sim.Pod{Name: "p", MilliCPU: 1000, NumGPU: 1, MilliGPU: 500}
	if got := f.Score(s, p); got != 50 {
		t.Errorf("score %v, want 50", got)
	}
	if got := f.PickGPUs(s, p, nil); len(got) != 1 || got[0] != 0 {
		t.Errorf("GPU %v, want [0]", got)
	}
}

func TestBestFit(t *testing.T) {
	// Left after placing: CPU (64000-4000)/128000·0.5 = 0.234375, GPU
	// (1600-500)/8000·0.5 = 0.06875 → int((1-0.303125)·100) = 69.
	s := node(64000, "T4", 1000, 600)
	p := &sim.Pod{MilliCPU: 4000, NumGPU: 1, MilliGPU: 500}
	if got := (BestFit{}).Score(s, p); got != 69 {
		t.Errorf("score %v, want 69", got)
	}
	if got := (BestFit{}).PickGPUs(s, p, nil); got[0] != 1 {
		t.Errorf("GPU %v, want the tighter GPU 1", got)
	}
}

func TestRandomPicksAmongFitting(t *testing.T) {
	s := node(64000, "T4", 100, 1000, 700, 400)
	p := &sim.Pod{NumGPU: 1, MilliGPU: 500}
	rng := rand.New(rand.NewSource(1))
	seen := map[int]int{}
	for range 300 {
		seen[Random{}.PickGPUs(s, p, rng)[0]]++
	}
	if len(seen) != 2 || seen[1] == 0 || seen[2] == 0 {
		t.Errorf("picked %v, want GPUs 1 and 2 only", seen)
	}
}

func TestTypicalWorkload(t *testing.T) {
	var pods []sim.Pod
	add := func(n int, p sim.Pod) {
		for range n {
			pods = append(pods, p)
		}
	}
	add(6, sim.Pod{MilliCPU: 1000, NumGPU: 1, MilliGPU: 500})
	add(3, sim.Pod{MilliCPU: 2000})
	add(1, sim.Pod{MilliCPU: 3000, NumGPU: 8, MilliGPU: 1000})
	// 80 % of 10 pods = 8: the 6 share pods, then the 3 CPU pods (cum 9 ≥ 8); the
	// rare 8-GPU shape is cut and the rest renormalized: 6/9, 3/9.
	w, err := TypicalWorkload(pods, 80)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 2 || math.Abs(w[0].Freq-6.0/9) > 1e-12 || w[1].MilliCPU != 2000 || math.Abs(w[1].Freq-3.0/9) > 1e-12 {
		t.Errorf("workload %+v", w)
	}
	if _, err := TypicalWorkload(nil, 95); err == nil {
		t.Error("empty pod list accepted")
	}
	if _, err := New("nope", w); err == nil {
		t.Error("unknown policy accepted")
	}
}
