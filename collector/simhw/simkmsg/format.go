package simkmsg

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Format is a way the kernel log is rendered as text lines.
type Format int

// Formats, each as produced by the tool named.
const (
	// FormatKmsg: a /dev/kmsg record, "4,1234,5678901,-;NVRM: …"
	// (priority,seq,µs since boot,flags;message with non-printables escaped).
	FormatKmsg Format = iota
	// FormatDmesg: dmesg's default, "[ 1234.567890] NVRM: …".
	FormatDmesg
	// FormatCtime: dmesg -T, "[Sun Feb 23 16:24:18 2025] NVRM: …".
	FormatCtime
	// FormatISO: dmesg --time-format iso, "2024-11-15T12:02:03,470068+00:00 NVRM: …".
	FormatISO
	// FormatDecodeISO: dmesg --decode --time-format iso,
	// "kern  :warn  : 2025-01-21T02:21:33,498559+00:00 NVRM: …".
	FormatDecodeISO
	// FormatSyslog: rsyslog's traditional /var/log/kern.log line,
	// "Feb 23 16:24:18 host kernel: [ 1234.567890] NVRM: …".
	FormatSyslog
	// FormatJournal: journalctl -k -o short-iso,
	// "2025-01-02T15:20:12+0800 host kernel: NVRM: …".
	FormatJournal
)

// String names the format.
func (f Format) String() string {
	switch f {
	case FormatKmsg:
		return "kmsg"
	case FormatDmesg:
		return "dmesg"
	case FormatCtime:
		return "ctime"
	case FormatISO:
		return "iso"
	case FormatDecodeISO:
		return "decode-iso"
	case FormatSyslog:
		return "syslog"
	case FormatJournal:
		return "journal"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// Layouts of the timestamps, in Go's reference-time notation.
const (
	ctimeLayout   = "Mon Jan _2 15:04:05 2006"         // dmesg -T (ctime(3) without the newline)
	isoLayout     = "2006-01-02T15:04:05,000000-07:00" // dmesg --time-format iso
	syslogLayout  = "Jan _2 15:04:05"                  // RFC 3164 timestamp
	journalLayout = "2006-01-02T15:04:05-0700"         // journalctl -o short-iso
)

// sinceBoot returns how long after boot r was logged (0 if before).
func (r Record) sinceBoot(boot time.Time) time.Duration {
	return max(r.Time.Sub(boot), 0)
}

// Kmsg renders r as /dev/kmsg does: "prio,seq,usec,-;message", without a newline.
// Characters below space, DEL and above, and backslash are escaped as \xNN.
func (r Record) Kmsg(boot time.Time) string {
	return strconv.Itoa(r.Priority) + "," + strconv.FormatUint(r.Seq, 10) + "," +
		strconv.FormatInt(r.sinceBoot(boot).Microseconds(), 10) + ",-;" + escapeKmsg(r.Message)
}

// Dmesg renders r as dmesg prints it by default: "[ 1234.567890] message"
// (seconds since boot, at least five digits wide).
func (r Record) Dmesg(boot time.Time) string {
	d := r.sinceBoot(boot)
	return fmt.Sprintf("[%5d.%06d] %s", d/time.Second, (d%time.Second)/time.Microsecond, r.Message)
}

// Line renders r in format f; host is the host name of syslog and journal lines.
func (r Record) Line(f Format, boot time.Time, host string) string {
	switch f {
	case FormatKmsg:
		return r.Kmsg(boot)
	case FormatCtime:
		return "[" + r.Time.Format(ctimeLayout) + "] " + r.Message
	case FormatISO:
		return r.Time.Format(isoLayout) + " " + r.Message
	case FormatDecodeISO:
		return fmt.Sprintf("%-6s:%-6s: %s %s", facilityName(r.Priority>>3), levelName(r.Priority&7), r.Time.Format(isoLayout), r.Message)
	case FormatSyslog:
		return r.Time.Format(syslogLayout) + " " + host + " kernel: " + r.Dmesg(boot)
	case FormatJournal:
		return r.Time.Format(journalLayout) + " " + host + " kernel: " + r.Message
	}
	return r.Dmesg(boot)
}

// Line renders r in format f with the log's boot time and host name.
func (l *Log) Line(r Record, f Format) string {
	return r.Line(f, l.boot, l.hostname)
}

// AppendTo appends to the file at path, in format f, every record logged since the
// previous AppendTo to the same path (every record the ring holds, the first
// time), one per line, creating the file if needed. Records the ring dropped
// before they were written are lost, as they are to a syslog daemon that falls
// behind the kernel ring.
func (l *Log) AppendTo(path string, f Format) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	recs := l.Since(l.pos[path])
	if len(recs) == 0 {
		return nil
	}
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(l.Line(r, f))
		b.WriteByte('\n')
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append kernel log to %s: %w", path, err)
	}
	_, werr := file.WriteString(b.String())
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("append kernel log to %s: %w", path, werr)
	}
	l.pos[path] = recs[len(recs)-1].Seq + 1
	return nil
}

// escapeKmsg escapes a message as the kernel does for /dev/kmsg.
func escapeKmsg(s string) string {
	clean := true
	for i := range len(s) {
		if c := s[i]; c < ' ' || c >= 127 || c == '\\' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if c < ' ' || c >= 127 || c == '\\' {
			fmt.Fprintf(&b, `\x%02x`, c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// facilityName and levelName are dmesg --decode's names.
func facilityName(f int) string {
	names := [...]string{"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
		"uucp", "cron", "authpriv", "ftp", "res0", "res1", "res2", "res3",
		"local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}
	if f >= 0 && f < len(names) {
		return names[f]
	}
	return strconv.Itoa(f)
}

func levelName(l int) string {
	return [...]string{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"}[l&7]
}
