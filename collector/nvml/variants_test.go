package nvml

import (
	"math"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// variantLib hands out devices that differ from the simulation the way other
// boards and drivers do: a vGPU guest (licensed or not), and a driver with only
// nvmlMemory_t v1.
type variantLib struct {
	gonvml.Interface
	licensed bool
}

type variantDevice struct {
	gonvml.Device
	licensed bool
}

func (l variantLib) DeviceGetHandleByIndex(i int) (gonvml.Device, gonvml.Return) {
	d, r := l.Interface.DeviceGetHandleByIndex(i)
	if r != gonvml.SUCCESS {
		return d, r
	}
	return variantDevice{d, l.licensed && i%2 == 0}, r
}

func (d variantDevice) GetVirtualizationMode() (gonvml.GpuVirtualizationMode, gonvml.Return) {
	return gonvml.GPU_VIRTUALIZATION_MODE_VGPU, gonvml.SUCCESS
}

func (d variantDevice) GetGridLicensableFeatures() (gonvml.GridLicensableFeatures, gonvml.Return) {
	f := gonvml.GridLicensableFeatures{IsGridLicenseSupported: 1, LicensableFeaturesCount: 1}
	f.GridLicensableFeatures[0].FeatureEnabled = 1
	if d.licensed {
		f.GridLicensableFeatures[0].FeatureState = 1
	}
	return f, gonvml.SUCCESS
}

func (d variantDevice) GetMemoryInfo_v2() (gonvml.Memory_v2, gonvml.Return) {
	return gonvml.Memory_v2{}, gonvml.ERROR_NOT_SUPPORTED
}

func TestVariants(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	lib := variantLib{r.lib, true}
	inv, err := Discover(lib, "n")
	if err != nil {
		t.Fatal(err)
	}
	src := New(lib, inv, Options{})
	for range 2 { // the second cycle takes the remembered v1 path directly
		full := mustCollect(t, src.Collect)
		if v := full.must(t, telemetry.DCGMVGPULicenseStatus, "0"); v != 1 {
			t.Errorf("licensed vGPU status = %v", v)
		}
		if v := full.must(t, telemetry.DCGMVGPULicenseStatus, "1"); v != 0 {
			t.Errorf("unlicensed vGPU status = %v", v)
		}
		sh := r.node.Shape()
		if v := full.must(t, telemetry.DCGMFBTotal, "3"); v != float64(sh.MemoryMiB) {
			t.Errorf("FB total from v1 = %v", v)
		}
		if _, ok := full.get(telemetry.DCGMFBReserved, "3"); ok {
			t.Error("FB reserved emitted from nvmlMemory_t v1, which has none")
		}
		used, free := full.must(t, telemetry.DCGMFBUsed, "3"), full.must(t, telemetry.DCGMFBFree, "3")
		if used < float64(sh.ReservedMiB) || used+free > float64(sh.MemoryMiB) {
			t.Errorf("v1 used %v free %v (v1 used includes the %d MiB reservation)", used, free, sh.ReservedMiB)
		}
		if p := full.must(t, telemetry.DCGMFBUsedPercent, "3"); math.Abs(p-used/float64(sh.MemoryMiB)) > 1e-4 {
			t.Errorf("v1 used fraction %v", p)
		}
	}
}
