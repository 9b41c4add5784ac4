package simhw

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

const goodScenario = `name: example
description: one of each
faults:
  - at: 30s            # offset from start
    node: node-03
    gpu: 3
    kind: xid
    xid: 79
  - at: 1m
    node: node-01
    gpu: 0
    kind: nvlink-crc
    link: 17
    count: 500
    duration: 2m
  - at: 1m30s
    node: node-02
    kind: ib-flap
    hca: mlx5_2
    port: 1
    count: 3
  - at: 2m
    node: node-02
    kind: ib-down
    hca: 5
    duration: 30s
  - at: 3m
    node: node-01
    kind: thermal
    temp: 95
  - at: 4m
    node: node-01
    gpu: 1
    kind: xid
    xid: 154
    action: node-reboot
  - at: 10m
    node: node-03
    gpu: 3
    kind: recover
`

func TestParseScenario(t *testing.T) {
	sc, err := ParseScenario([]byte(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "example" || len(sc.Faults) != 7 {
		t.Fatalf("parsed %q with %d faults", sc.Name, len(sc.Faults))
	}
	want := []Fault{
		{At: 30 * time.Second, Node: "node-03", GPU: 3, Kind: FaultXid, Xid: 79},
		{At: time.Minute, Node: "node-01", GPU: 0, Kind: FaultNVLinkCRC, Link: 17, Count: 500, Duration: 2 * time.Minute},
		{At: 90 * time.Second, Node: "node-02", GPU: AllGPUs, Kind: FaultIBFlap, HCA: "mlx5_2", Port: 1, Count: 3},
		{At: 2 * time.Minute, Node: "node-02", GPU: AllGPUs, Kind: FaultIBDown, HCA: "5", Duration: 30 * time.Second},
		{At: 3 * time.Minute, Node: "node-01", GPU: AllGPUs, Kind: FaultThermal, TempC: 95},
		{At: 4 * time.Minute, Node: "node-01", GPU: 1, Kind: FaultXid, Xid: 154, Action: "node-reboot"},
		{At: 10 * time.Minute, Node: "node-03", GPU: 3, Kind: FaultRecover},
	}
	for i := range want {
		if sc.Faults[i] != want[i] {
			t.Errorf("fault %d = %+v\nwant %+v", i, sc.Faults[i], want[i])
		}
	}
}

func TestParseScenarioErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"unknown kind", "faults:\n  - at: 1s\n    gpu: 0\n    kind: xyd\n",
			[]string{`scenario:2: faults[0]: unknown kind "xyd" (want one of xid, gpu-lost`}},
		{"gpu out of range", "faults:\n  - at: 1s\n    kind: gpu-lost\n  - at: 2s\n    gpu: 8\n    kind: gpu-lost\n",
			[]string{"scenario:2: faults[0]: kind gpu-lost needs gpu", "scenario:4: faults[1]: gpu 8 out of range (0-7)"}},
		{"missing xid", "faults:\n  - at: 1s\n    gpu: 1\n    kind: xid\n",
			[]string{"scenario:2: faults[0]: missing xid"}},
		{"bad duration", "faults:\n  - at: 30x\n    gpu: 1\n    kind: gpu-lost\n",
			[]string{`scenario:2: faults[0].at: bad duration "30x": want a duration like 30s`}},
		{"duration without unit", "faults:\n  - at: 30\n    gpu: 1\n    kind: gpu-lost\n",
			[]string{`scenario:2: faults[0].at: bad duration "30": add a unit, like 30s`}},
		{"typo in a field", "faults:\n  - at: 1s\n    gpuu: 1\n    kind: gpu-lost\n",
			[]string{`scenario:3: faults[0].gpuu: unknown field, did you mean "gpu"?`}},
		{"typo in a later fault", "faults:\n  - at: 1s\n    gpu: 1\n    kind: gpu-lost\n  - at: 2s\n    gpu: 1\n    kidn: recover\n",
			[]string{`scenario:7: faults[1].kidn: unknown field, did you mean "kind"?`}},
		{"wrong type", "faults:\n  - at: 1s\n    gpu: three\n    kind: gpu-lost\n",
			[]string{`scenario:3: faults[0].gpu: "three" is not a whole number`}},
		{"missing at", "faults:\n  - gpu: 1\n    kind: gpu-lost\n",
			[]string{"scenario:2: faults[0]: missing at"}},
		{"field of another kind", "faults:\n  - at: 1s\n    gpu: 1\n    kind: gpu-lost\n    temp: 90\n",
			[]string{"scenario:2: faults[0]: temp does not apply to kind gpu-lost"}},
		{"bad action", "faults:\n  - at: 1s\n    gpu: 1\n    kind: xid\n    xid: 154\n    action: reboot\n",
			[]string{`scenario:2: faults[0]: action "reboot": want none, gpu-reset`}},
		{"sxid without its number", "faults:\n  - at: 1s\n    kind: sxid\n", []string{"scenario:2: faults[0]: missing sxid"}},
		{"sxid on a GPU", "faults:\n  - at: 1s\n    gpu: 2\n    kind: sxid\n    sxid: 20034\n",
			[]string{"scenario:2: faults[0]: gpu does not apply to kind sxid: it acts on the node"}},
		{"nvswitch of another kind", "faults:\n  - at: 1s\n    gpu: 2\n    kind: gpu-lost\n    nvswitch: 1\n",
			[]string{"scenario:2: faults[0]: nvswitch does not apply to kind gpu-lost"}},
		{"unknown top-level key", "fault:\n  - at: 1s\n", []string{"scenario:1: no faults: list"}},
		{"unknown key beside faults", "faults: []\nnmae: x\n", []string{`scenario:2: nmae: unknown field, did you mean "name"? (want one of name, description, faults)`}},
		{"not yaml", "faults: [\n", []string{"scenario:1: invalid YAML: "}},
		{"empty", "", []string{"scenario: empty scenario"}},
		{"a list at the top", "- at: 1s\n", []string{"scenario:1: want a mapping with a faults: list, got a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "scenario:") {
				t.Errorf("error %q does not name its source", err)
			}
		})
	}
}

func TestLoadScenarioNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("faults:\n  - at: 1s\n    gpu: 1\n    kind: xid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScenario(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: faults[0]: missing xid") {
		t.Errorf("error = %v", err)
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("no error for a missing file")
	}
}

func TestScheduleErrors(t *testing.T) {
	f := newTestFleet(t, ShapeDGXA100, 4)
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown node", "faults:\n  - at: 1s\n    node: node-99\n    gpu: 1\n    kind: gpu-lost\n",
			`scenario:2: faults[0]: unknown node "node-99" (the fleet has node-01 … node-04)`},
		{"missing node", "faults:\n  - at: 1s\n    gpu: 1\n    kind: gpu-lost\n",
			"scenario:2: faults[0]: missing node (the fleet has 4 nodes)"},
		{"link beyond an A100's 12", "faults:\n  - at: 1s\n    node: node-01\n    gpu: 1\n    kind: nvlink-down\n    link: 12\n",
			"scenario:2: faults[0]: link 12 out of range (0-11)"},
		{"no such hca", "faults:\n  - at: 1s\n    node: node-01\n    kind: ib-down\n    hca: mlx5_9\n",
			`hca "mlx5_9": no such HCA`},
		{"no such port", "faults:\n  - at: 1s\n    node: node-01\n    kind: ib-down\n    hca: 0\n    port: 2\n",
			"port 2: mlx5_0 has no such port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ParseScenario([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = f.Schedule(sc)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant %q", err, tt.want)
			}
			if f.Pending() != 0 {
				t.Errorf("a failed Schedule queued %d faults", f.Pending())
			}
		})
	}
}

// TestScheduleAppliesOnTime checks that each fault lands exactly at its offset,
// even inside a long Advance.
func TestScheduleAppliesOnTime(t *testing.T) {
	f := newTestFleet(t, ShapeHGXH100, 3)
	sc, err := ParseScenario([]byte(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Schedule(sc); err != nil {
		t.Fatal(err)
	}
	n3 := f.Node("node-03")
	lib := initNVML(t, n3)
	d := device(t, lib, 3)
	if err := f.Advance(29 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, r := d.GetName(); r != nvml.SUCCESS {
		t.Fatalf("lost before its time: %v", r)
	}
	if err := f.Advance(5 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, r := d.GetName(); r != nvml.ERROR_GPU_IS_LOST {
		t.Fatalf("after 30s: %v, want lost", r)
	}
	var xidAt time.Time
	for _, r := range n3.KernelLog().Since(0) {
		if strings.Contains(r.Message, "): 79, ") {
			xidAt = r.Time
		}
	}
	if want := f.Start().Add(30 * time.Second); !xidAt.Equal(want) {
		t.Errorf("Xid 79 logged at %v, want %v", xidAt, want)
	}
	n1 := f.Node("node-01")
	lib1 := initNVML(t, n1)
	if v := get(device(t, lib1, 0).GetNvLinkErrorCounter(17, nvml.NVLINK_ERROR_DL_CRC_FLIT)).must(t, "crc"); v < 500 {
		t.Errorf("node-01 GPU 0 link 17 CRC = %d", v)
	}
	if !f.Node("node-02").HCAs()[5].Port(1).Up() {
		t.Errorf("node-02 mlx5_5 should be back up after 30s")
	}
	if err := f.Advance(10 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, r := d.GetName(); r != nvml.SUCCESS || f.Pending() != 0 {
		t.Errorf("after recover: %v, %d pending", r, f.Pending())
	}
}

// TestDocsExample parses the scenario in docs/faults.md and schedules it on the
// fleet the document describes.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "faults.md"))
	if err != nil {
		t.Skipf("docs/faults.md: %v", err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(m) == 0 {
		t.Fatal("no yaml block in docs/faults.md")
	}
	for i, block := range m {
		sc, err := ParseScenario(block[1])
		if err != nil {
			t.Errorf("block %d: %v", i, err)
			continue
		}
		f := newTestFleet(t, ShapeHGXH100, 4)
		if err := f.Schedule(sc); err != nil {
			t.Errorf("block %d: %v", i, err)
			continue
		}
		if err := f.Advance(time.Hour); err != nil {
			t.Errorf("block %d: %v", i, err)
		}
	}
}

func FuzzParseScenario(f *testing.F) {
	f.Add([]byte(goodScenario))
	f.Add([]byte("faults: []\n"))
	f.Add([]byte("faults:\n  - at: 1s\n    gpu: 0\n    kind: xid\n    xid: 13\n"))
	f.Add([]byte("faults:\n  - at: -1s\n    gpu: -3\n    kind: ib-down\n    hca: {}\n"))
	f.Add([]byte("faults:\n  - &a {at: 1s, kind: recover}\n  - *a\n"))
	f.Add([]byte("faults:\n  - at: 1s\n    duration: [1]\n    kind: thermal\n"))
	f.Add([]byte("faults: !!map {}\n"))
	f.Add([]byte("\t"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data)
		if err != nil {
			if sc != nil {
				t.Fatal("scenario and error both returned")
			}
			return
		}
		for _, flt := range sc.Faults {
			if !flt.Kind.valid() || flt.At < 0 || flt.GPU < AllGPUs || flt.GPU >= MaxGPUs {
				t.Fatalf("invalid fault accepted: %+v", flt)
			}
		}
	})
}

// TestDriverAndFabricScenario: the new kinds parse, and Schedule checks them
// against the fleet (an SXid the simulator does not know, an NVSwitch the shape
// does not have, a fabric the A100 does not report).
func TestDriverAndFabricScenario(t *testing.T) {
	sc, err := ParseScenario([]byte(`faults:
  - {at: 0s, kind: driver-not-loaded}
  - {at: 1s, gpu: 3, kind: gpu-missing}
  - {at: 2s, kind: fabric-manager}
  - {at: 3s, kind: sxid, sxid: 24007, nvswitch: 2, link: 17}
  - {at: 4s, kind: persistence-mode-off}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{GPU: AllGPUs, Kind: FaultDriverNotLoaded},
		{At: time.Second, GPU: 3, Kind: FaultGPUMissing},
		{At: 2 * time.Second, GPU: AllGPUs, Kind: FaultFabricManager},
		{At: 3 * time.Second, GPU: AllGPUs, Kind: FaultSXid, SXid: 24007, NVSwitch: 2, Link: 17},
		{At: 4 * time.Second, GPU: AllGPUs, Kind: FaultPersistenceOff},
	}
	for i := range want {
		if sc.Faults[i] != want[i] {
			t.Errorf("fault %d = %+v\nwant %+v", i, sc.Faults[i], want[i])
		}
	}
	h100 := newTestFleet(t, ShapeHGXH100, 1)
	if err := h100.Schedule(sc); err != nil {
		t.Fatal(err)
	}
	a100 := newTestFleet(t, ShapeDGXA100, 1)
	bad, _ := ParseScenario([]byte(`faults:
  - {at: 0s, kind: fabric-manager}
  - {at: 0s, kind: sxid, sxid: 11111}
  - {at: 0s, kind: sxid, sxid: 20034, nvswitch: 6}
`))
	err = a100.Schedule(bad)
	for _, w := range []string{"the dgx-a100 shape has no NVML GPU fabric state", "sxid 11111: want one the simulator knows (12028 non-fatal, 20009 non-fatal, 20034 fatal, 24007 fatal)", "nvswitch 6 out of range (0-5)"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Schedule error %v lacks %q", err, w)
		}
	}
}
