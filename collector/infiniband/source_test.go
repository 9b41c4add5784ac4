package infiniband

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs/sysfs"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/collector/simhw/simib"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

const nodeExporterSys = "testdata/node-exporter/sys"

// collectAll runs both schedules and returns the samples (health first) and the
// errors.
func collectAll(t testing.TB, s *Source) ([]telemetry.Sample, error) {
	t.Helper()
	var out []telemetry.Sample
	emit := func(x telemetry.Sample) { out = append(out, x) }
	herr := s.CollectHealth(context.Background(), emit)
	cerr := s.Collect(context.Background(), emit)
	return out, errors.Join(herr, cerr)
}

func mustNew(t testing.TB, o Options) *Source {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// expo renders a sample as a line of the Prometheus text format, the way
// client_golang writes it.
func expo(x telemetry.Sample) string {
	return x.Name + x.Labels.String() + " " + strconv.FormatFloat(x.Value, 'g', -1, 64)
}

// goldenLines reads the node_exporter excerpt: its sample lines (without legacy
// series, which the catalog does not have) and HELP/TYPE per metric.
func goldenLines(t *testing.T) (samples []string, help, typ map[string]string) {
	t.Helper()
	f, err := os.Open("testdata/node-exporter/e2e-infiniband.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	help, typ = map[string]string{}, map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, text, _ := strings.Cut(rest, " ")
			help[name] = text
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, text, _ := strings.Cut(rest, " ")
			typ[name] = text
			continue
		}
		if strings.HasPrefix(line, "node_infiniband_legacy_") {
			continue
		}
		samples = append(samples, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return samples, help, typ
}

// TestGoldenNodeExporter reads node_exporter's own fixture tree and checks the
// node_infiniband_* series equal node_exporter's expected output line for line:
// names, label keys and values, and values (data counters ×4, N/A counters absent,
// i40iw0 with state, rate and info only).
func TestGoldenNodeExporter(t *testing.T) {
	s := mustNew(t, Options{SysfsRoot: nodeExporterSys})
	got, err := collectAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	want, help, typ := goldenLines(t)
	var lines []string
	for _, x := range got {
		if strings.HasPrefix(x.Name, "node_infiniband_") {
			lines = append(lines, expo(x))
		}
	}
	slices.Sort(lines)
	slices.Sort(want)
	if !slices.Equal(lines, want) {
		t.Errorf("node_infiniband_* differ from node_exporter's e2e output\n got: %s\nwant: %s",
			strings.Join(lines, "\n      "), strings.Join(want, "\n      "))
	}
	if len(want) != 35 {
		t.Fatalf("%d golden lines, want 35: the excerpt changed", len(want))
	}
	// The catalog's help and type are node_exporter's.
	for name, h := range help {
		if strings.HasPrefix(name, "node_infiniband_legacy_") {
			continue
		}
		d, ok := telemetry.LookupMetric(name)
		if !ok {
			t.Errorf("%s: not in the catalog", name)
			continue
		}
		if d.Help != h || string(d.Type) != typ[name] {
			t.Errorf("%s: catalog has %s %q, node_exporter %s %q", name, d.Type, d.Help, typ[name], h)
		}
	}
}

// TestFixturesMatchShared checks the vendored copies against ../shared/data.
func TestFixturesMatchShared(t *testing.T) {
	shared := "../../../shared/data/node-exporter-fixtures"
	if _, err := os.Stat(shared); err != nil {
		t.Skip("no ../shared/data")
	}
	e2e, err := os.ReadFile(filepath.Join(shared, "e2e-output.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var excerpt bytes.Buffer
	for line := range strings.Lines(string(e2e)) {
		l := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if strings.HasPrefix(l, "node_infiniband_") {
			excerpt.WriteString(line)
		}
	}
	ours, err := os.ReadFile("testdata/node-exporter/e2e-infiniband.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, excerpt.Bytes()) {
		t.Error("testdata/node-exporter/e2e-infiniband.txt differs from the shared e2e-output.txt excerpt")
	}
	src := filepath.Join(shared, "sys/class/infiniband")
	err = filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		a, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(nodeExporterSys, "class/infiniband", rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: copy differs or is missing (%v)", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCatalog checks every sample against the metric catalog: the name is there and
// the labels are the catalog's (less node, which the exporter adds).
func TestCatalog(t *testing.T) {
	for _, root := range []string{nodeExporterSys, "../simhw/simib/testdata/gpud-h100", "../simhw/simib/testdata/procfs"} {
		got, err := collectAll(t, mustNew(t, Options{SysfsRoot: root}))
		if err != nil {
			t.Fatalf("%s: %v", root, err)
		}
		for _, x := range got {
			d, ok := telemetry.LookupMetric(x.Name)
			if !ok {
				t.Errorf("%s: %s not in the catalog", root, x.Name)
				continue
			}
			want := slices.DeleteFunc(d.Labels, func(l string) bool { return l == telemetry.LabelNode })
			var keys []string
			for _, l := range x.Labels {
				keys = append(keys, l.Name)
			}
			slices.Sort(want)
			if !slices.Equal(keys, want) {
				t.Errorf("%s: %s has labels %v, catalog %v", root, x.Name, keys, want)
			}
		}
	}
}

// TestSchedulesDisjoint checks that no series is emitted by both schedules and that
// the health schedule carries state and error counters only.
func TestSchedulesDisjoint(t *testing.T) {
	s := mustNew(t, Options{SysfsRoot: "../simhw/simib/testdata/gpud-h100"})
	health, full := map[string]bool{}, map[string]bool{}
	if err := s.CollectHealth(context.Background(), func(x telemetry.Sample) { health[x.Name] = true }); err != nil {
		t.Fatal(err)
	}
	if err := s.Collect(context.Background(), func(x telemetry.Sample) { full[x.Name] = true }); err != nil {
		t.Fatal(err)
	}
	for n := range health {
		if full[n] {
			t.Errorf("%s emitted on both schedules", n)
		}
		if strings.Contains(n, "_data_") || strings.Contains(n, "packets") {
			t.Errorf("%s: traffic counter on the health schedule", n)
		}
	}
	for _, n := range []string{telemetry.NodeIBStateID, telemetry.NodeIBPhysicalStateID, telemetry.MetricIBSymbolErrorsTotal, telemetry.NodeIBLinkDownedTotal} {
		if !health[n] {
			t.Errorf("%s missing from the health schedule", n)
		}
	}
	for _, n := range []string{telemetry.NodeIBInfo, telemetry.NodeIBPortDataReceivedBytesTotal, telemetry.MetricIBHWStatisticTotal} {
		if !full[n] {
			t.Errorf("%s missing from the full schedule", n)
		}
	}
}

// TestAgreesWithProcfs reads the real ConnectX trees with procfs too and checks every
// value both report is equal.
func TestAgreesWithProcfs(t *testing.T) {
	for _, root := range []string{"../simhw/simib/testdata/gpud-h100", "../simhw/simib/testdata/procfs", nodeExporterSys} {
		fs, err := sysfs.NewFS(root)
		if err != nil {
			t.Fatal(err)
		}
		class, err := fs.InfiniBandClass()
		if err != nil {
			t.Fatalf("%s: procfs: %v", root, err)
		}
		got, err := collectAll(t, mustNew(t, Options{SysfsRoot: root}))
		if err != nil {
			t.Fatal(err)
		}
		idx := map[string]float64{}
		for _, x := range got {
			idx[expoKey(x)] = x.Value
		}
		checked := 0
		for _, dev := range class {
			for _, p := range dev.Ports {
				ps := strconv.FormatUint(uint64(p.Port), 10)
				c := p.Counters
				for metric, v := range map[string]*uint64{
					telemetry.NodeIBPortDataReceivedBytesTotal:            c.PortRcvData,
					telemetry.NodeIBPortDataTransmittedBytesTotal:         c.PortXmitData,
					telemetry.NodeIBPortPacketsReceivedTotal:              c.PortRcvPackets,
					telemetry.NodeIBPortTransmitWaitTotal:                 c.PortXmitWait,
					telemetry.NodeIBLinkDownedTotal:                       c.LinkDowned,
					telemetry.NodeIBPortDiscardsTransmittedTotal:          c.PortXmitDiscards,
					telemetry.MetricIBSymbolErrorsTotal:                   c.SymbolError,
					telemetry.MetricIBExcessiveBufferOverrunErrorsTotal:   c.ExcessiveBufferOverrunErrors,
					telemetry.MetricIBHWStatisticTotal + "/out_of_buffer": p.HwCounters.OutOfBuffer,
				} {
					key := metric + "/" + dev.Name + "/" + ps
					g, ok := idx[key]
					if (v != nil) != ok || ok && g != float64(*v) {
						t.Errorf("%s %s: procfs %v, source %v (present %v)", root, key, deref(v), g, ok)
					}
					checked++
				}
				for metric, v := range map[string]float64{
					telemetry.NodeIBStateID:            float64(p.StateID),
					telemetry.NodeIBPhysicalStateID:    float64(p.PhysStateID),
					telemetry.NodeIBRateBytesPerSecond: float64(p.Rate),
				} {
					if g := idx[metric+"/"+dev.Name+"/"+ps]; g != v {
						t.Errorf("%s %s %s/%s: procfs %v, source %v", root, metric, dev.Name, ps, v, g)
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: nothing compared", root)
		}
	}
}

func deref(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

// expoKey is metric[/counter]/device/port.
func expoKey(x telemetry.Sample) string {
	dev, port := x.Labels.Get("device"), x.Labels.Get("port")
	if dev == "" {
		dev, port = x.Labels.Get(telemetry.LabelIBDevice), x.Labels.Get(telemetry.LabelIBPort)
	}
	name := x.Name
	if c := x.Labels.Get(telemetry.LabelCounter); c != "" {
		name += "/" + c
	}
	return name + "/" + dev + "/" + port
}

// copyTree copies a fixture tree into a temporary directory the test may break.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "sys")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestBadFileLosesOnlyThatValue breaks three files of one port (garbage in a
// counter, a counter that cannot be read, garbage in state) and checks that exactly
// those three values are missing, every other value of the port and device is still
// there, and the error names each file (node_exporter #3265).
func TestBadFileLosesOnlyThatValue(t *testing.T) {
	root := copyTree(t, nodeExporterSys)
	port := filepath.Join(root, "class/infiniband/mlx4_0/ports/1")
	garbage := filepath.Join(port, "counters/port_xmit_discards")
	unreadable := filepath.Join(port, "counters/link_downed")
	badState := filepath.Join(port, "state")
	if err := os.WriteFile(garbage, []byte("12ab\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory where a file should be: open succeeds, read fails with EISDIR,
	// which no permission bit can fake for a test running as root.
	if err := os.Remove(unreadable); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(unreadable, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badState, []byte("ACTIVE\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	got, err := collectAll(t, mustNew(t, Options{SysfsRoot: root}))
	if err == nil {
		t.Fatal("no error for three broken files")
	}
	for _, p := range []string{garbage, unreadable, badState} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not name %s:\n%v", p, err)
		}
	}
	lost := map[string]bool{
		`node_infiniband_port_discards_transmitted_total{device="mlx4_0",port="1"}`: true,
		`node_infiniband_link_downed_total{device="mlx4_0",port="1"}`:               true,
		`node_infiniband_state_id{device="mlx4_0",port="1"}`:                        true,
	}
	want, _, _ := goldenLines(t)
	have := map[string]bool{}
	for _, x := range got {
		have[expo(x)] = true
	}
	for _, w := range want {
		series, _, _ := strings.Cut(w, " ")
		if lost[series] == have[w] {
			t.Errorf("%s: present=%v, want %v", w, have[w], !lost[series])
		}
	}
}

// TestExcludedDeviceIsNeverRead breaks every file of i40iw0 and checks that with
// i40iw0 excluded (or not included) the source reports no error and nothing of it
// (node_exporter #3823), and that without the filter the breakage is reported.
func TestExcludedDeviceIsNeverRead(t *testing.T) {
	root := copyTree(t, nodeExporterSys)
	dev := filepath.Join(root, "class/infiniband/i40iw0")
	err := filepath.WalkDir(dev, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		return os.Mkdir(path, 0o755) // unreadable
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{
		{SysfsRoot: root, DeviceExclude: "^i40iw"},
		{SysfsRoot: root, DeviceInclude: "^mlx"},
	} {
		got, err := collectAll(t, mustNew(t, o))
		if err != nil {
			t.Errorf("%+v: %v", o, err)
		}
		for _, x := range got {
			if strings.Contains(x.Labels.String(), "i40iw0") {
				t.Errorf("%+v: %s", o, expo(x))
			}
		}
		if len(got) < 30 {
			t.Errorf("%+v: only %d samples", o, len(got))
		}
	}
	if _, err := collectAll(t, mustNew(t, Options{SysfsRoot: root})); err == nil || !strings.Contains(err.Error(), "i40iw0") {
		t.Errorf("unfiltered: want an error naming i40iw0, got %v", err)
	}
	if _, err := New(Options{DeviceInclude: "("}); err == nil {
		t.Error("bad include pattern accepted")
	}
	// Everything excluded is "no devices", not an error.
	err = mustNew(t, Options{SysfsRoot: root, DeviceExclude: "."}).Collect(context.Background(), func(telemetry.Sample) {})
	if !errors.Is(err, collector.ErrNoDevices) {
		t.Errorf("all excluded: %v, want ErrNoDevices", err)
	}
}

func TestNoDevices(t *testing.T) {
	s := mustNew(t, Options{SysfsRoot: t.TempDir()})
	if err := s.Collect(context.Background(), func(telemetry.Sample) {}); !errors.Is(err, collector.ErrNoDevices) {
		t.Errorf("Collect: %v, want ErrNoDevices", err)
	}
	if err := s.CollectHealth(context.Background(), func(telemetry.Sample) {}); !errors.Is(err, collector.ErrNoDevices) {
		t.Errorf("CollectHealth: %v, want ErrNoDevices", err)
	}
	if s.Name() != "infiniband" {
		t.Errorf("Name() = %q", s.Name())
	}
}

// TestSimulatedNode reads the tree a simulated HGX H100 node writes and checks the
// values against the simulator's own counters, then takes a port down and sees it.
func TestSimulatedNode(t *testing.T) {
	fleet, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Seed: 7, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	node := fleet.Nodes()[0]
	h := node.HCAs()[0]
	h.Ports[0].Advance(10*time.Second, 4_000_000_000, 2_000_000_000) // traffic on rail 0
	if err := fleet.Advance(time.Minute); err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, Options{SysfsRoot: node.SysRoot()})
	got, err := collectAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]float64{}
	devices := map[string]bool{}
	for _, x := range got {
		idx[expoKey(x)] = x.Value
		if x.Name == telemetry.NodeIBInfo {
			devices[x.Labels.Get("device")] = true
			if x.Labels.Get("hca_type") != "MT4129" || x.Labels.Get("board_id") != "MT_0000000838" {
				t.Errorf("info %s", x.Labels)
			}
		}
	}
	if len(devices) != 8 {
		t.Fatalf("devices %v, want mlx5_0…mlx5_7", devices)
	}
	for _, hca := range node.HCAs() {
		p := hca.Ports[0]
		key := func(m string) string { return m + "/" + hca.Name + "/1" }
		check := func(metric, counter string, scale uint64) {
			v, _ := p.Counter(counter)
			if g := idx[key(metric)]; g != float64(v*scale) {
				t.Errorf("%s %s: got %v, simulator %d×%d", hca.Name, metric, g, v, scale)
			}
		}
		check(telemetry.NodeIBPortDataReceivedBytesTotal, "port_rcv_data", 4)
		check(telemetry.NodeIBPortDataTransmittedBytesTotal, "port_xmit_data", 4)
		check(telemetry.NodeIBPortPacketsTransmittedTotal, "port_xmit_packets", 1)
		check(telemetry.MetricIBSymbolErrorsTotal, "symbol_error", 1)
		check(telemetry.NodeIBLinkDownedTotal, "link_downed", 1)
		if idx[key(telemetry.NodeIBStateID)] != 4 || idx[key(telemetry.NodeIBPhysicalStateID)] != 5 {
			t.Errorf("%s: state %v phys %v, want 4 5", hca.Name, idx[key(telemetry.NodeIBStateID)], idx[key(telemetry.NodeIBPhysicalStateID)])
		}
		if r := idx[key(telemetry.NodeIBRateBytesPerSecond)]; r != 50e9 {
			t.Errorf("%s: rate %v, want 5e10 (400 Gb/s)", hca.Name, r)
		}
	}
	if idx[telemetry.NodeIBPortDataTransmittedBytesTotal+"/mlx5_0/1"] == 0 {
		t.Error("no traffic on mlx5_0")
	}

	if err := node.Inject(simhw.Fault{Kind: simhw.FaultIBDown, GPU: 3}); err != nil {
		t.Fatal(err)
	}
	if err := fleet.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	states := map[string]float64{}
	if err := s.CollectHealth(context.Background(), func(x telemetry.Sample) {
		if x.Name == telemetry.NodeIBStateID {
			states[x.Labels.Get("device")] = x.Value
		}
	}); err != nil {
		t.Fatal(err)
	}
	for dev, st := range states {
		if want := map[bool]float64{true: 1, false: 4}[dev == "mlx5_3"]; st != want {
			t.Errorf("%s state %v, want %v", dev, st, want)
		}
	}
}

// TestContextCancelled stops between devices.
func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	err := mustNew(t, Options{SysfsRoot: nodeExporterSys}).Collect(ctx, func(telemetry.Sample) { n++ })
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("err %v, %d samples", err, n)
	}
}

// BenchmarkNodeConnectX7 collects a node with 8 ConnectX-7 ports (one per rail),
// both schedules, as simib writes them.
func BenchmarkNodeConnectX7(b *testing.B) {
	root := b.TempDir()
	for i := range 8 {
		h := simib.NewConnectX7(fmt.Sprintf("mlx5_%d", i), fmt.Sprintf("0000:%02x:00.0", 0x17+i*0x10), i/4, int64(i))
		h.Ports[0].Advance(time.Minute, 1e12, 1e12)
		if err := h.WriteSysfs(root); err != nil {
			b.Fatal(err)
		}
	}
	s := mustNew(b, Options{SysfsRoot: root})
	ctx := context.Background()
	n := 0
	emit := func(telemetry.Sample) { n++ }
	b.Run("health", func(b *testing.B) {
		for b.Loop() {
			if err := s.CollectHealth(ctx, emit); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			if err := s.Collect(ctx, emit); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("procfs-InfiniBandClass", func(b *testing.B) {
		fs, err := sysfs.NewFS(root)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := fs.InfiniBandClass(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
