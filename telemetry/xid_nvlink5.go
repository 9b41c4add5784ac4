package telemetry

import (
	"fmt"
	"slices"
	"strings"
)

// NVLink5Format is the layout of IntrInfo in an NVLink5 Xid (144–150) message;
// it changed with driver branch R575.
type NVLink5Format int

// The IntrInfo layouts of the decode table.
const (
	// NVLink5V1 is the layout before R575: subcode in IntrInfo[9:5].
	NVLink5V1 NVLink5Format = 1
	// NVLink5V2 is the layout from R575 on: subcode in IntrInfo[6:0].
	NVLink5V2 NVLink5Format = 2
)

// NVLink5FormatForDriver returns the layout a driver branch writes, from the
// major version of the driver (570 for 570.133.20).
func NVLink5FormatForDriver(major int) NVLink5Format {
	if major < 575 {
		return NVLink5V1
	}
	return NVLink5V2
}

// IntrInfoPattern is a decode-table pattern for the 32-bit IntrInfo register:
// 32 characters, the first for bit 31 and the last for bit 0; '0' and '1' must
// match, '-' is a bit left to optional user decode.
type IntrInfoPattern string

// Parse returns the bits the pattern fixes (mask) and their values (want), so
// that v matches when v&mask == want.
func (p IntrInfoPattern) Parse() (mask, want uint32, err error) {
	if len(p) != 32 {
		return 0, 0, fmt.Errorf("parse intrinfo pattern %q: %d characters, want 32", string(p), len(p))
	}
	for i := 0; i < 32; i++ {
		bit := uint32(1) << (31 - i)
		switch p[i] {
		case '0':
			mask |= bit
		case '1':
			mask |= bit
			want |= bit
		case '-':
		default:
			return 0, 0, fmt.Errorf("parse intrinfo pattern %q: character %d is %q, want 0, 1 or -", string(p), i+1, p[i])
		}
	}
	return mask, want, nil
}

// Match reports whether v matches the pattern. A malformed or empty pattern
// matches nothing.
func (p IntrInfoPattern) Match(v uint32) bool {
	mask, want, err := p.Parse()
	return err == nil && v&mask == want
}

// NVLink5Decode is one row of the catalog's "XID 144-150 Decode" sheet. The
// string fields hold the cells exactly as written.
type NVLink5Decode struct {
	// Xid is 144 (SAW), 145 (RLW), 146 (TLW), 147 (TREX), 148 (NVLPW_CTRL),
	// 149 (NETIR) or 150 (MSE).
	Xid int
	// Subcode is the subsystem as the message spells it, "V1/V2" where the two
	// layouts spell it differently; SubcodeV1Name and SubcodeV2Name are the two
	// spellings.
	Subcode, SubcodeV1Name, SubcodeV2Name string
	// SubcodeV1 is IntrInfo[9:5] in the V1 layout, SubcodeV2 IntrInfo[6:0] in V2.
	SubcodeV1, SubcodeV2 uint32
	// IntrInfoV1 and IntrInfoV2 select the row by IntrInfo, per layout.
	IntrInfoV1, IntrInfoV2 IntrInfoPattern
	// ErrorStatusText is the "Error Status (hex)" cell; ErrorStatus its values.
	// The row matches when the message's ErrorStatus equals one of them, or any
	// ErrorStatus when there are none (the cell is blank for Xid 149 link events).
	ErrorStatusText string
	ErrorStatus     []uint32
	// Immediate is the data-center recovery bucket: IGNORE, RESET_GPU or
	// XID_154_EVAL.
	Immediate string
	// Action2IntrInfoV1 and Action2IntrInfoV2, where set, select IntrInfo values
	// for which Action2 applies instead of Immediate (errors that can be
	// promoted from non-fatal to fatal; Severity ends in '*').
	Action2IntrInfoV1, Action2IntrInfoV2 IntrInfoPattern
	Action2                              string
	// Investigatory is the bucket for finding the cause afterwards.
	Investigatory string
	// Severity is "Non-fatal", "Fatal", "Link Fatal" and so on, with the
	// sheet's footnote marks.
	Severity string
	// HWSW says whether the cause is generally hardware, software or firmware.
	HWSW string
	// Impact is the "Local/Remote" cell: what the error does to this GPU and to
	// its NVLink peers.
	Impact string
}

func (d NVLink5Decode) patterns(f NVLink5Format) (immediate, action2 IntrInfoPattern) {
	if f == NVLink5V1 {
		return d.IntrInfoV1, d.Action2IntrInfoV1
	}
	return d.IntrInfoV2, d.Action2IntrInfoV2
}

func (d NVLink5Decode) matchesStatus(status uint32) bool {
	return len(d.ErrorStatus) == 0 || slices.Contains(d.ErrorStatus, status)
}

// NVLink5Match is a decode-table row that matches a message, with the action it
// calls for.
type NVLink5Match struct {
	Decode NVLink5Decode
	// Promoted is true when IntrInfo matched the row's action-2 pattern, so
	// Bucket is the row's Action2 rather than its Immediate bucket.
	Promoted bool
	// Bucket is the resolution bucket that applies, as written in the table.
	Bucket string
	// Action and Workflow are Bucket normalized by XidBucketAction.
	Action   Action
	Workflow XidWorkflow
}

// NVLink5Decodes returns every row of the decode table, sorted by Xid and in
// the sheet's order within one Xid.
func NVLink5Decodes() []NVLink5Decode {
	out := slices.Clone(nvlink5DecodeRows)
	for i := range out {
		out[i].ErrorStatus = slices.Clone(out[i].ErrorStatus)
	}
	return out
}

// DecodeNVLink5 returns the rows of the decode table that match an NVLink5 Xid
// message: the Xid (144–150), the IntrInfo layout the driver writes, and the
// first two registers in the message's parentheses (see ParseNVLink5Registers).
// A row matches when IntrInfo matches its pattern for the layout (or its
// action-2 pattern) and ErrorStatus is one of its values. ErrorStatus is compared
// whole, as the table lists it: a status with several bits set matches no row.
//
// More than one row can match (the V1 layout does not tell the two TLW pipes
// apart); take the strongest action. No match means the table does not cover
// the message: fall back to the Xid's XidInfo.Action.
func DecodeNVLink5(xid int, f NVLink5Format, intrInfo, errorStatus uint32) []NVLink5Match {
	var out []NVLink5Match
	for _, d := range nvlink5DecodeRows {
		if d.Xid != xid || !d.matchesStatus(errorStatus) {
			continue
		}
		immediate, action2 := d.patterns(f)
		m := NVLink5Match{Decode: d}
		switch {
		case action2 != "" && action2.Match(intrInfo):
			m.Promoted, m.Bucket = true, d.Action2
		case immediate.Match(intrInfo):
			m.Bucket = d.Immediate
		default:
			continue
		}
		m.Decode.ErrorStatus = slices.Clone(d.ErrorStatus)
		m.Action, m.Workflow, _ = XidBucketAction(m.Bucket)
		out = append(out, m)
	}
	return out
}

// NVLink5Action returns the strongest action among the decode rows that match
// (see DecodeNVLink5), and false when none does.
func NVLink5Action(xid int, f NVLink5Format, intrInfo, errorStatus uint32) (Action, bool) {
	ms := DecodeNVLink5(xid, f, intrInfo, errorStatus)
	a := ActionNone
	for _, m := range ms {
		a = a.Max(m.Action)
	}
	return a, len(ms) > 0
}

// ParseNVLink5Registers reads IntrInfo and ErrorStatus from an NVLink5 Xid
// message, whose documented format is
//
//	Xid (PCI:0000:BB:DF): <xid>, <subcode> <Fatal|Nonfatal> <XC..> <i..> Link <n> (<intrInfo> <errorStatus> <errorDebugData[0]> …)
//
// They are the first two values in the last pair of parentheses. The message
// may be the whole kernel log line; a line cut short after errorStatus is
// accepted.
func ParseNVLink5Registers(msg string) (intrInfo, errorStatus uint32, err error) {
	open := strings.LastIndexByte(msg, '(')
	if open < 0 {
		return 0, 0, fmt.Errorf("parse nvlink5 registers in %q: no parenthesized register list", msg)
	}
	regs := msg[open+1:]
	if end := strings.IndexByte(regs, ')'); end >= 0 {
		regs = regs[:end]
	}
	fields := strings.FieldsFunc(regs, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	if len(fields) < 2 {
		return 0, 0, fmt.Errorf("parse nvlink5 registers in %q: %d registers, want at least intrInfo and errorStatus", msg, len(fields))
	}
	if intrInfo, err = xidParseHex(fields[0]); err != nil {
		return 0, 0, fmt.Errorf("parse nvlink5 registers in %q: intrInfo: %w", msg, err)
	}
	if errorStatus, err = xidParseHex(fields[1]); err != nil {
		return 0, 0, fmt.Errorf("parse nvlink5 registers in %q: errorStatus: %w", msg, err)
	}
	return intrInfo, errorStatus, nil
}
