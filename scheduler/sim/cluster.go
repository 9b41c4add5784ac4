package sim

import (
	"errors"
	"fmt"
)

// Cluster is the nodes and what is bound to them. It is not safe for concurrent
// use.
type Cluster struct {
	nodes    []Node
	states   []NodeState
	gen      []uint64 // bumped whenever a node's state changes
	capMilli int64
	used     int64
}

// NewCluster builds an empty cluster. Node names must be unique.
func NewCluster(nodes []Node) (*Cluster, error) {
	if len(nodes) == 0 {
		return nil, errors.New("cannot build a cluster without nodes")
	}
	c := &Cluster{
		nodes:  append([]Node(nil), nodes...),
		states: make([]NodeState, len(nodes)),
		gen:    make([]uint64, len(nodes)),
	}
	seen := make(map[string]bool, len(nodes))
	for i := range c.nodes {
		n := &c.nodes[i]
		if err := n.Validate(); err != nil {
			return nil, err
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("duplicate node name %q", n.Name)
		}
		seen[n.Name] = true
		free := make([]int64, n.GPUs)
		for g := range free {
			free[g] = MilliPerGPU
		}
		c.states[i] = NodeState{Node: n, MilliCPUFree: n.MilliCPU, MemoryMiBFree: n.MemoryMiB, GPUFree: free}
		c.capMilli += int64(n.GPUs) * MilliPerGPU
	}
	return c, nil
}

// Len is the number of nodes.
func (c *Cluster) Len() int { return len(c.states) }

// State returns node i's state. The caller must not modify it.
func (c *Cluster) State(i int) *NodeState { return &c.states[i] }

// TotalGPUs is the number of GPUs in the cluster.
func (c *Cluster) TotalGPUs() int { return int(c.capMilli / MilliPerGPU) }

// GPUCapacityMilli is the cluster's GPU capacity in milli-GPU.
func (c *Cluster) GPUCapacityMilli() int64 { return c.capMilli }

// GPUAllocatedMilli is the milli-GPU bound to pods now.
func (c *Cluster) GPUAllocatedMilli() int64 { return c.used }

// Binding records where a pod was placed, for Release.
type Binding struct {
	Pod  *Pod
	Node int
	GPUs []int
}

// Bind places the pod on node i and the given GPUs (one index per requested GPU,
// none for a CPU-only pod). It checks everything and changes nothing on error.
func (c *Cluster) Bind(i int, p *Pod, gpus []int) (Binding, error) {
	if i < 0 || i >= len(c.states) {
		return Binding{}, fmt.Errorf("cannot bind pod %s: no node %d", p.Name, i)
	}
	s := &c.states[i]
	if !Feasible(s, p) {
		return Binding{}, fmt.Errorf("cannot bind pod %s: it does not fit on node %s", p.Name, s.Node.Name)
	}
	if len(gpus) != p.NumGPU {
		return Binding{}, fmt.Errorf("cannot bind pod %s on node %s: %d GPUs given for a %d-GPU request", p.Name, s.Node.Name, len(gpus), p.NumGPU)
	}
	for k, g := range gpus {
		if g < 0 || g >= len(s.GPUFree) {
			return Binding{}, fmt.Errorf("cannot bind pod %s on node %s: no GPU %d", p.Name, s.Node.Name, g)
		}
		if s.GPUFree[g] < p.MilliGPU {
			return Binding{}, fmt.Errorf("cannot bind pod %s on node %s: GPU %d has %d milli free, %d asked", p.Name, s.Node.Name, g, s.GPUFree[g], p.MilliGPU)
		}
		for _, h := range gpus[:k] {
			if h == g {
				return Binding{}, fmt.Errorf("cannot bind pod %s on node %s: GPU %d given twice", p.Name, s.Node.Name, g)
			}
		}
	}
	s.MilliCPUFree -= p.MilliCPU
	s.MemoryMiBFree -= p.MemoryMiB
	s.Pods++
	for _, g := range gpus {
		s.GPUFree[g] -= p.MilliGPU
	}
	c.used += p.TotalMilliGPU()
	c.gen[i]++
	return Binding{Pod: p, Node: i, GPUs: append([]int(nil), gpus...)}, nil
}

// Release returns a bound pod's resources.
func (c *Cluster) Release(b Binding) error {
	if b.Pod == nil || b.Node < 0 || b.Node >= len(c.states) {
		return errors.New("cannot release an empty binding")
	}
	s := &c.states[b.Node]
	p := b.Pod
	if s.Pods == 0 || s.MilliCPUFree+p.MilliCPU > s.Node.MilliCPU || s.MemoryMiBFree+p.MemoryMiB > s.Node.MemoryMiB {
		return fmt.Errorf("cannot release pod %s: node %s does not hold it", p.Name, s.Node.Name)
	}
	for _, g := range b.GPUs {
		if g < 0 || g >= len(s.GPUFree) || s.GPUFree[g]+p.MilliGPU > MilliPerGPU {
			return fmt.Errorf("cannot release pod %s: GPU %d of node %s does not hold it", p.Name, g, s.Node.Name)
		}
	}
	s.MilliCPUFree += p.MilliCPU
	s.MemoryMiBFree += p.MemoryMiB
	s.Pods--
	for _, g := range b.GPUs {
		s.GPUFree[g] += p.MilliGPU
	}
	c.used -= p.TotalMilliGPU()
	c.gen[b.Node]++
	return nil
}
