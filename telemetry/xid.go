package telemetry

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

//go:generate go run ./internal/xidgen -in testdata/xid-catalog -out xid_catalog_gen.go

// XidProducts is a set of the GPU products NVIDIA's Xid Catalog has a column for.
type XidProducts uint8

// The products of the catalog's "Applies to" columns.
const (
	XidA100 XidProducts = 1 << iota
	XidH100
	XidB100
	XidGB200
)

// Has reports whether every product in q is in p.
func (p XidProducts) Has(q XidProducts) bool { return p&q == q }

// String renders the set as "A100|H100", or "none".
func (p XidProducts) String() string {
	var names []string
	for _, n := range []struct {
		p    XidProducts
		name string
	}{{XidA100, "A100"}, {XidH100, "H100"}, {XidB100, "B100"}, {XidGB200, "GB200"}} {
		if p.Has(n.p) {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// XidWorkflow names a catalog bucket whose action depends on more than the Xid
// code: other Xids seen with it, registers decoded from its message, or how the
// GPU is used. The health engine applies the workflow; XidInfo.Action holds the
// action NVIDIA states for the Xid seen alone.
type XidWorkflow string

// The workflow buckets of the catalog (sheet 3 says what each means).
const (
	// XidWorkflowXid48: alone, RESET_GPU; with Xid 63 or 64, DRAIN_AND_RESET.
	XidWorkflowXid48 XidWorkflow = "WORKFLOW_XID_48"
	// XidWorkflowXid45: alone, RESTART_FM; with another Xid, IGNORE and follow
	// the other Xid.
	XidWorkflowXid45 XidWorkflow = "WORKFLOW_XID_45"
	// XidWorkflowNVLink: decode Xid 74's registers bit by bit.
	XidWorkflowNVLink XidWorkflow = "WORKFLOW_NVLINK_ERR"
	// XidWorkflowNVLink5: decode IntrInfo and ErrorStatus of Xids 144–150 with
	// the NVLink5 table (DecodeNVLink5).
	XidWorkflowNVLink5 XidWorkflow = "WORKFLOW_NVLINK5_ERR"
	// XidWorkflowXid154: Xid 154 carries the driver's recovery action in its
	// message (ParseXid154).
	XidWorkflowXid154 XidWorkflow = "XID_154"
	// XidWorkflowXid154Eval: take the action of an Xid 154 seen with this error;
	// without one, RESTART_APP. Used by NVLink5 decode rows.
	XidWorkflowXid154Eval XidWorkflow = "XID_154_EVAL"
	// XidWorkflowCheckUVM: RESET_GPU if UVM or vGPU is in use, IGNORE otherwise.
	XidWorkflowCheckUVM XidWorkflow = "CHECK_UVM"
)

// XidInfo is one Xid of NVIDIA's Xid Catalog. The string fields hold the
// catalog's cells exactly as written; Action, Workflow and Fatal are derived
// from them here.
type XidInfo struct {
	// Code is the Xid number.
	Code int
	// Mnemonic is the driver's name for the condition. One Xid (13) has two,
	// separated by " /\n".
	Mnemonic string
	// Description says what happened; "Unused" marks a code that is deprecated
	// or only raised by V100 and older GPUs.
	Description string
	// AppliesTo is the set of products the catalog says raise this Xid.
	AppliesTo XidProducts
	// Immediate is the resolution bucket for getting the GPU back into service
	// ("Resolution Bucket (Immediate Action)"); blank where the catalog gives none.
	Immediate string
	// Investigatory is the bucket for finding the cause afterwards ("Resolution
	// Bucket (Investigatory Action)").
	Investigatory string
	// Xid154Linkage says whether, and from which CUDA/driver release, the Xid
	// also raises an Xid 154 carrying the recovery action.
	Xid154Linkage string
	// Trigger is the catalog's "Trigger Conditions": when the Xid is seen and
	// what to do about it, in prose.
	Trigger string

	// Action is Immediate normalized to an Action (see XidBucketAction): the
	// action for this Xid seen alone. ActionNone where the catalog gives no
	// bucket, or the action is carried in the message (Xid 154).
	Action Action
	// Workflow is set where Immediate is a workflow bucket.
	Workflow XidWorkflow
	// Fatal is gpuwatch's verdict: the Xid, seen alone, takes the GPU or the
	// node out of service, i.e. Action is stronger than RESTART_APP.
	Fatal bool
}

// XidBucket is one resolution bucket (NVIDIA calls them guidance classes) and
// what the catalog says it means.
type XidBucket struct {
	Name    string
	Meaning string
}

// xidCatalog is the generated catalog with its derived fields filled in. It is
// built once and never modified; the accessors return copies.
var xidCatalog = xidDerive(xidCatalogRows)

func xidDerive(rows []XidInfo) []XidInfo {
	out := slices.Clone(rows)
	for i := range out {
		out[i].Action, out[i].Workflow, _ = XidBucketAction(out[i].Immediate)
		out[i].Fatal = xidFatal(out[i].Action)
	}
	return out
}

// xidFatal is the Fatal verdict: anything beyond restarting the application
// (RESTART_VM, RESET_GPU, RESTART_FM, DRAIN_AND_RESET, RESTART_BM,
// CHECK_MECHANICALS, UPDATE_SWFW, CONTACT_SUPPORT) needs the GPU or node taken
// out of service.
func xidFatal(a Action) bool { return a.Rank() > ActionRestartApp.Rank() }

// LookupXid returns the catalog entry for an Xid code.
func LookupXid(code int) (XidInfo, bool) {
	i, ok := slices.BinarySearchFunc(xidCatalog, code, func(x XidInfo, c int) int { return x.Code - c })
	if !ok {
		return XidInfo{}, false
	}
	return xidCatalog[i], true
}

// Xids returns every Xid of the catalog, sorted by code.
func Xids() []XidInfo { return slices.Clone(xidCatalog) }

// XidBuckets returns the resolution buckets of the catalog, sorted by name.
func XidBuckets() []XidBucket { return slices.Clone(xidBucketRows) }

// LookupXidBucket returns the meaning of a resolution bucket, spelled as in the
// catalog.
func LookupXidBucket(name string) (XidBucket, bool) {
	i, ok := slices.BinarySearchFunc(xidBucketRows, name, func(b XidBucket, n string) int { return strings.Compare(b.Name, n) })
	if !ok {
		return XidBucket{}, false
	}
	return xidBucketRows[i], true
}

// XidBucketAction normalizes an immediate-action resolution bucket of the
// catalog (sheet 1, or the NVLink5 decode table) to an Action. For a workflow
// bucket it returns the action NVIDIA states for the Xid seen alone and the
// workflow, so the health engine can apply the rest. ok is false for a bucket
// that is not an immediate action (an investigatory bucket, a typo, a bucket
// from a newer catalog); the action is then ActionContactSupport, because
// nobody should automate what they do not understand.
func XidBucketAction(bucket string) (action Action, workflow XidWorkflow, ok bool) {
	switch b := strings.TrimSpace(bucket); b {
	case "":
		// Xids 162–172 have no bucket yet: the catalog states no action.
		return ActionNone, "", true
	case string(XidWorkflowXid48):
		// Sheet 3: "Solo: RESET_GPU; w/ 63 or 64: DRAIN_AND_RESET".
		return ActionResetGPU, XidWorkflowXid48, true
	case string(XidWorkflowXid45):
		// Sheet 3: "Solo: RESTART_FM; Not Solo: IGNORE (follow guidance in
		// other Xid)". Solo is what NVIDIA states for the Xid alone, and
		// restarting the fabric manager stops every job on the node: Fatal.
		// ResolveXids demotes it to IGNORE as soon as another Xid is seen.
		return ActionRestartFM, XidWorkflowXid45, true
	case string(XidWorkflowNVLink):
		// Sheet 3 gives only a register decode (ignore, report a bug, check
		// mechanicals); Xid 74's trigger text says "A GPU reset or node
		// reboot is needed to clear this error": RESET_GPU, the lesser of the two.
		return ActionResetGPU, XidWorkflowNVLink, true
	case string(XidWorkflowNVLink5):
		// The action comes from the decode table (DecodeNVLink5). Undecoded,
		// assume the strongest action any row of the table demands: RESET_GPU.
		// (Rows of 147 and 148 are all IGNORE, but the table is not exhaustive,
		// so an undecoded 147 or 148 still gets RESET_GPU.)
		return ActionResetGPU, XidWorkflowNVLink5, true
	case string(XidWorkflowXid154):
		// Xid 154 is informational about another Xid; its message carries the
		// recovery action (ParseXid154). The code alone implies nothing.
		return ActionNone, XidWorkflowXid154, true
	case string(XidWorkflowXid154Eval):
		// Sheet 3: "If no XID 154 present, RESTART_APP".
		return ActionRestartApp, XidWorkflowXid154Eval, true
	case string(XidWorkflowCheckUVM):
		// Sheet 3: "If UVM/vGPU is being utilized, RESET_GPU; otherwise IGNORE".
		// gpuwatch's fleets run bare-metal CUDA jobs, so the default is the
		// "otherwise" branch; a health engine that knows vGPU is in use
		// escalates via the workflow.
		return ActionIgnore, XidWorkflowCheckUVM, true
	default:
		// Plain buckets name an Action directly.
		if a := Action(b); a != ActionNone && a.Known() {
			return a, "", true
		}
		return ActionContactSupport, "", false
	}
}

// ResolveXids returns the action for a set of Xids seen together on one GPU
// (within the health engine's window), applying the catalog's workflows that
// combine Xids:
//
//   - 48 with 63 or 64 → DRAIN_AND_RESET (WORKFLOW_XID_48); 48 alone → RESET_GPU.
//   - 45 with any other Xid → IGNORE, follow the other Xid (WORKFLOW_XID_45);
//     45 alone → RESTART_FM.
//   - 154 contributes nothing: its action is in its message (ParseXid154), and
//     the driver's recovery action, where known, overrides this result.
//
// Every other Xid contributes XidInfo.Action; an Xid missing from the catalog
// contributes ActionContactSupport. The result is the most disruptive
// contribution, ActionNone for no Xids. Workflows that need more than codes
// (register decodes, CHECK_UVM) are left to the caller.
func ResolveXids(codes []int) Action {
	seen := make(map[int]bool, len(codes))
	for _, c := range codes {
		seen[c] = true
	}
	result := ActionNone
	for c := range seen {
		var a Action
		switch c {
		case 48:
			a = ActionResetGPU
			if seen[63] || seen[64] {
				a = ActionDrainAndReset
			}
		case 45:
			a = ActionRestartFM
			if len(seen) > 1 {
				a = ActionIgnore
			}
		case 154:
			a = ActionNone
		default:
			info, ok := LookupXid(c)
			if !ok {
				a = ActionContactSupport
			} else {
				a = info.Action
			}
		}
		result = result.Max(a)
	}
	return result
}

// XidRecoveryAction is the driver's GPU recovery action, as Xid 154 reports it
// and NVML returns it (nvmlDeviceGpuRecoveryAction_t; field
// FI_DEV_GET_GPU_RECOVERY_ACTION).
type XidRecoveryAction int

// The recovery actions the catalog lists for Xid 154, with NVML's values. NVML
// also defines 5 (recover the IMEX domain), which the catalog does not mention.
const (
	XidRecoveryNone          XidRecoveryAction = 0
	XidRecoveryGPUReset      XidRecoveryAction = 1
	XidRecoveryNodeReboot    XidRecoveryAction = 2
	XidRecoveryDrainP2P      XidRecoveryAction = 3
	XidRecoveryDrainAndReset XidRecoveryAction = 4
)

// String returns the driver's text for the action, as in Xid 154 messages.
func (r XidRecoveryAction) String() string {
	switch r {
	case XidRecoveryNone:
		return "None"
	case XidRecoveryGPUReset:
		return "GPU Reset Required"
	case XidRecoveryNodeReboot:
		return "Node Reboot Required"
	case XidRecoveryDrainP2P:
		return "Drain P2P"
	case XidRecoveryDrainAndReset:
		return "Drain and Reset"
	}
	return "XidRecoveryAction(" + strconv.Itoa(int(r)) + ")"
}

// Action maps the recovery action to an Action. Drain P2P becomes
// DRAIN_AND_RESET: gpuwatch has no action that drains only peer-to-peer work,
// and the GPU needs a reset once drained. A value the catalog does not list
// becomes CONTACT_SUPPORT.
func (r XidRecoveryAction) Action() Action {
	switch r {
	case XidRecoveryNone:
		return ActionIgnore
	case XidRecoveryGPUReset:
		return ActionResetGPU
	case XidRecoveryNodeReboot:
		return ActionRestartBM
	case XidRecoveryDrainP2P, XidRecoveryDrainAndReset:
		return ActionDrainAndReset
	}
	return ActionContactSupport
}

// ParseXid154 reads the recovery actions out of an Xid 154 message such as
//
//	GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)
//
// The message may be the whole kernel log line. Only the hex values count; the
// names in parentheses are not checked.
func ParseXid154(msg string) (from, to XidRecoveryAction, err error) {
	const marker = "recovery action changed from "
	i := strings.Index(msg, marker)
	if i < 0 {
		return 0, 0, fmt.Errorf("parse xid 154 message %q: no %q", msg, strings.TrimSpace(marker))
	}
	rest := msg[i+len(marker):]
	fromTok, rest := xidNextToken(rest)
	j := strings.Index(rest, " to ")
	if j < 0 {
		return 0, 0, fmt.Errorf("parse xid 154 message %q: no \"to\" after the old action", msg)
	}
	toTok, _ := xidNextToken(rest[j+len(" to "):])
	f, err := xidParseHex(fromTok)
	if err != nil {
		return 0, 0, fmt.Errorf("parse xid 154 message %q: old action: %w", msg, err)
	}
	t, err := xidParseHex(toTok)
	if err != nil {
		return 0, 0, fmt.Errorf("parse xid 154 message %q: new action: %w", msg, err)
	}
	return XidRecoveryAction(f), XidRecoveryAction(t), nil
}

// xidNextToken splits s after its first run of characters up to a space,
// comma or parenthesis.
func xidNextToken(s string) (tok, rest string) {
	s = strings.TrimLeft(s, " ")
	end := strings.IndexAny(s, " ,()")
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
}

// xidParseHex parses a 0x-prefixed hex number of at most 32 bits.
func xidParseHex(s string) (uint32, error) {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok {
		h, ok = strings.CutPrefix(s, "0X")
	}
	if !ok || h == "" {
		return 0, fmt.Errorf("%q is not a 0x-prefixed hex number", s)
	}
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 32-bit hex number", s)
	}
	return uint32(v), nil
}

// ClassifyXid returns the action of one Xid event on its own: the catalog's
// action for the code, refined by what the message carries where the catalog
// says to read it: the NVLink5 register decode for Xids 144–150 (decoded then
// says which rows matched), and the recovery action an Xid 154 announces.
// driverMajor is the driver branch (570), which chooses the NVLink5 register
// layout; 0 when unknown. An Xid missing from the catalog returns
// ActionContactSupport with known false: nobody should automate what they do
// not understand. Workflows that combine Xids (48 with 63/64) are
// ResolveXids'; a driver recovery action read from NVML overrides this.
func ClassifyXid(code int, msg string, driverMajor int) (a Action, decoded string, known bool) {
	info, ok := LookupXid(code)
	if !ok {
		return ActionContactSupport, "", false
	}
	a = info.Action
	switch info.Workflow {
	case XidWorkflowNVLink5:
		intr, status, err := ParseNVLink5Registers(msg)
		if err != nil {
			return a, "", true
		}
		ms := DecodeNVLink5(code, NVLink5FormatForDriver(driverMajor), intr, status)
		if len(ms) == 0 {
			return a, fmt.Sprintf("intrinfo 0x%x errorstatus 0x%x: no decode row, catalog action %s", intr, status, a), true
		}
		da := ActionNone
		var parts []string
		for _, m := range ms {
			da = da.Max(m.Action)
			p := m.Decode.Subcode + " " + strings.TrimSpace(m.Decode.Severity) + " → " + m.Bucket
			if !slices.Contains(parts, p) {
				parts = append(parts, p)
			}
		}
		return da, strings.Join(parts, "; "), true
	case XidWorkflowXid154:
		_, to, err := ParseXid154(msg)
		if err != nil {
			return ActionNone, "", true
		}
		return to.Action(), "driver recovery action: " + to.String(), true
	}
	return a, "", true
}

// DriverMajor reads the branch from a driver version: 570 from "570.133.20";
// 0 when it cannot.
func DriverMajor(version string) int {
	head, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(head)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
