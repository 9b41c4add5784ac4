package xid

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestMerge checks that an NVML event and the kernel-log line of the same Xid
// are one event, whichever comes first, and that the log line's message wins.
func TestMerge(t *testing.T) {
	const line = "NVRM: Xid (PCI:0000:38:00): 13, pid=9, name=python, Graphics Exception: ESR 0x1"
	nvmlEvent := collector.XidEvent{GPUIndex: 1, Xid: 13, Origin: collector.OriginNVML}
	type step struct {
		nvml    bool          // an NVML event, else the log line
		backlog bool          // the log line comes from the log's history
		wait    time.Duration // clock advance before the step
	}
	tests := []struct {
		name    string
		steps   []step
		count   float64
		origins []string // of the forwarded events
		merged  uint64
	}{
		{name: "nvml then log", steps: []step{{nvml: true}, {wait: 2 * time.Second}},
			count: 1, origins: []string{collector.OriginKmsg}, merged: 1},
		{name: "log then nvml", steps: []step{{}, {nvml: true, wait: 3 * time.Second}},
			count: 1, origins: []string{collector.OriginKmsg}, merged: 1},
		{name: "nvml flood and one log line", steps: []step{{nvml: true}, {nvml: true}, {nvml: true}, {wait: time.Second}},
			count: 1, origins: []string{collector.OriginKmsg}, merged: 3},
		{name: "nvml alone", steps: []step{{nvml: true}},
			count: 1, origins: []string{collector.OriginNVML}},
		{name: "log alone", steps: []step{{}},
			count: 1, origins: []string{collector.OriginKmsg}},
		{name: "too far apart", steps: []step{{nvml: true}, {wait: 10 * time.Second}},
			count: 2, origins: []string{collector.OriginNVML, collector.OriginKmsg}},
		{name: "history line does not merge", steps: []step{{backlog: true}, {nvml: true, wait: time.Second}},
			count: 2, origins: []string{collector.OriginKmsg, collector.OriginNVML}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			rec := &recorder{}
			s := New(Options{Inventory: testInventory(t), Sink: rec, Now: clk.Now})
			l, _ := ParseLine(line)
			for _, st := range tt.steps {
				clk.Add(st.wait)
				s.flush() // what Run's ticker does
				if st.nvml {
					s.ObserveXid(nvmlEvent)
				} else {
					s.observeLog(l, clk.Now(), clk.Now(), !st.backlog)
				}
			}
			clk.Add(DefaultMergeWindow) // let pending NVML events go
			got := collect(t, s)
			if v := values(got, telemetry.MetricXidErrorsTotal)[`{action="RESTART_APP",gpu_index="1",xid="13"}`]; v != tt.count {
				t.Errorf("count = %v, want %v", v, tt.count)
			}
			var origins []string
			for _, ev := range rec.Events() {
				origins = append(origins, ev.Origin)
				if ev.GPUIndex != 1 || ev.UUID != testInventory(t).GPUs[1].UUID || ev.PCIBusID.String() != "0000:38:00.0" {
					t.Errorf("event identity %+v", ev)
				}
				if ev.Origin == collector.OriginKmsg && ev.Message != "Graphics Exception: ESR 0x1" {
					t.Errorf("message %q", ev.Message)
				}
			}
			if !reflect.DeepEqual(origins, tt.origins) {
				t.Errorf("forwarded %v, want %v", origins, tt.origins)
			}
			if st := s.Stats(); st.Merged != tt.merged {
				t.Errorf("merged = %d, want %d", st.Merged, tt.merged)
			}
		})
	}
}

// TestSimulatedNode tails a simulated node's kernel log while its NVML events
// are fed in as the NVML source does: Xids land on the right GPU index by PCI
// address, the NVML events merge with their log lines, and the Xids NVML does not
// deliver (79, 119) come from the log.
func TestSimulatedNode(t *testing.T) {
	fleet, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Seed: 7, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	node := fleet.Nodes()[0]
	lib := node.NVML()
	if r := lib.Init(); r != nvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	defer lib.Shutdown()
	inv := &collector.Inventory{Node: node.Name()}
	set, r := lib.EventSetCreate()
	if r != nvml.SUCCESS {
		t.Fatalf("EventSetCreate: %v", r)
	}
	n, _ := lib.DeviceGetCount()
	// Index the inventory in an order unlike the PCI order, so a PCI→index
	// mix-up shows.
	for i := range n {
		d, _ := lib.DeviceGetHandleByIndex(i)
		uuid, _ := d.GetUUID()
		pi, _ := d.GetPciInfo()
		id, err := telemetry.ParsePCIBusID(cString(pi.BusId[:]))
		if err != nil {
			t.Fatal(err)
		}
		inv.GPUs = append(inv.GPUs, collector.GPUInfo{Index: i, UUID: uuid, PCIBusID: id})
		if r := d.RegisterEvents(nvml.EventTypeXidCriticalError, set); r != nvml.SUCCESS {
			t.Fatalf("RegisterEvents: %v", r)
		}
	}
	rec := &recorder{}
	s := New(Options{KmsgPath: node.KmsgPath(), Inventory: inv, Sink: rec, PollInterval: time.Millisecond,
		MergeWindow: time.Minute, BootTime: func() (time.Time, error) { return node.Boot(), nil }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// What the NVML source does with its event set.
	nvmlDone := make(chan struct{})
	go func() {
		defer close(nvmlDone)
		for ctx.Err() == nil {
			ev, r := set.Wait(10)
			if r != nvml.SUCCESS || ev.EventType != nvml.EventTypeXidCriticalError {
				continue
			}
			idx, _ := ev.Device.GetIndex()
			s.ObserveXid(collector.XidEvent{GPUIndex: idx, Xid: int(ev.EventData), Origin: collector.OriginNVML})
		}
	}()
	waitFor(t, func() bool { return s.Stats().Live })

	for _, f := range []simhw.Fault{
		{GPU: 2, Kind: simhw.FaultXid, Xid: 13},  // log + NVML
		{GPU: 5, Kind: simhw.FaultXid, Xid: 79},  // log only, then 154 (log only: the GPU is lost)
		{GPU: 6, Kind: simhw.FaultXid, Xid: 119}, // log only, then 154 (log + NVML)
	} {
		if err := node.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := fleet.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { st := s.Stats(); return st.XidLines == 5 && st.Merged == 2 })
	cancel()
	<-nvmlDone
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := collect(t, s)
	if g, want := values(got, telemetry.MetricXidErrorsTotal), map[string]float64{
		`{action="RESTART_APP",gpu_index="2",xid="13"}`: 1,
		`{action="RESTART_BM",gpu_index="5",xid="79"}`:  1,
		`{action="RESTART_BM",gpu_index="5",xid="154"}`: 1, // "… to 0x2 (Node Reboot Required)"
		`{action="RESET_GPU",gpu_index="6",xid="119"}`:  1,
		`{action="RESET_GPU",gpu_index="6",xid="154"}`:  1, // "… to 0x1 (GPU Reset Required)"
	}; !reflect.DeepEqual(g, want) {
		t.Errorf("counters = %v, want %v", g, want)
	}
	last := values(got, telemetry.DCGMXidErrors)
	for i, want := range []float64{0, 0, 13, 0, 0, 154, 154, 0} {
		if v := last[`{gpu_index="`+strconv.Itoa(i)+`"}`]; v != want {
			t.Errorf("GPU %d: DCGM_FI_DEV_XID_ERRORS = %v, want %v", i, v, want)
		}
	}
	for _, ev := range rec.Events() {
		if ev.Origin != collector.OriginKmsg || ev.UUID != inv.GPUs[ev.GPUIndex].UUID || ev.PCIBusID != inv.GPUs[ev.GPUIndex].PCIBusID {
			t.Errorf("event %+v", ev)
		}
		if d := ev.Time.Sub(fleet.Now()); d > 0 || d < -2*time.Second {
			t.Errorf("event time %v, fleet time %v", ev.Time, fleet.Now())
		}
	}
	if st := s.Stats(); st.Accepted != 5 || st.Suppressed != 0 || st.RecordsLost != 0 {
		t.Errorf("stats %+v", st)
	}
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// tailFixture runs a source tailing path (only new lines) until the test ends.
func tailFixture(t *testing.T, path string, opts Options) *Source {
	t.Helper()
	opts.KmsgPath = path
	opts.PollInterval = time.Millisecond
	opts.Inventory = testInventory(t)
	s := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func xidLine(xid int, msg string) string {
	return "[ 100.000000] NVRM: Xid (PCI:0000:19:00): " + strconv.Itoa(xid) + ", pid=1, name=a, " + msg + "\n"
}

// TestTailTruncateRotate: only lines added after start count; a truncated file is
// read again from its start; a rotated one is followed to the new file.
func TestTailTruncateRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kern.log")
	appendFile(t, path, xidLine(13, "old, before start")+strings.Repeat("filler line\n", 100))
	s := tailFixture(t, path, Options{DedupWindow: -1})
	waitFor(t, func() bool { return s.Stats().Live })

	appendFile(t, path, xidLine(31, "one"))
	waitFor(t, func() bool { return s.Stats().Accepted == 1 })

	// Truncate (copytruncate-style rotation) and write less than before.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, xidLine(43, "two"))
	waitFor(t, func() bool { return s.Stats().Accepted == 2 })

	// Rotate: move the file away and start a new one.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, xidLine(45, "three")+xidLine(45, "four"))
	waitFor(t, func() bool { return s.Stats().Accepted == 4 })

	// A line written in two parts is one line.
	appendFile(t, path, "[ 100.000000] NVRM: Xid (PCI:0000:19:00): 62, pid=1, ")
	time.Sleep(5 * time.Millisecond)
	appendFile(t, path, "name=a, five\n")
	waitFor(t, func() bool { return s.Stats().Accepted == 5 })

	got := xidCounts(collect(t, s), telemetry.MetricXidErrorsTotal)
	if want := (map[int]int{31: 1, 43: 1, 45: 2, 62: 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("counted %v, want %v", got, want)
	}
	if st := s.Stats(); st.Truncations != 1 || st.Rotations != 1 {
		t.Errorf("stats %+v, want 1 truncation and 1 rotation", st)
	}
}

// TestMissingLog: a log that does not exist yet is an error Collect reports,
// until it appears; then all of it is read.
func TestMissingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg.log")
	s := tailFixture(t, path, Options{})
	waitFor(t, func() bool {
		err := s.CollectHealth(context.Background(), func(telemetry.Sample) {})
		return err != nil && errors.Is(err, os.ErrNotExist) && strings.Contains(err.Error(), path)
	})
	appendFile(t, path, "4,7,1000,-;"+strings.TrimPrefix(xidLine(48, "DBE"), "[ 100.000000] "))
	waitFor(t, func() bool { return s.Stats().Accepted == 1 })
	if err := s.CollectHealth(context.Background(), func(telemetry.Sample) {}); err != nil {
		t.Errorf("Collect after the log appeared: %v", err)
	}
}

// TestDeviceStep drives the /dev/kmsg record handling with what read(2) answers:
// records, EPIPE after the ring overwrote some, EAGAIN at the end.
func TestDeviceStep(t *testing.T) {
	s := New(Options{Inventory: testInventory(t)})
	steps := []struct {
		rec  string
		err  error
		wait bool
	}{
		{rec: "6,10,100,-;hello"},
		{rec: "4,11,200,-;NVRM: Xid (PCI:0000:19:00): 13, pid=1, name=a, Graphics Exception\n SUBSYSTEM=pci\n"},
		{err: syscall.EPIPE},
		{rec: "6,15,300,-;after the overrun"},
		// A process writing to /dev/kmsg gets facility 1 (user): not the driver.
		{rec: "12,16,400,-;NVRM: Xid (PCI:0000:19:00): 79, pid=1, name=a, forged"},
		{rec: "4,17;garbage NVRM: "},
		{err: syscall.EINTR},
		{err: syscall.EAGAIN, wait: true},
	}
	for i, st := range steps {
		wait, err := s.deviceStep([]byte(st.rec), st.err)
		if err != nil || wait != st.wait {
			t.Fatalf("step %d: wait %v, err %v", i, wait, err)
		}
	}
	if _, err := s.deviceStep(nil, syscall.EIO); !errors.Is(err, syscall.EIO) {
		t.Errorf("EIO: %v, want it returned", err)
	}
	st := s.Stats()
	want := Stats{Lines: 5, XidLines: 1, Accepted: 1, Overruns: 1, RecordsLost: 3, Ignored: 2, Live: true}
	if st != want {
		t.Errorf("stats\n %+v\nwant\n %+v", st, want)
	}
	if got := values(collect(t, s), telemetry.MetricXidKmsgRecordsLostTotal); got["{}"] != 3 {
		t.Errorf("records lost = %v", got)
	}
}

// TestDevKmsg reads this machine's /dev/kmsg, where it can: the history is read
// record by record to its end, and Run ends promptly when cancelled while it
// waits for the next record.
func TestDevKmsg(t *testing.T) {
	f, err := os.Open("/dev/kmsg")
	if err != nil {
		t.Skipf("no readable /dev/kmsg: %v", err)
	}
	f.Close()
	for _, fromStart := range []bool{true, false} {
		s := New(Options{FromStart: fromStart})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		waitFor(t, func() bool { return s.Stats().Live })
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not end after cancel")
		}
		st := s.Stats()
		if fromStart && st.Lines == 0 {
			t.Errorf("read no records from the start of /dev/kmsg: %+v", st)
		}
		if err := s.CollectHealth(context.Background(), func(telemetry.Sample) {}); err != nil {
			t.Errorf("Collect: %v", err)
		}
		t.Logf("fromStart=%v: %+v", fromStart, st)
	}
}

// TestRunTwice: a second Run while one runs is an error.
func TestRunTwice(t *testing.T) {
	s := tailFixture(t, filepath.Join(t.TempDir(), "log"), Options{})
	waitFor(t, func() bool { return s.running.Load() })
	if err := s.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
}

// TestRunAgainResumes: a Run after an earlier one ended goes on where that one
// left the file, so nothing counts twice.
func TestRunAgainResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kern.log")
	appendFile(t, path, xidLine(13, "one")+xidLine(31, "two"))
	s := readAll(t, path, Options{Inventory: testInventory(t), DedupWindow: -1})
	if st := s.Stats(); st.Accepted != 2 {
		t.Fatalf("first run: %+v", st)
	}
	appendFile(t, path, xidLine(43, "three"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, func() bool { return s.Stats().Accepted >= 3 })
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := xidCounts(collect(t, s), telemetry.MetricXidErrorsTotal), (map[int]int{13: 1, 31: 1, 43: 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("counted %v, want %v", got, want)
	}
}
