package health

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// The driver, the GPU count, the NVLink fabric, NVSwitch errors and persistence
// mode: conditions on the node's driver and fabric rather than on one GPU's
// counters.

// NVML's nvmlGpuFabricState_t values (gpuwatch_gpu_fabric_state).
const (
	fabricNotStarted = 1
	fabricInProgress = 2
	fabricCompleted  = 3
)

// nvmlNotStarted is how the nvml source's error starts when NVML did not
// start (collector/nvml.InitError).
const nvmlNotStarted = "NVML did not start: "

// judgeGPUCount compares the GPUs NVML sees (gpuwatch_node_gpus{source="nvml"},
// 0 when NVML did not start) with those on the PCI bus (source="pci") and with
// the most the node has had, and raises one gpu-count condition on the node that
// names the counts:
//
//   - NVML did not start while GPUs are on the bus (or expected): the driver is
//     not loaded;
//   - NVML sees fewer GPUs than the bus: the driver failed to initialise some;
//   - NVML, or the bus, shows fewer than the node has had (ExpectedGPUs, else
//     the most discovery or the bus has shown, kept in the state file): a GPU is
//     gone.
//
// A count that was not read this cycle is not judged; the bus's count is not
// used when the pci source failed in part (it would undercount).
func (e *Engine) judgeGPUCount(snap *collector.Snapshot) {
	pci, nvml := -1, -1
	for i := range snap.Samples {
		s := &snap.Samples[i]
		if s.Name != telemetry.MetricNodeGPUs || math.IsNaN(s.Value) || s.Value < 0 || s.Value > maxGPUIndex+1 {
			continue
		}
		switch s.Labels.Get(telemetry.LabelSource) {
		case string(telemetry.SourcePCI):
			pci = int(s.Value)
		case string(telemetry.SourceNVML):
			nvml = int(s.Value)
		}
	}
	nvmlErr := ""
	for _, st := range snap.Sources {
		switch st.Name {
		case string(telemetry.SourcePCI):
			if !st.Up {
				pci = -1
			}
		case string(telemetry.SourceNVML):
			if !st.Up {
				nvmlErr = st.Err
			}
		}
	}
	if pci < 0 && nvml < 0 {
		return
	}
	for _, n := range []int{pci, nvml} {
		if n > e.expected {
			e.expected = n
			e.dirty = true
		}
	}
	want := e.wantGPUs()

	var msg string
	notStarted := nvml == 0 && strings.HasPrefix(nvmlErr, nvmlNotStarted)
	switch {
	case notStarted && (pci > 0 || want > 0):
		counts := strconv.Itoa(pci) + " NVIDIA GPUs on the PCI bus"
		switch {
		case pci < 0:
			counts = strconv.Itoa(want) + " GPUs expected"
		case pci < want:
			counts += ", " + strconv.Itoa(want) + " expected"
		}
		msg = "NVIDIA driver not loaded: " + counts + ", NVML: " + strings.TrimPrefix(nvmlErr, nvmlNotStarted)
	case nvml >= 0 && pci > nvml:
		msg = fmt.Sprintf("NVML sees %d of the %d NVIDIA GPUs on the PCI bus", nvml, pci)
		if nvmlErr != "" && nvml == 0 {
			msg += ", NVML: " + nvmlErr
		}
	case nvml >= 0 && want > nvml:
		msg = fmt.Sprintf("%d GPUs visible to NVML, %d expected", nvml, want)
	case pci >= 0 && want > pci:
		msg = fmt.Sprintf("%d NVIDIA GPUs on the PCI bus, %d expected", pci, want)
	}
	t := telemetry.NodeTarget(e.node)
	if msg == "" {
		e.good(telemetry.ConditionGPUCount, t)
		return
	}
	ev := []string{"rule", "gpu_count", "expected", itoa(want)}
	if pci >= 0 {
		ev = append(ev, "pci", itoa(pci))
	}
	if nvml >= 0 {
		ev = append(ev, "nvml", itoa(nvml))
	}
	if nvmlErr != "" {
		ev = append(ev, "nvml_error", truncate(nvmlErr, 200))
	}
	// The catalog's action for a GPU that has left the bus (Xid 79): a reboot
	// also reloads the driver.
	e.observe(e.cond(telemetry.ConditionGPUCount, t, telemetry.SeverityCritical, catalogAction(79), msg, ev...), policyState)
}

// wantGPUs is how many GPUs the node should have: Options.ExpectedGPUs, else the
// most it has shown.
func (e *Engine) wantGPUs() int {
	if e.opts.ExpectedGPUs > 0 {
		return e.opts.ExpectedGPUs
	}
	return e.expected
}

// judgeFabric raises fabric-manager on the node while any GPU that has an NVLink
// fabric (NVSwitch systems, Hopper and later) is not registered in it (state not
// started or in progress) or its registration failed (completed with a status
// other than success). A GPU out of the fabric cannot run CUDA work, so the node
// takes none (critical); the remedy is the fabric manager (RESTART_FM). It clears
// after Rules.ClearCycles cycles in which every GPU reads completed and success.
func (e *Engine) judgeFabric() {
	var out, failed []string
	states, statuses := map[string]bool{}, map[string]bool{}
	seen := false
	for i := range e.gcyc {
		g := &e.gcyc[i]
		if g.fabricState != g.fabricState {
			continue
		}
		seen = true
		switch {
		case g.fabricState != fabricCompleted:
			out = append(out, itoa(i))
			states[fabricStateName(g.fabricState)] = true
		case g.fabricStatus == g.fabricStatus && g.fabricStatus != 0:
			failed = append(failed, itoa(i))
			statuses[fmtF(g.fabricStatus)] = true
		}
	}
	if !seen {
		return
	}
	t := telemetry.NodeTarget(e.node)
	if len(out)+len(failed) == 0 {
		e.good(telemetry.ConditionFabricManager, t)
		return
	}
	var parts []string
	ev := []string{"rule", "fabric_state"}
	if len(out) > 0 {
		st := joinKeys(states)
		parts = append(parts, fmt.Sprintf("GPU %s not in the NVLink fabric (state %s)", strings.Join(out, ","), st))
		ev = append(ev, "gpus_not_registered", strings.Join(out, ","), "state", st)
	}
	if len(failed) > 0 {
		st := joinKeys(statuses)
		parts = append(parts, fmt.Sprintf("GPU %s fabric registration failed (NVML status %s)", strings.Join(failed, ","), st))
		ev = append(ev, "gpus_failed", strings.Join(failed, ","), "status", st)
	}
	msg := strings.Join(parts, "; ") + ": check nvidia-fabricmanager"
	e.observe(e.cond(telemetry.ConditionFabricManager, t, telemetry.SeverityCritical, telemetry.ActionRestartFM, msg, ev...), policyState)
}

func fabricStateName(v float64) string {
	switch v {
	case fabricNotStarted:
		return "not started"
	case fabricInProgress:
		return "in progress"
	case fabricCompleted:
		return "completed"
	}
	return fmtF(v)
}

// joinKeys joins a set's members in sorted order.
func joinKeys(m map[string]bool) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

// judgePersistence raises persistence-mode (warning) on a GPU whose persistence
// mode reads off, when Options.RequirePersistenceMode says the site requires it:
// without it the driver tears the GPU down whenever no process holds it, so every
// job start pays the initialisation and on NVSwitch systems the fabric state is
// lost. The GPU stays schedulable (suspect).
func (e *Engine) judgePersistence() {
	for i := range e.gcyc {
		v := e.gcyc[i].persistence
		if v != v {
			continue
		}
		t := e.gpuTarget(i)
		if e.opts.RequirePersistenceMode && v == 0 {
			e.observe(e.cond(telemetry.ConditionPersistenceMode, t, telemetry.SeverityWarning, telemetry.ActionNone,
				fmt.Sprintf("persistence mode is off on GPU %d; the agent's policy requires it (nvidia-persistenced, or nvidia-smi -pm 1)", i),
				"series", telemetry.DCGMPersistenceMode, "value", "0", "rule", "persistence_mode_required"), policyState)
			continue
		}
		e.good(telemetry.ConditionPersistenceMode, t)
	}
}

// ObserveSXid implements collector.SXidSink: it queues the event for the next
// Derive.
func (e *Engine) ObserveSXid(ev collector.SXidEvent) {
	e.qmu.Lock()
	if len(e.sxQueue) >= maxQueuedXids {
		copy(e.sxQueue, e.sxQueue[1:])
		e.sxQueue = e.sxQueue[:len(e.sxQueue)-1]
		e.dropped++
	}
	e.sxQueue = append(e.sxQueue, ev)
	e.qmu.Unlock()
}

// ingestSXids raises nvswitch-fatal (fatal, RESTART_BM) on the NVSwitch of every
// SXid the driver printed as Fatal: the switch and the GPU traffic through it
// stop until the GPUs and switches are reset, which on HGX and DGX systems means
// a reboot. Non-fatal SXids are counted by the xid source and raise nothing.
// Events from before the last time the condition cleared (a kernel log read
// again after an agent restart) are not counted again.
func (e *Engine) ingestSXids(events []collector.SXidEvent) {
	for _, ev := range events {
		if !ev.Fatal || ev.NVSwitch < 0 || (!e.sxidClearedAt.IsZero() && !ev.Time.After(e.sxidClearedAt)) {
			continue
		}
		t := telemetry.NVSwitchTarget(telemetry.NVSwitchID{Node: e.node, Index: ev.NVSwitch})
		where := "nvswitch" + itoa(ev.NVSwitch)
		if !ev.PCIBusID.IsZero() {
			where += " (" + ev.PCIBusID.String() + ")"
		}
		if ev.Link >= 0 {
			where += " link " + itoa(ev.Link)
		}
		evidence := []string{"sxid", itoa(ev.SXid), "rule", "sxid_fatal", "at", ev.Time.UTC().Format(time.RFC3339)}
		if !ev.PCIBusID.IsZero() {
			evidence = append(evidence, "pci_bus_id", ev.PCIBusID.String())
		}
		if ev.Link >= 0 {
			evidence = append(evidence, "link", itoa(ev.Link))
		}
		e.observe(e.cond(telemetry.ConditionNVSwitchFatal, t, telemetry.SeverityFatal, telemetry.ActionRestartBM,
			truncate(fmt.Sprintf("fatal NVSwitch error SXid %d on %s: %s", ev.SXid, where, ev.Message), 200), evidence...), policyState)
	}
}

// judgeNVSwitches clears nvswitch-fatal once every GPU of the node has been reset
// after it was raised (resetting the GPUs resets the fabric with them; a reboot
// clears it when the state file is read).
func (e *Engine) judgeNVSwitches() {
	for k, a := range e.conds {
		if k.kind != telemetry.ConditionNVSwitchFatal {
			continue
		}
		if _, again := e.obs[k]; again {
			continue
		}
		all, last := 0, time.Time{}
		reset := true
		for i, g := range e.gpus {
			if i < 0 || !g.known {
				continue
			}
			all++
			if !g.resetAt.After(a.c.Since) {
				reset = false
			}
			if g.resetAt.After(last) {
				last = g.resetAt
			}
		}
		if all > 0 && reset {
			e.good(k.kind, k.target)
			if last.After(e.sxidClearedAt) {
				e.sxidClearedAt = last
				e.dirty = true
			}
		}
	}
}
