package health

import (
	"bufio"
	"encoding/csv"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/xid"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Every Xid of the catalog, seen alone, gives a condition with the catalog's action
// and the severity SeverityForAction gives it.
func TestEveryCatalogXid(t *testing.T) {
	for _, x := range telemetry.Xids() {
		h := newHarness(t, nil)
		h.cycles(1)
		h.xid(2, x.Code, "")
		r := h.cycles(1)
		c, ok := find(r, telemetry.ConditionXid, gpuTarget(2))
		if !ok {
			t.Errorf("Xid %d raised no condition", x.Code)
			continue
		}
		wantSev := SeverityForAction(x.Action)
		if x.Code == 154 {
			// No message: the recovery action is unknown; the condition records it.
			wantSev = telemetry.SeverityInfo
		}
		if c.Action != x.Action || c.Severity != wantSev {
			t.Errorf("Xid %d: %q %s, catalog %q → want %s", x.Code, c.Action, c.Severity, x.Action, wantSev)
		}
		if c.Evidence["xid"] != strconv.Itoa(x.Code) || c.GPUUUID != gpuUUID(2) {
			t.Errorf("Xid %d: evidence %v uuid %q", x.Code, c.Evidence, c.GPUUUID)
		}
	}
}

// An Xid the catalog does not know: CONTACT_SUPPORT, but only suspect.
func TestUnknownXid(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(1)
	h.xid(1, 9999, "from a newer driver")
	r := h.cycles(2)
	c, ok := find(r, telemetry.ConditionXid, gpuTarget(1))
	if !ok || c.Action != unknownXidAction || c.Severity != unknownXidSeverity || r.State != telemetry.StateSuspect {
		t.Fatalf("unknown Xid: %+v, node %s", c, r.State)
	}
	// It waits for a reset, however long.
	if _, ok := find(h.cycle(48*time.Hour), telemetry.ConditionXid, gpuTarget(1)); !ok {
		t.Fatal("unknown Xid cleared without a reset")
	}
}

func TestXid48With63DrainsAndResets(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(1)
	h.xid(0, 48, "An uncorrectable double bit error (DBE) has been detected")
	r := h.cycles(1)
	if c, _ := find(r, telemetry.ConditionXid, gpuTarget(0)); c.Action != telemetry.ActionResetGPU {
		t.Fatalf("48 alone: %q, want RESET_GPU", c.Action)
	}
	h.xid(0, 63, "Row Remapper: New row marked for remapping, reset gpu to activate.")
	r = h.cycles(1)
	c, _ := find(r, telemetry.ConditionXid, gpuTarget(0))
	if c.Action != telemetry.ActionDrainAndReset || c.Severity != telemetry.SeverityCritical || c.Evidence["xid"] != "48,63" {
		t.Fatalf("48 with 63: %+v", c)
	}
	// 63 leaves the sticky window; the verdict stays until the GPU is reset.
	r = h.cycle(time.Hour)
	if c, _ := find(r, telemetry.ConditionXid, gpuTarget(0)); c.Action != telemetry.ActionDrainAndReset {
		t.Fatalf("an hour later: %q", c.Action)
	}
	// 48 with 63 an hour apart is no workflow.
	h.xid(1, 48, "")
	h.cycle(time.Second)
	h.clk.add(time.Hour)
	h.xid(1, 63, "")
	if c, _ := find(h.cycle(time.Second), telemetry.ConditionXid, gpuTarget(1)); c.Action != telemetry.ActionResetGPU {
		t.Fatalf("48 and 63 an hour apart: %q, want RESET_GPU", c.Action)
	}
}

// Xid 154 carries the driver's recovery action: it overrides the catalog's guess,
// up or down. The recovery-action field does the same.
func TestXid154Overrides(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(1)
	h.xid(4, 79, "GPU has fallen off the bus.")
	r := h.cycles(1)
	if c, _ := find(r, telemetry.ConditionXid, gpuTarget(4)); c.Action != telemetry.ActionRestartBM || c.Severity != telemetry.SeverityFatal {
		t.Fatalf("79: %+v", c)
	}
	h.xid(4, 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")
	r = h.cycles(1)
	c, _ := find(r, telemetry.ConditionXid, gpuTarget(4))
	if c.Action != telemetry.ActionResetGPU || c.Severity != telemetry.SeverityCritical ||
		c.Evidence["override"] != "xid154" || c.Evidence["catalog_action"] != string(telemetry.ActionRestartBM) {
		t.Fatalf("79 then 154 (reset): %+v", c)
	}
	// Up: Xid 13 (RESTART_APP) with 154 saying drain and reset.
	h.xid(5, 13, "Graphics SM Warp Exception")
	h.xid(5, 154, "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)")
	c, _ = find(h.cycles(1), telemetry.ConditionXid, gpuTarget(5))
	if c.Action != telemetry.ActionDrainAndReset {
		t.Fatalf("13 with 154 (drain and reset): %+v", c)
	}
	// The field wins over the message.
	h.node.gpu(telemetry.DCGMGPURecoveryAction, 5, 2)
	r = h.cycles(1)
	c, _ = find(r, telemetry.ConditionXid, gpuTarget(5))
	if c.Action != telemetry.ActionRestartBM || c.Evidence["override"] != "recovery_action_field" {
		t.Fatalf("field 2: %+v", c)
	}
	if g := r.GPUs[5]; g.Action != telemetry.ActionRestartBM {
		t.Fatalf("GPU 5 action %q", g.Action)
	}
}

// NVLink5 Xids are decoded: a link-down event the table says to ignore is not the
// catalog's RESET_GPU.
func TestNVLink5Decoded(t *testing.T) {
	h := newHarness(t, nil) // driver 580: the V2 layout
	h.cycles(1)
	h.xid(6, 149, "NETIR_LINK_EVT Nonfatal XC0 i0 Link 01 (0x02600011 0x00000000 0x00000000 0x00000000)")
	c, _ := find(h.cycles(1), telemetry.ConditionXid, gpuTarget(6))
	if c.Action != telemetry.ActionIgnore || !strings.Contains(c.Evidence["decoded"], "NETIR_LINK_DOWN") {
		t.Fatalf("149 link down: %+v", c)
	}
	h.xid(7, 145, "RLW_RXPIPE Fatal XC0 i0 Link 03 (0x00000086 0x00000001 0x0 0x0)")
	c, _ = find(h.cycles(1), telemetry.ConditionXid, gpuTarget(7))
	if c.Action != telemetry.ActionResetGPU || !strings.Contains(c.Message, "RLW_RXPIPE") {
		t.Fatalf("145 promoted: %+v", c)
	}
	h.xid(3, 150, "no registers")
	if c, _ = find(h.cycles(1), telemetry.ConditionXid, gpuTarget(3)); c.Action != telemetry.ActionResetGPU {
		t.Fatalf("150 undecoded: %+v", c)
	}
}

// Repeat offenders: the same Xid in three incidents, or on three GPUs, one step up.
func TestRepeatOffenders(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(1)
	for i := range 3 {
		for range 50 { // a burst is one incident
			h.xid(1, 13, "Graphics SM Warp Exception")
		}
		c, _ := find(h.cycles(1), telemetry.ConditionXid, gpuTarget(1))
		want, sev := telemetry.ActionRestartApp, telemetry.SeverityInfo
		if i == 2 {
			want, sev = telemetry.ActionResetGPU, telemetry.SeverityWarning
		}
		if c.Action != want || c.Severity != sev {
			t.Fatalf("incident %d: %q %s, want %q %s (%s)", i+1, c.Action, c.Severity, want, sev, c.Message)
		}
		h.clk.add(5 * time.Minute)
	}

	h = newHarness(t, nil)
	h.cycles(1)
	for g := range 3 {
		h.xid(g, 95, "Uncontained: DRAM")
	}
	r := h.cycles(1)
	for g := range 3 {
		c, _ := find(r, telemetry.ConditionXid, gpuTarget(g))
		if c.Action != telemetry.ActionDrainAndReset || c.Severity != telemetry.SeverityFatal || !strings.Contains(c.Evidence["escalated"], "3 GPUs") {
			t.Fatalf("95 on 3 GPUs, GPU %d: %+v", g, c)
		}
	}
	// IGNORE Xids do not escalate.
	h = newHarness(t, nil)
	h.cycles(1)
	for g := range 4 {
		h.xid(g, 43, "")
	}
	if c, _ := find(h.cycles(1), telemetry.ConditionXid, gpuTarget(0)); c.Action != telemetry.ActionIgnore {
		t.Fatalf("43 on 4 GPUs: %+v", c)
	}
}

// A fatal Xid stays until the GPU is reset; the GPU walks the whole state machine.
func TestResetAndProbation(t *testing.T) {
	h := newHarness(t, nil)
	h.cycles(1)
	h.xid(2, 79, "GPU has fallen off the bus.")
	h.node.gpu(telemetry.MetricGPULost, 2, 1)
	seen := []telemetry.State{telemetry.StateHealthy}
	rec := func(r healthreport.Report) {
		s := r.GPUs[2].State
		if n := len(seen); n == 0 || seen[n-1] != s {
			if n > 0 && !seen[n-1].CanTransition(s) {
				t.Fatalf("GPU moved %s → %s", seen[n-1], s)
			}
			seen = append(seen, s)
		}
	}
	for range 3 {
		rec(h.cycles(1))
	}
	r := h.cycle(time.Hour)
	rec(r)
	if r.GPUs[2].State != telemetry.StateDrained || r.State != telemetry.StateDrained {
		t.Fatalf("GPU %s node %s, want drained", r.GPUs[2].State, r.State)
	}
	if !strings.HasPrefix(r.Summary(), "gpuwatch: ") || !strings.Contains(r.Summary(), "gpu="+gpuUUID(2)) || len(r.Summary()) > 200 {
		t.Errorf("Summary %q", r.Summary())
	}
	h.node.gpu(telemetry.MetricGPULost, 2, 0) // back after a reset
	for range 5 {
		rec(h.cycles(1))
	}
	if _, ok := find(h.e.Report(), telemetry.ConditionXid, gpuTarget(2)); ok {
		t.Fatal("Xid 79 survived the reset")
	}
	rec(h.cycle(31 * time.Minute))
	want := []telemetry.State{telemetry.StateHealthy, telemetry.StateDraining, telemetry.StateDrained, telemetry.StateProbation, telemetry.StateHealthy}
	if !slicesEqual(seen, want) {
		t.Fatalf("GPU states %v, want %v", seen, want)
	}
}

// Volatile ECC counters going down are a reset too.
func TestVolatileECCResetClearsDBE(t *testing.T) {
	h := newHarness(t, nil)
	h.node.gpu(telemetry.DCGMECCSBEVolTotal, 0, 10)
	h.cycles(1)
	h.node.gpuAdd(telemetry.DCGMECCDBEVolTotal, 0, 2)
	if _, ok := find(h.cycles(1), telemetry.ConditionECCDBE, gpuTarget(0)); !ok {
		t.Fatal("no ecc-dbe")
	}
	if _, ok := find(h.cycle(time.Hour), telemetry.ConditionECCDBE, gpuTarget(0)); !ok {
		t.Fatal("ecc-dbe cleared without a reset")
	}
	h.node.gpu(telemetry.DCGMECCDBEVolTotal, 0, 0)
	h.node.gpu(telemetry.DCGMECCSBEVolTotal, 0, 0)
	if _, ok := find(h.cycles(1), telemetry.ConditionECCDBE, gpuTarget(0)); ok {
		t.Fatal("ecc-dbe survived the reset")
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNVSentinelAgreement compares the engine's verdict on each Xid seen alone with
// NVIDIA NVSentinel's mapping (testdata/nvsentinel-xiderrorsmapping.csv): our action
// against its action, our "takes the GPU out" (critical or worse) against its FATAL.
// Every disagreement is listed with its reason; one that no longer disagrees fails,
// so the list stays true. telemetry's TestXidNVSentinel checks the catalog itself.
func TestNVSentinelAgreement(t *testing.T) {
	known := map[int]string{
		45:  "catalog: WORKFLOW_XID_45 alone is RESTART_FM (critical); NVSentinel says NONFATAL because 45 usually follows another Xid, where ResolveXids demotes it to IGNORE",
		108: "catalog marks 108 Unused with IGNORE; NVSentinel says UNEXPECTED_ERR_REPORT_ISSUE, FATAL",
		154: "Xid 154 alone carries its action in its message; without one the engine records it (info, no action), NVSentinel says follow the other Xid",
		160: "catalog: channel retirement event is IGNORE; NVSentinel says RESTART_BM, FATAL",
		162: "catalog gives 162 (power smoothing re-engaged) no bucket; NVSentinel says RESET_GPU, FATAL",
	}
	// NVSentinel's action column names buckets, workflows included; normalize them
	// as the catalog does. One name is its own.
	aliases := map[string]string{"UNEXPECTED_ERR_REPORT_ISSUE": string(telemetry.ActionContactSupport)}
	f, err := os.Open("testdata/nvsentinel-xiderrorsmapping.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	agree := 0
	for _, rec := range recs {
		code, err := strconv.Atoi(rec[0])
		if err != nil {
			t.Fatalf("row %q: %v", rec, err)
		}
		bucket := rec[2]
		if a, ok := aliases[bucket]; ok {
			bucket = a
		}
		nvAction, _, ok := telemetry.XidBucketAction(bucket)
		if !ok && code != 154 {
			t.Errorf("Xid %d: NVSentinel bucket %q unknown", code, rec[2])
		}
		nvFatal := rec[3] == "FATAL"
		h := newHarness(t, nil)
		h.cycles(1)
		h.xid(0, code, "")
		c, _ := find(h.cycles(1), telemetry.ConditionXid, gpuTarget(0))
		ourFatal := c.Severity >= telemetry.SeverityCritical
		differs := c.Action != nvAction || ourFatal != nvFatal
		reason, listed := known[code]
		switch {
		case differs && !listed:
			t.Errorf("Xid %d: ours %q %s, NVSentinel %q %s: explain it or fix the engine", code, c.Action, c.Severity, rec[2], rec[3])
		case !differs && listed:
			t.Errorf("Xid %d is listed (%s) but agrees now: drop it", code, reason)
		case !differs:
			agree++
		}
	}
	if agree < 150 {
		t.Errorf("only %d of %d Xids agree", agree, len(recs))
	}
	t.Logf("%d of %d Xids agree with NVSentinel; %d differences explained", agree, len(recs), len(known))
}

// gpud's real kernel logs through the xid parser into the engine.
func TestRealKernelLogs(t *testing.T) {
	tests := []struct {
		file   string
		pci    string
		action telemetry.Action
		sev    telemetry.Severity
		state  telemetry.State
		xids   string
	}{
		// 48 → 63 → 94 within 0.2 s on one H100: DRAIN_AND_RESET.
		{"components_query_log_tail__dmesg.0.log", "0000:19:00.0", telemetry.ActionDrainAndReset, telemetry.SeverityCritical, telemetry.StateDraining, "48,63,94"},
		// Five GSP RPC timeouts within six minutes: one incident stream, RESET_GPU.
		{"components_accelerator_nvidia_error_xid__dmesg-with-xid-119.log", "0000:9b:00.0", telemetry.ActionResetGPU, telemetry.SeverityCritical, telemetry.StateDraining, "119"},
		// Xid 13 in nine bursts over 2.5 hours: a repeat offender, RESTART_APP → RESET_GPU, suspect.
		{"pkg_dmesg__dmesg.decode.iso.log.0", "0000:38:00.0", telemetry.ActionResetGPU, telemetry.SeverityWarning, telemetry.StateSuspect, "13,43"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			evs := readKernelLog(t, "testdata/"+tt.file)
			if len(evs) == 0 {
				t.Fatal("no Xid lines")
			}
			h := newHarness(t, nil)
			pci, err := telemetry.ParsePCIBusID(tt.pci)
			if err != nil {
				t.Fatal(err)
			}
			h.node.inv.GPUs[4].PCIBusID = pci
			h.clk.t = evs[0].Time.Add(-time.Minute)
			h.cycles(1)
			for _, ev := range evs {
				if ev.Time.After(h.clk.now()) {
					h.clk.t = ev.Time
				}
				h.e.ObserveXid(ev)
				h.cycle(0)
			}
			r := h.cycles(2)
			c, ok := find(r, telemetry.ConditionXid, gpuTarget(4))
			if !ok {
				t.Fatalf("no Xid condition on the GPU at %s: %+v", tt.pci, r.AllConditions())
			}
			if c.Action != tt.action || c.Severity != tt.sev || r.State != tt.state || c.Evidence["xid"] != tt.xids {
				t.Fatalf("got %q %s node %s xids %s, want %q %s %s %s (%s)", c.Action, c.Severity, r.State, c.Evidence["xid"],
					tt.action, tt.sev, tt.state, tt.xids, c.Message)
			}
		})
	}
}

// readKernelLog turns a kernel log's Xid lines into events, with the line's time.
func readKernelLog(t *testing.T, path string) []collector.XidEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []collector.XidEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		l, ok := xid.ParseLine(line)
		if !ok || l.Kind != xid.KindXid {
			continue
		}
		ts, ok := lineTime(line)
		if !ok {
			t.Fatalf("no time in %q", line)
		}
		pci, err := telemetry.ParsePCIBusID(l.CanonicalPCI())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, collector.XidEvent{Time: ts, GPUIndex: -1, PCIBusID: pci, Xid: l.Xid, Message: l.Message, Origin: collector.OriginKmsg})
	}
	return out
}

// lineTime reads the two time stamps gpud's logs use: dmesg's ctime in brackets
// and the ISO form with a comma before the fraction.
func lineTime(line string) (time.Time, bool) {
	if strings.HasPrefix(line, "[") {
		end := strings.IndexByte(line, ']')
		ts, err := time.Parse("Mon Jan 2 15:04:05 2006", line[1:end])
		return ts, err == nil
	}
	for _, f := range strings.Fields(line) {
		if len(f) > 20 && f[4] == '-' && f[10] == 'T' {
			ts, err := time.Parse("2006-01-02T15:04:05.999999-07:00", strings.Replace(f, ",", ".", 1))
			return ts, err == nil
		}
	}
	return time.Time{}, false
}
