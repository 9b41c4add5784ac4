package simhw

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/simhw/simkmsg"
)

// DCGM is one connection to a simulated node's DCGM host engine: the
// collector/dcgm Library seam, shaped like go-dcgm's API and answering in its
// types, over the node's simulated GPUs. The agent's DCGM source runs on it
// unchanged, as the NVML sources run on Server.
//
// Profiling fields (DCGM_FI_PROF_*, the ids dcgm-exporter exports) follow the
// workload model: an idle GPU, or one held by an idle-hold job, reads 0; a
// training job keeps the SMs and the tensor pipes busy (about 0.9 and 0.6 of the
// time at full utilization) with some FP16 and FP32 work; an inference job's
// tensor activity comes in bursts (a per-second on/off pattern hashed from the
// GPU and the second, so it is the same on every run with the same seed and
// clock). DRAM activity follows the memory utilization, PCIe and NVLink bytes
// the simulated traffic. A lost GPU answers DCGM_ST_GPU_IS_LOST and a hung one
// blank values, which the source leaves out.
//
// Health watches report, for the watched systems, what the node's injected
// faults leave behind, as DCGM's own watches would: double-bit ECC errors and row
// remapping (mem), a GPU fallen off the bus (pcie, Xid 79), NVLinks down, CRC
// storms above 100 errors a second on a link and an unregistered fabric
// (nvlink), thermal and power-brake slowdowns while the clocks are held down
// (thermal, power), GPU-stopping Xids (driver) and NVSwitch SXids
// (nvswitch_fatal, nvswitch_nonfatal). An incident lasts while its cause does (a
// reset or recover clears it).
//
// Like go-dcgm, every call but Connect fails until Connect succeeded. A
// connection is not safe for concurrent use (the source serializes its calls);
// Node.DCGM hands out a new one per caller.
type DCGM struct {
	node *Node

	mu        sync.Mutex
	connected bool
	ids       map[uint]*gpu // DCGM GPU id → GPU, fixed at GPUs
	fields    []godcgm.Short
	systems   godcgm.HealthSystem
	watchGPUs []uint
}

// DCGM returns a new connection to the node's simulated DCGM host engine.
func (n *Node) DCGM() *DCGM { return &DCGM{node: n} }

var errDCGMNotConnected = errors.New("simulated dcgm: not connected (no successful Connect)")

// Connect connects to the host engine. The address and the embedded flag are
// not used: every node runs one.
func (d *DCGM) Connect(embedded bool, address string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.connected {
		return errors.New("simulated dcgm: already connected")
	}
	d.connected = true
	return nil
}

// Disconnect drops the connection and its watches.
func (d *DCGM) Disconnect() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.connected {
		return errDCGMNotConnected
	}
	d.connected, d.ids, d.fields, d.systems, d.watchGPUs = false, nil, nil, 0, nil
	return nil
}

// GPUs lists the GPUs DCGM supports: those the driver initialised, numbered in
// NVML order. With the driver not loaded the host engine has no NVML and fails.
func (d *DCGM) GPUs() ([]godcgm.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.connected {
		return nil, errDCGMNotConnected
	}
	n := d.node
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.driverUnloaded {
		return nil, errors.New("simulated dcgm: the host engine cannot load NVML (the NVIDIA driver is not loaded)")
	}
	d.ids = map[uint]*gpu{}
	var out []godcgm.Device
	for _, g := range n.gpus {
		if g.hidden {
			continue
		}
		id := uint(len(out))
		d.ids[id] = g
		out = append(out, godcgm.Device{GPU: id, DCGMSupported: "Yes", UUID: g.uuid,
			Power: uint(n.shape.PowerLimitW)})
	}
	return out, nil
}

// WatchFields starts sampling fields on gpus.
func (d *DCGM) WatchFields(gpus []uint, fields []godcgm.Short, every time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.connected {
		return errDCGMNotConnected
	}
	if err := d.known(gpus); err != nil {
		return err
	}
	if every <= 0 {
		return fmt.Errorf("simulated dcgm: update interval %s: must be positive", every)
	}
	d.fields = slices.Clone(fields)
	d.watchGPUs = slices.Clone(gpus)
	return nil
}

// WatchHealth enables the health watches of systems on gpus.
func (d *DCGM) WatchHealth(gpus []uint, systems godcgm.HealthSystem) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.connected {
		return errDCGMNotConnected
	}
	if err := d.known(gpus); err != nil {
		return err
	}
	d.systems = systems
	if d.watchGPUs == nil {
		d.watchGPUs = slices.Clone(gpus)
	}
	return nil
}

// known checks that every id is a GPU GPUs listed. d.mu is held.
func (d *DCGM) known(gpus []uint) error {
	for _, id := range gpus {
		if d.ids[id] == nil {
			return fmt.Errorf("simulated dcgm: GPU %d: no such GPU (DCGM_ST_BADPARAM)", id)
		}
	}
	return nil
}

// Latest returns the latest value of every field on every GPU, stamped with the
// node's clock. A field that is not watched reads blank, as DCGM answers for a
// field it has no samples of.
func (d *DCGM) Latest(gpus []uint, fields []godcgm.Short) ([]godcgm.FieldValue_v2, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.connected {
		return nil, errDCGMNotConnected
	}
	if err := d.known(gpus); err != nil {
		return nil, err
	}
	n := d.node
	n.mu.RLock()
	defer n.mu.RUnlock()
	ts := n.now.UnixMicro()
	out := make([]godcgm.FieldValue_v2, 0, len(gpus)*len(fields))
	for _, id := range gpus {
		g := d.ids[id]
		p := g.profile(n.now)
		for _, f := range fields {
			fv := godcgm.FieldValue_v2{Version: 2, EntityGroupId: godcgm.FE_GPU, EntityID: id, FieldID: f, TS: ts}
			v, isInt, ok := p.value(f)
			switch {
			case g.lost:
				fv.Status = godcgm.DCGM_ST_GPU_IS_LOST
			case !ok || g.hung || !slices.Contains(d.fields, f):
				setBlank(&fv, isInt)
			case isInt:
				fv.FieldType = godcgm.DCGM_FT_INT64
				binary.LittleEndian.PutUint64(fv.Value[:8], uint64(int64(v)))
			default:
				fv.FieldType = godcgm.DCGM_FT_DOUBLE
				binary.LittleEndian.PutUint64(fv.Value[:8], math.Float64bits(v))
			}
			out = append(out, fv)
		}
	}
	return out, nil
}

func setBlank(fv *godcgm.FieldValue_v2, isInt bool) {
	if isInt {
		fv.FieldType = godcgm.DCGM_FT_INT64
		binary.LittleEndian.PutUint64(fv.Value[:8], uint64(godcgm.DCGM_FT_INT64_BLANK))
		return
	}
	fv.FieldType = godcgm.DCGM_FT_DOUBLE
	binary.LittleEndian.PutUint64(fv.Value[:8], math.Float64bits(godcgm.DCGM_FT_FP64_BLANK))
}

// Health runs the health check of the watched systems on the watched GPUs and
// the node's NVSwitches.
func (d *DCGM) Health() (godcgm.HealthResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.connected {
		return godcgm.HealthResponse{}, errDCGMNotConnected
	}
	if d.systems == 0 {
		return godcgm.HealthResponse{}, errors.New("simulated dcgm: no health watches set")
	}
	n := d.node
	n.mu.RLock()
	defer n.mu.RUnlock()
	var resp godcgm.HealthResponse
	add := func(sys godcgm.HealthSystem, res godcgm.HealthResult, group godcgm.Field_Entity_Group, id uint,
		code godcgm.HealthCheckErrorCode, msg string) {
		if d.systems&sys == 0 {
			return
		}
		resp.Incidents = append(resp.Incidents, godcgm.Incident{System: sys, Health: res,
			Error:      godcgm.DiagErrorDetail{Message: msg, Code: code},
			EntityInfo: godcgm.GroupEntityPair{EntityGroupId: group, EntityId: id}})
		resp.OverallHealth = max(resp.OverallHealth, res)
	}
	const (
		warn = godcgm.DCGM_HEALTH_RESULT_WARN
		fail = godcgm.DCGM_HEALTH_RESULT_FAIL
		gpuE = godcgm.FE_GPU
	)
	for _, id := range d.watchGPUs {
		g := d.ids[id]
		if g.lost {
			add(godcgm.DCGM_HEALTH_WATCH_PCIE, fail, gpuE, id, godcgm.DCGM_FR_XID_ERROR,
				fmt.Sprintf("Detected XID 79 for GPU %d: the GPU has fallen off the bus.", id))
			continue // nothing else of it can be read
		}
		if dbe := g.eccTotal(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); dbe > 0 {
			add(godcgm.DCGM_HEALTH_WATCH_MEM, fail, gpuE, id, godcgm.DCGM_FR_VOLATILE_DBE_DETECTED,
				fmt.Sprintf("Detected %d volatile double-bit ECC error(s) in GPU %d.", dbe, id))
		}
		if g.remapFailure {
			add(godcgm.DCGM_HEALTH_WATCH_MEM, fail, gpuE, id, godcgm.DCGM_FR_ROW_REMAP_FAILURE,
				fmt.Sprintf("GPU %d had a row remapping failure.", id))
		} else if g.remapPending {
			add(godcgm.DCGM_HEALTH_WATCH_MEM, warn, gpuE, id, godcgm.DCGM_FR_PENDING_ROW_REMAP,
				fmt.Sprintf("GPU %d has uncorrectable memory errors and row remappings are pending.", id))
		}
		for _, x := range g.dcgmXids {
			add(godcgm.DCGM_HEALTH_WATCH_DRIVER, fail, gpuE, id, godcgm.DCGM_FR_XID_ERROR,
				fmt.Sprintf("Detected XID %d for GPU %d.", x, id))
		}
		for li := range g.links {
			l := &g.links[li]
			if !l.active {
				add(godcgm.DCGM_HEALTH_WATCH_NVLINK, fail, gpuE, id, godcgm.DCGM_FR_NVLINK_DOWN,
					fmt.Sprintf("GPU %d's NvLink link %d is currently down", id, li))
			} else if rate := l.crcStorm.rate(); l.crcStorm.active() && rate > nvlinkCRCPerSecond {
				add(godcgm.DCGM_HEALTH_WATCH_NVLINK, warn, gpuE, id, godcgm.DCGM_FR_NVLINK_ERROR_THRESHOLD,
					fmt.Sprintf("Detected %.0f CRC FLIT NvLink errors per second on GPU %d's link %d which exceeds threshold of %d", rate, id, li, nvlinkCRCPerSecond))
			}
		}
		if g.fabricDown {
			add(godcgm.DCGM_HEALTH_WATCH_NVLINK, fail, gpuE, id, godcgm.DCGM_FR_FABRIC_MANAGER_TRAINING_ERROR,
				fmt.Sprintf("GPU %d is not registered in the NVLink fabric: the fabric manager has not finished training.", id))
		}
		if g.reasons&(nvml.ClocksThrottleReasonHwThermalSlowdown|nvml.ClocksEventReasonSwThermalSlowdown) != 0 {
			add(godcgm.DCGM_HEALTH_WATCH_THERMAL, warn, gpuE, id, godcgm.DCGM_FR_CLOCK_THROTTLE_THERMAL,
				fmt.Sprintf("Clocks event for GPU %d: thermal slowdown at %.0f C.", id, g.tempC))
		}
		if g.reasons&nvml.ClocksThrottleReasonHwPowerBrakeSlowdown != 0 {
			add(godcgm.DCGM_HEALTH_WATCH_POWER, warn, gpuE, id, godcgm.DCGM_FR_CLOCK_THROTTLE_POWER,
				fmt.Sprintf("Clocks event for GPU %d: power brake, capped at %.0f W.", id, g.power.level))
		}
	}
	for _, e := range n.switchErrs {
		if e.fatal {
			add(godcgm.DCGM_HEALTH_WATCH_NVSWITCH_FATAL, fail, godcgm.FE_SWITCH, uint(e.sw), godcgm.DCGM_FR_NVSWITCH_FATAL_ERROR,
				fmt.Sprintf("Detected fatal SXid %d on NvSwitch %d link %d.", e.sxid, e.sw, e.link))
		} else {
			add(godcgm.DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL, warn, godcgm.FE_SWITCH, uint(e.sw), godcgm.DCGM_FR_NVSWITCH_NON_FATAL_ERROR,
				fmt.Sprintf("Detected non-fatal SXid %d on NvSwitch %d link %d.", e.sxid, e.sw, e.link))
		}
	}
	return resp, nil
}

// nvlinkCRCPerSecond is the CRC error rate on one link above which DCGM's NVLink
// watch warns.
const nvlinkCRCPerSecond = 100

// switchErr is an SXid DCGM's NVSwitch watches report until a node-level
// recover.
type switchErr struct {
	sw, sxid, link int
	fatal          bool
}

// noteSXid records an SXid for the NVSwitch health watches. The caller holds the
// lock.
func (n *Node) noteSXid(s simkmsg.SXid, sw, link int) {
	e := switchErr{sw: sw, sxid: s.Code, link: link, fatal: s.Fatal}
	for i, o := range n.switchErrs {
		if o.sw == sw && o.sxid == s.Code && o.link == link {
			n.switchErrs[i] = e
			return
		}
	}
	n.switchErrs = append(n.switchErrs, e)
}

// dcgmXid reports whether DCGM's health watches flag an Xid on their own (the
// driver system: the GPU stopped and needs a reset). Xids that leave other
// traces (48 and 94/95 in the ECC counters, 63/64 in row remapping, 74 in the
// NVLink state, 79 as a lost GPU) are reported through those.
func dcgmXid(xid int) bool {
	switch xid {
	case 62, 95, 119, 120:
		return true
	}
	return false
}

// profile is what the profiling counters of one GPU read now.
type profile struct {
	grEngine, smActive, smOccupancy, tensor, dram, fp64, fp32, fp16 float64
	pcieTx, pcieRx, nvlinkTx, nvlinkRx                              float64 // bytes/s
}

// profile returns the GPU's profiling fields at now from its simulated state.
// It draws no random numbers (reading must not perturb the simulation): the
// inference bursts come from a hash of the GPU and the second. The caller holds
// the node's lock.
func (g *gpu) profile(now time.Time) profile {
	p := profile{
		pcieTx:   g.pcieTxKBs * 1000,
		pcieRx:   g.pcieRxKBs * 1000,
		nvlinkTx: g.nvTxBps,
		nvlinkRx: g.nvRxBps,
		dram:     g.memUtil / 100 * 0.8,
	}
	u := g.util / 100
	if u <= 0 || g.job == nil {
		p.dram = 0
		return p
	}
	p.grEngine = u
	switch g.job.Kind {
	case JobTraining:
		p.smActive = 0.93 * u
		p.smOccupancy = 0.5 * u
		p.tensor = 0.62 * u
		p.fp16 = 0.18 * u
		p.fp32 = 0.09 * u
		p.fp64 = 0.002 * u
	case JobInference:
		// Requests arrive in bursts: in about half the seconds the tensor pipes
		// run a batch, in the others they wait for one.
		r := g.hashUnit(now.Unix())
		burst := 0.05 + 0.05*r
		if r >= 0.5 {
			burst = 0.45 + 0.45*r
		}
		p.smActive = 0.8 * u
		p.smOccupancy = 0.3 * u
		p.tensor = math.Min(1, burst*u*1.2)
		p.fp16 = 0.1 * u * (0.5 + r)
		p.fp32 = 0.12 * u
	}
	for _, v := range []*float64{&p.grEngine, &p.smActive, &p.smOccupancy, &p.tensor, &p.dram, &p.fp64, &p.fp32, &p.fp16} {
		*v = clamp(*v, 0, 1)
	}
	return p
}

// hashUnit is a number in [0, 1) fixed by the GPU's UUID and sec.
func (g *gpu) hashUnit(sec int64) float64 {
	h := fnv.New64a()
	h.Write([]byte(g.uuid))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(sec))
	h.Write(b[:])
	return float64(h.Sum64()>>11) / (1 << 53)
}

// value is the profile's value of a DCGM field: isInt for the byte rates, ok
// false for a field the simulated GPU has no counter for.
func (p *profile) value(f godcgm.Short) (v float64, isInt, ok bool) {
	switch f {
	case godcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE:
		return p.grEngine, false, true
	case godcgm.DCGM_FI_PROF_SM_ACTIVE:
		return p.smActive, false, true
	case godcgm.DCGM_FI_PROF_SM_OCCUPANCY:
		return p.smOccupancy, false, true
	case godcgm.DCGM_FI_PROF_PIPE_TENSOR_ACTIVE:
		return p.tensor, false, true
	case godcgm.DCGM_FI_PROF_DRAM_ACTIVE:
		return p.dram, false, true
	case godcgm.DCGM_FI_PROF_PIPE_FP64_ACTIVE:
		return p.fp64, false, true
	case godcgm.DCGM_FI_PROF_PIPE_FP32_ACTIVE:
		return p.fp32, false, true
	case godcgm.DCGM_FI_PROF_PIPE_FP16_ACTIVE:
		return p.fp16, false, true
	case godcgm.DCGM_FI_PROF_PCIE_TX_BYTES:
		return math.Round(p.pcieTx), true, true
	case godcgm.DCGM_FI_PROF_PCIE_RX_BYTES:
		return math.Round(p.pcieRx), true, true
	case godcgm.DCGM_FI_PROF_NVLINK_TX_BYTES:
		return math.Round(p.nvlinkTx), true, true
	case godcgm.DCGM_FI_PROF_NVLINK_RX_BYTES:
		return math.Round(p.nvlinkRx), true, true
	}
	return 0, false, false
}
