package sim

import (
	"fmt"
	"strings"
)

// MilliPerGPU is one whole GPU in milli-GPU units.
const MilliPerGPU = 1000

// Node is a machine's capacity.
type Node struct {
	Name      string
	MilliCPU  int64
	MemoryMiB int64
	GPUs      int
	// Model is the GPU model ("T4", "V100M32", …); empty for a CPU-only node.
	Model string
	// MaxPods caps the pods bound to the node (kube's "pods" allocatable); 0 means
	// no cap.
	MaxPods int
}

// Validate reports what is wrong with the node's capacity, if anything.
func (n *Node) Validate() error {
	switch {
	case n.Name == "":
		return fmt.Errorf("node has no name")
	case n.MilliCPU < 0:
		return fmt.Errorf("node %s: negative milli CPU %d", n.Name, n.MilliCPU)
	case n.MemoryMiB < 0:
		return fmt.Errorf("node %s: negative memory %d MiB", n.Name, n.MemoryMiB)
	case n.GPUs < 0:
		return fmt.Errorf("node %s: negative GPU count %d", n.Name, n.GPUs)
	case n.MaxPods < 0:
		return fmt.Errorf("node %s: negative pod cap %d", n.Name, n.MaxPods)
	}
	return nil
}

// Pod is one request. A GPU pod asks for NumGPU GPUs with MilliGPU milli-GPU on
// each; a pod with NumGPU 1 and MilliGPU below 1000 shares its GPU with others.
type Pod struct {
	Name      string
	MilliCPU  int64
	MemoryMiB int64
	NumGPU    int
	MilliGPU  int64
	// GPUSpec lists the acceptable GPU models separated by "|" ("T4|P100");
	// empty accepts any model.
	GPUSpec string
}

// Validate reports what is wrong with the request, if anything.
func (p *Pod) Validate() error {
	switch {
	case p.MilliCPU < 0:
		return fmt.Errorf("pod %s: negative milli CPU %d", p.Name, p.MilliCPU)
	case p.MemoryMiB < 0:
		return fmt.Errorf("pod %s: negative memory %d MiB", p.Name, p.MemoryMiB)
	case p.NumGPU < 0:
		return fmt.Errorf("pod %s: negative GPU count %d", p.Name, p.NumGPU)
	case p.NumGPU > 0 && (p.MilliGPU < 1 || p.MilliGPU > MilliPerGPU):
		return fmt.Errorf("pod %s: milli GPU per GPU must be in [1, %d], got %d", p.Name, MilliPerGPU, p.MilliGPU)
	case p.NumGPU > 1 && p.MilliGPU != MilliPerGPU:
		return fmt.Errorf("pod %s: a %d-GPU pod must take whole GPUs (milli GPU %d), only 1-GPU pods share", p.Name, p.NumGPU, p.MilliGPU)
	case p.NumGPU == 0 && p.MilliGPU != 0:
		return fmt.Errorf("pod %s: milli GPU %d without GPUs", p.Name, p.MilliGPU)
	}
	return nil
}

// TotalMilliGPU is the pod's whole GPU request.
func (p *Pod) TotalMilliGPU() int64 { return int64(p.NumGPU) * p.MilliGPU }

// SharesGPU reports whether the pod takes part of one GPU.
func (p *Pod) SharesGPU() bool { return p.NumGPU == 1 && p.MilliGPU < MilliPerGPU }

// AcceptsModel reports whether the pod may run on a GPU of the given model; a
// pod without GPUs runs anywhere.
func (p *Pod) AcceptsModel(model string) bool {
	if p.NumGPU == 0 {
		return true
	}
	return SpecAccepts(p.GPUSpec, model)
}

// SpecAccepts reports whether a "|"-separated model list accepts a node model:
// an empty list accepts any model, a non-empty one never a CPU-only node.
func SpecAccepts(spec, model string) bool {
	if spec == "" {
		return true
	}
	listed := false
	for m := range strings.SplitSeq(spec, "|") {
		if m == "" {
			continue
		}
		listed = true
		if m == model {
			return true
		}
	}
	return !listed
}

// Shape is the part of a pod that placement depends on; pods with equal shapes
// get equal scores on equal nodes.
type Shape struct {
	MilliCPU  int64
	MemoryMiB int64
	NumGPU    int
	MilliGPU  int64
	GPUSpec   string
}

// Shape returns the pod's shape.
func (p *Pod) Shape() Shape {
	return Shape{p.MilliCPU, p.MemoryMiB, p.NumGPU, p.MilliGPU, p.GPUSpec}
}

// NodeState is a node's capacity and what is left of it. Policies read it and
// never modify it.
type NodeState struct {
	Node          *Node
	MilliCPUFree  int64
	MemoryMiBFree int64
	// GPUFree is the free milli-GPU of each GPU, by device index.
	GPUFree []int64
	Pods    int
}

// GPUFreeTotal is the node's free milli-GPU summed over its GPUs.
func (s *NodeState) GPUFreeTotal() int64 {
	var t int64
	for _, f := range s.GPUFree {
		t += f
	}
	return t
}

// FullyFreeGPUs counts the GPUs nobody uses.
func (s *NodeState) FullyFreeGPUs() int {
	n := 0
	for _, f := range s.GPUFree {
		if f == MilliPerGPU {
			n++
		}
	}
	return n
}

// Feasible reports whether the pod fits on the node now: CPU, memory and the pod
// cap (kube-scheduler's NodeResourcesFit), then the GPU model and NumGPU GPUs
// with MilliGPU free each (the simulator's Open-Gpu-Share filter).
func Feasible(s *NodeState, p *Pod) bool {
	if p.MilliCPU > s.MilliCPUFree || p.MemoryMiB > s.MemoryMiBFree {
		return false
	}
	if s.Node.MaxPods > 0 && s.Pods+1 > s.Node.MaxPods {
		return false
	}
	if p.NumGPU == 0 {
		return true
	}
	if len(s.GPUFree) == 0 || !p.AcceptsModel(s.Node.Model) {
		return false
	}
	return GPUsWithAtLeast(s.GPUFree, p.MilliGPU) >= p.NumGPU
}

// GPUsWithAtLeast counts the GPUs with at least milli free.
func GPUsWithAtLeast(free []int64, milli int64) int {
	n := 0
	for _, f := range free {
		if f >= milli {
			n++
		}
	}
	return n
}

// FirstFreeGPUs returns the lowest-indexed n fully free GPUs, or nil when there
// are fewer (the simulator's exclusive GPU allocation).
func FirstFreeGPUs(free []int64, n int) []int {
	ids := make([]int, 0, n)
	for i, f := range free {
		if len(ids) == n {
			break
		}
		if f == MilliPerGPU {
			ids = append(ids, i)
		}
	}
	if len(ids) < n {
		return nil
	}
	return ids
}
