// Package faultstest builds a small simulated fleet with an injected fault
// history whose fault report is known, derived by hand below, for the tests of
// analyzer/faults, the server's API and the command.
package faultstest

import (
	"sort"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Window is the report's length; Every the agents' shipping interval here.
const (
	Window = 48 * time.Hour
	Every  = 2 * time.Minute
)

// The GPU models of the fleet.
const (
	H100 = "NVIDIA H100 80GB HBM3"
	A100 = "NVIDIA A100-SXM4-80GB"
)

// Fleet is four nodes of two GPUs, shipping every 2 minutes from an hour
// before t0 to t0+48h (report window [t0, t0+48h]):
//
//	node-a (H100): GPU a0 Xid 79 (RESET_GPU) at 1h, 1h02 and 20h: 3 Xids, two
//	       failures (1h02 is within 10 minutes of 1h); GPU a1 Xid 13
//	       (RESTART_APP) five times at 2h. a0's uncorrectable remapped rows
//	       100 → 200 at 24h: growth 100 in 48 h, (512 − 200) / (100/48) =
//	       149.76 h to the limit. Port mlx5_0/1: link_downed 0 → 3 (at 5h, 6h,
//	       7h), symbol errors 0 → 10. a0 link 3: CRC flit 50 + data 10, replays
//	       40.
//	node-b (H100): no Xid; drained at 3h, 8h and 20h (and once a day before
//	       the window): a lemon at three drains in 24 h. GPU b0: row remap
//	       failure from 40h. Port mlx5_1/1: link_downed stays 2, symbol errors
//	       5 → 505.
//	node-c (A100): GPU c0 Xid 48 (DRAIN_AND_RESET) at 10h, drained at 10h03:
//	       one failure; Xid 31 (RESTART_APP) 4 before the window, 6 at 5h: 2
//	       counted. GPU c1 retired pages SBE 20 → 40 (at 12h), DBE 10: 50 of
//	       60, growth 20: (60 − 50) / (20/48) = 24 h to the limit. Port
//	       mlx5_0/1: link_downed 7, reset to 0 at 10h (agent restart), 1 at
//	       12h: one flap. c0 link 0: replays 200, one recovery.
//	node-d (A100): drained at 30h; GPU d0 remapped rows 300 throughout (no
//	       growth: not in drain soon); GPU d1 a row remap pending throughout.
//
// Hence: Xids 11 (13: 5, 79: 3, 31: 2, 48: 1; RESTART_APP 7, RESET_GPU 3,
// DRAIN_AND_RESET 1; H100 8, A100 3; node-a 8, node-c 3); failures a 2, b 3,
// c 1, d 1 = 7; MTBF a 24 h, b 16 h, c 48 h, d 48 h, H100 96/5 = 19.2 h, A100
// 96/2 = 48 h; drain soon b0 (failed), c1 (24 h), a0 (149.76 h), d1 (pending); InfiniBand
// node-a (3 flaps), node-c (1), node-b (0 flaps, 500 symbol errors); NVLink
// node-c/c0/0 (200), node-a/a0/3 (100). Health conditions raised (created by
// their first raise): nvlink-errors twice on node-a (15h, 16h), ib-flap once
// on node-c (10h).
func Fleet(t0 time.Time) []telemetry.Sample {
	var out []telemetry.Sample
	at := func(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }
	gpu := func(node, uuid string, kv ...string) telemetry.Labels {
		return telemetry.NewLabels(append([]string{telemetry.LabelNode, node, telemetry.LabelGPUUUID, uuid, telemetry.LabelGPUIndex, uuid[len(uuid)-1:]}, kv...)...)
	}
	dcgm := func(node, uuid string) telemetry.Labels {
		return telemetry.NewLabels(telemetry.LabelNode, node, telemetry.DCGMLabelHostname, node, telemetry.DCGMLabelUUID, uuid, telemetry.DCGMLabelGPU, uuid[len(uuid)-1:])
	}
	// step returns the value of a step function: v[i] from time h[i] on (h in hours).
	type change struct {
		h float64
		v float64
	}
	value := func(now time.Time, cs []change) (float64, bool) {
		v, ok := 0.0, false
		for _, c := range cs {
			if !now.Before(at(c.h)) {
				v, ok = c.v, true
			}
		}
		return v, ok
	}
	type series struct {
		name string
		ls   telemetry.Labels
		cs   []change // the series exists from its first change on
	}
	all := []series{
		{telemetry.MetricXidErrorsTotal, gpu("node-a", "GPU-a0", telemetry.LabelXid, "79", telemetry.LabelAction, "RESET_GPU"), []change{{1, 1}, {1 + 2.0/60, 2}, {20, 3}}},
		{telemetry.MetricXidErrorsTotal, gpu("node-a", "GPU-a1", telemetry.LabelXid, "13", telemetry.LabelAction, "RESTART_APP"), []change{{2, 5}}},
		{telemetry.MetricXidErrorsTotal, gpu("node-c", "GPU-c0", telemetry.LabelXid, "48", telemetry.LabelAction, "DRAIN_AND_RESET"), []change{{10, 1}}},
		{telemetry.MetricXidErrorsTotal, gpu("node-c", "GPU-c0", telemetry.LabelXid, "31", telemetry.LabelAction, "RESTART_APP"), []change{{-1, 4}, {5, 6}}},
		{telemetry.MetricHealthConditionsTotal, telemetry.NewLabels(telemetry.LabelNode, "node-a", telemetry.LabelCondition, "nvlink-errors", telemetry.LabelSeverity, "warning"), []change{{15, 1}, {16, 2}}},
		{telemetry.MetricHealthConditionsTotal, telemetry.NewLabels(telemetry.LabelNode, "node-c", telemetry.LabelCondition, "ib-flap", telemetry.LabelSeverity, "warning"), []change{{10, 1}}},
		{telemetry.DCGMUncorrectableRemappedRows, dcgm("node-a", "GPU-a0"), []change{{-1, 100}, {24, 200}}},
		{telemetry.DCGMUncorrectableRemappedRows, dcgm("node-d", "GPU-d0"), []change{{-1, 300}}},
		{telemetry.DCGMRowRemapPending, dcgm("node-d", "GPU-d1"), []change{{-1, 1}}},
		{telemetry.DCGMRowRemapFailure, dcgm("node-b", "GPU-b0"), []change{{-1, 0}, {40, 1}}},
		{telemetry.DCGMUncorrectableRemappedRows, dcgm("node-b", "GPU-b0"), []change{{-1, 0}}},
		{telemetry.DCGMRetiredSBE, dcgm("node-c", "GPU-c1"), []change{{-1, 20}, {12, 40}}},
		{telemetry.DCGMRetiredDBE, dcgm("node-c", "GPU-c1"), []change{{-1, 10}}},
		{telemetry.NodeIBLinkDownedTotal, telemetry.NewLabels(telemetry.LabelNode, "node-a", telemetry.NodeExpLabelDevice, "mlx5_0", telemetry.NodeExpLabelPort, "1"), []change{{-1, 0}, {5, 1}, {6, 2}, {7, 3}}},
		{telemetry.MetricIBSymbolErrorsTotal, telemetry.NewLabels(telemetry.LabelNode, "node-a", telemetry.LabelIBDevice, "mlx5_0", telemetry.LabelIBPort, "1"), []change{{-1, 0}, {9, 10}}},
		{telemetry.NodeIBLinkDownedTotal, telemetry.NewLabels(telemetry.LabelNode, "node-b", telemetry.NodeExpLabelDevice, "mlx5_1", telemetry.NodeExpLabelPort, "1"), []change{{-1, 2}}},
		{telemetry.MetricIBSymbolErrorsTotal, telemetry.NewLabels(telemetry.LabelNode, "node-b", telemetry.LabelIBDevice, "mlx5_1", telemetry.LabelIBPort, "1"), []change{{-1, 5}, {30, 505}}},
		{telemetry.NodeIBLinkDownedTotal, telemetry.NewLabels(telemetry.LabelNode, "node-c", telemetry.NodeExpLabelDevice, "mlx5_0", telemetry.NodeExpLabelPort, "1"), []change{{-1, 7}, {10, 0}, {12, 1}}},
		{telemetry.MetricNVLinkCRCFlitErrorsTotal, gpu("node-a", "GPU-a0", telemetry.LabelLink, "3"), []change{{-1, 0}, {15, 50}}},
		{telemetry.MetricNVLinkCRCDataErrorsTotal, gpu("node-a", "GPU-a0", telemetry.LabelLink, "3"), []change{{-1, 0}, {15, 10}}},
		{telemetry.MetricNVLinkReplayErrorsTotal, gpu("node-a", "GPU-a0", telemetry.LabelLink, "3"), []change{{-1, 0}, {16, 40}}},
		{telemetry.MetricNVLinkReplayErrorsTotal, gpu("node-c", "GPU-c0", telemetry.LabelLink, "0"), []change{{-1, 0}, {25, 200}}},
		{telemetry.MetricNVLinkRecoveryErrorsTotal, gpu("node-c", "GPU-c0", telemetry.LabelLink, "0"), []change{{-1, 0}, {25, 1}}},
	}
	for _, n := range []struct{ node, model string }{{"node-a", H100}, {"node-b", H100}, {"node-c", A100}, {"node-d", A100}} {
		for g := 0; g < 2; g++ {
			uuid := "GPU-" + n.node[len(n.node)-1:] + string(rune('0'+g))
			all = append(all, series{telemetry.MetricGPUInfo, gpu(n.node, uuid, telemetry.LabelModel, n.model), []change{{-1, 1}}})
		}
	}
	for now := at(-1); !now.After(at(48)); now = now.Add(Every) {
		for _, s := range all {
			if v, ok := value(now, s.cs); ok {
				out = append(out, telemetry.Sample{Name: s.name, Labels: s.ls, Value: v, Time: now})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Audit is the drain controller's audit log of the fleet: the transitions
// into draining of Fleet's comment, a dry-run one and the other records a
// drain writes (not drains).
func Audit(t0 time.Time) []drain.AuditRecord {
	at := func(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }
	tr := func(node string, h float64, note string) drain.AuditRecord {
		return drain.AuditRecord{Time: at(h), Node: node, Event: "transition", From: telemetry.StateSuspect.String(),
			To: telemetry.StateDraining.String(), Note: note}
	}
	dry := tr("node-d", 31, "dry run")
	dry.DryRun = true
	return []drain.AuditRecord{
		tr("node-b", -24, "xid 94"),
		tr("node-b", 3, "xid 94"),
		{Time: at(3), Node: "node-b", Event: "actuation", Action: "cordon"},
		tr("node-b", 8, "xid 94"),
		{Time: at(9), Node: "node-b", Event: "transition", From: telemetry.StateDraining.String(), To: telemetry.StateDrained.String()},
		tr("node-b", 20, "manual drain by ops"),
		tr("node-c", 10+3.0/60, "xid 48"),
		tr("node-d", 30, "nvlink-down"),
		dry,
	}
}
