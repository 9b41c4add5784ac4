package simhw

import (
	"strings"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Server is one node's NVML library: an nvml.Interface over the node's simulated
// GPUs. It embeds go-nvml's moq mock the way go-nvml's own dgxa100 server does; the
// methods the agent uses are implemented on Server itself (so they cost no
// reflection and the mock does not record them), and every other method of the
// embedded mock answers ERROR_NOT_SUPPORTED (or delegates DeviceXxx(dev, …) to
// dev.Xxx(…), as the real library does). A caller may replace a func field of the
// embedded mock before first use to extend the simulation.
//
// As with the real library, every call but Init, InitWithFlags and ErrorString
// answers ERROR_UNINITIALIZED until Init succeeds, and Init/Shutdown are
// reference counted.
type Server struct {
	mock.Interface
	node    *Node
	devices []*Device
	inits   atomic.Int32
	ext     *mock.ExtendedInterface
}

// visible returns the devices NVML lists, in index order: every GPU the driver
// initialised (a gpu-missing GPU is left out, as one whose RmInitAdapter
// failed). The caller holds the node's lock.
func (s *Server) visible() []*Device {
	out := s.devices[:0:0]
	for _, d := range s.devices {
		if !d.g.hidden {
			out = append(out, d)
		}
	}
	return out
}

// index returns d's NVML index: its place among the visible devices.
func (s *Server) index(d *Device) int {
	i := 0
	for _, o := range s.devices {
		if o == d {
			return i
		}
		if !o.g.hidden {
			i++
		}
	}
	return i
}

var _ nvml.Interface = (*Server)(nil)

func newServer(n *Node) *Server {
	s := &Server{node: n}
	s.ext = &mock.ExtendedInterface{LookupSymbolFunc: func(string) error { return nil }}
	for _, g := range n.gpus {
		s.devices = append(s.devices, newDevice(s, g))
	}
	fillInterface(&s.Interface, s)
	return s
}

func (s *Server) ready() nvml.Return {
	if s.inits.Load() <= 0 {
		return nvml.ERROR_UNINITIALIZED
	}
	return nvml.SUCCESS
}

// Init initializes the library; with a driver-not-loaded fault it answers
// ERROR_DRIVER_NOT_LOADED, as libnvidia-ml.so does without the kernel module.
func (s *Server) Init() nvml.Return {
	s.node.mu.RLock()
	unloaded := s.node.driverUnloaded
	s.node.mu.RUnlock()
	if unloaded {
		return nvml.ERROR_DRIVER_NOT_LOADED
	}
	s.inits.Add(1)
	return nvml.SUCCESS
}

// InitWithFlags initializes the library; the flags are ignored.
func (s *Server) InitWithFlags(uint32) nvml.Return { return s.Init() }

// Shutdown releases one Init.
func (s *Server) Shutdown() nvml.Return {
	for {
		n := s.inits.Load()
		if n <= 0 {
			return nvml.ERROR_UNINITIALIZED
		}
		if s.inits.CompareAndSwap(n, n-1) {
			return nvml.SUCCESS
		}
	}
}

// ErrorString describes a return code, as the real library does without a driver.
func (s *Server) ErrorString(r nvml.Return) string { return r.Error() }

// Extensions returns the extended interface; every symbol is reported present.
func (s *Server) Extensions() nvml.ExtendedInterface { return s.ext }

// SystemGetDriverVersion returns the kernel driver version.
func (s *Server) SystemGetDriverVersion() (string, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return "", r
	}
	return s.node.shape.DriverVersion, nvml.SUCCESS
}

// SystemGetNVMLVersion returns the NVML version ("12.570.133.20").
func (s *Server) SystemGetNVMLVersion() (string, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return "", r
	}
	return s.node.shape.nvmlVersion(), nvml.SUCCESS
}

// SystemGetCudaDriverVersion returns the CUDA driver API version (12080 = 12.8).
func (s *Server) SystemGetCudaDriverVersion() (int, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return 0, r
	}
	return s.node.shape.CUDAVersion, nvml.SUCCESS
}

// SystemGetCudaDriverVersion_v2 is SystemGetCudaDriverVersion.
func (s *Server) SystemGetCudaDriverVersion_v2() (int, nvml.Return) {
	return s.SystemGetCudaDriverVersion()
}

// SystemGetProcessName names a process running on one of the node's GPUs.
func (s *Server) SystemGetProcessName(pid int) (string, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return "", r
	}
	n := s.node
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, j := range n.jobs {
		for _, p := range j.PIDs {
			if p == pid {
				return j.procName(), nvml.SUCCESS
			}
		}
	}
	return "", nvml.ERROR_NOT_FOUND
}

// SystemGetTopologyGpuSet returns the GPUs whose CPU affinity includes cpu.
func (s *Server) SystemGetTopologyGpuSet(cpu int) ([]nvml.Device, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return nil, r
	}
	sh := s.node.shape
	if cpu < 0 || cpu >= 2*sh.CoresPerSocket*sh.NUMANodes {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	numa := numaOfCPU(sh, cpu)
	var out []nvml.Device
	for _, d := range s.devices {
		if d.g.numa == numa {
			out = append(out, d)
		}
	}
	return out, nvml.SUCCESS
}

// DeviceGetCount returns the number of GPUs. A lost GPU still counts: the driver
// keeps its handle, and calls on it answer ERROR_GPU_IS_LOST. A GPU the driver
// failed to initialise (gpu-missing) does not.
func (s *Server) DeviceGetCount() (int, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return 0, r
	}
	s.node.mu.RLock()
	defer s.node.mu.RUnlock()
	return len(s.visible()), nvml.SUCCESS
}

// DeviceGetHandleByIndex returns GPU i, lost or not; indexes count the GPUs
// NVML lists, so a missing GPU shifts the ones after it.
func (s *Server) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return nil, r
	}
	s.node.mu.RLock()
	defer s.node.mu.RUnlock()
	vis := s.visible()
	if i < 0 || i >= len(vis) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return vis[i], nvml.SUCCESS
}

// DeviceGetHandleByUUID finds a GPU by its UUID ("GPU-…").
func (s *Server) DeviceGetHandleByUUID(uuid string) (nvml.Device, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return nil, r
	}
	s.node.mu.RLock()
	defer s.node.mu.RUnlock()
	for _, d := range s.visible() {
		if d.g.uuid == uuid {
			return d, nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

// DeviceGetHandleBySerial finds a GPU by its board serial number.
func (s *Server) DeviceGetHandleBySerial(serial string) (nvml.Device, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return nil, r
	}
	s.node.mu.RLock()
	defer s.node.mu.RUnlock()
	for _, d := range s.visible() {
		if d.g.serial == serial {
			return d, nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

// DeviceGetHandleByPciBusId finds a GPU by PCI address. Like NVML it accepts the
// 8- and 4-digit domain forms in either case ("00000000:18:00.0", "0000:18:00.0").
func (s *Server) DeviceGetHandleByPciBusId(id string) (nvml.Device, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return nil, r
	}
	want, ok := normalizeBusID(id)
	if !ok {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	s.node.mu.RLock()
	defer s.node.mu.RUnlock()
	for _, d := range s.visible() {
		if d.g.busID == want {
			return d, nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

// EventSetCreate creates an event set for this node's GPUs.
func (s *Server) EventSetCreate() (nvml.EventSet, nvml.Return) {
	if r := s.ready(); r != nvml.SUCCESS {
		return nil, r
	}
	return s.node.newEventSet(), nvml.SUCCESS
}

// EventSetWait is set.Wait.
func (s *Server) EventSetWait(set nvml.EventSet, timeoutMs uint32) (nvml.EventData, nvml.Return) {
	if set == nil {
		return nvml.EventData{}, nvml.ERROR_INVALID_ARGUMENT
	}
	return set.Wait(timeoutMs)
}

// EventSetFree is set.Free.
func (s *Server) EventSetFree(set nvml.EventSet) nvml.Return {
	if set == nil {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	return set.Free()
}

// normalizeBusID turns a PCI address in any of NVML's accepted forms into the
// nvmlPciInfo_t.busId form.
func normalizeBusID(id string) (string, bool) {
	id = strings.ToUpper(strings.TrimSpace(id))
	dom, rest, ok := strings.Cut(id, ":")
	if !ok || len(rest) != len("18:00.0") {
		return "", false
	}
	if len(dom) == 4 {
		dom = "0000" + dom
	}
	if len(dom) != 8 {
		return "", false
	}
	return dom + ":" + rest, true
}
