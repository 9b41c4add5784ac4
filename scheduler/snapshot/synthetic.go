package snapshot

import (
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// SyntheticSpec shapes a synthetic fleet: Nodes nodes of GPUsPerNode GPUs each,
// spread in name order over Leaves leaf switches, the leaves over Spines spines.
// Every node is an HGX-like box: an NVSwitch joins all its GPUs (NV18), and GPU i's
// rail NIC is mlx5_i (PIX), every other NIC SYS.
type SyntheticSpec struct {
	Nodes       int
	GPUsPerNode int
	Leaves      int // ≥ 1
	// Spines groups the leaves; 0 leaves the spine tier unknown, 1 puts every leaf
	// under one spine (a two-tier fat tree).
	Spines int
	// NodesPerNVLinkDomain groups consecutive nodes of a leaf into NVLink domains
	// (NVL72-like racks); 0 for none.
	NodesPerNVLinkDomain int
	Model                string // default "NVIDIA H100 80GB HBM3"
	MemoryMiB            int64  // default 81559
	Now                  time.Time
	Bound                time.Duration // default one minute
}

// SyntheticNodeName returns the name of synthetic node i: "node-00042".
func SyntheticNodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// SyntheticBuilder returns a Builder holding the fleet, every value observed at Now,
// so tests can add allocations, exclusions or stale values before Build.
func SyntheticBuilder(spec SyntheticSpec) (*Builder, error) {
	switch {
	case spec.Nodes < 1:
		return nil, fmt.Errorf("synthetic fleet: %d nodes: want at least 1", spec.Nodes)
	case spec.GPUsPerNode < 1 || spec.GPUsPerNode > MaxGPUsPerNode:
		return nil, fmt.Errorf("synthetic fleet: %d GPUs per node: want 1 to %d", spec.GPUsPerNode, MaxGPUsPerNode)
	case spec.Leaves < 1 || spec.Leaves > spec.Nodes:
		return nil, fmt.Errorf("synthetic fleet: %d leaves for %d nodes: want 1 to %d", spec.Leaves, spec.Nodes, spec.Nodes)
	case spec.Spines < 0 || spec.Spines > spec.Leaves:
		return nil, fmt.Errorf("synthetic fleet: %d spines for %d leaves: want 0 to %d", spec.Spines, spec.Leaves, spec.Leaves)
	case spec.NodesPerNVLinkDomain < 0:
		return nil, fmt.Errorf("synthetic fleet: %d nodes per NVLink domain: want ≥ 0", spec.NodesPerNVLinkDomain)
	case spec.Now.IsZero():
		return nil, fmt.Errorf("synthetic fleet: Now is the zero time")
	}
	if spec.Model == "" {
		spec.Model = "NVIDIA H100 80GB HBM3"
	}
	if spec.MemoryMiB == 0 {
		spec.MemoryMiB = 81559
	}
	if spec.Bound == 0 {
		spec.Bound = time.Minute
	}
	b := NewBuilder(spec.Now, spec.Bound)
	perLeaf := (spec.Nodes + spec.Leaves - 1) / spec.Leaves
	for i := range spec.Nodes {
		name := SyntheticNodeName(i)
		leaf := i / perLeaf
		loc := telemetry.NodeLocation{Leaf: fmt.Sprintf("leaf-%03d", leaf)}
		if spec.Spines > 0 {
			leavesPerSpine := (spec.Leaves + spec.Spines - 1) / spec.Spines
			loc.Spine = fmt.Sprintf("spine-%02d", leaf/leavesPerSpine)
		}
		if k := spec.NodesPerNVLinkDomain; k > 0 {
			loc.NVLinkDomain = fmt.Sprintf("nvl-%03d-%02d", leaf, (i%perLeaf)/k)
		}
		topo := syntheticTopology(name, spec.GPUsPerNode, spec.Model)
		gpus := make([]GPUInput, spec.GPUsPerNode)
		for g := range gpus {
			gpus[g] = GPUInput{
				Index: g, UUID: topo.GPUs[g].UUID, Model: spec.Model, MemoryMiB: spec.MemoryMiB,
				HealthAt: spec.Now, UtilizationAt: spec.Now,
				ThermalHeadroom: 1, PowerHeadroom: 1, HeadroomAt: spec.Now,
			}
		}
		b.AddNode(NodeInput{Name: name, Location: loc, Topology: topo, TopologyAt: spec.Now, GPUs: gpus})
	}
	return b, nil
}

// Synthetic builds the fleet SyntheticBuilder describes, idle and healthy.
func Synthetic(spec SyntheticSpec) (*Snapshot, error) {
	b, err := SyntheticBuilder(spec)
	if err != nil {
		return nil, err
	}
	return b.Build()
}

func syntheticTopology(node string, gpus int, model string) *telemetry.NodeTopology {
	t := &telemetry.NodeTopology{Node: telemetry.NodeID(node)}
	for g := range gpus {
		t.GPUs = append(t.GPUs, telemetry.TopologyGPU{Index: g, UUID: fmt.Sprintf("GPU-%s-%02d", node, g), Model: model, NUMANode: g * 2 / gpus})
		t.NICs = append(t.NICs, telemetry.TopologyNIC{Device: fmt.Sprintf("mlx5_%d", g), NUMANode: g * 2 / gpus})
	}
	for a := range gpus {
		for b := a + 1; b < gpus; b++ {
			t.GPULinks = append(t.GPULinks, telemetry.GPULink{A: a, B: b, Type: telemetry.LinkNVSwitch, NVLinks: 18})
		}
		for n := range gpus {
			typ := telemetry.LinkSYS
			if n == a {
				typ = telemetry.LinkPIX
			}
			t.NICLinks = append(t.NICLinks, telemetry.NICLink{GPU: a, NIC: fmt.Sprintf("mlx5_%d", n), Type: typ})
		}
	}
	return t
}
