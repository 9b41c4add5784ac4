package pci

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/collector/pci/pcitest"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestScanRealA100: the real 8× A100 node's bus (lspci -nn) holds 8 GPUs and 6
// NVSwitches; the ConnectX virtual functions, NVMe drives and NICs are not ours.
func TestScanRealA100(t *testing.T) {
	root := t.TempDir()
	if err := pcitest.WriteA100(root); err != nil {
		t.Fatal(err)
	}
	b, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.GPUs) != pcitest.A100GPUs || len(b.NVSwitches) != pcitest.A100NVSwitches || len(b.Excluded) != 0 {
		t.Fatalf("GPUs %d, NVSwitches %d, excluded %d; want %d, %d, 0", len(b.GPUs), len(b.NVSwitches), len(b.Excluded),
			pcitest.A100GPUs, pcitest.A100NVSwitches)
	}
	for i, g := range b.GPUs {
		if g.Kind != KindGPU || g.Device != 0x20b2 || g.Class != 0x030200 || g.Address.String() != pcitest.A100GPUAddresses()[i] {
			t.Errorf("GPU %d: %+v", i, g)
		}
	}
	if s := b.NVSwitches[0]; s.Device != 0x1af1 || s.Class != 0x068000 || s.Address.String() != "0005:00:00.0" {
		t.Errorf("NVSwitch 0: %+v", s)
	}
}

// TestScanRealCPUNode: procfs's real sysfs tree has no NVIDIA function: no GPU,
// and no error.
func TestScanRealCPUNode(t *testing.T) {
	root := t.TempDir()
	if err := pcitest.WriteCPUNode(root); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "bus/pci/devices"))
	if len(ents) != 3 {
		t.Fatalf("the fixture has %d PCI functions, want 3", len(ents))
	}
	b, err := Scan(root)
	if err != nil || len(b.GPUs)+len(b.NVSwitches)+len(b.Excluded) != 0 {
		t.Fatalf("CPU node: %+v, %v", b, err)
	}
}

// function writes one PCI function with its files under root.
func function(t *testing.T, root, addr string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(root, "devices", "pci"+addr[:7], addr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range files {
		p := filepath.Join(dir, name)
		if strings.HasPrefix(v, "->") {
			if err := os.Symlink(strings.TrimPrefix(v, "->"), p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := filepath.Join(root, "bus/pci/devices")
	os.MkdirAll(links, 0o755)
	if err := os.Symlink("../../../devices/pci"+addr[:7]+"/"+addr, filepath.Join(links, addr)); err != nil {
		t.Fatal(err)
	}
}

// TestScanWhatCounts: display and 3D controllers count; the GPU's audio
// function, NVIDIA's PCIe bridges (Grace root ports), SR-IOV virtual functions
// and GPUs handed to a VM do not; NVSwitches are listed apart.
func TestScanWhatCounts(t *testing.T) {
	root := t.TempDir()
	nv := func(class, dev string, more map[string]string) map[string]string {
		m := map[string]string{"vendor": "0x10de", "class": class, "device": dev}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	function(t, root, "0000:18:00.0", nv("0x030200", "0x2330", map[string]string{"driver": "->../../../bus/pci/drivers/nvidia"}))
	function(t, root, "0000:65:00.0", nv("0x030000", "0x1fb0", nil)) // a workstation's VGA GPU, no driver bound
	function(t, root, "0000:65:00.1", nv("0x040300", "0x10fa", nil)) // its HDMI audio
	function(t, root, "0000:00:00.0", nv("0x060400", "0x22b2", nil)) // Grace root port
	function(t, root, "0000:05:00.0", nv("0x068000", "0x22a3", nil)) // NVSwitch
	function(t, root, "0000:3b:00.4", nv("0x030200", "0x20b5", map[string]string{"physfn": "->../0000:3b:00.0"}))
	function(t, root, "0000:5d:00.0", nv("0x030200", "0x2330", map[string]string{"driver": "->../../../bus/pci/drivers/vfio-pci"}))
	function(t, root, "0000:17:00.0", map[string]string{"vendor": "0x15b3", "class": "0x020700", "device": "0x1021"})
	b, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range b.GPUs {
		got = append(got, d.Address.String()+" "+d.Driver)
	}
	if strings.Join(got, ",") != "0000:18:00.0 nvidia,0000:65:00.0 " {
		t.Errorf("GPUs %q", got)
	}
	if len(b.NVSwitches) != 1 || b.NVSwitches[0].Address.String() != "0000:05:00.0" {
		t.Errorf("NVSwitches %+v", b.NVSwitches)
	}
	if len(b.Excluded) != 2 || b.Excluded[0].Why != "virtual function" || b.Excluded[1].Why != "bound to vfio-pci" {
		t.Errorf("excluded %+v", b.Excluded)
	}
}

// TestScanBadFile: a malformed class file loses that GPU only, and the error
// names the file.
func TestScanBadFile(t *testing.T) {
	root := t.TempDir()
	if err := pcitest.WriteA100(root); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "bus/pci/devices/0003:00:00.0/class")
	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Scan(root)
	if len(b.GPUs) != pcitest.A100GPUs-1 || err == nil || !strings.Contains(err.Error(), "0003:00:00.0/class") {
		t.Fatalf("GPUs %d, err %v", len(b.GPUs), err)
	}
}

func TestSource(t *testing.T) {
	root := t.TempDir()
	if err := pcitest.WriteA100(root, pcitest.A100GPUAddresses()[2]); err != nil {
		t.Fatal(err)
	}
	s := New(Options{SysfsRoot: root})
	var got []telemetry.Sample
	if err := s.Collect(context.Background(), func(s telemetry.Sample) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	if s.Name() != "pci" || len(got) != 1 || got[0].Name != telemetry.MetricNodeGPUs || got[0].Value != 7 ||
		got[0].Labels.Get(telemetry.LabelSource) != "pci" || got[0].Time.IsZero() {
		t.Fatalf("samples %+v", got)
	}
	if d, ok := telemetry.LookupMetric(got[0].Name); !ok || !strings.Contains(strings.Join(d.Labels, ","), telemetry.LabelSource) {
		t.Errorf("catalog entry %+v", d)
	}
	// No sysfs there: an error, and no count (not a count of zero).
	got = nil
	err := New(Options{SysfsRoot: filepath.Join(root, "nowhere")}).Collect(context.Background(), func(s telemetry.Sample) { got = append(got, s) })
	if err == nil || len(got) != 0 {
		t.Errorf("missing sysfs: %v, samples %v", err, got)
	}
}

// TestFixturesMatchShared checks the vendored fixtures against ../shared/data.
func TestFixturesMatchShared(t *testing.T) {
	shared := "../../../shared/data"
	if _, err := os.Stat(shared); err != nil {
		t.Skip("no ../shared/data here")
	}
	lspci, err := os.ReadFile(filepath.Join(shared, "gpud-testdata/components_accelerator_nvidia_fabric-manager__lspci.nn.a100"))
	if err != nil {
		t.Fatal(err)
	}
	if string(lspci) != string(pcitest.LSPCIA100) {
		t.Error("lspci.nn.a100 differs from ../shared/data")
	}
	ttar, err := os.ReadFile(filepath.Join(shared, "procfs-sysfs-fixtures/fixtures.ttar"))
	if err != nil {
		t.Fatal(err)
	}
	const sep = "# ttar - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n"
	for _, e := range strings.Split(string(pcitest.ProcfsPCI), sep) {
		if !strings.Contains(string(ttar), sep+e) {
			t.Errorf("entry not in procfs's fixtures.ttar:\n%s", e)
		}
	}
}
