package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// pciPath is a PCI function's place in the tree: the elements of its
// /sys/devices path, from the host bridge ("pci0000:14") down to the function
// itself ("0000:18:00.0"). nil when unknown.
type pciPath []string

// sysfs reads the PCI tree under a sysfs root.
type sysfs struct {
	root    string // stands for /sys
	devices string // <root>/devices, symlinks resolved
}

func newSysfs(root string) sysfs {
	s := sysfs{root: root, devices: filepath.Join(root, "devices")}
	if r, err := filepath.EvalSymlinks(s.devices); err == nil {
		s.devices = r
	}
	return s
}

// resolve turns a sysfs link to a PCI function into its pciPath.
func (s sysfs) resolve(link string) (pciPath, error) {
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(s.devices, target)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("%s resolves to %s, outside %s", link, target, s.devices)
	}
	p := pciPath(strings.Split(filepath.ToSlash(rel), "/"))
	if len(p) < 2 {
		return nil, fmt.Errorf("%s resolves to %s: not a PCI function below a host bridge", link, target)
	}
	if _, err := telemetry.ParsePCIBusID(p[len(p)-1]); err != nil {
		return nil, fmt.Errorf("%s resolves to %s: %w", link, target, err)
	}
	return p, nil
}

// pciDevice returns the path of the PCI function at addr
// (/sys/bus/pci/devices/<addr>).
func (s sysfs) pciDevice(addr telemetry.PCIBusID) (pciPath, error) {
	return s.resolve(filepath.Join(s.root, "bus", "pci", "devices", addr.String()))
}

// numaNode reads numa_node of the function at p; -1 when the file is absent or
// says -1.
func (s sysfs) numaNode(p pciPath) (int, error) {
	file := filepath.Join(append([]string{s.devices}, p...)...)
	file = filepath.Join(file, "numa_node")
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	return parseNUMA(b, file)
}

// parseNUMA reads a numa_node file: a decimal integer >= -1.
func parseNUMA(b []byte, file string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < -1 || v > 1<<16 {
		return -1, fmt.Errorf("read %s: invalid numa node %q", file, clip(string(b)))
	}
	return v, nil
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return strings.TrimSpace(s)
}

// distance classifies the PCIe path between two functions in nvidia-smi topo's
// vocabulary. numaA and numaB (-1 unknown) decide NODE versus SYS for functions
// under different host bridges. It returns LinkUnknown when either path is unknown.
func distance(a, b pciPath, numaA, numaB int) telemetry.LinkType {
	if len(a) < 2 || len(b) < 2 {
		return telemetry.LinkUnknown
	}
	if a[0] != b[0] {
		if numaA == numaB {
			return telemetry.LinkNODE
		}
		return telemetry.LinkSYS
	}
	// Common ancestors: the shared prefix of the two paths without the functions
	// themselves.
	c := 0
	for c < len(a)-1 && c < len(b)-1 && a[c] == b[c] {
		c++
	}
	if c <= 1 {
		return telemetry.LinkPHB // only the host bridge is shared
	}
	// Hops from each function up to the deepest common bridge: 2 is a switch's
	// downstream port and the function (or 1, two functions of one device).
	if max(len(a)-c, len(b)-c) <= 2 {
		return telemetry.LinkPIX
	}
	return telemetry.LinkPXB
}
