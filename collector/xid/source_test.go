package xid

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw/simkmsg"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// clock is a settable clock safe for the reader goroutines.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 3, 3, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// recorder is an XidSink that keeps what it gets.
type recorder struct {
	mu     sync.Mutex
	events []collector.XidEvent
}

func (r *recorder) ObserveXid(ev collector.XidEvent) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) Events() []collector.XidEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func pci(t testing.TB, s string) telemetry.PCIBusID {
	t.Helper()
	p, err := telemetry.ParsePCIBusID(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testInventory has GPU 0 at 0000:19:00.0, GPU 1 at 0000:38:00.0 and GPU 4 at
// 0000:9b:00.0 (the buses of the gpud fixtures).
func testInventory(t testing.TB) *collector.Inventory {
	return &collector.Inventory{Node: "n1", DriverVersion: "570.124.06", GPUs: []collector.GPUInfo{
		{Index: 0, UUID: "GPU-00000000-0000-0000-0000-000000000000", PCIBusID: pci(t, "0000:19:00.0")},
		{Index: 1, UUID: "GPU-11111111-1111-1111-1111-111111111111", PCIBusID: pci(t, "0000:38:00.0")},
		{Index: 4, UUID: "GPU-509665ad-b600-ac93-3616-d754b23d636d", PCIBusID: pci(t, "0000:9b:00.0")},
	}}
}

func collect(t testing.TB, s *Source) []telemetry.Sample {
	t.Helper()
	var out []telemetry.Sample
	if err := s.CollectHealth(context.Background(), func(x telemetry.Sample) { out = append(out, x) }); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	checkCatalog(t, out)
	return out
}

// checkCatalog checks every sample against the metric catalog: known name, only
// the catalog's label keys.
func checkCatalog(t testing.TB, samples []telemetry.Sample) {
	t.Helper()
	for _, x := range samples {
		d, ok := telemetry.LookupMetric(x.Name)
		if !ok {
			t.Errorf("%s is not in the metric catalog", x.Name)
			continue
		}
		if d.Source != telemetry.SourceXid {
			t.Errorf("%s belongs to source %s", x.Name, d.Source)
		}
		allowed := d.Labels
		if d.Family == telemetry.FamilyDCGMExporter {
			// Sources label DCGM series with gpu_index only; the exporter
			// spells the identity the dcgm-exporter way.
			allowed = []string{telemetry.LabelGPUIndex}
		}
		for _, l := range x.Labels {
			if !slices.Contains(allowed, l.Name) {
				t.Errorf("%s%s: label %q not in %v", x.Name, x.Labels, l.Name, allowed)
			}
		}
	}
}

// values maps "name{labels}" to the value, for comparing.
func values(samples []telemetry.Sample, name string) map[string]float64 {
	m := map[string]float64{}
	for _, x := range samples {
		if x.Name == name {
			m[x.Labels.String()] = x.Value
		}
	}
	return m
}

// xidCounts returns gpuwatch_xid_errors_total summed by Xid.
func xidCounts(samples []telemetry.Sample, name string) map[int]int {
	m := map[int]int{}
	for _, x := range samples {
		if x.Name == name {
			n, _ := strconv.Atoi(x.Labels.Get(telemetry.LabelXid))
			m[n] += int(x.Value)
		}
	}
	return m
}

// readAll runs a source over a whole file from its start and stops once it has
// read all of it.
func readAll(t testing.TB, path string, opts Options) *Source {
	t.Helper()
	opts.KmsgPath = path
	opts.FromStart = true
	opts.PollInterval = time.Millisecond
	s := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// Two drains after the first: an unfinished last line is taken as it is.
	waitFor(t, func() bool { return s.drains.Load() >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFor polls cond for up to 5 s of wall time.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRealLogsThroughSource reads gpud's real kernel logs through the source. The
// expected counts are grep's (TestRealLogs): the repeats in these logs are minutes
// apart, so the default 5-minute dedup keeps them all, which holds only if the
// source reads each line's own timestamp. With a 1-hour window, the counts were
// computed apart, by a Python script over the same files (same GPU, Xid and
// message within an hour of the last counted one is a repeat).
func TestRealLogsThroughSource(t *testing.T) {
	tests := []struct {
		file       string
		window     time.Duration
		xids       map[int]int
		suppressed map[int]int
		gpu        string // gpu_index every event lands on
	}{
		{file: "components_accelerator_nvidia_error_xid__dmesg-with-xid-119.log", xids: map[int]int{119: 5}, gpu: "4"},
		{file: "components_memory__dmesg.decode.iso.log", xids: map[int]int{13: 16, 43: 1}, gpu: "1"},
		{file: "components_query_log_tail__dmesg.0.log", xids: map[int]int{48: 1, 63: 1, 94: 9}, gpu: "0"},
		{file: "pkg_dmesg__dmesg.decode.iso.log.0", xids: map[int]int{13: 629, 43: 7}, gpu: "1"},
		{file: "pkg_dmesg__dmesg.decode.iso.log.0", window: time.Hour,
			xids: map[int]int{13: 478, 43: 2}, suppressed: map[int]int{13: 151, 43: 5}, gpu: "1"},
		{file: "pkg_kmsg__kmsg.1.log", xids: map[int]int{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.file, tt.window), func(t *testing.T) {
			rec := &recorder{}
			s := readAll(t, filepath.Join("testdata", tt.file), Options{Inventory: testInventory(t), Sink: rec,
				DedupWindow: tt.window, BootTime: func() (time.Time, error) { return time.Unix(0, 0), nil }})
			got := collect(t, s)
			if c := xidCounts(got, telemetry.MetricXidErrorsTotal); !reflect.DeepEqual(c, tt.xids) {
				t.Errorf("counted %v, want %v", c, tt.xids)
			}
			want := tt.suppressed
			if want == nil {
				want = map[int]int{}
			}
			if c := xidCounts(got, telemetry.MetricXidSuppressedLinesTotal); !reflect.DeepEqual(c, want) {
				t.Errorf("suppressed %v, want %v", c, want)
			}
			total := 0
			for _, n := range tt.xids {
				total += n
			}
			if evs := rec.Events(); len(evs) != total {
				t.Errorf("forwarded %d events, want %d", len(evs), total)
			}
			for _, ev := range rec.Events() {
				if strconv.Itoa(ev.GPUIndex) != tt.gpu || ev.Origin != collector.OriginKmsg || ev.Message == "" || ev.Time.Year() < 2024 {
					t.Fatalf("event %+v: want GPU %s, kmsg origin, a message and the line's time", ev, tt.gpu)
				}
			}
			for _, x := range got {
				if x.Name == telemetry.MetricXidErrorsTotal && x.Labels.Get(telemetry.LabelGPUIndex) != tt.gpu {
					t.Errorf("%s%s: want gpu_index %s", x.Name, x.Labels, tt.gpu)
				}
			}
		})
	}
}

// TestRealLogWithoutTimestamps shows why line timestamps matter: the same Xid 43
// lines, stripped of their timestamps, all read at one instant, are one flood.
func TestRealLogWithoutTimestamps(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "pkg_dmesg__dmesg.decode.iso.log.0"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.SplitSeq(string(b), "\n") {
		if i := strings.Index(l, "NVRM: "); i >= 0 {
			lines = append(lines, l[i:])
		}
	}
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	s := readAll(t, path, Options{Inventory: testInventory(t), Now: clk.Now})
	got := xidCounts(collect(t, s), telemetry.MetricXidErrorsTotal)
	if want := (map[int]int{13: 420, 43: 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("counted %v, want %v (distinct messages)", got, want)
	}
}

// TestDCGMLastValueAndLabels checks the series Collect emits for known and
// unknown GPUs.
func TestDCGMLastValueAndLabels(t *testing.T) {
	clk := newClock()
	rec := &recorder{}
	s := New(Options{Inventory: testInventory(t), Sink: rec, Now: clk.Now})
	at := clk.Now()
	for _, line := range []string{
		"NVRM: Xid (PCI:0000:38:00): 13, pid=1, name=a, Graphics Exception",
		"NVRM: Xid (PCI:0000:38:00): 31, pid=1, name=a, MMU Fault",
		"NVRM: Xid (PCI:0000:38:00): 13, pid=2, name=b, Graphics Exception", // repeat
		// A GPU the inventory lacks, named by the driver's mapping line.
		"NVRM: GPU at PCI:0000:cb:00: GPU-deadbeef-0000-0000-0000-000000000000",
		"NVRM: Xid (PCI:0000:cb:00): 79, GPU has fallen off the bus.",
		"NVRM: Xid (PCI:0000:dd:00): 79, GPU has fallen off the bus.",
	} {
		l, ok := ParseLine(line)
		if !ok {
			t.Fatalf("not parsed: %q", line)
		}
		s.observeLog(l, at, at, true)
	}
	got := collect(t, s)
	if g, want := values(got, telemetry.DCGMXidErrors), map[string]float64{
		`{gpu_index="0"}`: 0, `{gpu_index="1"}`: 13, `{gpu_index="4"}`: 0,
	}; !reflect.DeepEqual(g, want) {
		t.Errorf("DCGM_FI_DEV_XID_ERRORS = %v, want %v", g, want)
	}
	if g, want := values(got, telemetry.MetricXidErrorsTotal), map[string]float64{
		`{action="RESTART_APP",gpu_index="1",xid="13"}`: 1,
		`{action="RESTART_APP",gpu_index="1",xid="31"}`: 1,
		`{action="RESTART_BM",gpu_index="",gpu_uuid="GPU-deadbeef-0000-0000-0000-000000000000",pci_bus_id="0000:cb:00.0",xid="79"}`: 1,
		`{action="RESTART_BM",gpu_index="",gpu_uuid="",pci_bus_id="0000:dd:00.0",xid="79"}`:                                         1,
	}; !reflect.DeepEqual(g, want) {
		t.Errorf("xid counters = %v, want %v", g, want)
	}
	if g, want := values(got, telemetry.MetricXidSuppressedLinesTotal), map[string]float64{`{gpu_index="1",xid="13"}`: 1}; !reflect.DeepEqual(g, want) {
		t.Errorf("suppressed = %v, want %v", g, want)
	}
	if g := values(got, telemetry.MetricXidKmsgRecordsLostTotal); !reflect.DeepEqual(g, map[string]float64{"{}": 0}) {
		t.Errorf("records lost = %v", g)
	}
	evs := rec.Events()
	if len(evs) != 4 {
		t.Fatalf("forwarded %d events, want 4: %+v", len(evs), evs)
	}
	if e := evs[2]; e.GPUIndex != -1 || e.UUID != "GPU-deadbeef-0000-0000-0000-000000000000" || e.PCIBusID.String() != "0000:cb:00.0" {
		t.Errorf("unknown GPU event = %+v", e)
	}
	if e := evs[0]; e.GPUIndex != 1 || e.UUID != testInventory(t).GPUs[1].UUID || e.Message != "Graphics Exception" {
		t.Errorf("known GPU event = %+v", e)
	}
}

// TestCounterMonotonic: a counter never goes down across collections, and a
// repeat after the dedup window counts again.
func TestCounterMonotonic(t *testing.T) {
	clk := newClock()
	s := New(Options{Inventory: testInventory(t), Now: clk.Now, DedupWindow: time.Minute})
	l, _ := ParseLine("NVRM: Xid (PCI:0000:19:00): 94, pid=1, name=a, Contained: SM (0x1). RST: No, D-RST: No")
	prev := 0.0
	for i := range 10 {
		at := clk.Now()
		s.observeLog(l, at, at, true)
		v := values(collect(t, s), telemetry.MetricXidErrorsTotal)[`{action="RESTART_APP",gpu_index="0",xid="94"}`]
		if v < prev {
			t.Fatalf("step %d: counter went from %v to %v", i, prev, v)
		}
		prev = v
		clk.Add(20 * time.Second)
	}
	// t = 0, 20, …, 180 s: counted at 0, 60, 120, 180.
	if prev != 4 {
		t.Errorf("counter = %v, want 4", prev)
	}
}

// TestDedupTableBounded floods distinct lines: the dedup table stays bounded and
// every line still counts.
func TestDedupTableBounded(t *testing.T) {
	clk := newClock()
	s := New(Options{Inventory: testInventory(t), Now: clk.Now, MaxDedupEntries: 100})
	for i := range 10_000 {
		l, _ := ParseLine(fmt.Sprintf("NVRM: Xid (PCI:0000:19:00): 13, Graphics Exception: ESR 0x%x", i))
		at := clk.Now()
		s.observeLog(l, at, at, true)
		if n := len(s.dedup); n > 100 {
			t.Fatalf("dedup table has %d entries", n)
		}
	}
	if st := s.Stats(); st.Accepted != 10_000 || st.Suppressed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestFlood reproduces the flood of one real node (800,000 Xid 95 lines, 29
// distinct) at 100,000 lines: 29 events are counted and forwarded, the rest are
// suppressed, and the read time stays small.
func TestFlood(t *testing.T) {
	path, boot := floodLog(t, 100_000, 29)
	rec := &recorder{}
	start := time.Now()
	s := readAll(t, path, Options{Inventory: testInventory(t), Sink: rec,
		BootTime: func() (time.Time, error) { return boot, nil }})
	elapsed := time.Since(start)
	got := collect(t, s)
	if g, want := values(got, telemetry.MetricXidErrorsTotal), map[string]float64{`{action="RESET_GPU",gpu_index="0",xid="95"}`: 29}; !reflect.DeepEqual(g, want) {
		t.Errorf("counted %v, want %v", g, want)
	}
	if g, want := values(got, telemetry.MetricXidSuppressedLinesTotal), map[string]float64{`{gpu_index="0",xid="95"}`: 100_000 - 29}; !reflect.DeepEqual(g, want) {
		t.Errorf("suppressed %v, want %v", g, want)
	}
	if n := len(rec.Events()); n != 29 {
		t.Errorf("forwarded %d events, want 29", n)
	}
	for _, ev := range rec.Events() {
		if !ev.Time.After(boot) || ev.Time.After(boot.Add(time.Hour)) {
			t.Errorf("event time %v: want boot + kmsg timestamp", ev.Time)
		}
	}
	t.Logf("100,000 lines in %v", elapsed)
}

// floodLog writes a kmsg-format log with n Xid 95 lines on 0000:19:00 cycling
// through distinct messages, 1 ms apart, plus the driver's mapping line.
func floodLog(t testing.TB, n, distinct int) (string, time.Time) {
	t.Helper()
	boot := time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC)
	l := simkmsg.New(boot, simkmsg.WithCapacity(n+16))
	l.GPUAttached(boot, "0000:19:00.0", "GPU-00000000-0000-0000-0000-000000000000", "1650124014249")
	details := make([]string, distinct)
	for i := range details {
		details[i] = fmt.Sprintf("Uncontained: FBHUB. RST: Yes, D-RST: No (0x%08x)", 0x1000+i)
	}
	l.Flood(boot.Add(time.Minute), "0000:19:00.0", 95, n, time.Millisecond, 0, "", details...)
	path := filepath.Join(t.TempDir(), "kmsg.log")
	if err := l.AppendTo(path, simkmsg.FormatKmsg); err != nil {
		t.Fatal(err)
	}
	return path, boot
}

// TestFormats reads the same Xids written in every text format the simulator's
// log renders: each is parsed, mapped and counted once.
func TestFormats(t *testing.T) {
	boot := time.Date(2025, 3, 3, 8, 0, 0, 0, time.Local)
	for _, f := range []simkmsg.Format{simkmsg.FormatKmsg, simkmsg.FormatDmesg, simkmsg.FormatCtime, simkmsg.FormatISO,
		simkmsg.FormatDecodeISO, simkmsg.FormatSyslog, simkmsg.FormatJournal} {
		t.Run(f.String(), func(t *testing.T) {
			l := simkmsg.New(boot)
			l.GPUAttached(boot, "0000:38:00.0", "GPU-11111111-1111-1111-1111-111111111111", "1")
			at := boot.Add(90 * time.Minute)
			l.Xid(at, "0000:38:00.0", 13, 77, "python", "")
			l.Xid(at.Add(time.Second), "0000:38:00.0", 13, 77, "python", "") // a repeat
			l.Xid(at.Add(10*time.Minute), "0000:38:00.0", 13, 77, "python", "")
			path := filepath.Join(t.TempDir(), "log")
			if err := l.AppendTo(path, f); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			s := readAll(t, path, Options{Inventory: testInventory(t), Sink: rec,
				BootTime: func() (time.Time, error) { return boot, nil }})
			if g := xidCounts(collect(t, s), telemetry.MetricXidErrorsTotal); !reflect.DeepEqual(g, map[int]int{13: 2}) {
				t.Errorf("counted %v, want 13: 2", g)
			}
			evs := rec.Events()
			if len(evs) != 2 {
				t.Fatalf("events %+v", evs)
			}
			// Syslog and journal lines have whole seconds; dmesg ctime too.
			if d := evs[0].Time.Sub(at); d < -time.Second || d > time.Second {
				t.Errorf("event time %v, want %v", evs[0].Time, at)
			}
		})
	}
}

// TestNVLink5AndXid154 reads Xids 144–150 (both register encodings) and Xid 154 as
// an R570 and an R575 driver print them: each is counted, and the message kept is
// one the catalog's decoders read.
func TestNVLink5AndXid154(t *testing.T) {
	for _, driver := range []string{"570.124.06", "575.51.03"} {
		t.Run(driver, func(t *testing.T) {
			boot := time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC)
			l := simkmsg.New(boot, simkmsg.WithDriver(driver))
			l.GPUAttached(boot, "0000:9b:00.0", "GPU-509665ad-b600-ac93-3616-d754b23d636d", "1")
			at := boot.Add(time.Hour)
			for x := 144; x <= 150; x++ {
				l.Xid(at, "0000:9b:00.0", x, 0, "", "")
				at = at.Add(time.Second)
			}
			l.RecoveryAction(at, "0000:9b:00.0", simkmsg.RecoveryGPUReset)
			l.RecoveryAction(at.Add(time.Second), "0000:9b:00.0", simkmsg.RecoveryNodeReboot)
			path := filepath.Join(t.TempDir(), "kmsg.log")
			if err := l.AppendTo(path, simkmsg.FormatKmsg); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			inv := testInventory(t)
			inv.DriverVersion = driver
			s := readAll(t, path, Options{Inventory: inv, Sink: rec,
				BootTime: func() (time.Time, error) { return boot, nil }})
			// Each counted once, labelled with the action the catalog's decode
			// of its message gives (Xid 154: the action it announces).
			want := map[string]float64{}
			for _, ev := range rec.Events() {
				a, _, _ := telemetry.ClassifyXid(ev.Xid, ev.Message, telemetry.DriverMajor(driver))
				want[fmt.Sprintf(`{action="%s",gpu_index="4",xid="%d"}`, a, ev.Xid)]++
			}
			if len(rec.Events()) != 9 || want[`{action="RESET_GPU",gpu_index="4",xid="154"}`] != 1 || want[`{action="RESTART_BM",gpu_index="4",xid="154"}`] != 1 {
				t.Errorf("events %+v", rec.Events())
			}
			if g := values(collect(t, s), telemetry.MetricXidErrorsTotal); !reflect.DeepEqual(g, want) {
				t.Errorf("counted %v, want %v", g, want)
			}
			for _, ev := range rec.Events() {
				switch {
				case ev.Xid == 154:
					if _, to, err := telemetry.ParseXid154(ev.Message); err != nil || to == 0 {
						t.Errorf("Xid 154 message %q: %v", ev.Message, err)
					}
				case ev.Xid >= 144 && ev.Xid <= 149:
					if _, _, err := telemetry.ParseNVLink5Registers(ev.Message); err != nil {
						t.Errorf("Xid %d message %q: %v", ev.Xid, ev.Message, err)
					}
				}
			}
		})
	}
}

// sxRecorder is an SXidSink that keeps what it gets.
type sxRecorder struct {
	mu     sync.Mutex
	events []collector.SXidEvent
}

func (r *sxRecorder) ObserveSXid(ev collector.SXidEvent) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// TestSXidsThroughSource: the SXid lines of a real HGX node's dmesg (quoted in
// leptonai/gpud's SXid documentation) read in dmesg format: every Fatal and
// Non-fatal line is counted per NVSwitch and SXid and forwarded with its time,
// detail lines are not, an identical line within the dedup window is a repeat,
// and the Xid 79 between them is still counted.
func TestSXidsThroughSource(t *testing.T) {
	log := strings.Join([]string{
		"[6781741.548768] NVRM: GPU at PCI:0000:91:00: GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b",
		"[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up",
		"[6781753.404587] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 63 LTSSM Fault Up",
		"[6781753.404848] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 Sub-engine instance 00",
		"[6781753.406566] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x10000000, 0x10000000, 0x00000000, 0x10000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
		"[6781753.407899] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 37 LTSSM Fault Up",
		"[6781753.408138] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 62 LTSSM Fault Up",
		"[6781753.408138] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 62 LTSSM Fault Up",
		"[6781760.000000] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate",
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "dmesg.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	boot := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rec, sx := &recorder{}, &sxRecorder{}
	s := readAll(t, path, Options{Sink: rec, SXidSink: sx, BootTime: func() (time.Time, error) { return boot, nil }})
	got := collect(t, s)
	if g, want := values(got, telemetry.MetricNVSwitchSXidErrorsTotal), map[string]float64{
		`{fatal="true",nvswitch="0",pci_bus_id="0000:05:00.0",sxid="20034"}`:  2,
		`{fatal="false",nvswitch="0",pci_bus_id="0000:05:00.0",sxid="20009"}`: 1,
		`{fatal="true",nvswitch="1",pci_bus_id="0000:06:00.0",sxid="20034"}`:  1,
		`{fatal="true",nvswitch="2",pci_bus_id="0000:07:00.0",sxid="20034"}`:  1,
	}; !reflect.DeepEqual(g, want) {
		t.Errorf("SXids counted %v, want %v", g, want)
	}
	if g := xidCounts(got, telemetry.MetricXidErrorsTotal); !reflect.DeepEqual(g, map[int]int{79: 1}) {
		t.Errorf("Xids %v", g)
	}
	sx.mu.Lock()
	defer sx.mu.Unlock()
	if len(sx.events) != 5 {
		t.Fatalf("forwarded %+v", sx.events)
	}
	e := sx.events[0]
	if e.NVSwitch != 1 || e.SXid != 20034 || !e.Fatal || e.Link != 48 || e.PCIBusID.String() != "0000:06:00.0" ||
		e.Message != "LTSSM Fault Up" || !e.Time.Equal(boot.Add(6781753400584*time.Microsecond)) {
		t.Errorf("first SXid %+v", e)
	}
	if st := s.Stats(); st.SXidLines != 6 || st.Suppressed != 1 {
		t.Errorf("stats %+v", st)
	}
}
