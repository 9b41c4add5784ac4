//go:build linux

package simib

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/procfs/sysfs"
)

// newSim returns a ConnectX-7 behind a PCIe switch on NUMA node 1 (the layout of
// GPU 9b:00.0 and NIC 9c:00.0 on the H100 node in leptonai/gpud's lspci capture),
// written once under a fresh sysRoot.
func newSim(t *testing.T) (*HCA, string) {
	t.Helper()
	root := ramDir(t)
	h := NewConnectX7("mlx5_0", "0000:9c:00.0", 1, 42)
	h.PCI.Parents = []string{"0000:97:01.0", "0000:98:00.0", "0000:99:01.0"}
	if err := h.WriteSysfs(root); err != nil {
		t.Fatal(err)
	}
	return h, root
}

// ramDir returns a fresh directory on a RAM file system (/dev/shm) when there is
// one, else under t.TempDir. sysfs lives in RAM too; on a disk file system every
// atomic replace costs a journal commit, which makes the property test crawl.
func ramDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "simib-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

func readClass(t testing.TB, root string) sysfs.InfiniBandClass {
	t.Helper()
	fs, err := sysfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := fs.InfiniBandClass()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readPort(t testing.TB, root, dev string, port uint) sysfs.InfiniBandPort {
	t.Helper()
	d, ok := readClass(t, root)[dev]
	if !ok {
		t.Fatalf("device %s not found under %s", dev, root)
	}
	p, ok := d.Ports[port]
	if !ok {
		t.Fatalf("%s port %d not found", dev, port)
	}
	return p
}

// setPointers returns the names of the non-nil pointer fields of a struct.
func setPointers(v any) []string {
	rv := reflect.ValueOf(v)
	var names []string
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			names = append(names, rv.Type().Field(i).Name)
		}
	}
	return names
}

// TestFieldSetMatchesRealHardware reads real mlx5 trees and the simulated one with
// procfs and checks that every field the real hardware populates is populated by
// the simulator too, with the same static values where they are not per-device.
func TestFieldSetMatchesRealHardware(t *testing.T) {
	_, root := newSim(t)
	sim := readClass(t, root)["mlx5_0"]
	simPort := sim.Ports[1]

	for _, tree := range []string{"testdata/gpud-h100", "testdata/procfs"} {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			real := readClass(t, tree)["mlx5_0"]
			realPort, ok := real.Ports[1]
			if !ok {
				t.Fatal("fixture has no port 1")
			}
			for _, c := range []struct {
				name      string
				real, sim any
			}{
				{"Counters", realPort.Counters, simPort.Counters},
				{"HwCounters", realPort.HwCounters, simPort.HwCounters},
			} {
				want, got := setPointers(c.real), setPointers(c.sim)
				for _, f := range want {
					if !slices.Contains(got, f) {
						t.Errorf("%s.%s is set on real hardware but nil in the simulation", c.name, f)
					}
				}
			}
			for _, f := range []struct{ name, real, sim string }{
				{"BoardID", real.BoardID, sim.BoardID},
				{"FirmwareVersion", real.FirmwareVersion, sim.FirmwareVersion},
				{"HCAType", real.HCAType, sim.HCAType},
				{"NodeGUID", real.NodeGUID, sim.NodeGUID},
				{"LinkLayer", realPort.LinkLayer, simPort.LinkLayer},
				{"State", realPort.State, simPort.State},
				{"PhysState", realPort.PhysState, simPort.PhysState},
			} {
				if f.real != "" && f.sim == "" {
					t.Errorf("%s is %q on real hardware but empty in the simulation", f.name, f.real)
				}
			}
		})
	}

	// Static values a ConnectX-7 on an H100 node shares with the real capture.
	real := readClass(t, "testdata/gpud-h100")["mlx5_0"]
	realPort := real.Ports[1]
	if sim.BoardID != real.BoardID || sim.HCAType != real.HCAType {
		t.Errorf("board %s/%s, want %s/%s", sim.BoardID, sim.HCAType, real.BoardID, real.HCAType)
	}
	if !strings.HasPrefix(sim.FirmwareVersion, "28.") {
		t.Errorf("firmware %q, want a ConnectX-7 28.x build", sim.FirmwareVersion)
	}
	if simPort.State != realPort.State || simPort.StateID != realPort.StateID ||
		simPort.PhysState != realPort.PhysState || simPort.PhysStateID != realPort.PhysStateID ||
		simPort.Rate != realPort.Rate || simPort.LinkLayer != realPort.LinkLayer {
		t.Errorf("port = %s(%d)/%s(%d) %d B/s %s, want %s(%d)/%s(%d) %d B/s %s",
			simPort.State, simPort.StateID, simPort.PhysState, simPort.PhysStateID, simPort.Rate, simPort.LinkLayer,
			realPort.State, realPort.StateID, realPort.PhysState, realPort.PhysStateID, realPort.Rate, realPort.LinkLayer)
	}
}

// TestCounterFilesMatchRealHardware checks the simulated port writes exactly the
// counters/ and hw_counters/ files of the real H100 capture: no more, no fewer.
func TestCounterFilesMatchRealHardware(t *testing.T) {
	_, root := newSim(t)
	for _, dir := range []string{"counters", "hw_counters"} {
		want := listDir(t, filepath.Join("testdata/gpud-h100/class/infiniband/mlx5_0/ports/1", dir))
		got := listDir(t, filepath.Join(root, "class/infiniband/mlx5_0/ports/1", dir))
		if !slices.Equal(got, want) {
			t.Errorf("%s files:\n got %v\nwant %v", dir, got, want)
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestDataCountersAreWords checks the 4-byte-word encoding end to end: the file
// holds bytes/4 as real hardware does, and procfs, which multiplies by 4, reports
// the bytes that were sent.
func TestDataCountersAreWords(t *testing.T) {
	h, root := newSim(t)
	h.Ports[0].Advance(time.Second, 4096, 8192)
	if err := h.WriteSysfs(root); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data"))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != "1024\n" {
		t.Errorf("port_xmit_data file = %q, want 4096 bytes as %q words", raw, "1024\n")
	}
	c := readPort(t, root, "mlx5_0", 1).Counters
	for _, v := range []struct {
		name string
		got  *uint64
		want uint64
	}{
		{"PortXmitData (bytes)", c.PortXmitData, 4096},
		{"PortRcvData (bytes)", c.PortRcvData, 8192},
		{"PortXmitPackets (one 4 KiB packet)", c.PortXmitPackets, 1},
		{"PortRcvPackets (two 4 KiB packets)", c.PortRcvPackets, 2},
		{"UnicastXmitPackets", c.UnicastXmitPackets, 1},
		{"UnicastRcvPackets", c.UnicastRcvPackets, 2},
		{"PortXmitWait (link nearly idle)", c.PortXmitWait, 0},
	} {
		if v.got == nil || *v.got != v.want {
			t.Errorf("%s = %v, want %d", v.name, deref(v.got), v.want)
		}
	}
}

func deref(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestFaultsVisibleThroughProcfs drives each fault and reads the result the way the
// production InfiniBand source will.
func TestFaultsVisibleThroughProcfs(t *testing.T) {
	tests := []struct {
		name                  string
		fault                 func(p *Port)
		state                 string
		stateID               uint
		phys                  string
		physID                uint
		linkDowned            uint64
		symbolErrs, rcvErrors uint64
	}{
		{
			name:  "healthy",
			fault: func(*Port) {},
			state: "ACTIVE", stateID: 4, phys: "LinkUp", physID: 5,
		},
		{
			name:  "cable lost",
			fault: func(p *Port) { p.SetDown(true) },
			state: "DOWN", stateID: 1, phys: "Polling", physID: 2, linkDowned: 1,
		},
		{
			name:  "administratively disabled",
			fault: func(p *Port) { p.SetDisabled(true) },
			state: "DOWN", stateID: 1, phys: "Disabled", physID: 3, linkDowned: 1,
		},
		{
			name:  "down twice counts once",
			fault: func(p *Port) { p.SetDown(true); p.SetDisabled(true) },
			state: "DOWN", stateID: 1, phys: "Disabled", physID: 3, linkDowned: 1,
		},
		{
			name:  "down and back up",
			fault: func(p *Port) { p.SetDown(true); p.SetDown(false) },
			state: "ACTIVE", stateID: 4, phys: "LinkUp", physID: 5, linkDowned: 1,
		},
		{
			name:  "three flaps",
			fault: func(p *Port) { p.Flap(); p.Flap(); p.Flap() },
			state: "ACTIVE", stateID: 4, phys: "LinkUp", physID: 5, linkDowned: 3,
		},
		{
			// 10 symbol errors, ceil(10/4) = 3 of them inside packets.
			name:  "symbol error burst",
			fault: func(p *Port) { p.AddSymbolErrors(10) },
			state: "ACTIVE", stateID: 4, phys: "LinkUp", physID: 5,
			symbolErrs: 10, rcvErrors: 3,
		},
		{
			// symbol_error is a 16-bit saturating counter: 70,000 reads 65,535;
			// port_rcv_errors (16 bits) gets 17,500.
			name:  "symbol errors saturate",
			fault: func(p *Port) { p.AddSymbolErrors(70000) },
			state: "ACTIVE", stateID: 4, phys: "LinkUp", physID: 5,
			symbolErrs: 65535, rcvErrors: 17500,
		},
		{
			// link_downed is 8 bits wide: 300 flaps read 255.
			name: "link_downed saturates",
			fault: func(p *Port) {
				for range 300 {
					p.Flap()
				}
			},
			state: "ACTIVE", stateID: 4, phys: "LinkUp", physID: 5, linkDowned: 255,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, root := newSim(t)
			tt.fault(h.Ports[0])
			if err := h.WriteSysfs(root); err != nil {
				t.Fatal(err)
			}
			p := readPort(t, root, "mlx5_0", 1)
			if p.State != tt.state || p.StateID != tt.stateID || p.PhysState != tt.phys || p.PhysStateID != tt.physID {
				t.Errorf("state %d: %s / %d: %s, want %d: %s / %d: %s",
					p.StateID, p.State, p.PhysStateID, p.PhysState, tt.stateID, tt.state, tt.physID, tt.phys)
			}
			if p.Rate != 50_000_000_000 {
				t.Errorf("rate %d B/s, want 400 Gb/s kept through faults", p.Rate)
			}
			for _, v := range []struct {
				name string
				got  *uint64
				want uint64
			}{
				{"LinkDowned", p.Counters.LinkDowned, tt.linkDowned},
				{"SymbolError", p.Counters.SymbolError, tt.symbolErrs},
				{"PortRcvErrors", p.Counters.PortRcvErrors, tt.rcvErrors},
			} {
				if v.got == nil || *v.got != v.want {
					t.Errorf("%s = %v, want %d", v.name, deref(v.got), v.want)
				}
			}
			if r := p.Counters.LinkErrorRecovery; r == nil || *r > *p.Counters.LinkDowned {
				t.Errorf("LinkErrorRecovery = %v, want at most one per link_downed (%d)", deref(r), tt.linkDowned)
			}
		})
	}
}

func TestDownPortMovesNoTraffic(t *testing.T) {
	h, root := newSim(t)
	p := h.Ports[0]
	p.Advance(time.Second, 1<<20, 1<<20)
	p.SetDown(true)
	p.Advance(time.Second, 1<<30, 1<<30)
	if err := h.WriteSysfs(root); err != nil {
		t.Fatal(err)
	}
	c := readPort(t, root, "mlx5_0", 1).Counters
	if *c.PortXmitData != 1<<20 || *c.PortRcvData != 1<<20 {
		t.Errorf("data %d/%d bytes, want only the 1 MiB sent while up", *c.PortXmitData, *c.PortRcvData)
	}
}

func TestTrafficCappedAtLineRate(t *testing.T) {
	h, root := newSim(t)
	// 400 Gb/s carries 50 GB in a second; offering 80 GB sends 50 GB, and a
	// saturated link accrues port_xmit_wait (1 s above 70% → 1e6 µs ticks).
	h.Ports[0].Advance(time.Second, 80e9, 0)
	if err := h.WriteSysfs(root); err != nil {
		t.Fatal(err)
	}
	c := readPort(t, root, "mlx5_0", 1).Counters
	if *c.PortXmitData != 50e9 {
		t.Errorf("PortXmitData = %d, want 50e9", *c.PortXmitData)
	}
	if *c.PortXmitWait != 1_000_000 {
		t.Errorf("PortXmitWait = %d, want 1e6", *c.PortXmitWait)
	}
}

func TestAdd(t *testing.T) {
	h, root := newSim(t)
	p := h.Ports[0]
	for name, n := range map[string]uint64{
		"port_xmit_data":                  1000, // words
		"excessive_buffer_overrun_errors": 20,   // 4 bits: saturates at 15
		"local_ack_timeout_err":           7,
	} {
		if err := p.Add(name, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Add("no_such_counter", 1); err == nil {
		t.Error("Add of an unknown counter succeeded")
	}
	if err := h.WriteSysfs(root); err != nil {
		t.Fatal(err)
	}
	c := readPort(t, root, "mlx5_0", 1)
	if *c.Counters.PortXmitData != 4000 || *c.Counters.ExcessiveBufferOverrunErrors != 15 || *c.HwCounters.LocalAckTimeoutErr != 7 {
		t.Errorf("xmit %d bytes, buffer overruns %d, ack timeouts %d; want 4000, 15, 7",
			*c.Counters.PortXmitData, *c.Counters.ExcessiveBufferOverrunErrors, *c.HwCounters.LocalAckTimeoutErr)
	}
	if v, ok := p.Counter("port_xmit_data"); !ok || v != 1000 {
		t.Errorf("Counter(port_xmit_data) = %d, %v; want 1000 words", v, ok)
	}
}

// TestPCITree checks the PCI side through procfs's PCI reader and the device link
// a topology source follows to pair NICs with GPUs.
func TestPCITree(t *testing.T) {
	h, root := newSim(t)
	fs, err := sysfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	devs, err := fs.PciDevices()
	if err != nil {
		t.Fatal(err)
	}
	// procfs keys and prints locations as domain:bus:device:function.
	d, ok := devs["0000:9c:00:0"]
	if !ok || d.Location != (sysfs.PciDeviceLocation{Segment: 0, Bus: 0x9c, Device: 0, Function: 0}) {
		t.Fatalf("0000:9c:00.0 not in bus/pci/devices: %v", devs)
	}
	if d.Vendor != 0x15b3 || d.Device != 0x1021 || d.Class != 0x020700 {
		t.Errorf("vendor/device/class %#x/%#x/%#x, want Mellanox ConnectX-7 InfiniBand controller", d.Vendor, d.Device, d.Class)
	}
	if d.NumaNode == nil || *d.NumaNode != 1 {
		t.Errorf("numa_node = %v, want 1", d.NumaNode)
	}
	if d.ParentLocation == nil || *d.ParentLocation != (sysfs.PciDeviceLocation{Bus: 0x99, Device: 1}) {
		t.Errorf("parent = %v, want the switch port 0000:99:01.0", d.ParentLocation)
	}
	if d.CurrentLinkSpeed == nil || *d.CurrentLinkSpeed != 32 || d.CurrentLinkWidth == nil || *d.CurrentLinkWidth != 16 {
		t.Errorf("link %v GT/s x%v, want Gen5 x16", d.CurrentLinkSpeed, d.CurrentLinkWidth)
	}

	got, err := filepath.EvalSymlinks(filepath.Join(root, "class/infiniband/mlx5_0/device"))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:01.0/0000:9c:00.0")
	if want, _ = filepath.EvalSymlinks(want); got != want {
		t.Errorf("mlx5_0/device -> %s, want %s", got, want)
	}

	// Writing again to the same root is idempotent.
	if err := h.WriteSysfs(root); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, stagingDir)); len(entries) != 0 {
		t.Errorf("staging dir holds %d leftovers", len(entries))
	}
}

// TestRewritesOnlyChangedFiles checks that a tick replaces the counters that moved
// and leaves every other file alone.
func TestRewritesOnlyChangedFiles(t *testing.T) {
	h, root := newSim(t)
	port := filepath.Join(root, "class/infiniband/mlx5_0/ports/1")
	paths := map[string]bool{ // path -> whether the tick changes it
		filepath.Join(root, "class/infiniband/mlx5_0/board_id"): false,
		filepath.Join(port, "state"):                            false,
		filepath.Join(port, "counters/symbol_error"):            false,
		filepath.Join(port, "counters/port_xmit_data"):          true,
		filepath.Join(port, "counters/port_xmit_packets"):       true,
	}
	before := map[string]os.FileInfo{}
	for p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = fi
	}
	h.Ports[0].Advance(time.Second, 1<<20, 0)
	if err := h.WriteSysfs(root); err != nil {
		t.Fatal(err)
	}
	for p, changes := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if replaced := !os.SameFile(before[p], fi); replaced != changes {
			t.Errorf("%s replaced = %v, want %v", strings.TrimPrefix(p, root), replaced, changes)
		}
	}
}

// TestConcurrentReaders runs procfs readers against a tree being rewritten: every
// read must parse (no torn or empty file) and see counters that never go back.
func TestConcurrentReaders(t *testing.T) {
	h, root := newSim(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			h.Ports[0].Advance(time.Millisecond, 1<<20, 1<<19)
			h.Ports[0].AddSymbolErrors(1)
			if i%50 == 0 {
				h.Ports[0].Flap()
			}
			if err := h.WriteSysfs(root); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var last uint64
	for range 200 {
		c := readPort(t, root, "mlx5_0", 1).Counters
		if *c.PortXmitData < last {
			t.Fatalf("PortXmitData went back from %d to %d", last, *c.PortXmitData)
		}
		last = *c.PortXmitData
	}
	close(stop)
	wg.Wait()
}

func TestWriteSysfsRejectsBadIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h *HCA)
	}{
		{"empty name", func(h *HCA) { h.Name = "" }},
		{"name with slash", func(h *HCA) { h.Name = "mlx5/0" }},
		{"bad PCI address", func(h *HCA) { h.PCI.Addr = "9c:00" }},
		{"bad parent", func(h *HCA) { h.PCI.Parents = []string{"0000:99:01"} }},
		{"parent in other domain", func(h *HCA) { h.PCI.Parents = []string{"0001:99:01.0"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewConnectX7("mlx5_0", "0000:9c:00.0", 0, 1)
			tc.edit(h)
			if err := h.WriteSysfs(t.TempDir()); err == nil {
				t.Error("WriteSysfs succeeded")
			}
		})
	}
}

func TestDeterministicIdentity(t *testing.T) {
	a, b := NewConnectX7("mlx5_0", "0000:1a:00.0", 0, 7), NewConnectX7("mlx5_0", "0000:1a:00.0", 0, 7)
	if a.NodeGUID != b.NodeGUID || a.FWVer != b.FWVer || a.Ports[0].LID != b.Ports[0].LID {
		t.Error("same seed gave different identities")
	}
	seen := map[uint64]int64{}
	for seed := range int64(4096) {
		g := NewConnectX7("mlx5_0", "0000:1a:00.0", 0, seed).NodeGUID
		if other, dup := seen[g]; dup {
			t.Fatalf("seeds %d and %d share node GUID %x", other, seed, g)
		}
		seen[g] = seed
	}
	if a.Port(1) != a.Ports[0] || a.Port(2) != nil {
		t.Error("Port(n) does not find ports by number")
	}
	if got := formatGUID(0xa088c20300da6342); got != "a088:c203:00da:6342" {
		t.Errorf("formatGUID = %s", got)
	}
}
