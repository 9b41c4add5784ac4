package nvml

import (
	"errors"
	"testing"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		shape simhw.ShapeName
		model string
	}{
		{simhw.ShapeHGXH100, "NVIDIA H100 80GB HBM3"},
		{simhw.ShapeDGXA100, "NVIDIA A100-SXM4-80GB"},
	} {
		t.Run(string(tc.shape), func(t *testing.T) {
			r := newRig(t, tc.shape)
			inv, err := Discover(r.lib, r.node.Name())
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			sh := r.node.Shape()
			if inv.Node != r.node.Name() || inv.DriverVersion != sh.DriverVersion || inv.CUDAVersion != "12.8" {
				t.Errorf("inventory = node %q driver %q cuda %q; want %q %q 12.8",
					inv.Node, inv.DriverVersion, inv.CUDAVersion, r.node.Name(), sh.DriverVersion)
			}
			truth := r.node.GPUs()
			if len(inv.GPUs) != len(truth) {
				t.Fatalf("%d GPUs, want %d", len(inv.GPUs), len(truth))
			}
			for i, g := range inv.GPUs {
				want := truth[i]
				pci, err := telemetry.ParsePCIBusID(want.PCIBusID)
				if err != nil {
					t.Fatal(err)
				}
				if g.Index != i || g.UUID != want.UUID || g.PCIBusID != pci || g.Minor != i ||
					g.Model != tc.model || g.VBIOS != sh.VBIOSVersion || g.Serial != want.Serial || g.Lost {
					t.Errorf("GPU %d = %+v; want uuid %s pci %s serial %s model %s", i, g, want.UUID, pci, want.Serial, tc.model)
				}
				if g.PCIBusID.NVML() != want.PCIBusID {
					t.Errorf("GPU %d PCI %s round-trips to %s, NVML says %s", i, g.PCIBusID, g.PCIBusID.NVML(), want.PCIBusID)
				}
			}
		})
	}
}

func TestDiscoverLostGPU(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	r.inject(t, simhw.Fault{Kind: simhw.FaultGPULost, GPU: 3})
	inv, err := Discover(r.lib, r.node.Name())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(inv.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8 (a lost GPU stays in the inventory)", len(inv.GPUs))
	}
	for i, g := range inv.GPUs {
		if g.Index != i {
			t.Errorf("GPU %d has index %d", i, g.Index)
		}
		if i == 3 {
			if !g.Lost || g.UUID != "" {
				t.Errorf("GPU 3 = %+v, want lost with no identity", g)
			}
			continue
		}
		if g.Lost || g.UUID == "" || g.PCIBusID.IsZero() {
			t.Errorf("GPU %d = %+v, want a full identity", i, g)
		}
	}
}

func TestDiscoverUninitialized(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	r.lib.Shutdown()
	defer r.lib.Init() // the rig's cleanup shuts down once more
	inv, err := Discover(r.lib, "n")
	if err == nil || inv != nil {
		t.Fatalf("Discover on an uninitialized library = %v, %v; want nil, error", inv, err)
	}
	if errors.Is(err, collector.ErrNoDevices) {
		t.Errorf("error %v should not read as no devices", err)
	}
}

func TestCUDAVersion(t *testing.T) {
	for v, want := range map[int]string{12080: "12.8", 11040: "11.4", 12000: "12.0", 0: "", 13010: "13.1"} {
		if got := cudaVersion(v); got != want {
			t.Errorf("cudaVersion(%d) = %q, want %q", v, got, want)
		}
	}
}
