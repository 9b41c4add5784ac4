package simhw

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
)

// The node's PCI tree, as /sys/devices and /sys/bus/pci/devices show it, so the
// topology source's sysfs walk runs against the simulator as it does on a real
// node. Each rail (GPU i and HCA mlx5_i) sits behind its own PCIe switch, the
// layout nvidia-smi topo -m shows on DGX/HGX H100 (GPU i PIX mlx5_i, NODE to the
// other rails of its socket, SYS across sockets) and that Azure's NDv5 NCCL
// topology file records (one switch per GPU+NIC pair):
//
//	pci0000:14/0000:14:01.0                      root port
//	  0000:15:00.0                               switch upstream port
//	    0000:16:00.0 → 0000:17:00.0              downstream port → mlx5_0
//	    0000:16:01.0 → 0000:18:00.0              downstream port → GPU 0
//
// (bus numbers count back from the HCA's bus). DGX A100 puts two rails under one
// first-level switch, each rail behind its own second-level switch (GPU 2k and
// 2k+1 PXB, GPU 2k PIX mlx5_2k, PXB mlx5_2k+1):
//
//	pci0000:01/0000:01:01.0/0000:02:00.0         root port, level-1 upstream port
//	  0000:03:00.0/0000:04:00.0                  level-1 downstream, level-2 upstream (rail 0)
//	    0000:05:00.0 → 0000:06:00.0 (mlx5_0), 0000:05:01.0 → 0000:07:00.0 (GPU 0)
//	  0000:03:01.0/0000:0c:00.0                  (rail 1)
//	    0000:0d:00.0 → 0000:0e:00.0 (mlx5_1), 0000:0d:01.0 → 0000:0f:00.0 (GPU 1)
//
// The NVSwitches sit on root buses of their own. The bridges, GPUs and NVSwitches
// are written once; the HCAs' own files are simib's.

// pciDev is one PCI function of the tree.
type pciDev struct {
	chain    []string // root port down to the function itself, canonical addresses
	vendor   uint16
	device   uint16
	subVen   uint16
	subDev   uint16
	class    uint32
	numa     int
	cpus     string // local_cpulist, "" for none
	gen, wid int    // link speed generation and width; 0 for none
}

// PCI ids of the bridges: Broadcom PEX89000 switch ports; the root ports of the
// CPUs the shapes ship with (Sapphire Rapids on HGX H100, EPYC Rome on DGX A100).
const (
	switchVendor, switchDevice = 0x1000, 0xc030
	classBridge                = 0x060400
	class3D                    = 0x030200
	classNVSwitch              = 0x068000
)

func pciAddrOf(bus uint8, dev, fn int) string { return fmt.Sprintf("0000:%02x:%02x.%x", bus, dev, fn) }

// pciLayout returns the HCA parents (root port first) of each rail and every
// bridge and GPU function of the node.
func (n *Node) pciLayout() (hcaParents [][]string, devs []pciDev) {
	sh := n.shape
	rootVendor, rootDevice := uint16(0x8086), uint16(0x352a)
	if sh.Name == ShapeDGXA100 {
		rootVendor, rootDevice = 0x1022, 0x1483
	}
	gen := sh.PCIeGen
	bridge := func(chain []string, numa int, vendor, device uint16) pciDev {
		return pciDev{chain: chain, vendor: vendor, device: device, subVen: vendor, subDev: device,
			class: classBridge, numa: numa, gen: gen, wid: 16}
	}
	gpuVendor, gpuDevice := uint16(sh.PCIDeviceID&0xffff), uint16(sh.PCIDeviceID>>16)
	subVendor, subDevice := uint16(sh.PCISubsystemID&0xffff), uint16(sh.PCISubsystemID>>16)
	hcaParents = make([][]string, sh.GPUs())
	twoLevel := sh.Name == ShapeDGXA100
	for i := 0; i < sh.GPUs(); i++ {
		h := sh.HCABus[i]
		numa := sh.NUMAOf(i)
		var up []string // bridges above the rail's own switch downstream ports
		if twoLevel {
			h0 := sh.HCABus[i&^1]
			r := h0 - 5
			rp := pciAddrOf(r, 1, 0)
			l1u := pciAddrOf(r+1, 0, 0)
			l1d := pciAddrOf(r+2, i&1, 0)
			l2u := pciAddrOf(h-2, 0, 0)
			if i&1 == 0 {
				devs = append(devs, bridge([]string{rp}, numa, rootVendor, rootDevice),
					bridge([]string{rp, l1u}, numa, switchVendor, switchDevice))
			}
			devs = append(devs, bridge([]string{rp, l1u, l1d}, numa, switchVendor, switchDevice),
				bridge([]string{rp, l1u, l1d, l2u}, numa, switchVendor, switchDevice))
			up = []string{rp, l1u, l1d, l2u}
		} else {
			r := h - 3
			rp := pciAddrOf(r, 1, 0)
			usp := pciAddrOf(r+1, 0, 0)
			devs = append(devs, bridge([]string{rp}, numa, rootVendor, rootDevice),
				bridge([]string{rp, usp}, numa, switchVendor, switchDevice))
			up = []string{rp, usp}
		}
		dspNIC := pciAddrOf(h-1, 0, 0)
		dspGPU := pciAddrOf(h-1, 1, 0)
		withUp := func(more ...string) []string { return append(append([]string(nil), up...), more...) }
		devs = append(devs,
			bridge(withUp(dspNIC), numa, switchVendor, switchDevice),
			bridge(withUp(dspGPU), numa, switchVendor, switchDevice),
			pciDev{chain: withUp(dspGPU, sysfsAddr(sh.GPUBus[i])), vendor: gpuVendor, device: gpuDevice,
				subVen: subVendor, subDev: subDevice, class: class3D, numa: numa,
				cpus: cpuList(sh, numa), gen: gen, wid: sh.PCIeWidth})
		hcaParents[i] = withUp(dspNIC)
	}
	// The NVSwitches: one function each (class 0x068000, "Bridge" in lspci), on
	// its own root bus here; the GPU count reads them apart from the GPUs.
	swVendor, swDevice := uint16(sh.NVSwitchPCIID&0xffff), uint16(sh.NVSwitchPCIID>>16)
	for k, b := range sh.NVSwitchBus {
		devs = append(devs, pciDev{chain: []string{sysfsAddr(b)}, vendor: swVendor, device: swDevice,
			subVen: swVendor, subDev: swDevice, class: classNVSwitch, numa: k * sh.NUMANodes / len(sh.NVSwitchBus), gen: gen, wid: 2})
	}
	return hcaParents, devs
}

// cpuList is local_cpulist of a device on socket numa: its cores' two hardware
// threads, as cpuMask numbers them ("0-55,112-167").
func cpuList(sh *Shape, numa int) string {
	c := sh.CoresPerSocket
	if c <= 0 {
		return ""
	}
	all := c * sh.NUMANodes
	return fmt.Sprintf("%d-%d,%d-%d", numa*c, numa*c+c-1, all+numa*c, all+numa*c+c-1)
}

// writePCITree gives the HCAs their place in the tree (before their first
// WriteSysfs) and writes the bridges and GPUs under sysRoot once. The caller holds
// fileMu.
func (n *Node) writePCITree(sysRoot string) error {
	parents, devs := n.pciLayout()
	for i, h := range n.hcas {
		if h.PCI.Parents == nil && i < len(parents) {
			h.PCI.Parents = parents[i]
		}
	}
	gpu0 := filepath.Join(sysRoot, "bus", "pci", "devices", sysfsAddr(n.shape.GPUBus[0]))
	if _, err := os.Lstat(gpu0); err == nil {
		return nil // written by an earlier call
	}
	if err := os.MkdirAll(filepath.Join(sysRoot, "bus", "pci", "devices"), 0o755); err != nil {
		return fmt.Errorf("pci tree: %w", err)
	}
	for _, d := range devs {
		if err := d.write(sysRoot); err != nil {
			return fmt.Errorf("pci tree: %w", err)
		}
	}
	return nil
}

// write creates the function's directory with its attributes and its
// bus/pci/devices link.
func (d *pciDev) write(sysRoot string) error {
	addr := d.chain[len(d.chain)-1]
	rootBus := d.chain[0][5:7] // "0000:14:01.0" → "14"
	rel := path.Join(append([]string{"devices", "pci0000:" + rootBus}, d.chain...)...)
	dir := filepath.Join(sysRoot, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"vendor":           fmt.Sprintf("0x%04x\n", d.vendor),
		"device":           fmt.Sprintf("0x%04x\n", d.device),
		"subsystem_vendor": fmt.Sprintf("0x%04x\n", d.subVen),
		"subsystem_device": fmt.Sprintf("0x%04x\n", d.subDev),
		"class":            fmt.Sprintf("0x%06x\n", d.class),
		"numa_node":        strconv.Itoa(d.numa) + "\n",
	}
	if d.cpus != "" {
		files["local_cpulist"] = d.cpus + "\n"
	}
	if d.gen > 0 {
		speed := [...]string{"", "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe"}
		if d.gen < len(speed) {
			files["current_link_speed"] = speed[d.gen] + "\n"
			files["max_link_speed"] = speed[d.gen] + "\n"
		}
		files["current_link_width"] = strconv.Itoa(d.wid) + "\n"
		files["max_link_width"] = strconv.Itoa(d.wid) + "\n"
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o444); err != nil {
			return err
		}
	}
	link := filepath.Join(sysRoot, "bus", "pci", "devices", addr)
	err := os.Symlink(path.Join("../../..", rel), link)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}
