package simhw

import (
	"testing"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// TestDCGMContract: like go-dcgm, nothing but Connect answers before a
// successful Connect or after Disconnect; the GPUs are those the driver
// initialised, in NVML order; the driver not loaded fails the GPU list; a lost
// GPU's values say so.
func TestDCGMContract(t *testing.T) {
	f, err := NewFleet(FleetSpec{Nodes: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	d := n.DCGM()
	fields := []godcgm.Short{godcgm.DCGM_FI_PROF_SM_ACTIVE, godcgm.DCGM_FI_PROF_PCIE_TX_BYTES}
	if _, err := d.GPUs(); err == nil {
		t.Error("GPUs answered before Connect")
	}
	if _, err := d.Latest([]uint{0}, fields); err == nil {
		t.Error("Latest answered before Connect")
	}
	if _, err := d.Health(); err == nil {
		t.Error("Health answered before Connect")
	}
	if err := d.Disconnect(); err == nil {
		t.Error("Disconnect without Connect succeeded")
	}
	if err := n.Inject(Fault{GPU: 3, Kind: FaultGPUMissing}); err != nil {
		t.Fatal(err)
	}
	if err := d.Connect(false, "localhost:5555"); err != nil {
		t.Fatal(err)
	}
	if err := d.Connect(false, "localhost:5555"); err == nil {
		t.Error("a second Connect succeeded")
	}
	gpus, err := d.GPUs()
	if err != nil || len(gpus) != 7 {
		t.Fatalf("GPUs with GPU 3 missing: %d, %v; want 7", len(gpus), err)
	}
	for i, g := range gpus {
		if g.GPU != uint(i) || g.UUID == "" {
			t.Errorf("GPU %d: %+v", i, g)
		}
	}
	if gpus[3].UUID != n.gpus[4].uuid {
		t.Errorf("DCGM GPU 3 is %s, want the fifth GPU (the fourth is not initialised)", gpus[3].UUID)
	}
	if err := d.WatchFields([]uint{7}, fields, time.Second); err == nil {
		t.Error("watching a GPU DCGM does not list succeeded")
	}
	if err := d.WatchFields([]uint{0, 1}, fields, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.Inject(Fault{GPU: 1, Kind: FaultGPULost}); err != nil {
		t.Fatal(err)
	}
	vals, err := d.Latest([]uint{0, 1}, fields)
	if err != nil || len(vals) != 4 {
		t.Fatalf("Latest: %d values, %v", len(vals), err)
	}
	if vals[0].Status != godcgm.DCGM_ST_OK || vals[0].FieldType != godcgm.DCGM_FT_DOUBLE || vals[1].FieldType != godcgm.DCGM_FT_INT64 {
		t.Errorf("GPU 0: %+v %+v", vals[0].Status, vals[1].FieldType)
	}
	if vals[2].Status != godcgm.DCGM_ST_GPU_IS_LOST {
		t.Errorf("lost GPU status %d, want DCGM_ST_GPU_IS_LOST", vals[2].Status)
	}
	if err := d.Disconnect(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Latest([]uint{0}, fields); err == nil {
		t.Error("Latest answered after Disconnect")
	}
	if err := n.Inject(Fault{GPU: AllGPUs, Kind: FaultDriverNotLoaded}); err != nil {
		t.Fatal(err)
	}
	if err := d.Connect(false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GPUs(); err == nil {
		t.Error("GPUs answered with the driver not loaded")
	}
}
