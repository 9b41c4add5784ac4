package simib

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// HCA is one InfiniBand host channel adapter (an mlx5 device). The exported fields
// are its static identity: set them before the first WriteSysfs and not
// concurrently with it.
type HCA struct {
	// Name is the device name under /sys/class/infiniband, e.g. "mlx5_0".
	Name  string
	Ports []*Port

	BoardID string // board_id, e.g. "MT_0000000838"
	FWVer   string // fw_ver, e.g. "28.41.1000"
	HCAType string // hca_type, e.g. "MT4129" (ConnectX-7)
	HWRev   string // hw_rev, e.g. "0x0"
	// NodeGUID and SysImageGUID are printed as node_guid and sys_image_guid
	// ("a088:c203:00da:6342").
	NodeGUID     uint64
	SysImageGUID uint64
	// NodeDesc is node_desc; rdma-ndd sets it to "<hostname> <device>" on a real
	// node.
	NodeDesc string

	// PCI is the adapter's PCI function, written under <sysRoot>/devices.
	PCI PCIFunction

	wmu     sync.Mutex        // serialises WriteSysfs
	root    string            // sysRoot of the last WriteSysfs
	written map[string]string // file (relative to root) -> content last written
}

// PCIFunction describes a PCI function as sysfs shows it under
// /sys/devices/pci<domain>:<bus>/…/<addr>.
type PCIFunction struct {
	// Addr is the canonical address, domain:bus:device.function, e.g.
	// "0000:9c:00.0".
	Addr string
	// Parents are the upstream bridges from the root port down, e.g.
	// {"0000:97:01.0", "0000:98:00.0", "0000:99:01.0"} for a NIC behind a PCIe
	// switch. The device sits directly under its root bus when empty. simib
	// creates the bridges' directories but writes no attribute files for them:
	// whoever simulates the switch (and the GPUs beside the NIC) owns those.
	Parents []string
	// NUMANode is numa_node (-1 when the platform has no NUMA).
	NUMANode int
	// LocalCPUList is local_cpulist, e.g. "0-55,112-167"; not written when empty.
	LocalCPUList string

	Vendor, Device                   uint16 // 0x15b3, 0x1021 for ConnectX-7
	SubsystemVendor, SubsystemDevice uint16
	Class                            uint32 // 0x020700: InfiniBand controller
	Revision                         uint8
	// LinkSpeed and LinkWidth are current and max link speed and width,
	// e.g. "32.0 GT/s PCIe" and 16.
	LinkSpeed string
	LinkWidth int
}

// Mellanox/NVIDIA organisationally unique identifiers seen in real ConnectX node
// GUIDs (ibstat output in leptonai/gpud's testdata: a088c2…, 946dae…, 58a2e1…).
var mellanoxOUIs = [...]uint64{0xa088c2, 0x946dae, 0x58a2e1, 0xb8599f, 0x1070fd, 0xe8ebd3}

// NewConnectX7 returns a ConnectX-7 NDR adapter as found on an H100 node: one
// InfiniBand port at 400 Gb/sec (4X NDR), ACTIVE/LinkUp, counters at zero (a
// freshly booted node; use Port.Add for history). Its node GUID, LIDs and
// firmware build derive deterministically from seed; distinct seeds below 2^24×6
// give distinct GUIDs. pciAddr is the canonical PCI address ("0000:9c:00.0").
func NewConnectX7(name string, pciAddr string, numaNode int, seed int64) *HCA {
	s := uint64(seed)
	// Multiplying by an odd constant permutes the low 24 bits, so GUIDs look
	// random yet never collide for distinct seeds.
	guid := mellanoxOUIs[(s>>24)%uint64(len(mellanoxOUIs))]<<40 | 0x0300<<24 | (s*0x9e3779b1)&0xffffff
	fwBuilds := [...]string{"1000", "1002", "1004"}
	h := &HCA{
		Name:         name,
		BoardID:      "MT_0000000838",
		FWVer:        "28.39." + fwBuilds[s%uint64(len(fwBuilds))],
		HCAType:      "MT4129",
		HWRev:        "0x0",
		NodeGUID:     guid,
		SysImageGUID: guid,
		NodeDesc:     name,
		PCI: PCIFunction{
			Addr:            pciAddr,
			NUMANode:        numaNode,
			Vendor:          0x15b3,
			Device:          0x1021,
			SubsystemVendor: 0x15b3,
			SubsystemDevice: 0x1021,
			Class:           0x020700,
			LinkSpeed:       "32.0 GT/s PCIe",
			LinkWidth:       16,
		},
	}
	p := newPort(1, s)
	p.LID = uint16(1 + (s*0x2545f491)%0xbfff) // unicast LIDs are 1..0xbfff
	p.SMLID = 1
	p.CapMask = 0xa751e848 // ibstat of a real H100 node's ConnectX-7 ports
	p.GUID = guid
	h.Ports = []*Port{p}
	return h
}

// Port returns the port numbered num, or nil.
func (h *HCA) Port(num int) *Port {
	for _, p := range h.Ports {
		if p.Num == num {
			return p
		}
	}
	return nil
}

// formatGUID prints a GUID the way sysfs does: "a088:c203:00da:6342".
func formatGUID(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

// pciAddr is a parsed domain:bus:device.function address.
type pciAddr struct {
	domain          uint32
	bus, dev, fn    uint8
	canonicalString string
}

// parsePCIAddr accepts "0000:9c:00.0" (any case; NVML's "00000000:9C:00.0" too)
// and returns it in canonical lower-case form.
func parsePCIAddr(s string) (pciAddr, error) {
	fail := func() (pciAddr, error) {
		return pciAddr{}, fmt.Errorf("invalid PCI address %q: want domain:bus:device.function like 0000:9c:00.0", s)
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return fail()
	}
	devStr, fnStr, ok := strings.Cut(parts[2], ".")
	if !ok {
		return fail()
	}
	domain, err1 := strconv.ParseUint(parts[0], 16, 32)
	bus, err2 := strconv.ParseUint(parts[1], 16, 8)
	dev, err3 := strconv.ParseUint(devStr, 16, 8)
	fn, err4 := strconv.ParseUint(fnStr, 16, 8)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || dev > 0x1f || fn > 7 {
		return fail()
	}
	a := pciAddr{domain: uint32(domain), bus: uint8(bus), dev: uint8(dev), fn: uint8(fn)}
	a.canonicalString = fmt.Sprintf("%04x:%02x:%02x.%x", a.domain, a.bus, a.dev, a.fn)
	return a, nil
}
