package simhw

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/collector/pci"
)

// TestPCITreeCounts: the simulated node's sysfs PCI tree reads as its shape's
// GPUs and NVSwitches through the production PCI scan, whatever NVML says.
func TestPCITreeCounts(t *testing.T) {
	for _, shape := range []ShapeName{ShapeHGXH100, ShapeDGXA100} {
		t.Run(string(shape), func(t *testing.T) {
			f, err := NewFleet(FleetSpec{Nodes: 1, Shape: shape, Root: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			n := f.Nodes()[0]
			if err := n.Inject(Fault{GPU: 2, Kind: FaultGPUMissing}); err != nil {
				t.Fatal(err)
			}
			b, err := pci.Scan(n.SysRoot())
			if err != nil {
				t.Fatal(err)
			}
			sh := n.Shape()
			if len(b.GPUs) != sh.GPUs() || len(b.NVSwitches) != len(sh.NVSwitchBus) || len(b.Excluded) != 0 {
				t.Fatalf("bus: %d GPUs, %d NVSwitches; shape has %d, %d", len(b.GPUs), len(b.NVSwitches), sh.GPUs(), len(sh.NVSwitchBus))
			}
			for i, g := range b.GPUs {
				if g.Address.String() != sysfsAddr(sh.GPUBus[i]) || uint32(g.Device)<<16|0x10de != sh.PCIDeviceID {
					t.Errorf("GPU %d: %+v", i, g)
				}
			}
			if s := b.NVSwitches[0]; s.Address.String() != sysfsAddr(sh.NVSwitchBus[0]) || uint32(s.Device)<<16|0x10de != sh.NVSwitchPCIID {
				t.Errorf("NVSwitch 0: %+v", s)
			}
		})
	}
}
