package topology

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// simNode builds a one-node simulated fleet that writes its files, and the
// inventory the agent would build from NVML.
func simNode(t testing.TB, shape simhw.ShapeName) (*simhw.Fleet, *simhw.Node, nvml.Interface, *collector.Inventory) {
	t.Helper()
	fleet, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: shape, Seed: 3, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	node := fleet.Nodes()[0]
	lib := node.NVML()
	if r := lib.Init(); r != nvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	t.Cleanup(func() { lib.Shutdown() })
	inv := &collector.Inventory{Node: node.Name()}
	n, _ := lib.DeviceGetCount()
	for i := range n {
		d, _ := lib.DeviceGetHandleByIndex(i)
		uuid, _ := d.GetUUID()
		pi, _ := d.GetPciInfo()
		id, err := telemetry.ParsePCIBusID(busIDString(pi.BusId[:]))
		if err != nil {
			t.Fatal(err)
		}
		inv.GPUs = append(inv.GPUs, collector.GPUInfo{Index: i, UUID: uuid, PCIBusID: id, Model: "sim"})
	}
	return fleet, node, lib, inv
}

// fakeClock is a settable clock.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func collect(t *testing.T, s *Source) ([]telemetry.Sample, error) {
	t.Helper()
	var out []telemetry.Sample
	err := s.Collect(context.Background(), func(x telemetry.Sample) { out = append(out, x) })
	return out, err
}

// checkShape checks the things every 8-GPU NVSwitch node of the simulator shares:
// every pair is NVSWITCH with nvlinks links, GPU i's rail NIC is mlx5_i (PIX),
// NUMA nodes split 4/4, and NIC distances to the other socket are SYS.
func checkShape(t *testing.T, topo *telemetry.NodeTopology, nvlinks int) {
	t.Helper()
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(topo.GPUs) != 8 || len(topo.NICs) != 8 {
		t.Fatalf("%d GPUs, %d NICs", len(topo.GPUs), len(topo.NICs))
	}
	if len(topo.GPULinks) != 28 || len(topo.NICLinks) != 64 {
		t.Fatalf("%d GPU links, %d NIC links; want 28 and 64", len(topo.GPULinks), len(topo.NICLinks))
	}
	for a := range 8 {
		for b := a + 1; b < 8; b++ {
			l, ok := topo.Link(a, b)
			if !ok || l.Type != telemetry.LinkNVSwitch || l.NVLinks != nvlinks {
				t.Errorf("gpu %d-%d: %+v, want NVSWITCH × %d", a, b, l, nvlinks)
			}
		}
		g, _ := topo.GPU(a)
		if g.NUMANode != a/4 {
			t.Errorf("gpu %d: numa %d, want %d", a, g.NUMANode, a/4)
		}
		r, ok := topo.Rail(a)
		if want := fmt.Sprintf("mlx5_%d", a); !ok || r.NIC != want || r.Type != telemetry.LinkPIX {
			t.Errorf("gpu %d: rail %+v, want %s PIX", a, r, want)
		}
	}
	for _, n := range topo.NICs {
		i, _ := strconv.Atoi(strings.TrimPrefix(n.Device, "mlx5_"))
		if n.NUMANode != i/4 || n.PCIBusID.IsZero() {
			t.Errorf("%s: numa %d pci %s", n.Device, n.NUMANode, n.PCIBusID)
		}
	}
	for _, l := range topo.NICLinks {
		i, _ := strconv.Atoi(strings.TrimPrefix(l.NIC, "mlx5_"))
		if l.GPU/4 != i/4 && l.Type != telemetry.LinkSYS {
			t.Errorf("gpu %d - %s: %s, want SYS across sockets", l.GPU, l.NIC, l.Type)
		}
	}
}

func nicLink(topo *telemetry.NodeTopology, gpu int, nic string) telemetry.LinkType {
	for _, l := range topo.NICLinks {
		if l.GPU == gpu && l.NIC == nic {
			return l.Type
		}
	}
	return telemetry.LinkUnknown
}

// TestHGXH100 discovers a simulated HGX H100 through NVML and the simulator's
// sysfs PCI tree: NV18 through NVSwitches between every pair, GPU i on the switch
// of mlx5_i, NODE to the other rails of its socket.
func TestHGXH100(t *testing.T) {
	_, node, lib, inv := simNode(t, simhw.ShapeHGXH100)
	s := New(lib, inv, Options{SysfsRoot: node.SysRoot(), Leaf: node.Leaf(), Spine: node.Spine(), NVLinkDomain: node.NVLinkDomain()})
	if s.Topology() != nil {
		t.Fatal("topology before the first Collect")
	}
	samples, err := collect(t, s)
	if err != nil {
		t.Fatal(err)
	}
	topo := s.Topology()
	checkShape(t, topo, 18)
	if topo.Node != telemetry.NodeID(node.Name()) {
		t.Errorf("node %q", topo.Node)
	}
	for g := range 8 {
		for n := range 8 {
			want := telemetry.LinkSYS
			switch {
			case g == n:
				want = telemetry.LinkPIX
			case g/4 == n/4:
				want = telemetry.LinkNODE
			}
			if got := nicLink(topo, g, fmt.Sprintf("mlx5_%d", n)); got != want {
				t.Errorf("gpu %d - mlx5_%d: %s, want %s", g, n, got, want)
			}
		}
	}
	checkSamples(t, samples, 1, 8, 28, 64)
	// The JSON form of /topology round-trips.
	b, err := json.Marshal(topo)
	if err != nil {
		t.Fatal(err)
	}
	var back telemetry.NodeTopology
	if err := json.Unmarshal(b, &back); err != nil || back.Validate() != nil || len(back.NICLinks) != 64 {
		t.Errorf("JSON round trip: %v", err)
	}
}

// TestDGXA100: NV12 pairs, and the two-level PCIe switches put the neighbouring
// rail's NIC at PXB.
func TestDGXA100(t *testing.T) {
	_, node, lib, inv := simNode(t, simhw.ShapeDGXA100)
	s := New(lib, inv, Options{SysfsRoot: node.SysRoot()})
	samples, err := collect(t, s)
	if err != nil {
		t.Fatal(err)
	}
	topo := s.Topology()
	checkShape(t, topo, 12)
	for g := range 8 {
		for n := range 8 {
			want := telemetry.LinkSYS
			switch {
			case g == n:
				want = telemetry.LinkPIX
			case g/2 == n/2:
				want = telemetry.LinkPXB
			case g/4 == n/4:
				want = telemetry.LinkNODE
			}
			if got := nicLink(topo, g, fmt.Sprintf("mlx5_%d", n)); got != want {
				t.Errorf("gpu %d - mlx5_%d: %s, want %s", g, n, got, want)
			}
		}
	}
	checkSamples(t, samples, 0, 8, 28, 64)
}

// checkSamples checks counts, catalog names and label keys, and one rail per GPU.
func checkSamples(t *testing.T, samples []telemetry.Sample, nodeInfo, gpuInfo, links, nicLinks int) {
	t.Helper()
	count := map[string]int{}
	rails := map[string]int{}
	for _, x := range samples {
		count[x.Name]++
		d, ok := telemetry.LookupMetric(x.Name)
		if !ok {
			t.Errorf("%s not in the catalog", x.Name)
			continue
		}
		// The exporter adds node and the GPU identity (uuid, PCI address).
		want := slices.DeleteFunc(d.Labels, func(l string) bool {
			return l == telemetry.LabelNode || l == telemetry.LabelGPUUUID || l == telemetry.LabelPCIBusID
		})
		slices.Sort(want)
		var keys []string
		for _, l := range x.Labels {
			keys = append(keys, l.Name)
		}
		if !slices.Equal(keys, want) {
			t.Errorf("%s: labels %v, want %v", x.Name, keys, want)
		}
		if x.Value != 1 {
			t.Errorf("%s: value %v", x.Name, x.Value)
		}
		if x.Name == telemetry.MetricTopologyGPUNICInfo && x.Labels.Get(telemetry.LabelRail) == "true" {
			rails[x.Labels.Get(telemetry.LabelGPUIndex)]++
		}
	}
	for name, want := range map[string]int{
		telemetry.MetricTopologyNodeInfo: nodeInfo, telemetry.MetricTopologyGPUInfo: gpuInfo,
		telemetry.MetricTopologyGPULinkInfo: links, telemetry.MetricTopologyGPUNICInfo: nicLinks,
	} {
		if count[name] != want {
			t.Errorf("%d × %s, want %d", count[name], name, want)
		}
	}
	if len(rails) != gpuInfo {
		t.Errorf("rails %v: want one per GPU", rails)
	}
	for g, n := range rails {
		if n != 1 {
			t.Errorf("gpu %s has %d rail NICs", g, n)
		}
	}
}

// TestRefreshCadence: a link that goes down shows only after the refresh period,
// and the pair's NVLink count drops from 18 to 17.
func TestRefreshCadence(t *testing.T) {
	fleet, node, lib, inv := simNode(t, simhw.ShapeHGXH100)
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	s := New(lib, inv, Options{SysfsRoot: node.SysRoot(), Refresh: 10 * time.Minute, Now: clock.Now})
	if _, err := collect(t, s); err != nil {
		t.Fatal(err)
	}
	first := s.Topology()
	if err := node.Inject(simhw.Fault{Kind: simhw.FaultNVLinkDown, GPU: 2, Link: 0}); err != nil {
		t.Fatal(err)
	}
	if err := fleet.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	clock.now = clock.now.Add(9 * time.Minute)
	if _, err := collect(t, s); err != nil {
		t.Fatal(err)
	}
	if s.Topology() != first {
		t.Fatal("re-discovered before the refresh period")
	}
	clock.now = clock.now.Add(time.Minute)
	samples, err := collect(t, s)
	if err != nil {
		t.Fatal(err)
	}
	topo := s.Topology()
	if topo == first {
		t.Fatal("not re-discovered after the refresh period")
	}
	for b := range 8 {
		if b == 2 {
			continue
		}
		if l, _ := topo.Link(2, b); l.NVLinks != 17 || l.Type != telemetry.LinkNVSwitch {
			t.Errorf("gpu 2-%d: %+v, want NVSWITCH × 17", b, l)
		}
	}
	if l, _ := topo.Link(0, 1); l.NVLinks != 18 {
		t.Errorf("gpu 0-1: %+v", l)
	}
	if l, _ := first.Link(2, 3); l.NVLinks != 18 {
		t.Errorf("the first topology changed: %+v", l)
	}
	found := false
	for _, x := range samples {
		if x.Name == telemetry.MetricTopologyGPULinkInfo && x.Labels.Get(telemetry.LabelGPUIndex) == "2" &&
			x.Labels.Get(telemetry.LabelPeerGPUIndex) == "5" {
			found = x.Labels.Get(telemetry.LabelNVLinkCount) == "17" && x.Labels.Get(telemetry.LabelLinkType) == "NVSWITCH"
		}
	}
	if !found {
		t.Error("no gpu_link_info{gpu_index=2, peer_gpu_index=5, nvlink_count=17}")
	}
}

// TestLostGPU: a GPU that has fallen off the bus loses its NVLink facts only; its
// pairs fall back to the sysfs PCIe path, its rail is still found, and the error
// names it. The error makes discovery retry after a minute.
func TestLostGPU(t *testing.T) {
	fleet, node, lib, inv := simNode(t, simhw.ShapeHGXH100)
	if err := node.Inject(simhw.Fault{Kind: simhw.FaultGPULost, GPU: 5}); err != nil {
		t.Fatal(err)
	}
	if err := fleet.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	s := New(lib, inv, Options{SysfsRoot: node.SysRoot(), Now: clock.Now})
	_, err := collect(t, s)
	if err == nil || !strings.Contains(err.Error(), "gpu 5") {
		t.Fatalf("want an error naming gpu 5, got %v", err)
	}
	topo := s.Topology()
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	if l, _ := topo.Link(4, 5); l.Type != telemetry.LinkNODE {
		t.Errorf("gpu 4-5: %+v, want NODE from sysfs", l)
	}
	if l, _ := topo.Link(1, 5); l.Type != telemetry.LinkSYS {
		t.Errorf("gpu 1-5: %+v, want SYS from sysfs", l)
	}
	if l, _ := topo.Link(0, 1); l.Type != telemetry.LinkNVSwitch {
		t.Errorf("gpu 0-1: %+v", l)
	}
	if r, _ := topo.Rail(5); r.NIC != "mlx5_5" {
		t.Errorf("gpu 5 rail %+v", r)
	}
	clock.now = clock.now.Add(30 * time.Second)
	_, _ = collect(t, s)
	if s.Topology() != topo {
		t.Error("retried before a minute")
	}
	clock.now = clock.now.Add(30 * time.Second)
	_, _ = collect(t, s)
	if s.Topology() == topo {
		t.Error("not retried after a minute")
	}
}

// TestNoGPUs: a node without GPUs is ErrNoDevices.
func TestNoGPUs(t *testing.T) {
	s := New(nil, &collector.Inventory{Node: "n1"}, Options{SysfsRoot: t.TempDir()})
	if _, err := collect(t, s); !errors.Is(err, collector.ErrNoDevices) {
		t.Errorf("got %v", err)
	}
	if s.Name() != "topology" {
		t.Errorf("Name %q", s.Name())
	}
}

func TestDistance(t *testing.T) {
	p := func(s string) pciPath { return pciPath(strings.Split(s, "/")) }
	for _, tc := range []struct {
		a, b       string
		numa1, num int
		want       telemetry.LinkType
	}{
		{"pci0000:14/0000:14:01.0/0000:15:00.0/0000:16:01.0/0000:18:00.0", "pci0000:14/0000:14:01.0/0000:15:00.0/0000:16:00.0/0000:17:00.0", 0, 0, telemetry.LinkPIX},
		{"pci0000:01/0000:01:01.0/0000:02:00.0/0000:03:00.0/0000:04:00.0/0000:05:01.0/0000:07:00.0", "pci0000:01/0000:01:01.0/0000:02:00.0/0000:03:01.0/0000:0c:00.0/0000:0d:00.0/0000:0e:00.0", 0, 0, telemetry.LinkPXB},
		{"pci0000:00/0000:00:01.0/0000:01:00.0", "pci0000:00/0000:00:01.0/0000:01:00.1", 0, 0, telemetry.LinkPIX}, // two functions
		{"pci0000:00/0000:00:01.0/0000:01:00.0", "pci0000:00/0000:00:02.0/0000:02:00.0", 0, 0, telemetry.LinkPHB},
		{"pci0000:00/0000:00:01.0/0000:01:00.0", "pci0000:40/0000:40:01.0/0000:41:00.0", 0, 0, telemetry.LinkNODE},
		{"pci0000:00/0000:00:01.0/0000:01:00.0", "pci0000:80/0000:80:01.0/0000:81:00.0", 0, 1, telemetry.LinkSYS},
		{"", "pci0000:80/0000:80:01.0/0000:81:00.0", 0, 1, telemetry.LinkUnknown},
	} {
		var a, b pciPath
		if tc.a != "" {
			a = p(tc.a)
		}
		b = p(tc.b)
		if got := distance(a, b, tc.numa1, tc.num); got != tc.want {
			t.Errorf("%s ↔ %s: %s, want %s", tc.a, tc.b, got, tc.want)
		}
		if got := distance(b, a, tc.num, tc.numa1); got != tc.want {
			t.Errorf("(reversed) %s ↔ %s: %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

// xnode is an element of an NCCL topology file.
type xnode struct {
	XMLName  xml.Name
	BusID    string  `xml:"busid,attr"`
	Class    string  `xml:"class,attr"`
	NUMA     string  `xml:"numaid,attr"`
	Children []xnode `xml:",any"`
}

// ncclTree writes the sysfs tree an NCCL topology file describes and returns the
// inventory (GPUs in PCI order, as NVML numbers them), each GPU's and NIC's switch
// (the top-level pci element of its CPU) and NUMA node.
func ncclTree(t *testing.T, file string) (root string, inv *collector.Inventory, nicNames []string, sw, numa map[string]int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sys xnode
	if err := xml.Unmarshal(b, &sys); err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	sw, numa = map[string]int{}, map[string]int{}
	var gpus, nics []telemetry.PCIBusID
	mustWrite := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	top := 0
	var walk func(n xnode, host string, chain []string, numaID, swID int)
	walk = func(n xnode, host string, chain []string, numaID, swID int) {
		if n.XMLName.Local != "pci" {
			return
		}
		id, err := telemetry.ParsePCIBusID(n.BusID)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(slices.Clone(chain), id.String())
		rel := path.Join(append([]string{"devices", host}, chain...)...)
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(filepath.Join(dir, "numa_node"), strconv.Itoa(numaID)+"\n")
		mustWrite(filepath.Join(dir, "class"), n.Class+"\n")
		if err := os.MkdirAll(filepath.Join(root, "bus/pci/devices"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../../"+rel, filepath.Join(root, "bus/pci/devices", id.String())); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(n.Class, "0x0302"):
			gpus = append(gpus, id)
		case strings.HasPrefix(n.Class, "0x0207"), strings.HasPrefix(n.Class, "0x0200"):
			nics = append(nics, id)
		}
		sw[id.String()], numa[id.String()] = swID, numaID
		for _, c := range n.Children {
			walk(c, host, chain, numaID, swID)
		}
	}
	for _, cpu := range sys.Children {
		if cpu.XMLName.Local != "cpu" {
			continue
		}
		nid, _ := strconv.Atoi(cpu.NUMA)
		for _, p := range cpu.Children {
			// Each CPU-attached bridge is its own host bridge (NCCL files give
			// Azure's virtual bridges one fake address on every socket).
			walk(p, fmt.Sprintf("pci%04x:00", top), nil, nid, top)
			top++
		}
	}
	sortIDs := func(ids []telemetry.PCIBusID) {
		slices.SortFunc(ids, func(a, b telemetry.PCIBusID) int { return strings.Compare(a.String(), b.String()) })
	}
	sortIDs(gpus)
	sortIDs(nics)
	inv = &collector.Inventory{Node: "nccl"}
	for i, g := range gpus {
		inv.GPUs = append(inv.GPUs, collector.GPUInfo{Index: i, PCIBusID: g})
	}
	for i, n := range nics {
		name := fmt.Sprintf("mlx5_%d", i)
		nicNames = append(nicNames, n.String())
		dev := filepath.Join(root, "class/infiniband", name)
		if err := os.MkdirAll(dev, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../../bus/pci/devices/"+n.String(), filepath.Join(dev, "device")); err != nil {
			t.Fatal(err)
		}
	}
	return root, inv, nicNames, sw, numa
}

// TestNCCLLayouts derives each GPU's NIC distances and rail from real NCCL
// topology files of AWS p4d/p5 and Azure NDv4/NDv5 turned into sysfs trees (no
// NVML: GPU pairs come from sysfs too), and checks them against the layout the
// file states: PIX under the GPU's own switch, NODE elsewhere on its socket, SYS
// across.
func TestNCCLLayouts(t *testing.T) {
	rails := map[string][]string{ // GPU index → rail NIC, where the file pins it
		"aws-ofi-nccl_p4d-24xl-topo.xml": {"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1", "mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3"},
		// Four PIX NICs per GPU: NodeTopology.Rail takes the first in natural name
		// order (mlx5_8 before mlx5_10).
		"aws-ofi-nccl_p5.48xl-topo.xml": {"mlx5_0", "mlx5_4", "mlx5_8", "mlx5_12", "mlx5_16", "mlx5_20", "mlx5_24", "mlx5_28"},
		"azhpc-images_ndv5-topo.xml":    {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"},
		"azhpc-images_ndv4-topo.xml":    nil,
	}
	for file, wantRails := range rails {
		t.Run(file, func(t *testing.T) {
			root, inv, nicAddr, sw, numa := ncclTree(t, filepath.Join("testdata/nccl", file))
			topo, err := Discover(nil, inv, root, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(topo.GPUs) != 8 || len(topo.NICLinks) != 8*len(nicAddr) {
				t.Fatalf("%d GPUs, %d NIC links", len(topo.GPUs), len(topo.NICLinks))
			}
			for _, l := range topo.NICLinks {
				g := inv.GPUs[l.GPU].PCIBusID.String()
				i, _ := strconv.Atoi(strings.TrimPrefix(l.NIC, "mlx5_"))
				n := nicAddr[i]
				want := telemetry.LinkSYS
				switch {
				case sw[g] == sw[n]:
					want = telemetry.LinkPIX
				case numa[g] == numa[n]:
					want = telemetry.LinkNODE
				}
				if l.Type != want {
					t.Errorf("gpu %d (%s) - %s (%s): %s, want %s", l.GPU, g, l.NIC, n, l.Type, want)
				}
			}
			for gi, g := range topo.GPUs {
				if g.NUMANode != numa[g.PCIBusID.String()] {
					t.Errorf("gpu %d numa %d", gi, g.NUMANode)
				}
				r, ok := topo.Rail(gi)
				if !ok || r.Type != telemetry.LinkPIX {
					t.Errorf("gpu %d: rail %+v, want a PIX NIC", gi, r)
				}
				if wantRails != nil && r.NIC != wantRails[gi] {
					t.Errorf("gpu %d: rail %s, want %s", gi, r.NIC, wantRails[gi])
				}
			}
			// GPU pairs from sysfs: PIX inside a switch (p4d, NDv4), else NODE/SYS.
			for _, l := range topo.GPULinks {
				a, b := inv.GPUs[l.A].PCIBusID.String(), inv.GPUs[l.B].PCIBusID.String()
				want := telemetry.LinkSYS
				switch {
				case sw[a] == sw[b]:
					want = telemetry.LinkPIX
				case numa[a] == numa[b]:
					want = telemetry.LinkNODE
				}
				if l.Type != want {
					t.Errorf("gpus %d-%d: %s, want %s", l.A, l.B, l.Type, want)
				}
			}
		})
	}
}

// TestFixturesMatchShared checks the vendored NCCL files against ../shared/data.
func TestFixturesMatchShared(t *testing.T) {
	shared := "../../../shared/data/nccl-topology-xml"
	if _, err := os.Stat(shared); err != nil {
		t.Skip("no ../shared/data")
	}
	entries, err := os.ReadDir("testdata/nccl")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		a, err1 := os.ReadFile(filepath.Join("testdata/nccl", e.Name()))
		b, err2 := os.ReadFile(filepath.Join(shared, e.Name()))
		if err1 != nil || err2 != nil || string(a) != string(b) {
			t.Errorf("%s differs from ../shared (%v, %v)", e.Name(), err1, err2)
		}
	}
}

// BenchmarkDiscoverHGXH100 is one full discovery of a simulated HGX H100 node
// (8 GPUs × 36 NVLink slots through NVML, 8 HCAs, the sysfs PCI walk).
func BenchmarkDiscoverHGXH100(b *testing.B) {
	_, node, lib, inv := simNode(b, simhw.ShapeHGXH100)
	for b.Loop() {
		if _, err := Discover(lib, inv, node.SysRoot(), ""); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseNUMA: never panics; an accepted node is -1 or more and round-trips.
func FuzzParseNUMA(f *testing.F) {
	for _, s := range []string{"0\n", "-1\n", "1", "x", "", "-2", "99999999999999999999"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseNUMA(b, "numa_node")
		if err != nil {
			if v != -1 {
				t.Errorf("%q: error with %d", b, v)
			}
			return
		}
		if v < -1 {
			t.Errorf("%q: %d", b, v)
		}
		if again, err := parseNUMA([]byte(strconv.Itoa(v)+"\n"), "numa_node"); err != nil || again != v {
			t.Errorf("%q: %d does not round-trip", b, v)
		}
	})
}
