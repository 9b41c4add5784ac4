package xid

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KmsgRecord is one record of /dev/kmsg (Documentation/ABI/testing/dev-kmsg):
//
//	prio,seq,usec,flags[,more…];message
//	 KEY=value
//
// A read of /dev/kmsg returns exactly one record; the dictionary lines that may
// follow the message (each starting with a space) are dropped.
type KmsgRecord struct {
	// Facility and Level are the syslog prefix split: prio = Facility<<3 | Level.
	// The kernel writes its own messages with facility 0; anything a process
	// writes to /dev/kmsg gets a non-zero facility.
	Facility int
	Level    int
	// Seq is the kernel's record sequence number; a gap between two records
	// read in order means records were overwritten before they were read.
	Seq uint64
	// SinceBoot is the record's timestamp: the kernel's monotonic clock at the
	// time of the printk, in microseconds since boot.
	SinceBoot time.Duration
	// Flags is the flags field: "-" for a whole record, "c" and "+" for the
	// first and further fragments of a continued line.
	Flags string
	// Message is the text with the kernel's \xNN escapes undone.
	Message string
}

// maxRecordQuote bounds how much of a bad record an error quotes.
const maxRecordQuote = 64

// ParseKmsgRecord parses one /dev/kmsg record. A trailing newline and any
// dictionary lines are ignored. The error names the record and the problem.
func ParseKmsgRecord(rec string) (KmsgRecord, error) {
	bad := func(why string) (KmsgRecord, error) {
		q := rec
		if len(q) > maxRecordQuote {
			q = q[:maxRecordQuote] + "…"
		}
		return KmsgRecord{}, fmt.Errorf("kmsg record %q: %s", q, why)
	}
	header, msg, ok := strings.Cut(rec, ";")
	if !ok {
		return bad("no ';' after the header")
	}
	if nl := strings.IndexByte(msg, '\n'); nl >= 0 {
		msg = msg[:nl]
	}
	// prio,seq,usec,flags and, on newer kernels, more comma-separated fields
	// (the caller id with CONFIG_PRINTK_CALLER is in the message, not here).
	var fields [4]string
	rest := header
	for i := range fields {
		f, r, more := strings.Cut(rest, ",")
		fields[i] = f
		rest = r
		if !more && i < len(fields)-1 {
			return bad("header has fewer than 4 fields")
		}
	}
	prio, err := strconv.ParseUint(fields[0], 10, 31)
	if err != nil {
		return bad("bad priority")
	}
	seq, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return bad("bad sequence number")
	}
	usec, err := strconv.ParseUint(fields[2], 10, 63)
	if err != nil || usec > uint64(maxSinceBoot/time.Microsecond) {
		return bad("bad timestamp")
	}
	if fields[3] == "" {
		return bad("empty flags")
	}
	return KmsgRecord{
		Facility:  int(prio >> 3),
		Level:     int(prio & 7),
		Seq:       seq,
		SinceBoot: time.Duration(usec) * time.Microsecond,
		Flags:     fields[3],
		Message:   unescapeKmsg(msg),
	}, nil
}

// maxSinceBoot bounds record timestamps so boot+SinceBoot cannot overflow: no
// machine stays up for 100 years.
const maxSinceBoot = 100 * 365 * 24 * time.Hour

// looksLikeKmsg reports whether s starts like a kmsg record: a digit and a comma
// before the first ';'. It lets a log file mix kmsg records with other lines.
func looksLikeKmsg(s string) bool {
	if len(s) < 8 || s[0] < '0' || s[0] > '9' {
		return false
	}
	semi := strings.IndexByte(s, ';')
	return semi > 0 && strings.IndexByte(s[:semi], ',') > 0 && strings.IndexByte(s[:semi], ' ') < 0
}

// unescapeKmsg undoes the kernel's escaping of /dev/kmsg messages: bytes below
// space, DEL and above, and backslash are written as \xNN.
func unescapeKmsg(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Timestamp layouts of the text log formats ParseLine understands.
const (
	ctimeLayout = "Mon Jan _2 15:04:05 2006" // dmesg -T
)

// isoLayouts are tried, in order, on ISO-looking tokens: dmesg --time-format iso
// (comma before the fraction), journalctl -o short-iso and short-iso-precise, RFC
// 3339.
var isoLayouts = []string{
	"2006-01-02T15:04:05,999999999-07:00",
	"2006-01-02T15:04:05-0700",
	"2006-01-02T15:04:05.999999999-0700",
	time.RFC3339Nano,
}

// textTime returns the time a text log line was logged at, read from its prefix
// (everything before "NVRM: "): dmesg's "[ 1234.567890]" (seconds since boot,
// which needs boot; haveBoot false skips it), dmesg -T's ctime in brackets (local
// time), an ISO timestamp (dmesg --time-format iso, with or without --decode's
// facility prefix) or journalctl's short-iso. ok is false when none is found.
func textTime(prefix string, boot time.Time, haveBoot bool) (time.Time, bool) {
	p := strings.TrimSpace(prefix)
	if p == "" {
		return time.Time{}, false
	}
	// A bracketed stamp at the end: syslog's "… kernel: [ 1234.5]" and dmesg's
	// "[ 1234.5]" or "[Sun Feb 23 16:24:18 2025]".
	if strings.HasSuffix(p, "]") {
		if open := strings.LastIndexByte(p, '['); open >= 0 {
			inner := strings.TrimSpace(p[open+1 : len(p)-1])
			if d, ok := secondsSinceBoot(inner); ok {
				if !haveBoot {
					return time.Time{}, false
				}
				return boot.Add(d), true
			}
			if t, err := time.ParseInLocation(ctimeLayout, inner, time.Local); err == nil {
				return t, true
			}
		}
	}
	// An ISO token: the last one (dmesg --decode puts the facility first), or the
	// first one (journalctl puts host and "kernel:" after it).
	fields := strings.Fields(p)
	for _, f := range []string{fields[len(fields)-1], fields[0]} {
		if len(f) < len("2006-01-02T15:04:05") || f[4] != '-' || f[10] != 'T' {
			continue
		}
		for _, layout := range isoLayouts {
			if t, err := time.Parse(layout, f); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// secondsSinceBoot parses dmesg's "1234.567890".
func secondsSinceBoot(s string) (time.Duration, bool) {
	secs, frac, ok := strings.Cut(s, ".")
	if !ok || secs == "" || frac == "" || len(frac) > 9 {
		return 0, false
	}
	n, err := strconv.ParseUint(secs, 10, 32)
	if err != nil {
		return 0, false
	}
	f, err := strconv.ParseUint(frac, 10, 32)
	if err != nil {
		return 0, false
	}
	for i := len(frac); i < 9; i++ {
		f *= 10
	}
	return time.Duration(n)*time.Second + time.Duration(f), true
}
