package health

import (
	"context"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"strconv"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func newClock() *clock                        { return &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }
func (c *clock) now() time.Time               { return c.t }
func (c *clock) add(d time.Duration)          { c.t = c.t.Add(d) }
func (c *clock) at(d time.Duration) time.Time { return c.t.Add(d) }

// node is a synthetic HGX H100 node: 8 GPUs with 18 NVLinks each, 8 InfiniBand
// ports, every counter at a non-zero absolute value as on a real node that has run
// for months.
type node struct {
	gpus, links, ports int
	order              []string
	samples            map[string]*telemetry.Sample
	sources            []collector.SourceStatus
	inv                *collector.Inventory
}

const testNode = "node1"

func gpuUUID(i int) string { return fmt.Sprintf("GPU-0000000%d-1111-2222-3333-444444444444", i) }

func gpuPCI(i int) telemetry.PCIBusID {
	p, err := telemetry.ParsePCIBusID(fmt.Sprintf("0000:%02x:00.0", []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}[i%8]))
	if err != nil {
		panic(err)
	}
	return p
}

func ibDev(i int) string { return "mlx5_" + strconv.Itoa(i) }

func newNode(filler bool) *node {
	n := &node{gpus: 8, links: 18, ports: 8, samples: map[string]*telemetry.Sample{}}
	n.inv = &collector.Inventory{Node: testNode, DriverVersion: "580.65.06"}
	for g := 0; g < n.gpus; g++ {
		n.inv.GPUs = append(n.inv.GPUs, collector.GPUInfo{Index: g, UUID: gpuUUID(g), PCIBusID: gpuPCI(g), Minor: g, Model: "NVIDIA H100 80GB HBM3"})
		gi := strconv.Itoa(g)
		set := func(name string, v float64, kv ...string) {
			n.set(name, v, append([]string{telemetry.LabelGPUIndex, gi}, kv...)...)
		}
		set(telemetry.MetricGPULost, 0)
		set(telemetry.DCGMGPURecoveryAction, 0)
		set(telemetry.DCGMRowRemapPending, 0)
		set(telemetry.DCGMRowRemapFailure, 0)
		set(telemetry.DCGMRetiredPending, 0)
		set(telemetry.DCGMRetiredSBE, 2)
		set(telemetry.DCGMRetiredDBE, 1)
		set(telemetry.DCGMUncorrectableRemappedRows, 3)
		set(telemetry.DCGMCorrectableRemappedRows, 17)
		set(telemetry.DCGMECCSBEVolTotal, 12345)
		set(telemetry.DCGMECCDBEVolTotal, 0)
		set(telemetry.DCGMECCSBEAggTotal, 987654)
		set(telemetry.DCGMECCDBEAggTotal, 4)
		set(telemetry.DCGMPCIeReplayCounter, 77)
		set(telemetry.DCGMPCIeLinkGen, 5)
		set(telemetry.DCGMPCIeMaxLinkGen, 5)
		set(telemetry.DCGMPCIeLinkWidth, 16)
		set(telemetry.DCGMPCIeMaxLinkWidth, 16)
		set(telemetry.DCGMGPUUtil, 97)
		set(telemetry.MetricGPUProcesses, 1)
		set(telemetry.DCGMClockThrottleReasons, 0x4) // SW power cap: normal
		set(telemetry.DCGMThermalViolation, 4.2e12)
		set(telemetry.DCGMPowerViolation, 9.9e13)
		set(telemetry.DCGMPersistenceMode, 1)
		set(telemetry.MetricGPUFabricState, 3) // completed
		set(telemetry.MetricGPUFabricStatus, 0)
		for l := 0; l < n.links; l++ {
			li := strconv.Itoa(l)
			set(telemetry.MetricNVLinkUp, 1, telemetry.LabelLink, li)
			set(telemetry.MetricNVLinkCRCFlitErrorsTotal, 12, telemetry.LabelLink, li)
			set(telemetry.MetricNVLinkCRCDataErrorsTotal, 3, telemetry.LabelLink, li)
			set(telemetry.MetricNVLinkReplayErrorsTotal, 40, telemetry.LabelLink, li)
			set(telemetry.MetricNVLinkRecoveryErrorsTotal, 2, telemetry.LabelLink, li)
			if filler {
				set(telemetry.MetricNVLinkTransmittedBytesTotal, 1e15, telemetry.LabelLink, li)
				set(telemetry.MetricNVLinkReceivedBytesTotal, 1e15, telemetry.LabelLink, li)
			}
		}
		if filler {
			for _, name := range []string{telemetry.DCGMSMClock, telemetry.DCGMMemClock, telemetry.DCGMMemoryTemp,
				telemetry.DCGMGPUTemp, telemetry.DCGMPowerUsage, telemetry.DCGMTotalEnergyConsumption,
				telemetry.DCGMPowerMgmtLimit, telemetry.DCGMPState, telemetry.DCGMFBUsed, telemetry.DCGMFBFree,
				telemetry.DCGMFBTotal, telemetry.DCGMMemCopyUtil, telemetry.DCGMProfSMActive, telemetry.DCGMProfSMOccupancy,
				telemetry.DCGMProfPipeTensorActive, telemetry.DCGMProfDRAMActive, telemetry.DCGMSyncBoostViolation,
				telemetry.DCGMBoardLimitViolation, telemetry.DCGMLowUtilViolation, telemetry.DCGMReliabilityViolation,
				telemetry.DCGMNVLinkBandwidthTotal, telemetry.DCGMXidErrors} {
				set(name, 1234)
			}
		}
	}
	for p := 0; p < n.ports; p++ {
		dev := ibDev(p)
		ne := func(name string, v float64) { n.set(name, v, "device", dev, "port", "1") }
		gw := func(name string, v float64) { n.set(name, v, telemetry.LabelIBDevice, dev, telemetry.LabelIBPort, "1") }
		ne(telemetry.NodeIBStateID, 4)
		ne(telemetry.NodeIBPhysicalStateID, 5)
		ne(telemetry.NodeIBRateBytesPerSecond, 50e9) // 400 Gb/s NDR
		ne(telemetry.NodeIBLinkDownedTotal, 3)
		ne(telemetry.NodeIBLinkErrorRecoveryTotal, 5)
		ne(telemetry.NodeIBPortErrorsReceivedTotal, 1200)
		gw(telemetry.MetricIBSymbolErrorsTotal, 480)
		gw(telemetry.MetricIBLocalLinkIntegrityErrorsTotal, 1)
		gw(telemetry.MetricIBExcessiveBufferOverrunErrorsTotal, 0)
		gw(telemetry.MetricIBRemotePhysicalErrorsTotal, 9)
		if filler {
			for _, name := range []string{telemetry.NodeIBPortDataReceivedBytesTotal, telemetry.NodeIBPortDataTransmittedBytesTotal,
				telemetry.NodeIBPortPacketsReceivedTotal, telemetry.NodeIBPortPacketsTransmittedTotal,
				telemetry.NodeIBUnicastPacketsReceivedTotal, telemetry.NodeIBUnicastPacketsTransmittedTotal,
				telemetry.NodeIBMulticastPacketsReceivedTotal, telemetry.NodeIBMulticastPacketsTransmittedTotal,
				telemetry.NodeIBPortDiscardsReceivedTotal, telemetry.NodeIBPortDiscardsTransmittedTotal,
				telemetry.NodeIBPortConstraintErrorsReceivedTotal, telemetry.NodeIBPortConstraintErrorsTransmittedTotal,
				telemetry.NodeIBPortTransmitWaitTotal} {
				ne(name, 5e12)
			}
		}
	}
	n.count("nvml", 8)
	n.count("pci", 8)
	for _, s := range []string{"nvml", "dcgm", "nvlink", "infiniband", "xid", "topology", "pci"} {
		n.sources = append(n.sources, collector.SourceStatus{Name: s, Up: true})
	}
	return n
}

func sampleKey(name string, kv []string) string {
	return name + telemetry.NewLabels(kv...).String()
}

// set sets (or adds) a series' value.
func (n *node) set(name string, v float64, kv ...string) {
	k := sampleKey(name, kv)
	if s := n.samples[k]; s != nil {
		s.Value = v
		return
	}
	n.samples[k] = &telemetry.Sample{Name: name, Labels: telemetry.NewLabels(kv...), Value: v}
	n.order = append(n.order, k)
}

// add adds d to a series' value; it must exist.
func (n *node) add(name string, d float64, kv ...string) {
	s := n.samples[sampleKey(name, kv)]
	if s == nil {
		panic("no series " + sampleKey(name, kv))
	}
	s.Value += d
}

// count sets gpuwatch_node_gpus of a source: "nvml" or "pci".
func (n *node) count(source string, v float64) {
	n.set(telemetry.MetricNodeGPUs, v, telemetry.LabelSource, source)
}

// source sets a source's status: down with err, or up when err is "".
func (n *node) source(name, err string) {
	for i := range n.sources {
		if n.sources[i].Name == name {
			n.sources[i].Up, n.sources[i].Err = err == "", err
			return
		}
	}
	n.sources = append(n.sources, collector.SourceStatus{Name: name, Up: err == "", Err: err})
}

func (n *node) gpu(name string, g int, v float64) {
	n.set(name, v, telemetry.LabelGPUIndex, strconv.Itoa(g))
}

func (n *node) gpuAdd(name string, g int, d float64) {
	n.add(name, d, telemetry.LabelGPUIndex, strconv.Itoa(g))
}

func (n *node) link(name string, g, l int, v float64) {
	n.set(name, v, telemetry.LabelGPUIndex, strconv.Itoa(g), telemetry.LabelLink, strconv.Itoa(l))
}

func (n *node) port(name string, p int, v float64) {
	n.set(name, v, "device", ibDev(p), "port", "1")
}

func (n *node) snapshot(now time.Time) *collector.Snapshot {
	s := &collector.Snapshot{Time: now, Inventory: n.inv}
	for _, k := range n.order {
		if smp := n.samples[k]; smp != nil {
			c := *smp
			c.Time = now
			s.Samples = append(s.Samples, c)
		}
	}
	for _, st := range n.sources {
		if st.Up {
			st.LastSuccess = now
		}
		s.Sources = append(s.Sources, st)
	}
	return s
}

// harness drives one engine over a node with a test clock.
type harness struct {
	t    testing.TB
	clk  *clock
	node *node
	e    *Engine
	out  []telemetry.Sample
	// states records every node state the engine reported, to check transitions.
	states []telemetry.State
}

func newHarness(t testing.TB, mod func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, clk: newClock(), node: newNode(false)}
	opts := Options{Node: testNode, Now: h.clk.now, BootID: "boot-1"}
	if mod != nil {
		mod(&opts)
	}
	e, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.e = e
	return h
}

// cycle advances the clock by d and runs one Derive.
func (h *harness) cycle(d time.Duration) healthreport.Report {
	h.t.Helper()
	h.clk.add(d)
	h.out = h.out[:0]
	if err := h.e.Derive(context.Background(), h.node.snapshot(h.clk.now()), func(s telemetry.Sample) { h.out = append(h.out, s) }); err != nil {
		h.t.Fatalf("Derive: %v", err)
	}
	r := h.e.Report()
	if n := len(h.states); n > 0 && !h.states[n-1].CanTransition(r.State) {
		h.t.Fatalf("node state moved %s → %s, which telemetry.State forbids", h.states[n-1], r.State)
	}
	h.states = append(h.states, r.State)
	return r
}

// cycles runs n cycles a second apart.
func (h *harness) cycles(n int) healthreport.Report {
	h.t.Helper()
	var r healthreport.Report
	for range n {
		r = h.cycle(time.Second)
	}
	return r
}

func (h *harness) xid(gpu, code int, msg string) {
	h.e.ObserveXid(collector.XidEvent{Time: h.clk.now(), GPUIndex: gpu, Xid: code, Message: msg, Origin: collector.OriginNVML})
}

// find returns the active condition of kind on target.
func find(r healthreport.Report, kind telemetry.ConditionKind, target string) (telemetry.Condition, bool) {
	for _, c := range r.AllConditions() {
		if c.Kind == kind && c.Target.String() == target {
			return c, true
		}
	}
	return telemetry.Condition{}, false
}

func gpuTarget(i int) string { return testNode + "/gpu" + strconv.Itoa(i) }

func xidEvent(gpu, code int, at time.Time) collector.XidEvent {
	return collector.XidEvent{Time: at, GPUIndex: gpu, Xid: code, Origin: collector.OriginNVML}
}
