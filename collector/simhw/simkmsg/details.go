package simkmsg

import (
	"fmt"
	"strings"
)

// defaultDetails are the messages Xid prints when it is given no detail. Each
// notes where its wording comes from:
//
//	observed   a real log in leptonai/gpud's testdata (driver 550.x), copied
//	reported   the form in public bug reports and parsers' test cases
//	documented NVIDIA's Xid Catalog or driver source
//	approx.    no real line at hand; the catalog's description in the shape
//	           RC error messages take
//
// Numbers (addresses, channels, GPCs) are one realistic instance.
var defaultDetails = map[int]string{
	// observed: pkg/dmesg/testdata/dmesg.decode.iso.log.0 (550.90.07)
	13: "Graphics SM Warp Exception on (GPC 8, TPC 5, SM 0): Out Of Range Address",
	// reported: MMU fault lines of application crashes
	31: "Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2e_b8000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
	// observed: components/memory/testdata/dmesg.decode.iso.log
	43: "Ch 00000008",
	// reported; R570+ appends " caused by previous Xid N" when it knows the cause
	45: "Ch 00000010",
	// observed: components/query/log/tail/testdata/dmesg.0.log
	48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x12bac1c3e0 partition 2, subpartition 1.",
	// approx.: PMU breakpoint, "<pc>(<id>) <data> <data>"
	61: "0cec(2fc0) 00000000 00000000",
	// approx.: PMU halt, same shape as 61
	62: "3b7c(1a18) 00000000 00000000",
	// observed: components/query/log/tail/testdata/dmesg.0.log (follows Xid 48)
	63: "Row Remapper: New row (0x00000012bac1c3e0) marked for remapping, reset gpu to activate.",
	// approx.: the Row Remapper wording of 63 for the failure case
	64: "Row Remapper: Failed to mark row (0x00000012bac1c3e0) for remapping, reset gpu to activate.",
	// approx.
	68: "NVDEC0 Exception: Error status 0x00000001",
	// reported
	69: "Class Error: ChId 0008, Class 0000c7c0, Offset 00001b0c, Data 00000000, ErrorCode 0000004a",
	// reported: NVLink4 (H100) form, registers decoded per the catalog's Xid 74 workflow
	74: "NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
	// reported and in gpud's parser comments: "GPU has fallen off the bus."
	79: "GPU has fallen off the bus.",
	// approx.
	92: "High single-bit ECC error rate detected",
	// observed: components/query/log/tail/testdata/dmesg.0.log (follows Xid 63)
	94: "Contained: SM (0x1). RST: No, D-RST: No",
	// reported: the uncontained counterpart of 94's wording
	95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
	// reported
	109: "Ch 00000010, errorString CTX SWITCH TIMEOUT, Info 0x3c046",
	// observed: components/accelerator/nvidia/xid/testdata/dmesg-with-xid-119.log
	// (H100, R550); %d is the driver's GPU instance
	119: "Timeout after 6s of waiting for RPC response from GPU%d GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c).",
	// reported
	120: "GSP task timeout @ pc:0x8b8f2e8, task: 1",
	// approx.: C2C (Grace–Blackwell) corrected errors, per the catalog
	121: "C2C link 0 corrected errors detected, GPU reset recommended",
	// approx.: unused codes, catalog mnemonics
	122: "SPI PMU RPC read fail",
	123: "SPI PMU RPC write fail",
	// reported
	140: "An uncorrectable ECC error detected (possible firmware handling failure) DRAM:-1840866479, LTC:0, MMU:0, PCIE:0",
	// approx.: catalog description
	143: "GPU Initialization Failure",
}

// defaultNVLink5 are the faults behind the default NVLink5 (Xid 144–150) details.
var defaultNVLink5 = map[int]NVLink5Fault{
	144: {Xid: 144, Unit: "SAW_MVB", Link: 0, ErrStatus: 0x1},
	145: {Xid: 145, Unit: "RLW_REMAP", Link: 2, ErrStatus: 0x1},
	146: {Xid: 146, Unit: "TLW_RX_PIPE0", Link: 3, ErrStatus: 0x1},
	147: {Xid: 147, Unit: "TREX", Link: 4, ErrStatus: 0x1},
	148: {Xid: 148, Unit: "NVLPW", Link: 5, ErrStatus: 0x80000000},
	149: {Xid: 149, Unit: "NETIR_LINK_EVT", Fatal: true, Link: 1},
	150: {Xid: 150, Unit: "MSE_WATCHDOG", Fatal: true, Link: 0},
}

// fallbackDetail is printed for an Xid with no entry: the channel form most RC
// errors take.
const fallbackDetail = "Ch 00000010"

// DefaultDetail returns the message Xid prints for xid when given no detail, for
// GPU instance 0. Xid 154's default depends on the GPU's last recovery action;
// this returns the first change, None to GPU Reset Required.
func (l *Log) DefaultDetail(xid int) string {
	if xid == 154 {
		return recoveryDetail(RecoveryNone, RecoveryGPUReset)
	}
	return l.defaultDetail(xid, 0)
}

func (l *Log) defaultDetail(xid, gpuIndex int) string {
	if f, ok := defaultNVLink5[xid]; ok {
		d, err := l.NVLink5Detail(f)
		if err != nil {
			panic(err) // the table above is wrong
		}
		return d
	}
	d, ok := defaultDetails[xid]
	if !ok {
		return fallbackDetail
	}
	if xid == 119 {
		return fmt.Sprintf(d, gpuIndex)
	}
	return d
}

// NVLink5Fault is one NVLink5 (Blackwell) error report, Xid 144–150, decoded as in
// the "Xid 144-150 Decode" sheet of NVIDIA's Xid Catalog.
type NVLink5Fault struct {
	Xid int
	// Unit is the subcode the message names: the pre-R575 or the R575+ name
	// ("TLW_RX" or "TLW_RX_PIPE0", "NETIR_LINK_EVT" or "NETIR_LINK_DOWN"); the
	// log prints the one of its driver.
	Unit string
	// Fatal prints "Fatal" instead of "Nonfatal"; the catalog's severity for the
	// unit and ErrStatus says which it is.
	Fatal bool
	// Link is the NVLink number, printed as "Link 05".
	Link int
	// Reason is IntrInfo[25:20], which the catalog uses to tell some rows of a
	// unit apart (NETIR_LINK_EVT link-down causes); 0 for most.
	Reason uint8
	// ErrStatus is the second register word (the catalog's "Error Status").
	ErrStatus uint32
}

// nvlink5Unit is one subcode of the catalog's decode sheet: its names before and
// from R575 and the fixed IntrInfo bits (V1: bits 9:0, V2: bits 6:0).
type nvlink5Unit struct {
	xid    int
	v1, v2 string
	v1bits uint32
	v2bits uint32
}

// nvlink5Units is transcribed from xid_sheet2_Xid_144_150_Decode.csv.
var nvlink5Units = []nvlink5Unit{
	{144, "SAW_MVB", "SAW_MVB", 0b0000100001, 0b0000001},
	{145, "RLW_CTRL", "RLW_CTRL", 0b0001100010, 0b0000011},
	{145, "RLW_REMAP", "RLW_REMAP", 0b0010000010, 0b0000100},
	{145, "RLW_RSPCOL", "RLW_RSPCOL", 0b0010100010, 0b0000101},
	{145, "RLW_RXPIPE", "RLW_RXPIPE", 0b0011000010, 0b0000110},
	{145, "RLW_SRC_TRACK", "RLW_SRC_TRACK", 0b0011100010, 0b0000111},
	{145, "RLW_TAGSTATE", "RLW_TAGSTATE", 0b0100000010, 0b0001000},
	{146, "TLW_CTRL", "TLW_CTRL", 0b0100100011, 0b0001001},
	{146, "TLW_RX", "TLW_RX_PIPE0", 0b0101000011, 0b0001010},
	{146, "TLW_RX", "TLW_RX_PIPE1", 0b0101000011, 0b0001011},
	{146, "TLW_TX", "TLW_TX_PIPE0", 0b0101100011, 0b0001100},
	{146, "TLW_TX", "TLW_TX_PIPE1", 0b0101100011, 0b0001101},
	{147, "TREX", "TREX", 0b0110000100, 0b0001110},
	{148, "NVLPW_CTRL", "NVLPW", 0b0000000101, 0b0001111},
	{149, "NETIR", "NETIR_INT", 0b0000000110, 0b0011000},
	{149, "NETIR_LINK_EVT", "NETIR_LINK_DOWN", 0b0111000110, 0b0010001},
	{149, "NETIR_BER_EVENT", "NETIR_BER_EVENT", 0b1000100110, 0b0010011},
	{149, "NETIR_MFDE_EVENT", "NETIR_MFDE_EVENT", 0b1001000110, 0b0010100},
	{150, "MSE Degraded", "MSE Degraded", 0, 0},
	{150, "MSE_WATCHDOG", "MSE_WATCHDOG", 0, 0},
}

// NVLink5Detail returns the message of an NVLink5 Xid as the log's driver prints
// it, e.g. for Xid 149 on R570:
//
//	NETIR_LINK_EVT Fatal XC0 i0 Link 01 (0x000001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)
//
// The shape (unit, severity, XC/instance, link, register words; six words with
// the V1 IntrInfo encoding before R575, four with V2 from R575) is the one in
// public parsers' test cases of real Blackwell logs; the encodings are the
// catalog's. The cross-containment and instance fields print as XC0 i0.
func (l *Log) NVLink5Detail(f NVLink5Fault) (string, error) {
	var u *nvlink5Unit
	for i := range nvlink5Units {
		c := &nvlink5Units[i]
		if c.xid == f.Xid && (strings.EqualFold(c.v1, f.Unit) || strings.EqualFold(c.v2, f.Unit)) {
			u = c
			break
		}
	}
	if u == nil {
		return "", fmt.Errorf("unknown NVLink5 unit %q for Xid %d", f.Unit, f.Xid)
	}
	if f.Link < 0 || f.Link > 99 {
		return "", fmt.Errorf("NVLink number %d out of range", f.Link)
	}
	sev := "Nonfatal"
	if f.Fatal {
		sev = "Fatal"
	}
	reason := uint32(f.Reason&0x3f) << 20
	if l.major < 575 {
		return fmt.Sprintf("%s %s XC0 i0 Link %02d (0x%08x 0x%08x 0x00000000 0x00000000 0x00000000 0x00000000)",
			u.v1, sev, f.Link, reason|u.v1bits, f.ErrStatus), nil
	}
	return fmt.Sprintf("%s %s XC0 i0 Link %02d (0x%08x 0x%08x 0x00000000 0x00000000)",
		u.v2, sev, f.Link, reason|u.v2bits, f.ErrStatus), nil
}
