package telemetry

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/telemetry/internal/xidcat"
)

// update rewrites golden files in testdata and the generated tables (make update-golden).
var update = flag.Bool("update", false, "rewrite golden files in testdata and generated tables")

const (
	xidCatalogDir    = "testdata/xid-catalog"
	xidNVSentinelCSV = "testdata/nvsentinel/xiderrorsmapping.csv"
)

// xidReadCSV reads a whole CSV file, failing the test on any error.
func xidReadCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return records
}

// TestXidCatalogGolden checks that xid_catalog_gen.go is what the generator makes
// from testdata now. Run with -update (or go generate ./telemetry/) to rewrite it.
func TestXidCatalogGolden(t *testing.T) {
	got, err := xidcat.Generate(xidCatalogDir, xidCatalogDir)
	if err != nil {
		t.Fatal(err)
	}
	const golden = "xid_catalog_gen.go"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate ./telemetry/ (or go test ./telemetry/ -run XidCatalogGolden -update)", golden)
	}
	again, err := xidcat.Generate(xidCatalogDir, xidCatalogDir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, again) {
		t.Error("two generations from the same sheets differ: the generator is not reproducible")
	}
}

// TestXidVendoredCopies checks that testdata holds byte-identical copies of the
// shared reference data, where the shared tree is checked out next to the repo.
func TestXidVendoredCopies(t *testing.T) {
	tests := []struct {
		name   string
		shared string // relative to the package directory
		vendor string
		files  []string
	}{
		{
			name:   "xid catalog",
			shared: "../../shared/reference/xid-catalog",
			vendor: xidCatalogDir,
			files: []string{
				"xid_sheet1_Xids.csv", "xid_sheet2_Xid_144_150_Decode.csv",
				"xid_sheet3_Resolution_Buckets.csv", "xid_sheet4_Customer_User_Guide.csv",
			},
		},
		{
			name:   "nvsentinel",
			shared: "../../shared/data/nvidia-nvsentinel-mappings",
			vendor: "testdata/nvsentinel",
			files:  []string{"xiderrorsmapping.csv"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.shared); errors.Is(err, fs.ErrNotExist) {
				t.Skipf("%s is absent (clean checkout): nothing to compare", tt.shared)
			}
			for _, name := range tt.files {
				want, err := os.ReadFile(filepath.Join(tt.shared, name))
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(tt.vendor, name))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from %s: copy it again, then go generate ./telemetry/", filepath.Join(tt.vendor, name), filepath.Join(tt.shared, name))
				}
			}
		})
	}
}

// TestXidCatalogAgreesWithCSV re-reads the sheets with encoding/csv alone and
// checks every cell the generated tables carry.
func TestXidCatalogAgreesWithCSV(t *testing.T) {
	t.Run("sheet 1", func(t *testing.T) {
		records := xidReadCSV(t, filepath.Join(xidCatalogDir, xidcat.XidsFile))[1:]
		xids := Xids()
		if len(xids) != len(records) {
			t.Fatalf("Xids() has %d entries, sheet 1 has %d rows", len(xids), len(records))
		}
		for _, rec := range records {
			code, err := strconv.Atoi(rec[1])
			if err != nil {
				t.Fatalf("code %q: %v", rec[1], err)
			}
			x, ok := LookupXid(code)
			if !ok {
				t.Errorf("Xid %d: missing", code)
				continue
			}
			var products XidProducts
			for i, p := range []XidProducts{XidA100, XidH100, XidB100, XidGB200} {
				if rec[4+i] == "YES" {
					products |= p
				}
			}
			for _, c := range []struct{ field, got, want string }{
				{"mnemonic", x.Mnemonic, rec[2]},
				{"description", x.Description, rec[3]},
				{"applies to", x.AppliesTo.String(), products.String()},
				{"immediate", x.Immediate, rec[8]},
				{"investigatory", x.Investigatory, rec[9]},
				{"xid 154 linkage", x.Xid154Linkage, rec[10]},
				{"trigger", x.Trigger, rec[11]},
			} {
				if c.got != c.want {
					t.Errorf("Xid %d %s: got %q, sheet says %q", code, c.field, c.got, c.want)
				}
			}
		}
		if !slices.IsSortedFunc(xids, func(a, b XidInfo) int { return a.Code - b.Code }) {
			t.Error("Xids() is not sorted by code")
		}
	})

	t.Run("sheet 2", func(t *testing.T) {
		records := xidReadCSV(t, filepath.Join(xidCatalogDir, xidcat.DecodeFile))[1:]
		// The generator sorts by Xid, keeping the sheet's order within one Xid.
		slices.SortStableFunc(records, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		decodes := NVLink5Decodes()
		if len(decodes) != len(records) {
			t.Fatalf("NVLink5Decodes() has %d rows, sheet 2 has %d", len(decodes), len(records))
		}
		for i, rec := range records {
			d := decodes[i]
			for _, c := range []struct{ field, got, want string }{
				{"xid", strconv.Itoa(d.Xid), rec[0]},
				{"subcode", d.Subcode, rec[1]},
				{"V1 intrinfo", string(d.IntrInfoV1), rec[2]},
				{"V2 intrinfo", string(d.IntrInfoV2), rec[3]},
				{"error status", d.ErrorStatusText, rec[4]},
				{"immediate", d.Immediate, rec[5]},
				{"V1 action 2", string(d.Action2IntrInfoV1), rec[6]},
				{"V2 action 2", string(d.Action2IntrInfoV2), rec[7]},
				{"action 2", d.Action2, rec[8]},
				{"investigatory", d.Investigatory, rec[9]},
				{"severity", d.Severity, rec[10]},
				{"hw/sw", d.HWSW, rec[11]},
				{"local/remote", d.Impact, rec[12]},
			} {
				if c.got != c.want {
					t.Errorf("row %d (%d %s) %s: got %q, sheet says %q", i+2, d.Xid, d.Subcode, c.field, c.got, c.want)
				}
			}
		}
	})

	t.Run("sheet 3", func(t *testing.T) {
		records := xidReadCSV(t, filepath.Join(xidCatalogDir, xidcat.BucketsFile))[1:]
		want := map[string]string{}
		for _, rec := range records {
			want[rec[0]] = rec[1]
		}
		buckets := XidBuckets()
		if len(buckets) != len(want) {
			t.Errorf("XidBuckets() has %d buckets, sheet 3 has %d distinct", len(buckets), len(want))
		}
		for name, meaning := range want {
			b, ok := LookupXidBucket(name)
			if !ok || b.Meaning != meaning {
				t.Errorf("bucket %q: got %q (found %v), sheet says %q", name, b.Meaning, ok, meaning)
			}
		}
	})
}

// TestXidBucketsExplained checks that every bucket the catalog uses is known:
// immediate buckets map to an Action, and every bucket is explained in sheet 3
// except where the catalog itself spells it differently.
func TestXidBucketsExplained(t *testing.T) {
	// Buckets used in sheets 1–2 that sheet 3 does not define.
	unexplained := map[string]string{
		"INVESTIGATE_SW/USER": "149 NETIR_LINK_EVT 0b100110: sheet 3 spells it INVESTIGATE_SW_USER",
	}
	used := map[string]string{} // bucket → where it is used
	immediate := map[string]string{}
	for _, x := range Xids() {
		where := fmt.Sprintf("Xid %d", x.Code)
		immediate[x.Immediate] = where
		used[x.Immediate], used[x.Investigatory] = where, where
	}
	for _, d := range NVLink5Decodes() {
		where := fmt.Sprintf("Xid %d %s", d.Xid, d.Subcode)
		immediate[d.Immediate] = where
		used[d.Immediate], used[d.Investigatory] = where, where
		if d.Action2 != "" {
			immediate[d.Action2], used[d.Action2] = where, where
		}
	}
	for b, where := range immediate {
		if _, _, ok := XidBucketAction(b); !ok {
			t.Errorf("immediate bucket %q (%s) has no Action: add it to XidBucketAction", b, where)
		}
	}
	for b, where := range used {
		if b == "" {
			continue
		}
		_, defined := LookupXidBucket(b)
		_, listed := unexplained[b]
		switch {
		case !defined && !listed:
			t.Errorf("bucket %q (%s) is not in sheet 3", b, where)
		case defined && listed:
			t.Errorf("bucket %q is now in sheet 3: drop it from unexplained", b)
		}
	}
}

func TestXidBucketAction(t *testing.T) {
	tests := []struct {
		bucket   string
		action   Action
		workflow XidWorkflow
		ok       bool
	}{
		{"IGNORE", ActionIgnore, "", true},
		{"RESTART_APP", ActionRestartApp, "", true},
		{"RESTART_VM", ActionRestartVM, "", true},
		{"RESET_GPU", ActionResetGPU, "", true},
		{"RESTART_BM", ActionRestartBM, "", true},
		{"CHECK_MECHANICALS", ActionCheckMechanicals, "", true},
		{"UPDATE_SWFW", ActionUpdateSWFW, "", true},
		{"CONTACT_SUPPORT", ActionContactSupport, "", true},
		{" RESET_GPU ", ActionResetGPU, "", true},
		{"", ActionNone, "", true},
		{"WORKFLOW_XID_48", ActionResetGPU, XidWorkflowXid48, true},
		{"WORKFLOW_XID_45", ActionRestartFM, XidWorkflowXid45, true},
		{"WORKFLOW_NVLINK_ERR", ActionResetGPU, XidWorkflowNVLink, true},
		{"WORKFLOW_NVLINK5_ERR", ActionResetGPU, XidWorkflowNVLink5, true},
		{"XID_154", ActionNone, XidWorkflowXid154, true},
		{"XID_154_EVAL", ActionRestartApp, XidWorkflowXid154Eval, true},
		{"CHECK_UVM", ActionIgnore, XidWorkflowCheckUVM, true},
		// Investigatory buckets are not actions.
		{"CHECK_APP/CUDA", ActionContactSupport, "", false},
		{"WORKFLOW_XID_13", ActionContactSupport, "", false},
		{"reset_gpu", ActionContactSupport, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.bucket, func(t *testing.T) {
			a, w, ok := XidBucketAction(tt.bucket)
			if a != tt.action || w != tt.workflow || ok != tt.ok {
				t.Errorf("XidBucketAction(%q) = %q, %q, %v; want %q, %q, %v", tt.bucket, a, w, ok, tt.action, tt.workflow, tt.ok)
			}
		})
	}
}

// TestXidSpotChecks pins what NVIDIA's Xid documentation says about the Xids a
// fleet sees most.
func TestXidSpotChecks(t *testing.T) {
	tests := []struct {
		name     string
		code     int
		mnemonic string
		action   Action
		workflow XidWorkflow
		fatal    bool
	}{
		{"fallen off the bus: reboot the node", 79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", ActionRestartBM, "", true},
		{"graphics engine exception: application fault", 13, "ROBUST_CHANNEL_GR_EXCEPTION /\nROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", ActionRestartApp, "", false},
		{"MMU page fault: application fault", 31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", ActionRestartApp, "", false},
		{"double-bit ECC alone: reset", 48, "ROBUST_CHANNEL_GPU_ECC_DBE", ActionResetGPU, XidWorkflowXid48, true},
		{"row remapping event", 63, "INFOROM_DRAM_RETIREMENT_EVENT", ActionIgnore, "", false},
		{"row remapping failure", 64, "INFOROM_DRAM_RETIREMENT_FAILURE", ActionResetGPU, "", true},
		{"contained ECC: restart the app", 94, "ROBUST_CHANNEL_CONTAINED_ERROR", ActionRestartApp, "", false},
		{"uncontained ECC: reset", 95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", ActionResetGPU, "", true},
		{"GSP RPC timeout", 119, "GSP_RPC_TIMEOUT", ActionResetGPU, "", true},
		{"GSP error", 120, "GSP_ERROR", ActionResetGPU, "", true},
		{"recovery action changed: read the message", 154, "GPU_RECOVERY_ACTION_CHANGED", ActionNone, XidWorkflowXid154, false},
		{"NVLink error: register decode", 74, "NVLINK_ERROR", ActionResetGPU, XidWorkflowNVLink, true},
		{"NVLink5 NETIR: table decode", 149, "NVLINK_NETIR_ERROR", ActionResetGPU, XidWorkflowNVLink5, true},
		{"preemptive cleanup alone: restart fabric manager", 45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", ActionRestartFM, XidWorkflowXid45, true},
		{"key rotation: restart the VM", 151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", ActionRestartVM, "", true},
		{"CHI non-data: bare metal ignores", 159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", ActionIgnore, XidWorkflowCheckUVM, false},
		{"unused code: contact support", 1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", ActionContactSupport, "", true},
		{"no bucket yet", 172, "UNCORRECTABLE_SRAM_ERROR", ActionNone, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, ok := LookupXid(tt.code)
			if !ok {
				t.Fatalf("LookupXid(%d): not found", tt.code)
			}
			if x.Mnemonic != tt.mnemonic || x.Action != tt.action || x.Workflow != tt.workflow || x.Fatal != tt.fatal {
				t.Errorf("Xid %d = %q %q %q fatal=%v; want %q %q %q fatal=%v",
					tt.code, x.Mnemonic, x.Action, x.Workflow, x.Fatal, tt.mnemonic, tt.action, tt.workflow, tt.fatal)
			}
		})
	}
	for _, code := range []int{0, -1, 173, 1000} {
		if _, ok := LookupXid(code); ok {
			t.Errorf("LookupXid(%d) found an entry", code)
		}
	}
	if x, _ := LookupXid(149); !x.AppliesTo.Has(XidB100|XidGB200) || x.AppliesTo.Has(XidH100) {
		t.Errorf("Xid 149 applies to %s: want B100|GB200", x.AppliesTo)
	}
}

func TestResolveXids(t *testing.T) {
	tests := []struct {
		name  string
		codes []int
		want  Action
	}{
		{"nothing", nil, ActionNone},
		{"48 alone", []int{48}, ActionResetGPU},
		{"48 with 63", []int{48, 63}, ActionDrainAndReset},
		{"48 with 64", []int{64, 48}, ActionDrainAndReset},
		{"48 with 94 is still solo for the workflow", []int{48, 94}, ActionResetGPU},
		// The 48 → 63 → 94 sequence of gpud's H100 kernel log: the workflow wins.
		{"48, 63, 94", []int{48, 63, 94}, ActionDrainAndReset},
		{"63 alone", []int{63}, ActionIgnore},
		{"45 alone", []int{45}, ActionRestartFM},
		{"45 repeated is still alone", []int{45, 45}, ActionRestartFM},
		{"45 follows 94", []int{94, 45}, ActionRestartApp},
		{"45 follows 13", []int{13, 45}, ActionRestartApp},
		{"45 with 48 and 63", []int{45, 48, 63}, ActionDrainAndReset},
		{"154 alone says nothing", []int{154}, ActionNone},
		{"154 with 79", []int{154, 79}, ActionRestartBM},
		{"13 repeated", []int{13, 13, 13}, ActionRestartApp},
		{"unknown code", []int{999}, ActionContactSupport},
		{"strongest wins", []int{31, 119, 43}, ActionResetGPU},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResolveXids(tt.codes); got != tt.want {
				t.Errorf("ResolveXids(%v) = %q, want %q", tt.codes, got, tt.want)
			}
		})
	}
}

func TestParseXid154(t *testing.T) {
	tests := []struct {
		name     string
		msg      string
		from, to XidRecoveryAction
		action   Action
		wantErr  bool
	}{
		{
			// The example in the catalog's own trigger text for Xid 154.
			name: "catalog example",
			msg:  xidMustLookup(t, 154).Trigger,
			from: XidRecoveryNone, to: XidRecoveryNodeReboot, action: ActionRestartBM,
		},
		{
			// Kernel log lines from leptonai/gpud's Xid tests (a GB200 link incident).
			name: "gpud: none to drain and reset",
			msg:  "[171167.621162] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
			from: XidRecoveryNone, to: XidRecoveryDrainAndReset, action: ActionDrainAndReset,
		},
		{
			name: "gpud: drain and reset to GPU reset",
			msg:  "[171168.601459] NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)",
			from: XidRecoveryDrainAndReset, to: XidRecoveryGPUReset, action: ActionResetGPU,
		},
		{
			name: "drain p2p, names omitted",
			msg:  "GPU recovery action changed from 0x0 to 0x3",
			from: XidRecoveryNone, to: XidRecoveryDrainP2P, action: ActionDrainAndReset,
		},
		{
			name: "back to none",
			msg:  "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
			from: XidRecoveryGPUReset, to: XidRecoveryNone, action: ActionIgnore,
		},
		{
			name: "value the catalog does not list",
			msg:  "GPU recovery action changed from 0x0 (None) to 0x5 (Something New)",
			from: XidRecoveryNone, to: 5, action: ActionContactSupport,
		},
		{name: "not an xid 154", msg: "NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>'", wantErr: true},
		{name: "no new action", msg: "GPU recovery action changed from 0x0 (None)", wantErr: true},
		{name: "decimal", msg: "GPU recovery action changed from 0 to 2", wantErr: true},
		{name: "too wide", msg: "GPU recovery action changed from 0x0 to 0x100000000", wantErr: true},
		{name: "empty", msg: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to, err := ParseXid154(tt.msg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseXid154(%q) error = %v, want error %v", tt.msg, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if from != tt.from || to != tt.to || to.Action() != tt.action {
				t.Errorf("ParseXid154(%q) = %v → %v (%q); want %v → %v (%q)", tt.msg, from, to, to.Action(), tt.from, tt.to, tt.action)
			}
		})
	}
}

func xidMustLookup(t *testing.T, code int) XidInfo {
	t.Helper()
	x, ok := LookupXid(code)
	if !ok {
		t.Fatalf("Xid %d is not in the catalog", code)
	}
	return x
}

// gpud149 is a kernel log line from leptonai/gpud's Xid tests (GB200, driver
// before R575). Its IntrInfo 0x021425c6 is, in binary,
// 000000 100001 0100001001 0111000110 (bits 31–26, 25–20, 19–10, 9–0): bits 9–0
// are NETIR_LINK_EVT's V1 subcode and unit, bits 25–20 the link-down reason
// 100001, a row whose investigation is INVESTIGATE_PEER_DEVICE.
const gpud149 = "[171167.620236] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"

func TestParseNVLink5Registers(t *testing.T) {
	tests := []struct {
		name              string
		msg               string
		intrInfo, errStat uint32
		wantErr           bool
	}{
		{name: "gpud xid 149", msg: gpud149, intrInfo: 0x021425c6},
		{name: "documented shape", msg: "Xid (PCI:0000:01:00): 145, RLW_SRC_TRACK Nonfatal XC0 i0 Link 03 (0x00000387 0x00000004 0x0 0x0 0x0 0x0 0x0)", intrInfo: 0x387, errStat: 4},
		{name: "cut short after errorStatus", msg: "Xid (PCI:0000:01:00): 150, MSE_WATCHDOG Fatal XC0 i0 Link 00 (0x00000000 0xFFFFFFFF", errStat: 0xFFFFFFFF},
		{name: "commas", msg: "(0x1, 0x2, 0x3)", intrInfo: 1, errStat: 2},
		{name: "no parentheses", msg: "NVRM: Xid 149 NETIR_LINK_EVT", wantErr: true},
		{name: "one register", msg: "Xid (PCI:0000:01:00): 149 (0x021425c6)", wantErr: true},
		{name: "pci address only", msg: "NVRM: Xid (PCI:0000:01:00): 149", wantErr: true},
		{name: "not hex", msg: "(0xZZ 0x0)", wantErr: true},
		{name: "wider than 32 bits", msg: "(0x100000000 0x0)", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			intr, stat, err := ParseNVLink5Registers(tt.msg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseNVLink5Registers(%q) error = %v, want error %v", tt.msg, err, tt.wantErr)
			}
			if !tt.wantErr && (intr != tt.intrInfo || stat != tt.errStat) {
				t.Errorf("ParseNVLink5Registers(%q) = %#x, %#x; want %#x, %#x", tt.msg, intr, stat, tt.intrInfo, tt.errStat)
			}
		})
	}
}

func TestDecodeNVLink5(t *testing.T) {
	type row struct {
		subcode       string
		bucket        string
		promoted      bool
		investigatory string
	}
	tests := []struct {
		name       string
		xid        int
		format     NVLink5Format
		intrInfo   uint32
		errStatus  uint32
		want       []row
		wantAction Action
	}{
		{
			name: "gpud 149 link down, peer reason", xid: 149, format: NVLink5V1,
			intrInfo: 0x021425c6, errStatus: 0,
			want:       []row{{"NETIR_LINK_EVT/NETIR_LINK_DOWN", "RESET_GPU", false, "INVESTIGATE_PEER_DEVICE"}},
			wantAction: ActionResetGPU,
		},
		{
			// Same register read as V2: bits 6–0 are 1000110 = 70, no subcode.
			name: "gpud 149 read with the wrong layout", xid: 149, format: NVLink5V2,
			intrInfo: 0x021425c6,
		},
		{
			// V2 link down (subcode 0010001 = 17) with reason 100110 = 0x26 in
			// bits 25–20: 0x26<<20 | 0x11 = 0x02600011.
			name: "149 link down ignored by the table", xid: 149, format: NVLink5V2,
			intrInfo:   0x02600011,
			want:       []row{{"NETIR_LINK_EVT/NETIR_LINK_DOWN", "IGNORE", false, "INVESTIGATE_SW/USER"}},
			wantAction: ActionIgnore,
		},
		{
			// V2 RLW_RXPIPE is 0000110; with bit 7 set the row is promoted to
			// action 2: 0x86.
			name: "145 RXPIPE promoted", xid: 145, format: NVLink5V2,
			intrInfo: 0x86, errStatus: 0x1,
			want:       []row{{"RLW_RXPIPE", "RESET_GPU", true, "CONTACT_SUPPORT"}},
			wantAction: ActionResetGPU,
		},
		{
			name: "145 RXPIPE not promoted", xid: 145, format: NVLink5V2,
			intrInfo: 0x06, errStatus: 0x1,
			want:       []row{{"RLW_RXPIPE", "IGNORE", false, "CONTACT_SUPPORT"}},
			wantAction: ActionIgnore,
		},
		{
			// V1 RLW_RXPIPE is 00110 00010 in bits 9–0 (0xC2), bit 10 promotes:
			// 0x4C2.
			name: "145 RXPIPE promoted, V1", xid: 145, format: NVLink5V1,
			intrInfo: 0x4C2, errStatus: 0x4,
			want:       []row{{"RLW_RXPIPE", "RESET_GPU", true, "CONTACT_SUPPORT"}},
			wantAction: ActionResetGPU,
		},
		{
			// V2 RLW_REMAP is 0000100.
			name: "145 REMAP: evaluate Xid 154", xid: 145, format: NVLink5V2,
			intrInfo: 0x04, errStatus: 0x4,
			want:       []row{{"RLW_REMAP", "XID_154_EVAL", false, "CHECK_NVLINK_FAILURE_FLOW"}},
			wantAction: ActionRestartApp,
		},
		{
			// V1 cannot tell TLW_RX pipe 0 from pipe 1 (both 01010 00011 = 0x143).
			name: "146 TLW_RX, V1: both pipes", xid: 146, format: NVLink5V1,
			intrInfo: 0x143, errStatus: 0x4,
			want: []row{
				{"TLW_RX/TLW_RX_PIPE0", "RESET_GPU", false, "CONTACT_SUPPORT"},
				{"TLW_RX/TLW_RX_PIPE1", "RESET_GPU", false, "CONTACT_SUPPORT"},
			},
			wantAction: ActionResetGPU,
		},
		{
			name: "146 TLW_RX, V2: pipe 1", xid: 146, format: NVLink5V2,
			intrInfo: 0x0B, errStatus: 0x2,
			want:       []row{{"TLW_RX/TLW_RX_PIPE1", "IGNORE", false, "CONTACT_SUPPORT"}},
			wantAction: ActionIgnore,
		},
		{
			name: "150 status 0 matches both MSE rows", xid: 150, format: NVLink5V2,
			want: []row{
				{"MSE Degraded", "RESET_GPU", false, "CONTACT_SUPPORT"},
				{"MSE_WATCHDOG", "RESET_GPU", false, "CONTACT_SUPPORT"},
			},
			wantAction: ActionResetGPU,
		},
		{
			name: "150 status 0xFFFFFFFF: degraded only", xid: 150, format: NVLink5V1,
			errStatus:  0xFFFFFFFF,
			want:       []row{{"MSE Degraded", "RESET_GPU", false, "CONTACT_SUPPORT"}},
			wantAction: ActionResetGPU,
		},
		{
			name: "144 with two status bits matches no row", xid: 144, format: NVLink5V2,
			intrInfo: 0x01, errStatus: 0x3,
		},
		{name: "not an NVLink5 Xid", xid: 48, format: NVLink5V2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := DecodeNVLink5(tt.xid, tt.format, tt.intrInfo, tt.errStatus)
			var got []row
			for _, m := range ms {
				got = append(got, row{m.Decode.Subcode, m.Bucket, m.Promoted, m.Decode.Investigatory})
				if a, w, _ := XidBucketAction(m.Bucket); m.Action != a || m.Workflow != w {
					t.Errorf("match %s: action %q %q, bucket %q says %q %q", m.Decode.Subcode, m.Action, m.Workflow, m.Bucket, a, w)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("DecodeNVLink5(%d, %d, %#x, %#x) =\n  %v\nwant\n  %v", tt.xid, tt.format, tt.intrInfo, tt.errStatus, got, tt.want)
			}
			a, ok := NVLink5Action(tt.xid, tt.format, tt.intrInfo, tt.errStatus)
			if a != tt.wantAction || ok != (len(tt.want) > 0) {
				t.Errorf("NVLink5Action = %q, %v; want %q, %v", a, ok, tt.wantAction, len(tt.want) > 0)
			}
		})
	}
	t.Run("end to end from the log line", func(t *testing.T) {
		intr, stat, err := ParseNVLink5Registers(gpud149)
		if err != nil {
			t.Fatal(err)
		}
		a, ok := NVLink5Action(149, NVLink5FormatForDriver(570), intr, stat)
		if !ok || a != ActionResetGPU {
			t.Errorf("gpud 149 line decodes to %q, %v; want RESET_GPU", a, ok)
		}
	})
}

func TestNVLink5FormatForDriver(t *testing.T) {
	for _, tt := range []struct {
		major int
		want  NVLink5Format
	}{{535, NVLink5V1}, {570, NVLink5V1}, {574, NVLink5V1}, {575, NVLink5V2}, {580, NVLink5V2}} {
		if got := NVLink5FormatForDriver(tt.major); got != tt.want {
			t.Errorf("NVLink5FormatForDriver(%d) = %d, want %d", tt.major, got, tt.want)
		}
	}
}

func TestIntrInfoPattern(t *testing.T) {
	tests := []struct {
		name    string
		pattern IntrInfoPattern
		v       uint32
		want    bool
	}{
		{"all open", "--------------------------------", 0xDEADBEEF, true},
		{"all zero, zero", "00000000000000000000000000000000", 0, true},
		{"all zero, one bit", "00000000000000000000000000000000", 1 << 31, false},
		{"first character is bit 31", "1-------------------------------", 1 << 31, true},
		{"last character is bit 0", "-------------------------------1", 1, true},
		{"last character is bit 0, unset", "-------------------------------1", 2, false},
		{"table row SAW_MVB V2", "------000000-------------0000001", 0xFC000001, true},
		{"table row SAW_MVB V2, bit 20 set", "------000000-------------0000001", 0x00100001, false},
		{"too short", "0000", 0, false},
		{"too long", "000000000000000000000000000000000", 0, false},
		{"bad character", "0000000000000000000000000000000x", 0, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pattern.Match(tt.v); got != tt.want {
				t.Errorf("%q.Match(%#x) = %v, want %v", tt.pattern, tt.v, got, tt.want)
			}
		})
	}
	for _, d := range NVLink5Decodes() {
		for _, p := range []IntrInfoPattern{d.IntrInfoV1, d.IntrInfoV2} {
			if _, _, err := p.Parse(); err != nil {
				t.Errorf("Xid %d %s: %v", d.Xid, d.Subcode, err)
			}
		}
	}
}

// TestXidNVSentinel compares the catalog with NVIDIA NVSentinel's Xid mapping
// (testdata/nvsentinel): our Fatal verdict and Action against its FATAL/NONFATAL
// and action columns. Every disagreement must be listed with its reason; a
// listed one that no longer disagrees fails too, so the list stays true.
func TestXidNVSentinel(t *testing.T) {
	knownDisagreements := map[int]string{
		45:  "catalog: WORKFLOW_XID_45 alone is RESTART_FM (fatal); NVSentinel says NONFATAL because 45 usually follows another Xid, where ResolveXids demotes it to IGNORE",
		108: "catalog marks 108 Unused with IGNORE; NVSentinel (as DESTINATION_FLA_TRANSLATION_ERROR) says UNEXPECTED_ERR_REPORT_ISSUE, FATAL",
		160: "catalog: channel retirement event is IGNORE (investigate SW); NVSentinel says RESTART_BM, FATAL",
		162: "catalog gives 162 (power smoothing re-engaged) no bucket; NVSentinel's row 162 has no mnemonic and says RESET_GPU, FATAL",
	}
	// NVSentinel's action column uses two names the catalog does not.
	aliases := map[string]string{
		"UNEXPECTED_ERR_REPORT_ISSUE":                   "CONTACT_SUPPORT",
		"Follow guidance as it aapplies to another Xid": "XID_154",
	}
	// Mnemonics that differ after trimming and collapsing white space.
	mnemonicDiffs := map[int]bool{108: true, 137: true, 162: true}

	records := xidReadCSV(t, xidNVSentinelCSV)
	var agree, disagree, onlyOurs int
	seen := map[int]bool{}
	for _, rec := range records {
		if len(rec) != 4 {
			t.Fatalf("NVSentinel row %q: want 4 columns", rec)
		}
		code, err := strconv.Atoi(rec[0])
		if err != nil {
			t.Fatalf("NVSentinel code %q: %v", rec[0], err)
		}
		seen[code] = true
		x, ok := LookupXid(code)
		if !ok {
			t.Errorf("NVSentinel maps Xid %d, the catalog does not list it", code)
			continue
		}
		bucket := rec[2]
		if a, ok := aliases[bucket]; ok {
			bucket = a
		}
		nvAction, _, ok := XidBucketAction(bucket)
		if !ok {
			t.Errorf("Xid %d: NVSentinel action %q is unknown", code, rec[2])
		}
		var nvFatal bool
		switch rec[3] {
		case "FATAL":
			nvFatal = true
		case "NONFATAL":
		default:
			t.Errorf("Xid %d: NVSentinel fatality %q: want FATAL or NONFATAL", code, rec[3])
		}

		differs := x.Fatal != nvFatal || x.Action != nvAction
		reason, listed := knownDisagreements[code]
		switch {
		case differs && !listed:
			t.Errorf("Xid %d: ours %q fatal=%v, NVSentinel %q fatal=%v: explain it in knownDisagreements or fix the mapping",
				code, x.Action, x.Fatal, rec[2], nvFatal)
		case !differs && listed:
			t.Errorf("Xid %d is listed as a disagreement (%s) but now agrees: drop it", code, reason)
		}
		if differs {
			disagree++
		} else {
			agree++
		}

		ours := strings.Join(strings.Fields(x.Mnemonic), " ")
		theirs := strings.Join(strings.Fields(rec[1]), " ")
		if (ours != theirs) != mnemonicDiffs[code] {
			t.Errorf("Xid %d mnemonic: ours %q, NVSentinel %q; listed as different: %v", code, ours, theirs, mnemonicDiffs[code])
		}
	}
	for code := range knownDisagreements {
		if !seen[code] {
			t.Errorf("Xid %d is listed as a disagreement but NVSentinel has no row for it", code)
		}
	}
	for _, x := range Xids() {
		if !seen[x.Code] {
			onlyOurs++
		}
	}
	t.Logf("NVSentinel: %d Xids compared, %d agree, %d disagree; %d only in the catalog", agree+disagree, agree, disagree, onlyOurs)
}

// xidRefMatch is the obvious bit-by-bit reading of an IntrInfo pattern, the
// reference for FuzzIntrInfoPattern.
func xidRefMatch(p string, v uint32) bool {
	if len(p) != 32 {
		return false
	}
	for i := 0; i < 32; i++ {
		bit := (v >> (31 - i)) & 1
		switch p[i] {
		case '-':
		case '0':
			if bit != 0 {
				return false
			}
		case '1':
			if bit != 1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func FuzzIntrInfoPattern(f *testing.F) {
	for _, d := range nvlink5DecodeRows {
		f.Add(string(d.IntrInfoV1), uint32(0x021425c6))
		f.Add(string(d.IntrInfoV2), d.SubcodeV2)
	}
	f.Add("", uint32(0))
	f.Add("------000000---------10011000010", uint32(0x4C2))
	f.Add("0000000000000000000000000000000\xff", uint32(0))
	f.Fuzz(func(t *testing.T, p string, v uint32) {
		got := IntrInfoPattern(p).Match(v)
		if want := xidRefMatch(p, v); got != want {
			t.Errorf("%q.Match(%#x) = %v, reference says %v", p, v, got, want)
		}
	})
}

func FuzzParseNVLink5Registers(f *testing.F) {
	f.Add(gpud149)
	f.Add("(0x0 0xFFFFFFFF")
	f.Add("((0x1 0x2)")
	f.Add("Xid (PCI:0000:01:00): 145, RLW_SRC_TRACK Nonfatal XC0 i0 Link 03 (0x00000387 0x00000004 0x0)")
	f.Add("(0x 0x)")
	f.Fuzz(func(t *testing.T, msg string) {
		intr, stat, err := ParseNVLink5Registers(msg)
		if err != nil {
			return
		}
		// A parsed pair survives being written back in the documented shape.
		line := fmt.Sprintf("Xid (PCI:0000:01:00): 149, X Fatal XC0 i0 Link 00 (%#08x %#08x 0x0)", intr, stat)
		i2, s2, err := ParseNVLink5Registers(line)
		if err != nil || i2 != intr || s2 != stat {
			t.Errorf("round trip of %#x %#x through %q: %#x %#x %v", intr, stat, line, i2, s2, err)
		}
	})
}

func FuzzParseXid154(f *testing.F) {
	f.Add("GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")
	f.Add("[171168.601459] NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)")
	f.Add("recovery action changed from  to ")
	f.Add("recovery action changed from 0x to 0x")
	f.Fuzz(func(t *testing.T, msg string) {
		from, to, err := ParseXid154(msg)
		if err != nil {
			return
		}
		line := fmt.Sprintf("GPU recovery action changed from %#x (%s) to %#x (%s)", uint32(from), from, uint32(to), to)
		f2, t2, err := ParseXid154(line)
		if err != nil || f2 != from || t2 != to {
			t.Errorf("round trip of %d → %d through %q: %d → %d, %v", from, to, line, f2, t2, err)
		}
		_ = to.Action() // must not panic
	})
}

// TestClassifyXid: one event's action, as gpuwatch_xid_errors_total's action
// label and the health engine's incidents read it.
func TestClassifyXid(t *testing.T) {
	for _, tc := range []struct {
		code  int
		msg   string
		want  Action
		known bool
	}{
		{79, "GPU has fallen off the bus.", ActionRestartBM, true},
		{13, "Graphics Exception: ESR 0x546f30=0x124000e", ActionRestartApp, true},
		{48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 7, subpartition 0.", ActionResetGPU, true},
		{154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", ActionRestartBM, true},
		{154, "no action in this message", ActionNone, true},
		{9999, "", ActionContactSupport, false},
	} {
		got, _, known := ClassifyXid(tc.code, tc.msg, 570)
		if got != tc.want || known != tc.known {
			t.Errorf("ClassifyXid(%d, %q) = %s, known %v; want %s, %v", tc.code, tc.msg, got, known, tc.want, tc.known)
		}
	}
	for v, want := range map[string]int{"570.133.20": 570, "535": 535, "": 0, "x.1": 0} {
		if got := DriverMajor(v); got != want {
			t.Errorf("DriverMajor(%q) = %d, want %d", v, got, want)
		}
	}
}
