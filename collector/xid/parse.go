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

// ParseLine parses one kernel-log line. It returns ok=false for lines that are not
// Xid or GPU-mapping lines, and for malformed ones: a reader of a log written by
// others must never fail on a line it does not understand.
func ParseLine(s string) (Line, bool) {
	i := strings.Index(s, nvrm)
	if i < 0 {
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
