package xid

import (
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Kind says what an NVRM line carries.
type Kind int

// Kinds of NVRM lines ParseLine recognises.
const (
	KindNone      Kind = iota // not an Xid or GPU mapping line
	KindXid                   // NVRM: Xid (PCI:…): N, pid=…, name=…, message
	KindGPUAttach             // NVRM: GPU at PCI:…: GPU-<uuid>
	KindSXid                  // nvidia-nvswitchN: SXid (PCI:…): N, Fatal|Non-fatal, [Link L ]message
)

// Line is one parsed NVRM line.
type Line struct {
	Kind Kind
	// PCI is the address as the driver prints it, domain:bus:device without the
	// function ("0000:9b:00"); CanonicalPCI adds the function.
	PCI string
	// Xid, PID, Process and Message are set for KindXid. PID is 0 and Process is ""
	// when the driver printed '<unknown>'.
	Xid     int
	PID     int
	Process string
	Message string
	// UUID is set for KindGPUAttach.
	UUID string
	// For KindSXid: the NVSwitch's driver instance (nvidia-nvswitch<N>), the
	// SXid, whether the driver printed it as Fatal, and the NVSwitch port the
	// line names (-1 for none). PCI is the switch's full address with its
	// function ("0000:06:00.0"); Message is the text after the severity and link.
	NVSwitch int
	SXid     int
	Fatal    bool
	Link     int
}

// CanonicalPCI returns the PCI address in gpuwatch's canonical form, lower case with
// the function: "0000:9b:00.0". The driver names the GPU's function 0.
func (l Line) CanonicalPCI() string {
	id, err := telemetry.ParsePCIBusID("PCI:" + l.PCI)
	if err != nil {
		return ""
	}
	return id.String()
}

const nvrm = "NVRM: "

// The NVSwitch driver's prefix and the SXid marker of its error lines.
const (
	nvswitchPrefix = "nvidia-nvswitch"
	sxidMarker     = ": SXid (PCI:"
)

// ParseLine parses one kernel-log line. It returns ok=false for lines that are not
// Xid, GPU-mapping or SXid lines, and for malformed ones: a reader of a log written
// by others must never fail on a line it does not understand.
func ParseLine(s string) (Line, bool) {
	i := strings.Index(s, nvrm)
	if i < 0 {
		if j := strings.Index(s, sxidMarker); j >= 0 {
			return parseSXid(s, j)
		}
		return Line{}, false
	}
	s = strings.TrimRight(s[i+len(nvrm):], "\r\n")
	switch {
	case strings.HasPrefix(s, "Xid (PCI:"):
		return parseXid(s[len("Xid (PCI:"):])
	case strings.HasPrefix(s, "GPU at PCI:"):
		return parseAttach(s[len("GPU at PCI:"):])
	}
	return Line{}, false
}

// parseXid parses `0000:9b:00): 119, pid=2024380, name=nvidia-smi, message`.
func parseXid(s string) (Line, bool) {
	end := strings.Index(s, "): ")
	if end < 0 || !validPCI(s[:end]) {
		return Line{}, false
	}
	l := Line{Kind: KindXid, PCI: s[:end]}
	s = s[end+3:]
	num, rest, _ := strings.Cut(s, ",")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n <= 0 {
		return Line{}, false
	}
	l.Xid = n
	rest = strings.TrimPrefix(rest, " ")
	// Newer drivers print "pid=…, name=…, "; older ones go straight to the message.
	if v, after, ok := cutField(rest, "pid="); ok {
		v = strings.Trim(v, "'")
		if pid, err := strconv.Atoi(v); err == nil && pid > 0 {
			l.PID = pid
		}
		rest = after
		if v, after, ok := cutField(rest, "name="); ok {
			if v != "<unknown>" {
				l.Process = v
			}
			rest = after
		}
	}
	l.Message = strings.TrimSpace(rest)
	return l, true
}

// cutField cuts "key=value, rest" into value and rest.
func cutField(s, key string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, key) {
		return "", s, false
	}
	value, rest, found := strings.Cut(s[len(key):], ",")
	if !found {
		return value, "", true
	}
	return value, strings.TrimPrefix(rest, " "), true
}

// parseAttach parses `0000:9b:00: GPU-509665ad-…`.
func parseAttach(s string) (Line, bool) {
	pci, uuid, ok := strings.Cut(s, ": ")
	if !ok || !validPCI(pci) {
		return Line{}, false
	}
	uuid = strings.TrimSpace(uuid)
	if !strings.HasPrefix(uuid, "GPU-") || len(uuid) < len("GPU-")+32 || strings.ContainsAny(uuid, " \t") {
		return Line{}, false
	}
	return Line{Kind: KindGPUAttach, PCI: pci, UUID: uuid}, true
}

// validPCI accepts the driver's domain:bus:device form, e.g. 0000:9b:00.
func validPCI(s string) bool {
	if len(s) != len("0000:9b:00") || s[4] != ':' || s[7] != ':' {
		return false
	}
	for i := range len(s) {
		if i == 4 || i == 7 {
			continue
		}
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// parseSXid parses the NVSwitch driver's error line, which the NVIDIA Fabric
// Manager user guide documents and real HGX logs show as
//
//	nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
//	nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 10001, Non-fatal, PRI WRITE SYSB error, instance=3
//
// marker is where ": SXid (PCI:" starts. The driver follows each such line with
// detail lines for the same SXid ("Severity 1 Engine instance 60 Sub-engine
// instance 00", "Data {0x…}") that carry no Fatal/Non-fatal: they are not events
// of their own and are not accepted.
func parseSXid(s string, marker int) (Line, bool) {
	head := s[:marker]
	p := strings.LastIndex(head, nvswitchPrefix)
	if p < 0 {
		return Line{}, false
	}
	inst := head[p+len(nvswitchPrefix):]
	n, err := strconv.Atoi(inst)
	if err != nil || n < 0 || n > 255 || len(inst) > 3 {
		return Line{}, false
	}
	rest := s[marker+len(sxidMarker):]
	end := strings.Index(rest, "): ")
	if end < 0 {
		return Line{}, false
	}
	pci, err := telemetry.ParsePCIBusID(rest[:end])
	if err != nil || !validPCI(rest[:min(end, len("0000:06:00"))]) || end != len("0000:06:00.0") {
		return Line{}, false
	}
	l := Line{Kind: KindSXid, PCI: pci.String(), NVSwitch: n, Link: -1}
	rest = rest[end+3:]
	num, rest, ok := strings.Cut(rest, ", ")
	code, err := strconv.Atoi(num)
	if !ok || err != nil || code <= 0 || len(num) > 6 {
		return Line{}, false
	}
	l.SXid = code
	switch {
	case strings.HasPrefix(rest, "Fatal, "):
		l.Fatal, rest = true, rest[len("Fatal, "):]
	case strings.HasPrefix(rest, "Non-fatal, "):
		rest = rest[len("Non-fatal, "):]
	default:
		return Line{}, false // a detail line of the SXid above it
	}
	if after, ok := strings.CutPrefix(rest, "Link "); ok {
		digits := 0
		for digits < len(after) && digits < 3 && after[digits] >= '0' && after[digits] <= '9' {
			digits++
		}
		if digits > 0 && (digits == len(after) || after[digits] == ' ') {
			l.Link, _ = strconv.Atoi(after[:digits])
			rest = after[digits:]
		}
	}
	l.Message = strings.TrimSpace(rest)
	return l, true
}
