package xid

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseKmsgRecord(t *testing.T) {
	tests := []struct {
		rec  string
		want KmsgRecord
		err  string
	}{
		{rec: "4,1234,5678901,-;NVRM: Xid (PCI:0000:38:00): 43, pid=2815167, name=pt_main_thread, Ch 00000008\n",
			want: KmsgRecord{Level: 4, Seq: 1234, SinceBoot: 5678901 * time.Microsecond, Flags: "-",
				Message: "NVRM: Xid (PCI:0000:38:00): 43, pid=2815167, name=pt_main_thread, Ch 00000008"}},
		// Dictionary lines follow the message; newer kernels add header fields.
		{rec: "6,339,5140900,-,caller=T1;NET: Registered protocol family 10\n SUBSYSTEM=net\n DEVICE=+net:lo\n",
			want: KmsgRecord{Level: 6, Seq: 339, SinceBoot: 5140900 * time.Microsecond, Flags: "-",
				Message: "NET: Registered protocol family 10"}},
		// Escapes are undone; a backslash not followed by \xNN stays.
		{rec: `14,5,0,c;tab\x09here \x5c backslash \xZZ`,
			want: KmsgRecord{Facility: 1, Level: 6, Seq: 5, Flags: "c", Message: "tab\there \\ backslash \\xZZ"}},
		{rec: "no header", err: "no ';'"},
		{rec: "4,1;x", err: "fewer than 4"},
		{rec: "x,1,2,-;m", err: "bad priority"},
		{rec: "4,-1,2,-;m", err: "bad sequence"},
		{rec: "4,1,99999999999999999999,-;m", err: "bad timestamp"},
		{rec: "4,1,2,;m", err: "empty flags"},
	}
	for _, tt := range tests {
		got, err := ParseKmsgRecord(tt.rec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "kmsg record") {
				t.Errorf("%q: err %v, want %q", tt.rec, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q:\n got %+v, %v\nwant %+v", tt.rec, got, err, tt.want)
		}
	}
}

// TestKmsgFixture parses every record of gpud's kmsg capture.
func TestKmsgFixture(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "pkg_kmsg__kmsg.1.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	var prev uint64
	for sc.Scan() {
		r, err := ParseKmsgRecord(sc.Text())
		if err != nil {
			t.Fatal(err)
		}
		if r.Facility != 0 || r.Flags != "-" || r.Seq < prev || r.Message == "" {
			t.Errorf("record %+v", r)
		}
		prev = r.Seq
		n++
	}
	if n != 47 {
		t.Errorf("%d records, want 47", n)
	}
}

func TestTextTime(t *testing.T) {
	boot := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		prefix string
		want   time.Time
		ok     bool
	}{
		{"[ 1234.567890] ", boot.Add(1234567890 * time.Microsecond), true},
		{"[Sun Feb 23 16:24:18 2025] ", time.Date(2025, 2, 23, 16, 24, 18, 0, time.Local), true},
		{"2024-11-15T12:02:03,470068+00:00 ", time.Date(2024, 11, 15, 12, 2, 3, 470068000, time.UTC), true},
		{"kern  :warn  : 2025-01-21T02:21:33,498559+00:00 ", time.Date(2025, 1, 21, 2, 21, 33, 498559000, time.UTC), true},
		{"2025-01-02T15:20:12+0800 host kernel: ", time.Date(2025, 1, 2, 7, 20, 12, 0, time.UTC), true},
		{"Feb 23 16:24:18 host kernel: [   12.500000] ", boot.Add(12500 * time.Millisecond), true},
		{"", time.Time{}, false},
		{"random words ", time.Time{}, false},
		{"[abc] ", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := textTime(tt.prefix, boot, true)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("%q: %v %v, want %v %v", tt.prefix, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := textTime("[ 12.5] ", boot, false); ok {
		t.Error("seconds since boot without a boot time")
	}
}

// escape is the kernel's escaping of /dev/kmsg messages (simkmsg does the same).
func escape(s string) string {
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

// FuzzParseKmsgRecord: never panics; what it accepts has sane fields; a record
// rendered from accepted fields parses back to the same fields.
func FuzzParseKmsgRecord(f *testing.F) {
	for _, s := range []string{
		"4,1234,5678901,-;NVRM: Xid (PCI:0000:38:00): 43, pid=2815167, name=pt_main_thread, Ch 00000008",
		"6,339,5140900,-,caller=T1;NET: x\n SUBSYSTEM=net\n",
		`14,5,0,c;tab\x09here \x5c`,
		"4,1;x",
		";",
		"0,0,0,-;",
		`4,1,2,-;\x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseKmsgRecord(s)
		if err != nil {
			if r != (KmsgRecord{}) {
				t.Fatalf("rejected record returned %+v", r)
			}
			return
		}
		if r.Level < 0 || r.Level > 7 || r.Facility < 0 || r.SinceBoot < 0 || r.Flags == "" || strings.Contains(r.Message, "\n") && !strings.Contains(strings.ToLower(s), `\x0a`) {
			t.Fatalf("bad record %+v from %q", r, s)
		}
		again := strconv.Itoa(r.Facility<<3|r.Level) + "," + strconv.FormatUint(r.Seq, 10) + "," +
			strconv.FormatInt(r.SinceBoot.Microseconds(), 10) + ",-;" + escape(r.Message)
		r2, err := ParseKmsgRecord(again)
		if err != nil {
			t.Fatalf("re-rendered %q: %v", again, err)
		}
		r.Flags = "-"
		if r2 != r {
			t.Fatalf("round trip:\n %+v\n %+v", r, r2)
		}
	})
}

// FuzzHandleLine feeds arbitrary log lines through the whole path (format
// detection, timestamps, parsing, mapping, dedup): it never panics and every Xid
// line is either counted or suppressed.
func FuzzHandleLine(f *testing.F) {
	for _, s := range []string{
		"4,1234,5678901,-;NVRM: Xid (PCI:0000:38:00): 43, pid=2815167, name=pt_main_thread, Ch 00000008",
		"[ 1234.567890] NVRM: Xid (PCI:0000:19:00): 94, Contained",
		"[Sun Feb 23 16:24:18 2025] NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d",
		"kern  :warn  : 2025-01-21T02:21:33,498559+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, x",
		"2025-01-02T15:20:12+0800 host kernel: NVRM: Xid (PCI:0000:cb:00): 79, GPU has fallen off the bus.",
		"0,0,99999999999,-;NVRM: Xid (PCI:ffff:ff:1f): 2147483647, x",
		" SUBSYSTEM=pci",
	} {
		f.Add(s)
	}
	boot := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		src := New(Options{Inventory: testInventory(t), BootTime: func() (time.Time, error) { return boot, nil }})
		for line := range strings.SplitSeq(s, "\n") {
			src.handleLine([]byte(line), true)
			src.handleLine([]byte(line), true)
		}
		st := src.Stats()
		if st.Accepted+st.Suppressed != st.XidLines {
			t.Fatalf("stats %+v", st)
		}
	})
}
