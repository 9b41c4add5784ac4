package demo

import (
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// EventKind says what an Event is.
type EventKind string

// Event kinds.
const (
	EventXid     EventKind = "xid"     // the agent counted an Xid (gpuwatch_xid_errors_total grew)
	EventRaised  EventKind = "raised"  // a health condition appeared
	EventChanged EventKind = "changed" // a condition's severity or action changed
	EventCleared EventKind = "cleared" // a condition went away
	EventState   EventKind = "state"   // the node's health state changed
)

// Event is one change an agent reported between two cycles.
type Event struct {
	At   time.Time
	Node string
	Kind EventKind
	// Target is what the event is on, without the node: "gpu3", "gpu5/nvlink7",
	// "mlx5_6/port1"; "" for the node itself.
	Target string
	GPU    int // the GPU of a GPU or NVLink target, else -1
	// Condition and Severity of a condition event.
	Condition telemetry.ConditionKind
	Severity  telemetry.Severity
	// Xid is the Xid counted (EventXid) or the one an xid condition rests on.
	Xid int
	// Count is how many times the Xid was counted since the previous cycle, Total
	// the counter's value.
	Count, Total int
	// Action is the condition's recommended action, the Xid's catalog action, or
	// the node's action for a state change.
	Action   telemetry.Action
	From, To telemetry.State // EventState
	Text     string          // the condition's message, or the node's summary
}

// NodeView is one node as its agent last reported it: the health report, and the
// values the summary shows, read from the agent's last snapshot.
type NodeView struct {
	Name, Leaf string
	URL        string // the agent's base URL; /metrics, /health, /topology, /sources
	Report     healthreport.Report
	Snapshot   *collector.Snapshot
	GPUs       []GPUView
	Ports      []PortView
	Xids       int // Xids counted (sum of gpuwatch_xid_errors_total)
	SourcesUp  int // sources and derivers up
	Sources    int
	Samples    int
}

// GPUView is one GPU's values from the agent's snapshot.
type GPUView struct {
	Index    int
	Lost     bool // gpuwatch_gpu_lost
	Answered bool // NVML answered telemetry (a temperature was read)
	Util     float64
	PowerW   float64
	TempC    float64
	Procs    float64
	EnergyMJ float64
	LinksUp  int
	Links    int
}

// PortView is one InfiniBand port.
type PortView struct {
	Device string
	Port   string
	Active bool
}

// viewOf reads the values the summary shows out of a snapshot.
func viewOf(name, leaf, url string, snap *collector.Snapshot, r healthreport.Report) NodeView {
	v := NodeView{Name: name, Leaf: leaf, URL: url, Report: r, Snapshot: snap, Samples: len(snap.Samples)}
	for _, s := range snap.Sources {
		v.Sources++
		if s.Up {
			v.SourcesUp++
		}
	}
	if snap.Inventory != nil {
		for _, g := range snap.Inventory.GPUs {
			v.GPUs = append(v.GPUs, GPUView{Index: g.Index})
		}
	}
	gpu := func(s telemetry.Sample) *GPUView {
		i, err := strconv.Atoi(s.Labels.Get(telemetry.LabelGPUIndex))
		if err != nil {
			return nil
		}
		for j := range v.GPUs {
			if v.GPUs[j].Index == i {
				return &v.GPUs[j]
			}
		}
		return nil
	}
	for _, s := range snap.Samples {
		switch s.Name {
		case telemetry.MetricXidErrorsTotal:
			v.Xids += int(s.Value)
		case telemetry.NodeIBStateID:
			v.Ports = append(v.Ports, PortView{Device: s.Labels.Get(telemetry.NodeExpLabelDevice), Port: s.Labels.Get(telemetry.NodeExpLabelPort), Active: s.Value == 4})
		}
		g := gpu(s)
		if g == nil {
			continue
		}
		switch s.Name {
		case telemetry.MetricGPULost:
			g.Lost = s.Value == 1
		case telemetry.DCGMGPUTemp:
			g.TempC, g.Answered = s.Value, true
		case telemetry.DCGMGPUUtil:
			g.Util = s.Value
		case telemetry.DCGMPowerUsage:
			g.PowerW = s.Value
		case telemetry.DCGMTotalEnergyConsumption:
			g.EnergyMJ = s.Value
		case telemetry.MetricGPUProcesses:
			g.Procs = s.Value
		case telemetry.MetricNVLinkUp:
			g.Links++
			if s.Value == 1 {
				g.LinksUp++
			}
		}
	}
	return v
}

// fleetTotals are the one-line numbers of the fleet.
type fleetTotals struct {
	gpus, busy, allocated, lost, silent int
	utilSum, powerW                     float64
	hottest                             float64
	hottestAt                           string
	linksUp, links                      int
	portsUp, ports                      int
	xids, conditions                    int
	states                              map[telemetry.State]int
}

func totals(nodes []NodeView) fleetTotals {
	t := fleetTotals{states: map[telemetry.State]int{}}
	for _, n := range nodes {
		t.xids += n.Xids
		for _, c := range n.Report.AllConditions() {
			if notable(c) {
				t.conditions++
			}
		}
		t.states[n.Report.State]++
		for _, g := range n.GPUs {
			t.gpus++
			switch {
			case g.Lost:
				t.lost++
				continue
			case !g.Answered:
				t.silent++
				continue
			}
			if g.Procs > 0 {
				t.allocated++
			}
			if g.Util >= 5 {
				t.busy++
			}
			t.utilSum += g.Util
			t.powerW += g.PowerW
			t.linksUp += g.LinksUp
			t.links += g.Links
			if g.TempC > t.hottest {
				t.hottest, t.hottestAt = g.TempC, n.Name+"/gpu"+strconv.Itoa(g.Index)
			}
		}
		for _, p := range n.Ports {
			t.ports++
			if p.Active {
				t.portsUp++
			}
		}
	}
	return t
}

// accounting sums GPU time and energy over the full cycles, from the agents'
// samples: allocated (a process on the GPU) against measured (weighted by
// utilization), which is what fair share by measured use charges.
type accounting struct {
	last                 time.Time
	allocGPUs, measured  float64 // GPU-seconds
	energy0, energy      float64 // fleet energy counter, mJ
	started, haveEnergy0 bool
}

func (a *accounting) add(nodes []NodeView, now time.Time) {
	dt := 0.0
	if a.started {
		dt = now.Sub(a.last).Seconds()
	}
	a.started, a.last = true, now
	energy := 0.0
	for _, n := range nodes {
		for _, g := range n.GPUs {
			energy += g.EnergyMJ
			if g.Lost || !g.Answered {
				continue
			}
			if g.Procs > 0 {
				a.allocGPUs += dt
				a.measured += dt * g.Util / 100
			}
		}
	}
	if !a.haveEnergy0 {
		a.energy0, a.haveEnergy0 = energy, true
	}
	// A lost GPU reports no energy; never let the fleet total go backwards.
	a.energy = max(a.energy, energy)
}

// worstNode is the node whose health is worst at the end (the first node when all
// are healthy): its /metrics is the one worth reading. Nodes taking no new work
// come first, then the ones with the most notable conditions.
func worstNode(nodes []NodeView) string {
	best, rank := "", -1
	for _, n := range nodes {
		r := n.Report
		score := int(r.Severity) * 1000
		for _, c := range r.AllConditions() {
			if notable(c) {
				score++
			}
		}
		if !r.State.Schedulable() {
			score += 100000
		}
		if score > rank {
			best, rank = n.Name, score
		}
	}
	return best
}
