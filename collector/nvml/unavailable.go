package nvml

import (
	"context"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// InitError says why NVML did not start, in words an operator acts on: the
// return code of nvmlInit and what it means on a node.
func InitError(lib gonvml.Interface, r gonvml.Return) error {
	var why string
	switch r {
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		why = "libnvidia-ml.so.1 not found" // go-nvml cannot dlopen it: no driver installed, or not in this container
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		why = "the NVIDIA kernel module is not loaded"
	case gonvml.ERROR_NO_PERMISSION:
		why = "no permission to open /dev/nvidia*"
	case gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		why = "libnvidia-ml.so and the loaded kernel module are of different driver versions (reboot or reload the module after a driver update)"
	default:
		if lib != nil {
			why = lib.ErrorString(r)
		}
	}
	code := r.String()
	if why == "" || why == code {
		return fmt.Errorf("NVML did not start: %s", code)
	}
	return fmt.Errorf("NVML did not start: %s (%s)", why, code)
}

// Unavailable is the nvml source of a node where NVML did not start: every
// cycle it reports err, and NVML's GPU count as 0
// (gpuwatch_node_gpus{source="nvml"}), so that the health engine and an alert
// comparing it with the PCI bus's count see the driver missing rather than
// nothing at all.
func Unavailable(err error) collector.Source { return unavailable{err} }

type unavailable struct{ err error }

func (unavailable) Name() string { return string(telemetry.SourceNVML) }

func (u unavailable) Collect(_ context.Context, emit func(telemetry.Sample)) error {
	emit(telemetry.Sample{Name: telemetry.MetricNodeGPUs, Labels: countLabels, Value: 0})
	return u.err
}
