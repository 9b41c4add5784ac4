package demo

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// printer writes the live summary. Times are shown as offsets from the fleet's
// start, the same offsets the fault scenario uses.
type printer struct {
	w     io.Writer
	start time.Time
}

func newPrinter(w io.Writer, start time.Time) *printer { return &printer{w: w, start: start} }

func (p *printer) offset(t time.Time) string {
	d := t.Sub(p.start).Round(time.Second)
	return fmt.Sprintf("+%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func (p *printer) header(f *simhw.Fleet, sc *simhw.Scenario, o Options) {
	nodes := f.Nodes()
	leaves := map[string]bool{}
	for _, n := range nodes {
		leaves[n.Leaf()] = true
	}
	shape := f.Shape()
	fmt.Fprintf(p.w, "gpuwatch demo: %d simulated %s nodes (%d GPUs each) under %d leaf switches; %d faults scripted\n",
		len(nodes), shape.Name, shape.GPUs(), len(leaves), len(sc.Faults))
	run := "until interrupted"
	if o.Duration > 0 {
		run = "for " + o.Duration.String()
	}
	speed := fmt.Sprintf("at %gx speed", o.Speed)
	if o.Speed < 0 {
		speed = "as fast as possible"
	}
	fmt.Fprintf(p.w, "simulated time starts at %s and runs %s %s; files under each node's directory in %s\n",
		f.Start().Format(time.RFC3339), run, speed, f.Spec().Root)
	fmt.Fprintln(p.w, "everything below was read back through NVML, /sys/class/infiniband (procfs) and the kernel log")
	fmt.Fprintln(p.w)
}

func (p *printer) events(evs []Event) {
	for _, e := range evs {
		where := e.Node
		if e.GPU >= 0 {
			where += fmt.Sprintf(" gpu%d", e.GPU)
		}
		act := ""
		if e.Action != telemetry.ActionNone {
			act = "  → " + string(e.Action)
		}
		text := e.Text
		if len(text) > 110 {
			text = text[:107] + "..."
		}
		fmt.Fprintf(p.w, "%s  %-14s %s%s\n", p.offset(e.At), where, text, act)
	}
}

// fleetTotals are the one-line numbers of a snapshot.
type fleetTotals struct {
	gpus, busy, allocated, lost, failing, throttled int
	utilSum                                         float64
	powerW                                          float64
	hottest                                         uint32
	hottestAt                                       string
	linksUp, links                                  int
	portsUp, ports                                  int
	xids                                            int
}

func totals(s Snapshot) fleetTotals {
	var t fleetTotals
	for _, n := range s.Nodes {
		t.xids += n.Xids
		for _, g := range n.GPUs {
			t.gpus++
			if g.Lost {
				t.lost++
				continue
			}
			if g.Err != "" {
				t.failing++
				continue
			}
			if g.Procs > 0 {
				t.allocated++
			}
			if g.Util >= 5 {
				t.busy++
			}
			if g.slowed() {
				t.throttled++
			}
			t.utilSum += float64(g.Util)
			t.powerW += g.PowerW
			t.linksUp += g.LinksUp
			t.links += g.Links
			if g.TempC > t.hottest {
				t.hottest, t.hottestAt = g.TempC, fmt.Sprintf("%s/gpu%d", n.Name, g.Index)
			}
		}
		for _, pt := range n.Ports {
			t.ports++
			if pt.Active {
				t.portsUp++
			}
		}
	}
	return t
}

func (p *printer) summary(s Snapshot) {
	t := totals(s)
	util := 0.0
	if up := t.gpus - t.lost - t.failing; up > 0 {
		util = t.utilSum / float64(up)
	}
	fmt.Fprintf(p.w, "%s  fleet: %d GPUs, %d allocated, %d busy, %d lost, %d not answering, %d slowed | util %.0f%% | %.1f kW | hottest %d C (%s) | NVLink %d/%d | IB %d/%d | %d Xids\n",
		p.offset(s.At), t.gpus, t.allocated, t.busy, t.lost, t.failing, t.throttled, util, t.powerW/1000, t.hottest, t.hottestAt,
		t.linksUp, t.links, t.portsUp, t.ports, t.xids)
}

// table prints one row per node.
func (p *printer) table(s Snapshot) {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tLEAF\tGPUS\tALLOC\tDOWN\tUTIL\tPOWER\tMAX TEMP\tNVLINK UP\tIB UP\tXIDS\tNOTES")
	for _, n := range s.Nodes {
		var alloc, lost int
		var util, power float64
		var maxT uint32
		var up, links, portsUp int
		var notes []string
		for _, g := range n.GPUs {
			if g.Lost {
				lost++
				notes = append(notes, fmt.Sprintf("gpu%d lost", g.Index))
				continue
			}
			if g.Err != "" {
				lost++
				notes = append(notes, fmt.Sprintf("gpu%d not answering (%s)", g.Index, g.Err))
				continue
			}
			if g.Procs > 0 {
				alloc++
			}
			util += float64(g.Util)
			power += g.PowerW
			maxT = max(maxT, g.TempC)
			up += g.LinksUp
			links += g.Links
			if g.Pending {
				notes = append(notes, fmt.Sprintf("gpu%d remap pending", g.Index))
			}
			if g.thermal() {
				notes = append(notes, fmt.Sprintf("gpu%d thermal slowdown", g.Index))
			}
			if g.powerCapped() {
				notes = append(notes, fmt.Sprintf("gpu%d power capped at %.0f W", g.Index, g.PowerW))
			}
		}
		for _, pt := range n.Ports {
			if pt.Active {
				portsUp++
			} else {
				notes = append(notes, fmt.Sprintf("%s %s", pt.Device, strings.ToLower(pt.State)))
			}
		}
		if ok := len(n.GPUs) - lost; ok > 0 {
			util /= float64(ok)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.0f%%\t%.1f kW\t%d C\t%d/%d\t%d/%d\t%d\t%s\n",
			n.Name, n.Leaf, len(n.GPUs), alloc, lost, util, power/1000, maxT, up, links, portsUp, len(n.Ports), n.Xids,
			strings.Join(notes, ", "))
	}
	tw.Flush()
}

func (p *printer) final(res *Result, o *observer) {
	fmt.Fprintln(p.w)
	fmt.Fprintf(p.w, "after %s of simulated time:\n", res.Simulated.Round(time.Second))
	p.table(res.Last)
	fmt.Fprintln(p.w)
	byXid := map[int]int{}
	actions := map[int]string{}
	for _, e := range res.Xids {
		byXid[e.Xid]++
		actions[e.Xid] = string(e.Action)
	}
	codes := make([]int, 0, len(byXid))
	for c := range byXid {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("Xid %d ×%d (%s)", c, byXid[c], actions[c]))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	fmt.Fprintf(p.w, "Xids read from kernel logs: %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(p.w, "other changes observed: %d\n", len(res.Events))
	h := func(s float64) float64 { return s / 3600 }
	eff := 0.0
	if o.allocGPUs > 0 {
		eff = 100 * o.measuredGPU / o.allocGPUs
	}
	fmt.Fprintf(p.w, "GPU-hours allocated %.1f, measured busy %.1f (%.0f%% efficiency); energy %.1f kWh\n",
		h(o.allocGPUs), h(o.measuredGPU), eff, (o.energy-o.energy0)/3.6e6)
}
