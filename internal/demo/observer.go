package demo

import (
	"fmt"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/collector/xid"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Thermal and power bits of NVML's clocks event reasons.
const (
	reasonsThermal = nvml.ClocksEventReasonSwThermalSlowdown | nvml.ClocksThrottleReasonHwThermalSlowdown
	reasonsPower   = nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown
)

// Event is one thing the demo noticed: an Xid from a kernel log, or a change
// between two reads of the hardware.
type Event struct {
	At     time.Time
	Node   string
	GPU    int // -1 for node-level events
	Xid    int // 0 unless the event is an Xid
	Action telemetry.Action
	Text   string
}

// NodeSnap is one node as the observer last read it.
type NodeSnap struct {
	Name  string
	Leaf  string
	GPUs  []gpuView
	Ports []portView
	Xids  int // Xid lines seen so far
}

// Snapshot is the whole fleet at one moment.
type Snapshot struct {
	At    time.Time
	Nodes []NodeSnap
}

// nodeObs reads one node. It knows only what an agent on that node would be
// configured with: its name and leaf, its NVML library, its sysfs root and the
// path of its kernel log.
type nodeObs struct {
	name, leaf string
	lib        nvml.Interface
	sysRoot    string
	pci        map[string]int // canonical PCI bus id → GPU index, from NVML
	tail       logTail
	recent     map[int][]xidAt // per GPU index, the Xids of the last xidWindow
	gpus       []gpuView
	ports      []portView
	xids       int
}

type observer struct {
	nodes   []*nodeObs
	changes []Event
	last    time.Time
	// Accumulated over every read, for the final summary.
	allocGPUs   float64 // GPU-seconds with a process on the GPU
	measuredGPU float64 // GPU-seconds weighted by measured utilization
	energy0     float64 // fleet energy at the first read, joules
	energy      float64 // fleet energy at the last read, joules
}

func newObserver(f *simhw.Fleet) (*observer, error) {
	o := &observer{}
	for _, n := range f.Nodes() {
		lib := n.NVML()
		if err := initNVML(lib, n.Name()); err != nil {
			o.close()
			return nil, err
		}
		o.nodes = append(o.nodes, &nodeObs{
			name:    n.Name(),
			leaf:    n.Leaf(),
			lib:     lib,
			sysRoot: n.SysRoot(),
			pci:     pciIndex(lib),
			tail:    logTail{path: n.KmsgPath()},
		})
	}
	return o, nil
}

func (o *observer) close() {
	for _, n := range o.nodes {
		n.lib.Shutdown()
	}
}

// xidWindow is how far back Xids on one GPU are resolved together through the
// catalog's workflows (48 with 63 or 64 → drain and reset).
const xidWindow = 10 * time.Minute

type xidAt struct {
	code int
	at   time.Time
}

// readLogs returns the Xids appended to every node's kernel log since the last
// call, stamped with the time they were read.
func (o *observer) readLogs(now time.Time) ([]Event, error) {
	var out []Event
	for _, n := range o.nodes {
		lines, err := n.tail.next()
		if err != nil {
			return out, fmt.Errorf("node %s: %w", n.name, err)
		}
		for _, l := range lines {
			if l.Kind != xid.KindXid {
				continue
			}
			n.xids++
			out = append(out, n.xidEvent(l, now))
		}
	}
	return out, nil
}

// xidEvent turns one Xid line into an event with the catalog's action: the
// recovery action the driver announced for Xid 154, the workflow over the GPU's
// recent Xids where the catalog defines one, the Xid's own action otherwise.
func (n *nodeObs) xidEvent(l xid.Line, now time.Time) Event {
	e := Event{At: now, Node: n.name, GPU: -1, Xid: l.Xid}
	if i, ok := n.pci[l.CanonicalPCI()]; ok {
		e.GPU = i
	}
	info, ok := telemetry.LookupXid(l.Xid)
	name := "(not in the catalog)"
	e.Action = telemetry.ActionContactSupport
	if ok {
		name = strings.Join(strings.Fields(info.Mnemonic), " ")
		e.Action = info.Action
	}
	note := ""
	switch {
	case l.Xid == 154:
		if _, to, err := telemetry.ParseXid154(l.Message); err == nil {
			e.Action = to.Action()
		}
	case e.GPU >= 0:
		if n.recent == nil {
			n.recent = map[int][]xidAt{}
		}
		kept := n.recent[e.GPU][:0]
		var codes []int
		for _, x := range n.recent[e.GPU] {
			if now.Sub(x.at) <= xidWindow {
				kept = append(kept, x)
				codes = append(codes, x.code)
			}
		}
		n.recent[e.GPU] = append(kept, xidAt{l.Xid, now})
		if len(codes) > 0 {
			if r := telemetry.ResolveXids(append(codes, l.Xid)); r.Rank() > e.Action.Rank() {
				e.Action = r
				note = fmt.Sprintf(" [with Xid %s in the last %s]", joinInts(codes), xidWindow)
			}
		}
	}
	e.Text = fmt.Sprintf("Xid %d %s: %s%s", l.Xid, name, l.Message, note)
	return e
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// snapshot reads every node through NVML and procfs and records what changed.
func (o *observer) snapshot(at time.Time) Snapshot {
	var dt float64
	if !o.last.IsZero() {
		dt = at.Sub(o.last).Seconds()
	}
	snap := Snapshot{At: at}
	energy := 0.0
	for _, n := range o.nodes {
		gpus, err := observeGPUs(n.lib)
		if err != nil {
			o.changes = append(o.changes, Event{At: at, Node: n.name, GPU: -1, Text: err.Error()})
		}
		ports, errs := observeIB(n.sysRoot)
		for _, err := range errs {
			o.changes = append(o.changes, Event{At: at, Node: n.name, GPU: -1, Text: err.Error()})
		}
		o.diff(at, n, gpus, ports)
		n.gpus, n.ports = gpus, ports
		for _, g := range gpus {
			energy += g.EnergyJ
			if g.Procs > 0 {
				o.allocGPUs += dt
				o.measuredGPU += dt * float64(g.Util) / 100
			}
		}
		snap.Nodes = append(snap.Nodes, NodeSnap{Name: n.name, Leaf: n.leaf, GPUs: gpus, Ports: ports, Xids: n.xids})
	}
	if o.last.IsZero() {
		o.energy0 = energy
	}
	// A lost GPU reports no energy; never let the fleet total go backwards.
	o.energy = max(o.energy, energy)
	o.last = at
	return snap
}

// diff records what changed on one node since its previous read.
func (o *observer) diff(at time.Time, n *nodeObs, gpus []gpuView, ports []portView) {
	add := func(gpu int, format string, args ...any) {
		o.changes = append(o.changes, Event{At: at, Node: n.name, GPU: gpu, Text: fmt.Sprintf(format, args...)})
	}
	if len(n.gpus) == len(gpus) {
		for i, cur := range gpus {
			prev := n.gpus[i]
			switch {
			case cur.Lost && !prev.Lost:
				add(i, "GPU lost: NVML answers ERROR_GPU_IS_LOST")
				continue
			case !cur.Lost && prev.Lost:
				add(i, "GPU answers NVML again")
				continue
			case cur.Err != "" && prev.Err == "":
				add(i, "GPU not answering NVML: %s", cur.Err)
				continue
			case cur.Err == "" && prev.Err != "":
				add(i, "GPU answers NVML again")
				continue
			case cur.Lost || cur.Err != "":
				continue
			}
			if cur.Reasons&reasonsThermal != 0 && prev.Reasons&reasonsThermal == 0 {
				add(i, "thermal slowdown: %d C, SM clock %d MHz", cur.TempC, cur.SMMHz)
			}
			if cur.powerCapped() && !prev.powerCapped() {
				add(i, "power capped below its limit: %.0f W of %.0f W, SM clock %d MHz", cur.PowerW, cur.LimitW, cur.SMMHz)
			}
			if !cur.slowed() && prev.slowed() {
				add(i, "clocks back to normal: SM clock %d MHz", cur.SMMHz)
			}
			if d := cur.ECCCorr - prev.ECCCorr; cur.ECCCorr > prev.ECCCorr && d >= 100 {
				add(i, "corrected ECC errors: +%d", d)
			}
			if cur.ECCUnc > prev.ECCUnc {
				add(i, "uncorrected ECC errors: +%d", cur.ECCUnc-prev.ECCUnc)
			}
			if cur.Pending && !prev.Pending {
				add(i, "row remap pending: the GPU needs a reset")
			}
			if cur.RemapErr && !prev.RemapErr {
				add(i, "row remapping failed")
			}
			if cur.CRC >= prev.CRC+100 {
				add(i, "NVLink CRC errors: +%d", cur.CRC-prev.CRC)
			}
			if cur.LinksUp < prev.LinksUp {
				add(i, "NVLink down: %d of %d links up", cur.LinksUp, cur.Links)
			}
			if cur.LinksUp > prev.LinksUp {
				add(i, "NVLink up: %d of %d links up", cur.LinksUp, cur.Links)
			}
		}
	}
	if len(n.ports) == len(ports) {
		for i, cur := range ports {
			prev := n.ports[i]
			name := fmt.Sprintf("%s port %d", cur.Device, cur.Port)
			switch {
			case prev.Active && !cur.Active:
				add(-1, "InfiniBand %s went %s", name, cur.State)
			case !prev.Active && cur.Active:
				add(-1, "InfiniBand %s is ACTIVE again", name)
			case cur.Downed > prev.Downed:
				add(-1, "InfiniBand %s flapped: link_downed +%d", name, cur.Downed-prev.Downed)
			}
			if cur.Symbol > prev.Symbol {
				add(-1, "InfiniBand %s symbol errors: +%d", name, cur.Symbol-prev.Symbol)
			}
		}
	}
}
