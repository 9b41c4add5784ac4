package simkmsg

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// lineTimes parses the timestamp of each real line with the format's layout.
func lineTimes(t *testing.T, lines []string, f Format) []time.Time {
	t.Helper()
	var times []time.Time
	for _, l := range lines {
		var s, layout string
		switch f {
		case FormatCtime:
			s, layout = l[1:strings.IndexByte(l, ']')], ctimeLayout
		case FormatISO:
			s, layout = l[:strings.IndexByte(l, ' ')], isoLayout
		case FormatDecodeISO:
			s, layout = strings.Fields(l)[3], isoLayout
		case FormatJournal:
			s, layout = l[:strings.IndexByte(l, ' ')], journalLayout
		default:
			t.Fatalf("no timestamp parser for %v", f)
		}
		ts, err := time.ParseInLocation(layout, s, time.UTC)
		if err != nil {
			t.Fatalf("parse time of %q: %v", l, err)
		}
		times = append(times, ts)
	}
	return times
}

// TestReproducesRealLogs drives the simulated driver through the events behind
// each real excerpt and checks the log it prints is byte-identical.
func TestReproducesRealLogs(t *testing.T) {
	tests := []struct {
		file   string
		format Format
		driver string
		// replay logs the events; at[i] is the timestamp of real line i.
		replay func(l *Log, at []time.Time)
	}{
		{
			file: "testdata/dmesg-ctime-xid-119.log", format: FormatCtime, driver: "550.144.03",
			replay: func(l *Log, at []time.Time) {
				const gpu = "0000:9b:00.0"
				l.GPUAttached(at[0], gpu, "GPU-509665ad-b600-ac93-3616-d754b23d636d", "1650124014249")
				l.Xid(at[2], gpu, 119, 2024380, "nvidia-smi", "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).")
				l.Xid(at[3], gpu, 119, 2024380, "nvidia-smi", "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 10 (FREE) (0xa55a0210 0x0).")
				l.Xid(at[4], gpu, 119, 2024380, "nvidia-smi", "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 10 (FREE) (0xa55a0090 0x0).")
				l.Printf(at[5], LevelWarning, "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:%s (printing 1 of every 30).  The GPU likely needs to be reset.", "0000:9b:00")
				l.Xid(at[6], gpu, 119, 1263500, "cache_mgr_main", "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c).")
				l.Xid(at[7], gpu, 119, 1240590, "gpud", "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20803032 0x58c).")
			},
		},
		{
			// Xid 48, 63 and the first 94 have no owning process; the driver
			// prints the R550 '<unknown>' form. Their messages are the defaults.
			file: "testdata/dmesg-iso-xid-48-63-94.log", format: FormatISO, driver: "550.90.07",
			replay: func(l *Log, at []time.Time) {
				const gpu = "00000000:19:00.0" // NVML's form
				l.Xid(at[0], gpu, 48, 0, "", "")
				l.Xid(at[1], gpu, 63, 0, "", "")
				l.Xid(at[2], gpu, 94, 0, "", "")
				for i, ch := 3, 8; i < len(at); i, ch = i+1, ch+1 {
					l.Xid(at[i], gpu, 94, 1248209, "python3.10", fmt.Sprintf("Ch %08x", ch))
				}
			},
		},
		{
			file: "testdata/dmesg-decode-iso-xid-13-43.log", format: FormatDecodeISO, driver: "550.90.07",
			replay: func(l *Log, at []time.Time) {
				const gpu = "0000:38:00.0"
				l.Xid(at[0], gpu, 13, 0, "", "Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors")
				l.Xid(at[1], gpu, 13, 0, "", "Graphics Exception: ESR 0x546fb0=0x11f000e 0x546fb4=0x24 0x546fa8=0xf81eb60 0x546fac=0x1174")
				l.Xid(at[2], gpu, 13, 0, "", "Graphics SM Warp Exception on (GPC 9, TPC 1, SM 1): Out Of Range Address")
				l.Xid(at[3], gpu, 43, 2924364, "pt_main_thread", "")
			},
		},
		{
			file: "testdata/journal-short-iso.log", format: FormatJournal,
			replay: func(l *Log, at []time.Time) {
				l.Printf(at[0], LevelInfo, "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready")
				l.Printf(at[1], LevelInfo, "IPv6: ADDRCONF(NETDEV_CHANGE): cali1d5c6a0536f: link becomes ready")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			want := readLines(t, tt.file)
			at := lineTimes(t, want, tt.format)
			boot := at[0].Add(-37 * time.Hour)
			opts := []Option{WithHostname("exp03-ft-896z-1-lan.exp03-ft-896z-job-svc")}
			if tt.driver != "" {
				opts = append(opts, WithDriver(tt.driver))
			}
			l := New(boot, opts...)
			tt.replay(l, at)
			var got []string
			for _, r := range l.Since(0) {
				got = append(got, l.Line(r, tt.format))
			}
			if !slices.Equal(got, want) {
				t.Errorf("simulated log differs from the real one:\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestDefaultDetailsShapedLikeRealLines checks the default message of every Xid
// the real excerpts hold has the real wording once numbers are masked.
func TestDefaultDetailsShapedLikeRealLines(t *testing.T) {
	digits := regexp.MustCompile(`0x[0-9a-f]+|[0-9]+`)
	mask := func(s string) string { return digits.ReplaceAllString(s, "N") }
	real := map[int][]string{} // xid -> real messages
	for _, f := range []string{"testdata/dmesg-ctime-xid-119.log", "testdata/dmesg-iso-xid-48-63-94.log", "testdata/dmesg-decode-iso-xid-13-43.log"} {
		for _, line := range readLines(t, f) {
			m := strictXid.FindStringSubmatch(line[strings.Index(line, "NVRM: "):])
			if m == nil {
				continue
			}
			xid, _ := strconv.Atoi(m[2])
			real[xid] = append(real[xid], mask(m[5]))
		}
	}
	l := New(time.Time{})
	for _, xid := range []int{13, 43, 48, 63, 94, 119} {
		if !slices.Contains(real[xid], mask(l.DefaultDetail(xid))) {
			t.Errorf("Xid %d default %q has no real counterpart in %q", xid, l.DefaultDetail(xid), real[xid])
		}
	}
}

// Parsers' expressions for NVRM Xid lines.
var (
	// leptonai/gpud components/accelerator/nvidia/query/xid: RegexNVRMXidDmesg
	// and RegexNVRMXidDeviceUUID.
	gpudXid    = regexp.MustCompile(`NVRM: Xid.*?: (\d+),`)
	gpudDevice = regexp.MustCompile(`NVRM: Xid \(((?:PCI:)?[0-9a-fA-F:]+)\)`)
	// The driver's printf (kernel_rc.c) as a regexp: bus id, Xid, optional
	// pid/name, message.
	strictXid = regexp.MustCompile(`^NVRM: Xid \(PCI:([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2})\): (\d+), (?:pid=(\d+|'<unknown>'), name=([^,]+), )?(.+)$`)
	// The NVLink5 message shape of Xid 144–150.
	nvlink5 = regexp.MustCompile(`^([A-Z0-9_]+(?: Degraded)?) (Fatal|Nonfatal) XC(\d) i(\d) Link (\d{2}) \((0x[0-9a-f]{8}) (0x[0-9a-f]{8})((?: 0x[0-9a-f]{8})+)\)$`)
	// Xid 154.
	recovery = regexp.MustCompile(`^GPU recovery action changed from 0x(\d) \(([A-Za-z0-9 ]+)\) to 0x(\d) \(([A-Za-z0-9 ]+)\)$`)
)

// TestXidLinesParse prints every Xid with a default message under three driver
// branches, with and without an owning process, and parses each line back with
// real parsers' expressions.
func TestXidLinesParse(t *testing.T) {
	xids := []int{154}
	for x := range defaultDetails {
		xids = append(xids, x)
	}
	for x := range defaultNVLink5 {
		xids = append(xids, x)
	}
	slices.Sort(xids)
	for _, driver := range []string{"550.144.03", "570.124.06", "575.57.08"} {
		for _, xid := range xids {
			for _, pid := range []int{0, 4242} {
				name := fmt.Sprintf("%s/xid%d/pid%d", driver, xid, pid)
				l := New(time.Unix(0, 0), WithDriver(driver))
				l.Xid(time.Unix(100, 0), "0000:9B:00.0", xid, pid, "python3", "")
				recs := l.Since(0)
				if len(recs) == 0 {
					t.Fatalf("%s: nothing logged", name)
				}
				line := recs[0].Message
				if recs[0].Priority != LevelWarning {
					t.Errorf("%s: priority %d, want warning", name, recs[0].Priority)
				}
				if m := gpudXid.FindStringSubmatch(line); m == nil || m[1] != strconv.Itoa(xid) {
					t.Errorf("%s: gpud's Xid regexp got %v from %q", name, m, line)
				}
				if m := gpudDevice.FindStringSubmatch(line); m == nil || m[1] != "PCI:0000:9b:00" {
					t.Errorf("%s: gpud's device regexp got %v from %q", name, m, line)
				}
				m := strictXid.FindStringSubmatch(line)
				if m == nil {
					t.Errorf("%s: %q does not match the driver format", name, line)
					continue
				}
				switch {
				case pid > 0 && (m[3] != "4242" || m[4] != "python3"):
					t.Errorf("%s: pid/name %q/%q", name, m[3], m[4])
				case pid == 0 && driver < "570" && m[3] != "'<unknown>'":
					t.Errorf("%s: R550 prints pid='<unknown>', got %q", name, line)
				case pid == 0 && driver >= "570" && m[3] != "":
					t.Errorf("%s: R570+ prints no pid without a process, got %q", name, line)
				}
				msg := m[5]
				switch {
				case xid >= 144 && xid <= 150:
					checkNVLink5(t, name, driver, xid, msg)
				case xid == 154:
					if !recovery.MatchString(msg) {
						t.Errorf("%s: %q is not a recovery-action message", name, msg)
					}
				case msg != l.DefaultDetail(xid):
					t.Errorf("%s: message %q, want the default %q", name, msg, l.DefaultDetail(xid))
				}
			}
		}
	}
}

// checkNVLink5 checks an NVLink5 message against the catalog's decode sheet: the
// subcode name of the driver's era and the fixed IntrInfo bits (V1 before R575:
// bits 9:0, six words; V2 from R575: bits 6:0, four words).
func checkNVLink5(t *testing.T, name, driver string, xid int, msg string) {
	t.Helper()
	m := nvlink5.FindStringSubmatch(msg)
	if m == nil {
		t.Errorf("%s: %q does not match the NVLink5 shape", name, msg)
		return
	}
	intr, _ := strconv.ParseUint(m[6][2:], 16, 32)
	v2 := driver >= "575"
	words := 2 + strings.Count(m[8], "0x")
	found := false
	for _, u := range nvlink5Units {
		if u.xid != xid {
			continue
		}
		if !v2 && u.v1 == m[1] && uint32(intr)&0x3ff == u.v1bits && words == 6 {
			found = true
		}
		if v2 && u.v2 == m[1] && uint32(intr)&0x7f == u.v2bits && words == 4 {
			found = true
		}
	}
	if !found {
		t.Errorf("%s: %q does not decode to a catalog subcode of Xid %d", name, msg, xid)
	}
}

func TestNVLink5Detail(t *testing.T) {
	for _, tc := range []struct {
		driver string
		f      NVLink5Fault
		want   string
	}{
		{
			// V1: NETIR_LINK_EVT's bits 9:0 are 0111000110 = 0x1c6.
			"570.124.06", NVLink5Fault{Xid: 149, Unit: "NETIR_LINK_EVT", Fatal: true, Link: 1},
			"NETIR_LINK_EVT Fatal XC0 i0 Link 01 (0x000001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
		},
		{
			// Same fault named by its R575 name on an R570 log prints the R570 name.
			"570.124.06", NVLink5Fault{Xid: 149, Unit: "NETIR_LINK_DOWN", Fatal: true, Link: 1, Reason: 0x25},
			"NETIR_LINK_EVT Fatal XC0 i0 Link 01 (0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
		},
		{
			// V2: RLW_CTRL's bits 6:0 are 0000011.
			"575.57.08", NVLink5Fault{Xid: 145, Unit: "RLW_CTRL", Link: 0, ErrStatus: 0x80000000},
			"RLW_CTRL Nonfatal XC0 i0 Link 00 (0x00000003 0x80000000 0x00000000 0x00000000)",
		},
		{
			"575.57.08", NVLink5Fault{Xid: 146, Unit: "TLW_RX_PIPE1", Link: 17, ErrStatus: 0x4, Fatal: true},
			"TLW_RX_PIPE1 Fatal XC0 i0 Link 17 (0x0000000b 0x00000004 0x00000000 0x00000000)",
		},
	} {
		got, err := New(time.Time{}, WithDriver(tc.driver)).NVLink5Detail(tc.f)
		if err != nil || got != tc.want {
			t.Errorf("%s %+v:\n got %q, %v\nwant %q", tc.driver, tc.f, got, err, tc.want)
		}
	}
	if _, err := New(time.Time{}).NVLink5Detail(NVLink5Fault{Xid: 144, Unit: "RLW_REMAP"}); err == nil {
		t.Error("RLW_REMAP accepted for Xid 144")
	}
}

func TestMappingLinesOncePerAttach(t *testing.T) {
	boot := time.Date(2025, 2, 23, 0, 0, 0, 0, time.UTC)
	l := New(boot)
	l.GPUAttached(boot, "0000:1a:00.0", "GPU-aaaaaaaa-0000-0000-0000-000000000000", "")
	l.GPUAttached(boot, "0000:9b:00.0", "GPU-509665ad-b600-ac93-3616-d754b23d636d", "1650124014249")
	at := boot.Add(time.Hour)
	l.Xid(at, "0000:9b:00.0", 31, 77, "python", "")
	l.Xid(at, "0000:9b:00.0", 119, 77, "python", "")
	l.GPUAttached(at, "0000:9b:00.0", "GPU-509665ad-b600-ac93-3616-d754b23d636d", "1650124014249") // reset
	l.Xid(at, "0000:9b:00.0", 79, 0, "", "")
	var got []string
	for _, r := range l.Since(0) {
		got = append(got, r.Message)
	}
	want := []string{
		"NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d",
		"NVRM: GPU Board Serial Number: 1650124014249",
		"NVRM: Xid (PCI:0000:9b:00): 31, pid=77, name=python, " + defaultDetails[31],
		// Second GPU attached: the driver's GPU1.
		"NVRM: Xid (PCI:0000:9b:00): 119, pid=77, name=python, Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c).",
		"NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d",
		"NVRM: GPU Board Serial Number: 1650124014249",
		"NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"NVRM: GPU 0000:9b:00.0: GPU has fallen off the bus.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRecoveryAction(t *testing.T) {
	l := New(time.Time{})
	at := time.Time{}.Add(time.Hour)
	const gpu = "0008:01:00.0"
	l.RecoveryAction(at, gpu, RecoveryGPUReset)
	l.RecoveryAction(at, gpu, RecoveryNodeReboot)
	l.RecoveryAction(at, gpu, RecoveryNone)
	l.Xid(at, gpu, 154, 0, "", "") // default: the next escalation
	l.Xid(at, gpu, 154, 0, "", "")
	want := []string{
		"NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
		"NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x2 (Node Reboot Required)",
		"NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)",
		"NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
		"NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x2 (Node Reboot Required)",
	}
	var got []string
	for _, r := range l.Since(0) {
		got = append(got, r.Message)
	}
	if !slices.Equal(got, want) {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for a, name := range map[RecoveryAction]string{3: "Drain P2P", 4: "Drain and Reset", 9: "Unknown"} {
		if a.String() != name {
			t.Errorf("RecoveryAction(%d) = %q, want %q", a, a, name)
		}
	}
}

func TestNVRMBusID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0000:9b:00.0", "0000:9b:00"},
		{"00000000:9B:00.0", "0000:9b:00"}, // NVML
		{"PCI:0000:9b:00", "0000:9b:00"},   // the driver's own
		{"0008:01:00.0", "0008:01:00"},
		{"9b:00.0", ""},
		{"0000:9b:00.8", ""},
		{"0000:9b:20.0", ""},
		{"zz", ""},
	} {
		got, err := NVRMBusID(tc.in)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("NVRMBusID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestFloodIsCheap logs an Xid 95 storm the size of a real one (800,000 lines,
// 29 distinct messages) into the default ring.
func TestFloodIsCheap(t *testing.T) {
	boot := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(boot)
	l.GPUAttached(boot, "0000:1a:00.0", "GPU-aaaaaaaa-0000-0000-0000-000000000000", "")
	l.Printf(boot.Add(time.Second), LevelInfo, "before the storm")
	details := make([]string, 29)
	for i := range details {
		details[i] = fmt.Sprintf("Uncontained: FBHUB. RST: Yes, D-RST: No (%d)", i)
	}
	start := time.Now()
	const n = 800_000
	at := boot.Add(time.Hour)
	l.Flood(at, "0000:1a:00.0", 95, n, 100*time.Microsecond, 0, "", details...)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("flood took %v", d)
	}
	// 1 line before, the mapping line, then the storm.
	if got, want := l.Next(), uint64(1+1+n); got != want {
		t.Errorf("Next() = %d, want %d", got, want)
	}
	recs := l.Since(0)
	if len(recs) != DefaultCapacity {
		t.Fatalf("ring holds %d records, want %d", len(recs), DefaultCapacity)
	}
	if l.Dropped() != l.Next()-DefaultCapacity {
		t.Errorf("Dropped() = %d, want %d", l.Dropped(), l.Next()-DefaultCapacity)
	}
	lastRec := recs[len(recs)-1]
	wantLast := "NVRM: Xid (PCI:0000:1a:00): 95, " + details[(n-1)%29]
	if lastRec.Seq != l.Next()-1 || lastRec.Message != wantLast || !lastRec.Time.Equal(at.Add((n-1)*100*time.Microsecond)) {
		t.Errorf("last record %+v, want seq %d %q at %v", lastRec, l.Next()-1, wantLast, at.Add((n-1)*100*time.Microsecond))
	}
	distinct := map[string]bool{}
	for _, r := range recs {
		distinct[r.Message] = true
	}
	if len(distinct) != 29 {
		t.Errorf("%d distinct messages in the ring, want 29", len(distinct))
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Seq != recs[i-1].Seq+1 || recs[i].Time.Before(recs[i-1].Time) {
			t.Fatalf("records %d and %d out of order: %+v %+v", i-1, i, recs[i-1], recs[i])
		}
	}
}
