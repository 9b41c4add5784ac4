package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// gpuState is what discovery learns about one GPU.
type gpuState struct {
	info    telemetry.TopologyGPU
	dev     nvml.Device // nil when NVML has no handle
	path    pciPath
	switchL int         // active NVLinks into an NVSwitch
	direct  map[int]int // active NVLinks to GPU index → count
}

// Discover builds the node's topology from NVML and the sysfs tree at sysfsRoot.
// GPUs come from inv (or from NVML when inv is nil). It returns what it could
// learn and the errors it met, each naming the GPU, NIC or file; a failed query
// loses that fact only. node names the topology when inv has no node name.
func Discover(lib nvml.Interface, inv *collector.Inventory, sysfsRoot, node string) (*telemetry.NodeTopology, error) {
	if sysfsRoot == "" {
		sysfsRoot = "/sys"
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf("topology: "+format, args...)) }
	sys := newSysfs(sysfsRoot)

	if inv != nil && inv.Node != "" {
		node = inv.Node
	}
	topo := &telemetry.NodeTopology{Node: telemetry.NodeID(node)}

	gpus := inventoryGPUs(lib, inv, fail)
	byPCI := map[telemetry.PCIBusID]int{}
	for _, g := range gpus {
		if !g.info.PCIBusID.IsZero() {
			byPCI[g.info.PCIBusID] = g.info.Index
		}
	}
	byIndex := map[int]*gpuState{}
	for _, g := range gpus {
		byIndex[g.info.Index] = g
		name := fmt.Sprintf("gpu %d", g.info.Index)
		if !g.info.PCIBusID.IsZero() {
			p, err := sys.pciDevice(g.info.PCIBusID)
			if err != nil {
				fail("%s: %v", name, err)
			} else {
				g.path = p
				if numa, err := sys.numaNode(p); err != nil {
					fail("%s: %v", name, err)
				} else {
					g.info.NUMANode = numa
				}
			}
		}
		if g.info.NUMANode < 0 && g.dev != nil {
			if numa, r := g.dev.GetNumaNodeId(); r == nvml.SUCCESS && numa >= 0 {
				g.info.NUMANode = numa
			}
		}
		if g.dev != nil {
			if err := nvlinks(g, byPCI); err != nil {
				fail("%s: %v", name, err)
			}
		}
		topo.GPUs = append(topo.GPUs, g.info)
	}

	// GPU pairs.
	for i, a := range gpus {
		for _, b := range gpus[i+1:] {
			l, err := pair(a, b)
			if err != nil {
				fail("gpus %d and %d: %v", a.info.Index, b.info.Index, err)
			}
			if l.Type != telemetry.LinkUnknown {
				topo.GPULinks = append(topo.GPULinks, l)
			}
		}
	}

	// NICs and their distance to each GPU.
	nics, paths, nicErrs := discoverNICs(sys)
	errs = append(errs, nicErrs...)
	topo.NICs = nics
	for _, g := range gpus {
		for i, n := range nics {
			if t := distance(g.path, paths[i], g.info.NUMANode, n.NUMANode); t != telemetry.LinkUnknown {
				topo.NICLinks = append(topo.NICLinks, telemetry.NICLink{GPU: g.info.Index, NIC: n.Device, Type: t})
			}
		}
	}
	if err := topo.Validate(); err != nil {
		errs = append(errs, err)
	}
	return topo, errors.Join(errs...)
}

// inventoryGPUs returns the GPUs of inv, sorted by index, with their NVML handles;
// or, without an inventory, every GPU NVML reports.
func inventoryGPUs(lib nvml.Interface, inv *collector.Inventory, fail func(string, ...any)) []*gpuState {
	var out []*gpuState
	if inv != nil {
		for _, g := range inv.GPUs {
			s := &gpuState{info: telemetry.TopologyGPU{Index: g.Index, UUID: g.UUID, PCIBusID: g.PCIBusID, Model: g.Model, NUMANode: -1}}
			if lib != nil && !g.Lost {
				if d, r := lib.DeviceGetHandleByIndex(g.Index); r == nvml.SUCCESS {
					s.dev = d
				} else {
					fail("gpu %d: handle: %s", g.Index, nvml.ErrorString(r))
				}
			}
			out = append(out, s)
		}
	} else if lib != nil {
		n, r := lib.DeviceGetCount()
		if r != nvml.SUCCESS {
			fail("device count: %s", nvml.ErrorString(r))
		}
		for i := 0; i < n; i++ {
			s := &gpuState{info: telemetry.TopologyGPU{Index: i, NUMANode: -1}}
			d, r := lib.DeviceGetHandleByIndex(i)
			if r != nvml.SUCCESS {
				fail("gpu %d: handle: %s", i, nvml.ErrorString(r))
				out = append(out, s)
				continue
			}
			s.dev = d
			if u, r := d.GetUUID(); r == nvml.SUCCESS {
				s.info.UUID = u
			}
			if name, r := d.GetName(); r == nvml.SUCCESS {
				s.info.Model = name
			}
			if p, r := d.GetPciInfo(); r == nvml.SUCCESS {
				if id, err := telemetry.ParsePCIBusID(busIDString(p.BusId[:])); err == nil {
					s.info.PCIBusID = id
				}
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *gpuState) int { return a.info.Index - b.info.Index })
	return out
}

// busIDString converts NVML's NUL-terminated char array.
func busIDString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// nvlinks counts g's active NVLinks by what is at the far end.
func nvlinks(g *gpuState, byPCI map[telemetry.PCIBusID]int) error {
	g.direct = map[int]int{}
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		st, r := g.dev.GetNvLinkState(l)
		switch {
		case r == nvml.ERROR_GPU_IS_LOST:
			return fmt.Errorf("nvlink %d state: %s", l, nvml.ErrorString(r))
		case r != nvml.SUCCESS || st != nvml.FEATURE_ENABLED:
			continue // no such link, not supported, or down
		}
		typ, rt := g.dev.GetNvLinkRemoteDeviceType(l)
		peer := -1
		if pi, r := g.dev.GetNvLinkRemotePciInfo(l); r == nvml.SUCCESS {
			if id, err := telemetry.ParsePCIBusID(busIDString(pi.BusId[:])); err == nil {
				if idx, ok := byPCI[id]; ok {
					peer = idx
				}
			}
		}
		switch {
		case rt == nvml.SUCCESS && typ == nvml.NVLINK_DEVICE_TYPE_SWITCH:
			g.switchL++
		case peer >= 0 && peer != g.info.Index:
			g.direct[peer]++
		case rt != nvml.SUCCESS:
			// Drivers without the remote-type query: data-center NVLinks end on a GPU
			// (matched above) or an NVSwitch.
			g.switchL++
		}
	}
	return nil
}

// levelLink maps NVML's common-ancestor level to a PCIe LinkType.
var levelLink = map[nvml.GpuTopologyLevel]telemetry.LinkType{
	nvml.TOPOLOGY_INTERNAL:   telemetry.LinkPIX, // two GPUs on one board
	nvml.TOPOLOGY_SINGLE:     telemetry.LinkPIX,
	nvml.TOPOLOGY_MULTIPLE:   telemetry.LinkPXB,
	nvml.TOPOLOGY_HOSTBRIDGE: telemetry.LinkPHB,
	nvml.TOPOLOGY_NODE:       telemetry.LinkNODE,
	nvml.TOPOLOGY_SYSTEM:     telemetry.LinkSYS,
}

// pair classifies the connection between two GPUs.
func pair(a, b *gpuState) (telemetry.GPULink, error) {
	l := telemetry.GPULink{A: a.info.Index, B: b.info.Index}
	ab, ba := a.direct[b.info.Index], b.direct[a.info.Index]
	switch {
	case ab > 0 || ba > 0:
		l.Type, l.NVLinks = telemetry.LinkNVLink, max(ab, ba)
		if ab > 0 && ba > 0 {
			l.NVLinks = min(ab, ba)
		}
		return l, nil
	case a.switchL > 0 && b.switchL > 0:
		l.Type, l.NVLinks = telemetry.LinkNVSwitch, min(a.switchL, b.switchL)
		return l, nil
	}
	var nvmlErr error
	if a.dev != nil && b.dev != nil {
		lvl, r := a.dev.GetTopologyCommonAncestor(b.dev)
		if t, ok := levelLink[lvl]; r == nvml.SUCCESS && ok {
			l.Type = t
			return l, nil
		}
		nvmlErr = fmt.Errorf("common ancestor: %s", nvml.ErrorString(r))
	}
	l.Type = distance(a.path, b.path, a.info.NUMANode, b.info.NUMANode)
	if l.Type == telemetry.LinkUnknown {
		if nvmlErr == nil {
			nvmlErr = errors.New("no NVML handle and no PCI path")
		}
		return l, fmt.Errorf("link unknown: %w", nvmlErr)
	}
	return l, nil
}

// discoverNICs lists /sys/class/infiniband with each device's PCI function, path
// and NUMA node, sorted by name.
func discoverNICs(sys sysfs) ([]telemetry.TopologyNIC, []pciPath, []error) {
	dir := filepath.Join(sys.root, "class", "infiniband")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, []error{fmt.Errorf("topology: %w", err)}
	}
	var (
		nics  []telemetry.TopologyNIC
		paths []pciPath
		errs  []error
	)
	for _, e := range entries { // ReadDir sorts by name
		n := telemetry.TopologyNIC{Device: e.Name(), NUMANode: -1}
		p, err := sys.resolve(filepath.Join(dir, e.Name(), "device"))
		if err != nil {
			errs = append(errs, fmt.Errorf("topology: nic %s: %w", e.Name(), err))
		} else {
			n.PCIBusID, _ = telemetry.ParsePCIBusID(p[len(p)-1]) // checked by resolve
			if n.NUMANode, err = sys.numaNode(p); err != nil {
				errs = append(errs, fmt.Errorf("topology: nic %s: %w", e.Name(), err))
			}
		}
		nics = append(nics, n)
		paths = append(paths, p)
	}
	return nics, paths, errs
}
