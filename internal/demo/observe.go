package demo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/prometheus/procfs/sysfs"

	"github.com/gpuwatch/gpuwatch/collector/xid"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// gpuView is what the demo learned about one GPU through NVML in one pass.
type gpuView struct {
	Index    int
	UUID     string
	Lost     bool   // NVML answered ERROR_GPU_IS_LOST
	Err      string // any other NVML error, for the summary
	Util     uint32 // percent
	MemUsed  uint64 // bytes
	MemTotal uint64 // bytes
	PowerW   float64
	LimitW   float64 // enforced power limit
	TempC    uint32
	SMMHz    uint32
	Reasons  uint64 // clocks event reasons bitmask
	Procs    int
	EnergyJ  float64 // total energy since driver load
	ECCCorr  uint64  // aggregate corrected (single-bit) ECC errors
	ECCUnc   uint64  // aggregate uncorrected (double-bit) ECC errors
	Pending  bool    // a row remap is pending: the GPU needs a reset
	RemapErr bool    // row remapping failed
	LinksUp  int     // NVLinks in state enabled
	Links    int     // NVLinks the GPU has
	CRC      uint64  // NVLink CRC flit errors over all links
}

// observeGPUs reads every GPU of one node through nvml.Interface, exactly as the
// NVML source would on a real node. A lost GPU is reported as lost; the others
// keep reporting.
func observeGPUs(lib nvml.Interface) ([]gpuView, error) {
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("cannot count GPUs: %s", nvml.ErrorString(ret))
	}
	out := make([]gpuView, 0, n)
	for i := 0; i < n; i++ {
		v := gpuView{Index: i}
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret == nvml.SUCCESS {
			ret = readGPU(dev, &v)
		}
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_GPU_IS_LOST:
			v.Lost = true
		default:
			v.Err = nvml.ErrorString(ret)
		}
		out = append(out, v)
	}
	return out, nil
}

// readGPU fills v from dev and returns the first hard error. Fields a GPU does not
// support (NOT_SUPPORTED) are left at zero.
func readGPU(dev nvml.Device, v *gpuView) nvml.Return {
	var ret nvml.Return
	if v.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		return ret
	}
	u, ret := dev.GetUtilizationRates()
	if hard(ret) {
		return ret
	}
	v.Util = u.Gpu
	m, ret := dev.GetMemoryInfo()
	if hard(ret) {
		return ret
	}
	v.MemUsed, v.MemTotal = m.Used, m.Total
	p, ret := dev.GetPowerUsage()
	if hard(ret) {
		return ret
	}
	v.PowerW = float64(p) / 1000
	lim, ret := dev.GetEnforcedPowerLimit()
	if hard(ret) {
		return ret
	}
	v.LimitW = float64(lim) / 1000
	if v.TempC, ret = dev.GetTemperature(nvml.TEMPERATURE_GPU); hard(ret) {
		return ret
	}
	if v.SMMHz, ret = dev.GetClockInfo(nvml.CLOCK_SM); hard(ret) {
		return ret
	}
	if v.Reasons, ret = dev.GetCurrentClocksEventReasons(); hard(ret) {
		return ret
	}
	e, ret := dev.GetTotalEnergyConsumption()
	if hard(ret) {
		return ret
	}
	v.EnergyJ = float64(e) / 1000
	procs, ret := dev.GetComputeRunningProcesses()
	if hard(ret) {
		return ret
	}
	v.Procs = len(procs)
	if v.ECCCorr, ret = dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.AGGREGATE_ECC); hard(ret) {
		return ret
	}
	if v.ECCUnc, ret = dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC); hard(ret) {
		return ret
	}
	_, _, pending, failed, ret := dev.GetRemappedRows()
	if hard(ret) {
		return ret
	}
	v.Pending, v.RemapErr = pending, failed
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		st, ret := dev.GetNvLinkState(l)
		if ret != nvml.SUCCESS {
			continue // no such link on this GPU
		}
		v.Links++
		if st == nvml.FEATURE_ENABLED {
			v.LinksUp++
		}
		if c, ret := dev.GetNvLinkErrorCounter(l, nvml.NVLINK_ERROR_DL_CRC_FLIT); ret == nvml.SUCCESS {
			v.CRC += c
		}
	}
	return nvml.SUCCESS
}

// pciIndex maps each GPU's canonical PCI bus id to its NVML index, so kernel-log
// lines (which name GPUs by PCI address) can be tied to GPUs.
func pciIndex(lib nvml.Interface) map[string]int {
	m := map[string]int{}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return m
	}
	for i := 0; i < n; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		info, ret := dev.GetPciInfo()
		if ret != nvml.SUCCESS {
			continue
		}
		if id, err := telemetry.ParsePCIBusID(cString(info.BusId[:])); err == nil {
			m[id.String()] = i
		}
	}
	return m
}

// cString converts NVML's NUL-terminated char array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// powerCapped reports a GPU held well below its power limit: a busy H100 running
// at its 700 W limit with SwPowerCap set is normal, one capped at 350 W is not.
func (v gpuView) powerCapped() bool {
	return v.Reasons&reasonsPower != 0 && v.LimitW > 0 && v.PowerW < 0.9*v.LimitW
}

// thermal reports a thermal slowdown.
func (v gpuView) thermal() bool { return v.Reasons&reasonsThermal != 0 }

// slowed reports a clock slowdown the demo calls out: thermal, or a power cap
// below the limit.
func (v gpuView) slowed() bool { return v.thermal() || v.powerCapped() }

func hard(ret nvml.Return) bool {
	return ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED
}

// portView is one InfiniBand port as procfs read it from the node's sysfs tree.
type portView struct {
	Device  string
	Port    uint
	Active  bool
	State   string
	TxBytes uint64 // port_xmit_data, already scaled to bytes by procfs
	RxBytes uint64
	Symbol  uint64
	Downed  uint64
}

// observeIB reads every InfiniBand port under sysRoot with procfs, one device at a
// time so that one unreadable device loses only itself.
func observeIB(sysRoot string) ([]portView, []error) {
	fs, err := sysfs.NewFS(sysRoot)
	if err != nil {
		return nil, []error{fmt.Errorf("cannot open sysfs at %s: %w", sysRoot, err)}
	}
	names, err := fs.InfiniBandClassDevices()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{fmt.Errorf("cannot list InfiniBand devices under %s: %w", sysRoot, err)}
	}
	sort.Strings(names)
	var out []portView
	var errs []error
	for _, name := range names {
		dev, err := fs.InfiniBandDevice(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot read InfiniBand device %s: %w", name, err))
			continue
		}
		ports := make([]uint, 0, len(dev.Ports))
		for p := range dev.Ports {
			ports = append(ports, p)
		}
		sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
		for _, p := range ports {
			port := dev.Ports[p]
			v := portView{Device: name, Port: p, State: port.State, Active: port.StateID == 4}
			c := port.Counters
			v.TxBytes = deref(c.PortXmitData)
			v.RxBytes = deref(c.PortRcvData)
			v.Symbol = deref(c.SymbolError)
			v.Downed = deref(c.LinkDowned)
			out = append(out, v)
		}
	}
	return out, errs
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// logTail follows a kernel-log file the way an agent tails /var/log/kern.log: it
// remembers its offset and returns only complete new lines.
type logTail struct {
	path   string
	offset int64
	rest   []byte // an incomplete last line, kept for the next read
}

// next returns the parsed NVRM lines appended since the last call.
func (t *logTail) next() ([]xid.Line, error) {
	f, err := os.Open(t.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot open kernel log %s: %w", t.path, err)
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("cannot seek kernel log %s: %w", t.path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("cannot read kernel log %s: %w", t.path, err)
	}
	t.offset += int64(len(data))
	data = append(t.rest, data...)
	t.rest = nil
	var out []xid.Line
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			// The last line has no newline yet: keep it for the next read.
			t.rest = append([]byte(nil), data...)
			return out, nil
		}
		if l, ok := xid.ParseLine(string(data[:i])); ok {
			out = append(out, l)
		}
		data = data[i+1:]
	}
}
