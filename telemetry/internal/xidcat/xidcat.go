// Package xidcat reads NVIDIA's Xid Catalog, exported from its spreadsheet as one
// CSV file per sheet, and renders it as Go source for package telemetry.
//
// It is the engine of the xidgen command (go generate ./telemetry/), and telemetry's
// tests run it in-process to check that xid_catalog_gen.go is current. It checks the
// sheets' headers so that a reordered or renamed column fails the generation instead
// of shifting data into the wrong field.
package xidcat

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"go/format"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The sheets of the catalog, as exported under the catalog directory.
const (
	XidsFile    = "xid_sheet1_Xids.csv"
	DecodeFile  = "xid_sheet2_Xid_144_150_Decode.csv"
	BucketsFile = "xid_sheet3_Resolution_Buckets.csv"
)

// Xid is one row of sheet 1: every cell as the catalog states it.
type Xid struct {
	Code                     int
	Mnemonic, Description    string
	A100, H100, B100, GB200  bool
	Immediate, Investigatory string
	Xid154Linkage, Trigger   string
}

// Decode is one row of sheet 2, the decode table of the NVLink5 Xids 144–150.
type Decode struct {
	Xid int
	// Subcode is the cell as written; SubcodeV1Name and SubcodeV2Name are its
	// halves around "/", or the whole cell twice when it has none.
	Subcode, SubcodeV1Name, SubcodeV2Name string
	// SubcodeV1 is IntrInfo[9:5] of the V1 pattern, SubcodeV2 IntrInfo[6:0] of the
	// V2 pattern.
	SubcodeV1, SubcodeV2 uint32
	IntrInfoV1           string
	IntrInfoV2           string
	// ErrorStatusText is the cell as written; ErrorStatus its values, none when
	// the cell is blank (any status).
	ErrorStatusText   string
	ErrorStatus       []uint32
	Immediate         string
	Action2IntrInfoV1 string
	Action2IntrInfoV2 string
	Action2           string
	Investigatory     string
	Severity          string
	HWSW              string
	Impact            string
}

// Bucket is one row of sheet 3: a resolution bucket and what it means.
type Bucket struct {
	Name, Meaning string
}

// Catalog is the three sheets the generator uses.
type Catalog struct {
	Xids    []Xid
	Decodes []Decode
	Buckets []Bucket
}

// Generate loads the catalog from dir and renders it; source names dir in the
// generated header.
func Generate(dir, source string) ([]byte, error) {
	c, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return c.Render(source)
}

// Load reads the three sheets from dir.
func Load(dir string) (*Catalog, error) {
	var c Catalog
	var err error
	if c.Xids, err = parseFile(filepath.Join(dir, XidsFile), ParseXids); err != nil {
		return nil, err
	}
	if c.Decodes, err = parseFile(filepath.Join(dir, DecodeFile), ParseDecodes); err != nil {
		return nil, err
	}
	if c.Buckets, err = parseFile(filepath.Join(dir, BucketsFile), ParseBuckets); err != nil {
		return nil, err
	}
	return &c, nil
}

func parseFile[T any](path string, parse func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open xid catalog sheet: %w", err)
	}
	defer f.Close()
	rows, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", path, err)
	}
	return rows, nil
}

// readSheet reads a whole CSV sheet and checks that its header cells start with
// want, after runs of white space are collapsed to one space.
func readSheet(r io.Reader, want []string) ([][]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(want)
	records, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read csv: %w", err)
	}
	if len(records) == 0 {
		return nil, errors.New("sheet is empty: want a header row")
	}
	for i, w := range want {
		got := strings.Join(strings.Fields(records[0][i]), " ")
		if !strings.HasPrefix(got, w) {
			return nil, fmt.Errorf("header column %d is %q: want %q; has the sheet changed layout?", i+1, got, w)
		}
	}
	return records[1:], nil
}

// ParseXids parses sheet 1 and returns its rows sorted by code.
func ParseXids(r io.Reader) ([]Xid, error) {
	records, err := readSheet(r, []string{
		"Type (XID)", "Code", "Mnemonic", "Description",
		"Applies to A100", "Applies to H100", "Applies to B100", "Applies to GB200",
		"Resolution Bucket (Immediate Action)", "Resolution Bucket (Investigatory Action)",
		"Xid 154 linkage", "Trigger Conditions",
	})
	if err != nil {
		return nil, err
	}
	xids := make([]Xid, 0, len(records))
	for i, rec := range records {
		line := i + 2
		if rec[0] != "XID" {
			return nil, fmt.Errorf("row %d: type is %q: want XID", line, rec[0])
		}
		code, err := strconv.Atoi(rec[1])
		if err != nil || code <= 0 {
			return nil, fmt.Errorf("row %d: code %q is not a positive integer", line, rec[1])
		}
		x := Xid{
			Code: code, Mnemonic: rec[2], Description: rec[3],
			Immediate: rec[8], Investigatory: rec[9], Xid154Linkage: rec[10], Trigger: rec[11],
		}
		for j, dst := range []*bool{&x.A100, &x.H100, &x.B100, &x.GB200} {
			switch rec[4+j] {
			case "YES":
				*dst = true
			case "NO":
			default:
				return nil, fmt.Errorf("row %d (Xid %d): applies-to cell %q: want YES or NO", line, code, rec[4+j])
			}
		}
		xids = append(xids, x)
	}
	slices.SortStableFunc(xids, func(a, b Xid) int { return a.Code - b.Code })
	for i := 1; i < len(xids); i++ {
		if xids[i].Code == xids[i-1].Code {
			return nil, fmt.Errorf("xid %d is listed twice", xids[i].Code)
		}
	}
	return xids, nil
}

// ParseDecodes parses sheet 2 and returns its rows sorted by Xid, keeping the
// sheet's order within one Xid.
func ParseDecodes(r io.Reader) ([]Decode, error) {
	records, err := readSheet(r, []string{
		"Xid", "Subcode", "(V1(<R575)) IntrInfo decode", "(V2(>=R575)) IntrInfo decode",
		"Error Status (hex)", "Resolution Bucket (Data Center Recovery Action)",
		"(V1(<R575)) Decode for action 2", "(V2(>=R575)) Decode for action 2", "Action 2",
		"Resolution Bucket (Investigatory Action)", "Severity", "HW/SW", "Local/Remote",
	})
	if err != nil {
		return nil, err
	}
	decodes := make([]Decode, 0, len(records))
	for i, rec := range records {
		d, err := parseDecode(rec)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i+2, err)
		}
		decodes = append(decodes, d)
	}
	slices.SortStableFunc(decodes, func(a, b Decode) int { return a.Xid - b.Xid })
	return decodes, nil
}

func parseDecode(rec []string) (Decode, error) {
	xid, err := strconv.Atoi(rec[0])
	if err != nil || xid < 144 || xid > 150 {
		return Decode{}, fmt.Errorf("xid %q: want an integer in 144..150", rec[0])
	}
	d := Decode{
		Xid: xid, Subcode: rec[1], IntrInfoV1: rec[2], IntrInfoV2: rec[3],
		ErrorStatusText: rec[4], Immediate: rec[5],
		Action2IntrInfoV1: rec[6], Action2IntrInfoV2: rec[7], Action2: rec[8],
		Investigatory: rec[9], Severity: rec[10], HWSW: rec[11], Impact: rec[12],
	}
	d.SubcodeV1Name, d.SubcodeV2Name = rec[1], rec[1]
	if v1, v2, ok := strings.Cut(rec[1], "/"); ok {
		d.SubcodeV1Name, d.SubcodeV2Name = v1, v2
	}
	for _, p := range []string{d.IntrInfoV1, d.IntrInfoV2} {
		if err := checkPattern(p); err != nil {
			return Decode{}, fmt.Errorf("xid %d %s: %w", xid, d.Subcode, err)
		}
	}
	// Action 2 is all or nothing: both patterns and the bucket, or none.
	if d.Action2IntrInfoV1 != "" || d.Action2IntrInfoV2 != "" || d.Action2 != "" {
		for _, p := range []string{d.Action2IntrInfoV1, d.Action2IntrInfoV2} {
			if err := checkPattern(p); err != nil {
				return Decode{}, fmt.Errorf("xid %d %s action 2: %w", xid, d.Subcode, err)
			}
		}
		if d.Action2 == "" {
			return Decode{}, fmt.Errorf("xid %d %s: action 2 patterns without an action", xid, d.Subcode)
		}
	}
	// The sheet's column guide: the subcode is IntrInfo[9:5] in V1 and
	// IntrInfo[6:0] in V2; the patterns must spell those bits out.
	if d.SubcodeV1, err = patternBits(d.IntrInfoV1, 9, 5); err != nil {
		return Decode{}, fmt.Errorf("xid %d %s V1 subcode: %w", xid, d.Subcode, err)
	}
	if d.SubcodeV2, err = patternBits(d.IntrInfoV2, 6, 0); err != nil {
		return Decode{}, fmt.Errorf("xid %d %s V2 subcode: %w", xid, d.Subcode, err)
	}
	if d.ErrorStatusText != "" {
		for _, s := range strings.Split(d.ErrorStatusText, "/") {
			v, err := parseHex32(s)
			if err != nil {
				return Decode{}, fmt.Errorf("xid %d %s error status: %w", xid, d.Subcode, err)
			}
			d.ErrorStatus = append(d.ErrorStatus, v)
		}
	}
	return d, nil
}

// checkPattern accepts a 32-character IntrInfo pattern of '0', '1' and '-',
// most significant bit first.
func checkPattern(p string) error {
	if len(p) != 32 {
		return fmt.Errorf("intrinfo pattern %q has %d characters: want 32", p, len(p))
	}
	if i := strings.IndexFunc(p, func(r rune) bool { return r != '0' && r != '1' && r != '-' }); i >= 0 {
		return fmt.Errorf("intrinfo pattern %q: character %d is not 0, 1 or -", p, i+1)
	}
	return nil
}

// patternBits returns bits hi..lo of a checked pattern; they must all be fixed.
func patternBits(p string, hi, lo int) (uint32, error) {
	var v uint32
	for bit := hi; bit >= lo; bit-- {
		v <<= 1
		switch p[31-bit] {
		case '1':
			v |= 1
		case '-':
			return 0, fmt.Errorf("pattern %q leaves bit %d open", p, bit)
		}
	}
	return v, nil
}

func parseHex32(s string) (uint32, error) {
	h, ok := strings.CutPrefix(strings.TrimSpace(s), "0x")
	if !ok {
		return 0, fmt.Errorf("%q: want 0x followed by hex digits", s)
	}
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return uint32(v), nil
}

// ParseBuckets parses sheet 3 and returns its buckets sorted by name. A bucket
// listed twice with the same meaning is kept once; with two meanings it is an
// error.
func ParseBuckets(r io.Reader) ([]Bucket, error) {
	records, err := readSheet(r, []string{"Guidance Class", "Resolution Action"})
	if err != nil {
		return nil, err
	}
	buckets := make([]Bucket, 0, len(records))
	for i, rec := range records {
		if rec[0] == "" {
			return nil, fmt.Errorf("row %d: bucket name is blank", i+2)
		}
		buckets = append(buckets, Bucket{Name: rec[0], Meaning: rec[1]})
	}
	slices.SortStableFunc(buckets, func(a, b Bucket) int { return strings.Compare(a.Name, b.Name) })
	out := buckets[:0]
	for _, b := range buckets {
		if n := len(out); n > 0 && out[n-1].Name == b.Name {
			if out[n-1].Meaning != b.Meaning {
				return nil, fmt.Errorf("bucket %q is listed twice with different meanings", b.Name)
			}
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// Render writes the catalog as gofmt'ed Go source for package telemetry.
func (c *Catalog) Render(source string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by xidgen from %s; DO NOT EDIT.\n\n", source)
	b.WriteString("package telemetry\n\n")

	b.WriteString("// xidCatalogRows is sheet 1 of NVIDIA's Xid Catalog, one entry per Xid, sorted by\n")
	b.WriteString("// code. Only the catalog's own columns are set; xid.go derives the rest.\n")
	b.WriteString("var xidCatalogRows = []XidInfo{\n")
	for _, x := range c.Xids {
		b.WriteString("{\n")
		fmt.Fprintf(&b, "Code: %d,\n", x.Code)
		fmt.Fprintf(&b, "Mnemonic: %q,\n", x.Mnemonic)
		fmt.Fprintf(&b, "Description: %q,\n", x.Description)
		fmt.Fprintf(&b, "AppliesTo: %s,\n", products(x))
		fmt.Fprintf(&b, "Immediate: %q,\n", x.Immediate)
		fmt.Fprintf(&b, "Investigatory: %q,\n", x.Investigatory)
		fmt.Fprintf(&b, "Xid154Linkage: %q,\n", x.Xid154Linkage)
		fmt.Fprintf(&b, "Trigger: %q,\n", x.Trigger)
		b.WriteString("},\n")
	}
	b.WriteString("}\n\n")

	b.WriteString("// nvlink5DecodeRows is sheet 2 of NVIDIA's Xid Catalog, the decode table of the\n")
	b.WriteString("// NVLink5 Xids 144–150, sorted by Xid and in the sheet's order within one Xid.\n")
	b.WriteString("var nvlink5DecodeRows = []NVLink5Decode{\n")
	for _, d := range c.Decodes {
		b.WriteString("{\n")
		fmt.Fprintf(&b, "Xid: %d,\n", d.Xid)
		fmt.Fprintf(&b, "Subcode: %q,\n", d.Subcode)
		fmt.Fprintf(&b, "SubcodeV1Name: %q,\n", d.SubcodeV1Name)
		fmt.Fprintf(&b, "SubcodeV2Name: %q,\n", d.SubcodeV2Name)
		fmt.Fprintf(&b, "SubcodeV1: %d,\n", d.SubcodeV1)
		fmt.Fprintf(&b, "SubcodeV2: %d,\n", d.SubcodeV2)
		fmt.Fprintf(&b, "IntrInfoV1: %q,\n", d.IntrInfoV1)
		fmt.Fprintf(&b, "IntrInfoV2: %q,\n", d.IntrInfoV2)
		fmt.Fprintf(&b, "ErrorStatusText: %q,\n", d.ErrorStatusText)
		fmt.Fprintf(&b, "ErrorStatus: %s,\n", hexList(d.ErrorStatus))
		fmt.Fprintf(&b, "Immediate: %q,\n", d.Immediate)
		fmt.Fprintf(&b, "Action2IntrInfoV1: %q,\n", d.Action2IntrInfoV1)
		fmt.Fprintf(&b, "Action2IntrInfoV2: %q,\n", d.Action2IntrInfoV2)
		fmt.Fprintf(&b, "Action2: %q,\n", d.Action2)
		fmt.Fprintf(&b, "Investigatory: %q,\n", d.Investigatory)
		fmt.Fprintf(&b, "Severity: %q,\n", d.Severity)
		fmt.Fprintf(&b, "HWSW: %q,\n", d.HWSW)
		fmt.Fprintf(&b, "Impact: %q,\n", d.Impact)
		b.WriteString("},\n")
	}
	b.WriteString("}\n\n")

	b.WriteString("// xidBucketRows is sheet 3 of NVIDIA's Xid Catalog: each resolution bucket and\n")
	b.WriteString("// what it means, sorted by name, duplicates dropped.\n")
	b.WriteString("var xidBucketRows = []XidBucket{\n")
	for _, k := range c.Buckets {
		fmt.Fprintf(&b, "{Name: %q, Meaning: %q},\n", k.Name, k.Meaning)
	}
	b.WriteString("}\n")

	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("cannot format generated xid catalog: %w", err)
	}
	return src, nil
}

func products(x Xid) string {
	var ps []string
	for _, p := range []struct {
		on   bool
		name string
	}{{x.A100, "XidA100"}, {x.H100, "XidH100"}, {x.B100, "XidB100"}, {x.GB200, "XidGB200"}} {
		if p.on {
			ps = append(ps, p.name)
		}
	}
	if len(ps) == 0 {
		return "0"
	}
	return strings.Join(ps, " | ")
}

func hexList(vs []uint32) string {
	if len(vs) == 0 {
		return "nil"
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprintf("0x%08X", v)
	}
	return "[]uint32{" + strings.Join(s, ", ") + "}"
}
