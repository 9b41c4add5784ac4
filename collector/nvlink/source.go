package nvlink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Remote device types of RemoteEnd.Type.
const (
	RemoteGPU     = "gpu"
	RemoteSwitch  = "nvswitch"
	RemoteIBMNPU  = "ibmnpu"
	RemoteUnknown = "unknown"
)

// RemoteEnd is what sits at the far end of one NVLink.
type RemoteEnd struct {
	GPUIndex int                // the GPU the link belongs to
	Link     int                // the link index on that GPU
	Type     string             // RemoteGPU, RemoteSwitch, RemoteIBMNPU or RemoteUnknown
	PCIBusID telemetry.PCIBusID // the remote device's PCI address; zero when NVML did not say
	// PeerGPUIndex is the index of the remote GPU when it is a GPU of this node,
	// else -1.
	PeerGPUIndex int
}

// Source reads the NVLinks of the node's GPUs. Collect reads only traffic and
// CollectHealth only state and errors, so the two may run concurrently; neither
// may run concurrently with itself. Remotes may be called at any time.
type Source struct {
	lib  gonvml.Interface
	inv  *collector.Inventory
	now  func() time.Time
	gpus []*gpuLinks

	probeMu sync.Mutex // guards each gpuLinks' dev, probed and links
	mu      sync.Mutex // guards remotes
	remotes []RemoteEnd
}

var (
	_ collector.Source          = (*Source)(nil)
	_ collector.HealthCollector = (*Source)(nil)
)

// Throughput read modes of a GPU.
const (
	tpUnknown = iota // not tried yet
	tpFields         // FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX
	tpCounter        // utilization counter 0, set to count bytes
	tpNone           // neither
)

type gpuLinks struct {
	info   collector.GPUInfo
	labels telemetry.Labels // gpu_index

	dev    gonvml.Device
	probed bool
	links  []link
	fields []gonvml.FieldValue // TX, RX per link
	tp     int
}

type link struct {
	index  int
	labels telemetry.Labels // gpu_index, link
}

// New returns the source for the GPUs of inv; lib must be initialized. now
// stamps the samples (nil: time.Now); the agent passes its clock, so a
// simulated fleet's links carry simulated time like every other source.
func New(lib gonvml.Interface, inv *collector.Inventory, now func() time.Time) *Source {
	if now == nil {
		now = time.Now
	}
	s := &Source{lib: lib, inv: inv, now: now}
	if inv != nil {
		for _, info := range inv.GPUs {
			s.gpus = append(s.gpus, &gpuLinks{
				info:   info,
				labels: slices.Clip(telemetry.NewLabels(telemetry.LabelGPUIndex, strconv.Itoa(info.Index))),
			})
		}
	}
	return s
}

// Name is "nvlink".
func (s *Source) Name() string { return string(telemetry.SourceNVLink) }

// Remotes describes the far end of every link found so far, by GPU and link.
// Before the first collection it is empty.
func (s *Source) Remotes() []RemoteEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.remotes)
}

// pass is one GPU's reads in one cycle.
type pass struct {
	g    *gpuLinks
	t    time.Time
	emit func(telemetry.Sample)
	stop bool
	errs []error
}

// ok sorts a return code like the nvml source: NOT_SUPPORTED is silent, a lost GPU
// stops quietly, a timeout stops with an error, anything else is an error.
func (p *pass) ok(call string, l int, r gonvml.Return) bool {
	switch r {
	case gonvml.SUCCESS:
		return true
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
	case gonvml.ERROR_GPU_IS_LOST:
		p.stop = true
	case gonvml.ERROR_TIMEOUT:
		p.stop = true
		p.fail(call, l, r)
	default:
		p.fail(call, l, r)
	}
	return false
}

func (p *pass) fail(call string, l int, r gonvml.Return) {
	p.errs = append(p.errs, fmt.Errorf("nvlink: GPU %d link %d: %s: %s", p.g.info.Index, l, call, r.Error()))
}

func (p *pass) put(name string, labels telemetry.Labels, v float64) {
	p.emit(telemetry.Sample{Name: name, Labels: labels, Value: v, Time: p.t})
}

// ready returns the GPU's handle once its links are known, probing them the
// first time. nil means the GPU cannot be read this cycle.
func (s *Source) ready(g *gpuLinks) (gonvml.Device, error) {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if g.probed {
		return g.dev, nil
	}
	if g.dev == nil {
		dev, r := s.lib.DeviceGetHandleByIndex(g.info.Index)
		switch r {
		case gonvml.SUCCESS:
			g.dev = dev
		case gonvml.ERROR_GPU_IS_LOST:
			return nil, nil
		default:
			return nil, fmt.Errorf("nvlink: GPU %d: DeviceGetHandleByIndex: %s", g.info.Index, r.Error())
		}
	}
	var links []link
	var remotes []RemoteEnd
	for l := 0; l < gonvml.NVLINK_MAX_LINKS; l++ {
		_, r := g.dev.GetNvLinkState(l)
		switch r {
		case gonvml.SUCCESS:
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_INVALID_ARGUMENT:
			continue
		case gonvml.ERROR_GPU_IS_LOST:
			return nil, nil // probe again when it answers
		default:
			return nil, fmt.Errorf("nvlink: GPU %d link %d: GetNvLinkState: %s", g.info.Index, l, r.Error())
		}
		links = append(links, link{index: l, labels: slices.Clip(telemetry.NewLabels(
			telemetry.LabelGPUIndex, strconv.Itoa(g.info.Index), telemetry.LabelLink, strconv.Itoa(l)))})
		remotes = append(remotes, s.remote(g, l))
	}
	g.links = links
	g.fields = make([]gonvml.FieldValue, 2*len(links))
	g.probed = true
	s.mu.Lock()
	s.remotes = append(s.remotes, remotes...)
	slices.SortFunc(s.remotes, func(a, b RemoteEnd) int {
		if a.GPUIndex != b.GPUIndex {
			return a.GPUIndex - b.GPUIndex
		}
		return a.Link - b.Link
	})
	s.mu.Unlock()
	return g.dev, nil
}

// remote reads the far end of link l.
func (s *Source) remote(g *gpuLinks, l int) RemoteEnd {
	e := RemoteEnd{GPUIndex: g.info.Index, Link: l, Type: RemoteUnknown, PeerGPUIndex: -1}
	if t, r := g.dev.GetNvLinkRemoteDeviceType(l); r == gonvml.SUCCESS {
		switch t {
		case gonvml.NVLINK_DEVICE_TYPE_GPU:
			e.Type = RemoteGPU
		case gonvml.NVLINK_DEVICE_TYPE_SWITCH:
			e.Type = RemoteSwitch
		case gonvml.NVLINK_DEVICE_TYPE_IBMNPU:
			e.Type = RemoteIBMNPU
		}
	}
	if p, r := g.dev.GetNvLinkRemotePciInfo(l); r == gonvml.SUCCESS {
		if id, err := telemetry.ParsePCIBusID(cString(p.BusId[:])); err == nil {
			e.PCIBusID = id
			if peer, ok := s.inv.ByPCI(id); ok && e.Type != RemoteSwitch {
				e.PeerGPUIndex = peer.Index
				e.Type = RemoteGPU
			}
		}
	}
	return e
}

// errorCounters are the per-link error series with their per-GPU DCGM sums.
var errorCounters = [...]struct {
	counter   gonvml.NvLinkErrorCounter
	name, sum string
	call      string
}{
	{gonvml.NVLINK_ERROR_DL_CRC_FLIT, telemetry.MetricNVLinkCRCFlitErrorsTotal, telemetry.DCGMNVLinkCRCFlitErrorCountTotal, "GetNvLinkErrorCounter(CRC_FLIT)"},
	{gonvml.NVLINK_ERROR_DL_CRC_DATA, telemetry.MetricNVLinkCRCDataErrorsTotal, telemetry.DCGMNVLinkCRCDataErrorCountTotal, "GetNvLinkErrorCounter(CRC_DATA)"},
	{gonvml.NVLINK_ERROR_DL_REPLAY, telemetry.MetricNVLinkReplayErrorsTotal, telemetry.DCGMNVLinkReplayErrorCountTotal, "GetNvLinkErrorCounter(REPLAY)"},
	{gonvml.NVLINK_ERROR_DL_RECOVERY, telemetry.MetricNVLinkRecoveryErrorsTotal, telemetry.DCGMNVLinkRecoveryErrorCountTotal, "GetNvLinkErrorCounter(RECOVERY)"},
}

// CollectHealth emits, per link, whether it is up and its error counters, and the
// per-GPU sums of the error counters.
func (s *Source) CollectHealth(ctx context.Context, emit func(telemetry.Sample)) error {
	return s.each(ctx, emit, true)
}

// Collect emits, per link, the bytes sent and received, and their per-GPU sum.
func (s *Source) Collect(ctx context.Context, emit func(telemetry.Sample)) error {
	return s.each(ctx, emit, false)
}

func (s *Source) each(ctx context.Context, emit func(telemetry.Sample), health bool) error {
	if len(s.gpus) == 0 {
		return collector.ErrNoDevices
	}
	var errs []error
	for _, g := range s.gpus {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("nvlink: GPU %d and later not read: %w", g.info.Index, err))
			break
		}
		dev, err := s.ready(g)
		if err != nil {
			errs = append(errs, err)
		}
		if dev == nil || len(g.links) == 0 {
			continue
		}
		p := pass{g: g, t: s.now(), emit: emit}
		if health {
			healthGPU(&p, dev)
		} else {
			trafficGPU(&p, dev)
		}
		errs = append(errs, p.errs...)
	}
	return errors.Join(errs...)
}

func healthGPU(p *pass, dev gonvml.Device) {
	var sums [len(errorCounters)]uint64
	var complete [len(errorCounters)]bool
	for i := range complete {
		complete[i] = true
	}
	for _, l := range p.g.links {
		if p.stop {
			return
		}
		if st, r := dev.GetNvLinkState(l.index); p.ok("GetNvLinkState", l.index, r) {
			up := 0.0
			if st == gonvml.FEATURE_ENABLED {
				up = 1
			}
			p.put(telemetry.MetricNVLinkUp, l.labels, up)
		}
		for i, c := range errorCounters {
			if p.stop {
				return
			}
			v, r := dev.GetNvLinkErrorCounter(l.index, c.counter)
			if !p.ok(c.call, l.index, r) {
				complete[i] = false
				continue
			}
			sums[i] += v
			p.put(c.name, l.labels, float64(v))
		}
	}
	for i, c := range errorCounters {
		if complete[i] {
			p.put(c.sum, p.g.labels, float64(sums[i]))
		}
	}
}

const kib = 1024

func trafficGPU(p *pass, dev gonvml.Device) {
	g := p.g
	if g.tp == tpUnknown || g.tp == tpFields {
		if trafficFields(p, dev) {
			g.tp = tpFields
			return
		}
		if p.stop {
			return
		}
		g.tp = tpCounter
	}
	if g.tp == tpCounter && !trafficCounters(p, dev) && !p.stop {
		g.tp = tpNone
	}
}

// trafficFields reads the throughput fields; false when the GPU has none.
func trafficFields(p *pass, dev gonvml.Device) bool {
	g := p.g
	fv := g.fields
	for i, l := range g.links {
		fv[2*i] = gonvml.FieldValue{FieldId: gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: uint32(l.index)}
		fv[2*i+1] = gonvml.FieldValue{FieldId: gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: uint32(l.index)}
	}
	if !p.ok("GetFieldValues(NVLINK_THROUGHPUT_DATA)", -1, dev.GetFieldValues(fv)) {
		return false
	}
	got, complete := false, true
	var total uint64
	for i, l := range g.links {
		for dir, name := range [2]string{telemetry.MetricNVLinkTransmittedBytesTotal, telemetry.MetricNVLinkReceivedBytesTotal} {
			f := &fv[2*i+dir]
			if !p.ok("GetFieldValues(NVLINK_THROUGHPUT_DATA)", l.index, gonvml.Return(f.NvmlReturn)) {
				complete = false
				continue
			}
			v, ok := fieldU64(f)
			if !ok {
				complete = false
				continue
			}
			got = true
			total += v * kib
			p.put(name, l.labels, float64(v*kib))
		}
	}
	if !got {
		return false
	}
	if complete {
		p.put(telemetry.DCGMNVLinkBandwidthTotal, g.labels, float64(total))
	}
	return true
}

// trafficCounters reads utilization counter 0 of links whose control counts
// bytes; false when no link does.
func trafficCounters(p *pass, dev gonvml.Device) bool {
	g := p.g
	got, complete := false, true
	var total uint64
	for _, l := range g.links {
		if p.stop {
			return got
		}
		ctl, r := dev.GetNvLinkUtilizationControl(l.index, 0)
		if !p.ok("GetNvLinkUtilizationControl", l.index, r) || gonvml.NvLinkUtilizationCountUnits(ctl.Units) != gonvml.NVLINK_COUNTER_UNIT_BYTES {
			complete = false
			continue
		}
		rx, tx, r := dev.GetNvLinkUtilizationCounter(l.index, 0)
		if !p.ok("GetNvLinkUtilizationCounter", l.index, r) {
			complete = false
			continue
		}
		got = true
		total += rx + tx
		p.put(telemetry.MetricNVLinkTransmittedBytesTotal, l.labels, float64(tx))
		p.put(telemetry.MetricNVLinkReceivedBytesTotal, l.labels, float64(rx))
	}
	if got && complete {
		p.put(telemetry.DCGMNVLinkBandwidthTotal, g.labels, float64(total))
	}
	return got
}

// fieldU64 decodes an integer field value.
func fieldU64(f *gonvml.FieldValue) (uint64, bool) {
	switch gonvml.ValueType(f.ValueType) {
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(f.Value[:])), true
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return binary.NativeEndian.Uint64(f.Value[:]), true
	}
	return 0, false
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
