package infiniband

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// errNotAvailable is a counter the port does not provide: "N/A (no PMA)" from
// drivers without a performance management agent (i40iw, some RoCE ports). It
// produces no sample and is not an error.
var errNotAvailable = errors.New("not available")

// trim returns b without surrounding ASCII white space (sysfs ends every value with
// a newline; captures sometimes drop it).
func trim(b []byte) []byte { return bytes.TrimSpace(b) }

// parseCounter reads a counter file's content: a decimal unsigned integer with
// optional surrounding white space. "N/A …" (the kernel's "N/A (no PMA)") returns
// errNotAvailable.
func parseCounter(b []byte) (uint64, error) {
	s := trim(b)
	if bytes.HasPrefix(s, []byte("N/A")) {
		return 0, errNotAvailable
	}
	if len(s) == 0 {
		return 0, errors.New("empty counter")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("invalid counter %q: want a decimal number", clip(s))
		}
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid counter %q: out of range", clip(s))
	}
	return v, nil
}

// parseState reads a state or phys_state file, "4: ACTIVE" or "5: LinkUp", and
// returns the number before the colon.
func parseState(b []byte) (uint64, error) {
	s := trim(b)
	num, name, ok := bytes.Cut(s, []byte(":"))
	num = trim(num)
	if !ok || len(num) == 0 || len(trim(name)) == 0 {
		return 0, fmt.Errorf("invalid state %q: want \"<id>: <name>\"", clip(s))
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("invalid state %q: want \"<id>: <name>\"", clip(s))
		}
	}
	v, err := strconv.ParseUint(string(num), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid state %q: id out of range", clip(s))
	}
	return v, nil
}

// parseRate reads a rate file, "400 Gb/sec (4X NDR)" or "2.5 Gb/sec (1X SDR)", and
// returns bytes per second: the Gb/sec figure times 125000000, as procfs computes
// it.
func parseRate(b []byte) (float64, error) {
	s := trim(b)
	num, rest, ok := bytes.Cut(s, []byte(" "))
	if !ok || !bytes.HasPrefix(trim(rest), []byte("Gb/sec")) {
		return 0, fmt.Errorf("invalid rate %q: want \"<n> Gb/sec …\"", clip(s))
	}
	for _, c := range num {
		if (c < '0' || c > '9') && c != '.' {
			return 0, fmt.Errorf("invalid rate %q: want \"<n> Gb/sec …\"", clip(s))
		}
	}
	v, err := strconv.ParseFloat(string(num), 64)
	if err != nil || math.IsInf(v, 0) || v > 1e9 {
		return 0, fmt.Errorf("invalid rate %q: want \"<n> Gb/sec …\"", clip(s))
	}
	return math.Round(v * 125000000), nil
}

// clip shortens garbage for an error message.
func clip(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
