package nvml

import (
	"errors"
	"fmt"
	"strconv"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Discover reads the node's GPUs through lib, which the caller has initialized.
//
// The inventory is nil only when NVML cannot list the GPUs. Otherwise every GPU
// NVML counts is in it: one that answers ERROR_GPU_IS_LOST gets Lost set and keeps
// what could still be read (at least its index); one that fails another read keeps
// the rest of its identity, and the returned error (then non-nil alongside a
// usable inventory) names each GPU, call and return code. A node without GPUs
// gives an empty inventory and an error wrapping collector.ErrNoDevices.
func Discover(lib gonvml.Interface, node string) (*collector.Inventory, error) {
	if lib == nil {
		return nil, errors.New("nvml discover: no NVML library")
	}
	inv := &collector.Inventory{Node: node, GPUs: []collector.GPUInfo{}}
	var errs []error
	if v, r := lib.SystemGetDriverVersion(); r == gonvml.SUCCESS {
		inv.DriverVersion = v
	} else {
		errs = append(errs, fmt.Errorf("nvml discover: SystemGetDriverVersion: %s", r.Error()))
	}
	if v, r := lib.SystemGetCudaDriverVersion_v2(); r == gonvml.SUCCESS {
		inv.CUDAVersion = cudaVersion(v)
	} else if r != gonvml.ERROR_NOT_SUPPORTED {
		errs = append(errs, fmt.Errorf("nvml discover: SystemGetCudaDriverVersion_v2: %s", r.Error()))
	}
	n, r := lib.DeviceGetCount()
	if r != gonvml.SUCCESS {
		return nil, fmt.Errorf("nvml discover: DeviceGetCount: %s", r.Error())
	}
	if n == 0 {
		return inv, fmt.Errorf("nvml discover: NVML reports no GPUs: %w", collector.ErrNoDevices)
	}
	for i := 0; i < n; i++ {
		g, err := discoverGPU(lib, i)
		if err != nil {
			errs = append(errs, err)
		}
		inv.GPUs = append(inv.GPUs, g)
	}
	return inv, errors.Join(errs...)
}

// discoverGPU reads GPU i's identity. Reads go on after a failure so that the GPU
// keeps whatever could be read.
func discoverGPU(lib gonvml.Interface, i int) (collector.GPUInfo, error) {
	g := collector.GPUInfo{Index: i, Minor: -1}
	dev, r := lib.DeviceGetHandleByIndex(i)
	if r == gonvml.ERROR_GPU_IS_LOST {
		g.Lost = true
		return g, nil
	}
	if r != gonvml.SUCCESS {
		return g, fmt.Errorf("nvml discover: GPU %d: DeviceGetHandleByIndex: %s", i, r.Error())
	}
	var errs []error
	check := func(call string, r gonvml.Return) bool {
		switch r {
		case gonvml.SUCCESS:
			return true
		case gonvml.ERROR_GPU_IS_LOST:
			g.Lost = true
		case gonvml.ERROR_NOT_SUPPORTED:
		default:
			errs = append(errs, fmt.Errorf("nvml discover: GPU %d: %s: %s", i, call, r.Error()))
		}
		return false
	}
	if v, r := dev.GetUUID(); check("GetUUID", r) {
		g.UUID = v
	}
	if p, r := dev.GetPciInfo(); check("GetPciInfo", r) {
		s := cString(p.BusId[:])
		if id, err := telemetry.ParsePCIBusID(s); err == nil {
			g.PCIBusID = id
		} else {
			errs = append(errs, fmt.Errorf("nvml discover: GPU %d: GetPciInfo: %w", i, err))
		}
	}
	if v, r := dev.GetMinorNumber(); check("GetMinorNumber", r) {
		g.Minor = v
	}
	if v, r := dev.GetName(); check("GetName", r) {
		g.Model = v
	}
	if v, r := dev.GetVbiosVersion(); check("GetVbiosVersion", r) {
		g.VBIOS = v
	}
	if v, r := dev.GetSerial(); check("GetSerial", r) {
		g.Serial = v
	}
	if g.Minor < 0 {
		g.Minor = i // the device node NVML would create; GetMinorNumber failed
	}
	return g, errors.Join(errs...)
}

// cudaVersion renders NVML's CUDA driver version (major*1000 + minor*10) as
// "12.8".
func cudaVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
}

// cString reads a NUL-terminated C char array.
func cString(b []int8) string {
	buf := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		buf = append(buf, byte(c))
	}
	return string(buf)
}
