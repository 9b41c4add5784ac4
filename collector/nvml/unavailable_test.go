package nvml

import (
	"context"
	"path/filepath"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestNVMLMissing: the real go-nvml, pointed at a library that is not there
// (what a node without the driver gives), fails Init with
// ERROR_LIBRARY_NOT_FOUND; the error says so in words, and the source that
// stands in for NVML reports it with NVML's count at 0.
func TestNVMLMissing(t *testing.T) {
	lib := gonvml.New(gonvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1")))
	r := lib.Init()
	if r != gonvml.ERROR_LIBRARY_NOT_FOUND {
		t.Fatalf("Init = %v, want ERROR_LIBRARY_NOT_FOUND", r)
	}
	err := InitError(lib, r)
	if want := "NVML did not start: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND)"; err.Error() != want {
		t.Errorf("InitError = %q, want %q", err, want)
	}
	src := Unavailable(err)
	var got []telemetry.Sample
	if cerr := src.Collect(context.Background(), func(s telemetry.Sample) { got = append(got, s) }); cerr != err {
		t.Errorf("Collect = %v, want %v", cerr, err)
	}
	if src.Name() != "nvml" || len(got) != 1 || got[0].Name != telemetry.MetricNodeGPUs || got[0].Value != 0 ||
		got[0].Labels.Get(telemetry.LabelSource) != "nvml" {
		t.Errorf("samples %+v", got)
	}
	if err := InitError(nil, gonvml.ERROR_DRIVER_NOT_LOADED); err.Error() != "NVML did not start: the NVIDIA kernel module is not loaded (ERROR_DRIVER_NOT_LOADED)" {
		t.Errorf("driver not loaded: %v", err)
	}
}
