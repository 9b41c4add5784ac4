package pci

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// VendorNVIDIA is NVIDIA's PCI vendor id.
const VendorNVIDIA = 0x10de

// PCI class codes (the class file's upper 16 bits: base class and subclass).
const (
	ClassVGA         = 0x0300 // VGA compatible controller
	Class3D          = 0x0302 // 3D controller: every data-center GPU
	ClassOtherBridge = 0x0680 // NVSwitch
)

// Kind says what an NVIDIA function is to gpuwatch.
type Kind string

// Kinds of NVIDIA functions Scan reports.
const (
	KindGPU      Kind = "gpu"
	KindNVSwitch Kind = "nvswitch"
)

// Device is one NVIDIA PCI function.
type Device struct {
	Address telemetry.PCIBusID `json:"pci_bus_id"`
	Kind    Kind               `json:"kind"`
	Device  uint16             `json:"device_id"` // PCI device id: 0x2330 is an H100 SXM5
	Class   uint32             `json:"class"`     // the class file: 0x030200
	Driver  string             `json:"driver,omitempty"`
	// Why is set on an excluded GPU: "virtual function" or "bound to vfio-pci".
	Why string `json:"why,omitempty"`
}

// Bus is what Scan found.
type Bus struct {
	GPUs       []Device `json:"gpus"`
	NVSwitches []Device `json:"nvswitches"`
	// Excluded are NVIDIA GPU functions that NVML on this host is not meant to
	// see: SR-IOV virtual functions and GPUs passed through to virtual machines.
	Excluded []Device `json:"excluded,omitempty"`
}

// passthroughDrivers are the drivers that hand a GPU to a virtual machine.
var passthroughDrivers = []string{"vfio-pci", "pci-stub"}

// Scan reads the NVIDIA functions under sysfsRoot/bus/pci/devices. A missing
// directory is an error (sysfs is not mounted there); a device whose files
// cannot be read is left out and named in the returned error, next to everything
// else that was read.
func Scan(sysfsRoot string) (Bus, error) {
	b, _, err := scan(sysfsRoot)
	return b, err
}

// scan is Scan; listed says whether the device directory could be listed.
func scan(sysfsRoot string) (b Bus, listed bool, err error) {
	dir := filepath.Join(sysfsRoot, "bus", "pci", "devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return Bus{}, false, fmt.Errorf("pci: %w", err)
	}
	var errs []error
	for _, ent := range ents {
		d, ok, err := readDevice(filepath.Join(dir, ent.Name()), ent.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		switch {
		case d.Kind == KindNVSwitch:
			b.NVSwitches = append(b.NVSwitches, d)
		case d.Why != "":
			b.Excluded = append(b.Excluded, d)
		default:
			b.GPUs = append(b.GPUs, d)
		}
	}
	byAddr := func(a, b Device) int { return strings.Compare(a.Address.String(), b.Address.String()) }
	slices.SortFunc(b.GPUs, byAddr)
	slices.SortFunc(b.NVSwitches, byAddr)
	slices.SortFunc(b.Excluded, byAddr)
	return b, true, errors.Join(errs...)
}

// readDevice reads one function; ok is false for anything that is not an
// NVIDIA GPU or NVSwitch.
func readDevice(dir, name string) (Device, bool, error) {
	vendor, err := readHex(filepath.Join(dir, "vendor"), 16)
	if err != nil {
		return Device{}, false, err
	}
	if vendor != VendorNVIDIA {
		return Device{}, false, nil
	}
	class, err := readHex(filepath.Join(dir, "class"), 24)
	if err != nil {
		return Device{}, false, err
	}
	var d Device
	switch class >> 8 {
	case ClassVGA, Class3D:
		d.Kind = KindGPU
	case ClassOtherBridge:
		d.Kind = KindNVSwitch
	default:
		return Device{}, false, nil
	}
	d.Class = uint32(class)
	addr, err := telemetry.ParsePCIBusID(name)
	if err != nil {
		return Device{}, false, fmt.Errorf("pci: %s: %w", dir, err)
	}
	d.Address = addr
	id, err := readHex(filepath.Join(dir, "device"), 16)
	if err != nil {
		return Device{}, false, err
	}
	d.Device = uint16(id)
	if target, err := os.Readlink(filepath.Join(dir, "driver")); err == nil {
		d.Driver = filepath.Base(target)
	}
	if d.Kind == KindGPU {
		switch _, err := os.Lstat(filepath.Join(dir, "physfn")); {
		case err == nil:
			d.Why = "virtual function"
		case slices.Contains(passthroughDrivers, d.Driver):
			d.Why = "bound to " + d.Driver
		}
	}
	return d, true, nil
}

// readHex reads a sysfs attribute holding one hexadecimal number ("0x10de\n")
// of at most bits bits.
func readHex(path string, bits int) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("pci: %w", err)
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), 16, bits)
	if err != nil || !strings.HasPrefix(strings.ToLower(s), "0x") {
		return 0, fmt.Errorf("pci: read %s: invalid value %q: want a hexadecimal number like 0x10de", path, truncate(s, 32))
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Options configure a Source.
type Options struct {
	// SysfsRoot is where sysfs is mounted (default "/sys").
	SysfsRoot string
	// Now is the clock that stamps samples (default time.Now).
	Now func() time.Time
}

// Source reports the NVIDIA GPUs on the PCI bus. Collect scans sysfs each full
// cycle: a few hundred small reads, no NVML.
type Source struct {
	root string
	now  func() time.Time
}

var _ collector.Source = (*Source)(nil)

// New returns the pci source.
func New(opts Options) *Source {
	if opts.SysfsRoot == "" {
		opts.SysfsRoot = "/sys"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Source{root: opts.SysfsRoot, now: opts.Now}
}

// Name is "pci".
func (s *Source) Name() string { return string(telemetry.SourcePCI) }

// Collect emits gpuwatch_node_gpus{source="pci"}. A bus that could be read only in
// part still reports what it read, with the error; an unreadable bus reports
// nothing.
func (s *Source) Collect(ctx context.Context, emit func(telemetry.Sample)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, listed, err := scan(s.root)
	if !listed {
		return err
	}
	emit(telemetry.Sample{Name: telemetry.MetricNodeGPUs, Labels: countLabels, Value: float64(len(b.GPUs)), Time: s.now()})
	return err
}

// countLabels labels the pci count; shared, read-only.
var countLabels = telemetry.NewLabels(telemetry.LabelSource, string(telemetry.SourcePCI))
