package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParsePCIBusID(t *testing.T) {
	h100 := PCIBusID{Domain: 0, Bus: 0x1b, Device: 0, Function: 0}
	tests := []struct {
		name string
		in   string
		want PCIBusID
	}{
		{"nvml", "00000000:1B:00.0", h100},
		{"sysfs", "0000:1b:00.0", h100},
		{"kernel log", "PCI:0000:1b:00", h100},
		{"kernel log lower-case prefix", "pci:0000:1b:00", h100},
		{"lspci short", "1b:00.0", h100},
		{"no function", "0000:1b:00", h100},
		{"surrounding space", " 0000:1b:00.0\n", h100},
		{"mixed case", "0000:1B:00.0", h100},
		{"function 7", "0000:3b:1f.7", PCIBusID{Bus: 0x3b, Device: 0x1f, Function: 7}},
		{"vmd domain", "10000:01:00.0", PCIBusID{Domain: 0x10000, Bus: 1}},
		{"nvml nonzero domain", "00000002:C1:00.0", PCIBusID{Domain: 2, Bus: 0xc1}},
		{"one-digit bus and device", "0000:3:0.1", PCIBusID{Bus: 3, Function: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePCIBusID(tc.in)
			if err != nil {
				t.Fatalf("ParsePCIBusID(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParsePCIBusID(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParsePCIBusIDErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string // a fragment of the error
	}{
		{"", "empty"},
		{"PCI:", "empty"},
		{"1b", "want [domain:]bus:device"},
		{"0000:1b:00:00.0", "want [domain:]bus:device"},
		{"0000:1g:00.0", `bus "1g"`},
		{"0000:1b:20.0", `device "20" must be 00-1f`},
		{"0000:1b:00.8", `function "8" must be 0-7`},
		{"0000:1b:00.10", `function "10" must be one digit`},
		{"0000:1b:00.", `function "" must be one digit`},
		{"000000000:1b:00.0", `domain "000000000"`},
		{"0000:100:00.0", `bus "100"`},
		{"0000::00.0", `bus ""`},
		{"0000:1b:.0", `device ""`},
		{"0000:1b:0x.0", `device "0x"`},
		{"0000:+1:00.0", `bus "+1"`},
		{"GPU-20c56d28", "want [domain:]bus:device"},
	}
	for _, tc := range tests {
		_, err := ParsePCIBusID(tc.in)
		if err == nil {
			t.Errorf("ParsePCIBusID(%q): no error", tc.in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.wantErr) {
			t.Errorf("ParsePCIBusID(%q) error %q, want it to mention %q", tc.in, msg, tc.wantErr)
		}
		// The error names the input as given.
		if !strings.Contains(msg, `"`+strings.ReplaceAll(tc.in, "\n", `\n`)+`"`) {
			t.Errorf("ParsePCIBusID(%q) error %q does not name the input", tc.in, msg)
		}
	}
}

func TestPCIBusIDForms(t *testing.T) {
	p := PCIBusID{Domain: 0, Bus: 0x1b, Device: 0x02, Function: 1}
	if got, want := p.String(), "0000:1b:02.1"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := p.NVML(), "00000000:1B:02.1"; got != want {
		t.Errorf("NVML() = %q, want %q", got, want)
	}
	type doc struct {
		P PCIBusID `json:"p,omitzero"`
	}
	b, err := json.Marshal(doc{p})
	if err != nil || string(b) != `{"p":"0000:1b:02.1"}` {
		t.Errorf("json = %s, %v", b, err)
	}
	if b, _ := json.Marshal(doc{}); string(b) != `{}` {
		t.Errorf("zero address json = %s, want {}", b)
	}
	var back doc
	if err := json.Unmarshal([]byte(`{"p":"00000000:1B:02.1"}`), &back); err != nil || back.P != p {
		t.Errorf("unmarshal NVML form = %+v, %v", back.P, err)
	}
	if err := json.Unmarshal([]byte(`{"p":"zz"}`), &back); err == nil {
		t.Error("unmarshal of a bad address succeeded")
	}
	// Usable as a map key and in JSON object keys.
	m := map[PCIBusID]int{p: 1}
	if b, err := json.Marshal(m); err != nil || string(b) != `{"0000:1b:02.1":1}` {
		t.Errorf("map json = %s, %v", b, err)
	}
}

func FuzzParsePCIBusID(f *testing.F) {
	for _, s := range []string{
		"00000000:1B:00.0", "0000:1b:00.0", "PCI:0000:1b:00", "1b:00.0", "10000:01:00.0",
		"0000:3b:1f.7", "", "PCI:", "0000:1b:20.0", "0000:1b:00.8", "ffffffff:ff:1f.7", "0:0:0.0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePCIBusID(s)
		if err != nil {
			if !strings.Contains(err.Error(), "invalid PCI bus id") {
				t.Fatalf("error %q lacks context", err)
			}
			return
		}
		if p.Device > 0x1f || p.Function > 7 {
			t.Fatalf("%q parsed to out-of-range %+v", s, p)
		}
		canon := p.String()
		if canon != strings.ToLower(canon) {
			t.Fatalf("canonical form %q is not lower-case", canon)
		}
		for _, form := range []string{canon, p.NVML(), "PCI:" + canon} {
			q, err := ParsePCIBusID(form)
			if err != nil {
				t.Fatalf("%q parsed, but its form %q does not: %v", s, form, err)
			}
			if q != p {
				t.Fatalf("%q → %+v, but %q → %+v", s, p, form, q)
			}
		}
	})
}

func TestParseNodeID(t *testing.T) {
	for _, ok := range []string{"node1", "gpu-a100-017", "dgx01.cluster.local", "n_1"} {
		if n, err := ParseNodeID(ok); err != nil || string(n) != ok {
			t.Errorf("ParseNodeID(%q) = %q, %v", ok, n, err)
		}
	}
	for _, bad := range []string{"", "node 1", "a/b", "tab\there", `q"uote`, "ünï"} {
		if _, err := ParseNodeID(bad); err == nil {
			t.Errorf("ParseNodeID(%q): no error", bad)
		}
	}
}

func TestIDRoundTrips(t *testing.T) {
	gpu := GPUID{Node: "node1", Index: 3}
	tests := []struct {
		name  string
		id    interface{ String() string }
		want  string
		parse func(string) (any, error)
	}{
		{"gpu", gpu, "node1/gpu3", func(s string) (any, error) { return ParseGPUID(s) }},
		{"nvlink", NVLinkID{GPU: gpu, Link: 17}, "node1/gpu3/nvlink17", func(s string) (any, error) { return ParseNVLinkID(s) }},
		{"nvswitch", NVSwitchID{Node: "node1", Index: 2}, "node1/nvswitch2", func(s string) (any, error) { return ParseNVSwitchID(s) }},
		{"ib port", IBPortID{Node: "node1", Device: "mlx5_0", Port: 1}, "node1/mlx5_0/port1", func(s string) (any, error) { return ParseIBPortID(s) }},
		{"guid", GUID(0x7cfe900300a5b2c0), "0x7cfe900300a5b2c0", func(s string) (any, error) { return ParseGUID(s) }},
		{"node target", NodeTarget("node1"), "node1", func(s string) (any, error) { return ParseTarget(s) }},
		{"gpu target", GPUTarget(gpu), "node1/gpu3", func(s string) (any, error) { return ParseTarget(s) }},
		{"nvlink target", NVLinkTarget(NVLinkID{gpu, 5}), "node1/gpu3/nvlink5", func(s string) (any, error) { return ParseTarget(s) }},
		{"nvswitch target", NVSwitchTarget(NVSwitchID{"node1", 0}), "node1/nvswitch0", func(s string) (any, error) { return ParseTarget(s) }},
		{"ib target", IBPortTarget(IBPortID{"node1", "mlx5_3", 2}), "node1/mlx5_3/port2", func(s string) (any, error) { return ParseTarget(s) }},
		// An HCA that happens to be called like a GPU is still a port: the third part decides.
		{"odd hca name", IBPortTarget(IBPortID{"node1", "gpu0", 1}), "node1/gpu0/port1", func(s string) (any, error) { return ParseTarget(s) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.id.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
			back, err := tc.parse(tc.want)
			if err != nil {
				t.Fatalf("parse(%q): %v", tc.want, err)
			}
			if back != tc.id {
				t.Fatalf("parse(%q) = %#v, want %#v", tc.want, back, tc.id)
			}
		})
	}
}

func TestIDParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		parse func(string) error
	}{
		{"gpu no slash", "node1", func(s string) error { _, err := ParseGPUID(s); return err }},
		{"gpu bad prefix", "node1/cpu3", func(s string) error { _, err := ParseGPUID(s); return err }},
		{"gpu negative", "node1/gpu-1", func(s string) error { _, err := ParseGPUID(s); return err }},
		{"gpu leading zero", "node1/gpu03", func(s string) error { _, err := ParseGPUID(s); return err }},
		{"gpu huge", "node1/gpu99999999999999999999", func(s string) error { _, err := ParseGPUID(s); return err }},
		{"gpu empty node", "/gpu3", func(s string) error { _, err := ParseGPUID(s); return err }},
		{"gpu extra part", "node1/gpu3/x", func(s string) error { _, err := ParseGPUID(s); return err }},
		{"nvlink missing link", "node1/gpu3", func(s string) error { _, err := ParseNVLinkID(s); return err }},
		{"nvlink bad", "node1/gpu3/link5", func(s string) error { _, err := ParseNVLinkID(s); return err }},
		{"nvswitch bad", "node1/switch2", func(s string) error { _, err := ParseNVSwitchID(s); return err }},
		{"ib port zero", "node1/mlx5_0/port0", func(s string) error { _, err := ParseIBPortID(s); return err }},
		{"ib no device", "node1//port1", func(s string) error { _, err := ParseIBPortID(s); return err }},
		{"ib two parts", "node1/mlx5_0", func(s string) error { _, err := ParseIBPortID(s); return err }},
		{"guid not hex", "0xzz", func(s string) error { _, err := ParseGUID(s); return err }},
		{"guid too long", "0x11112222333344445", func(s string) error { _, err := ParseGUID(s); return err }},
		{"guid empty", "", func(s string) error { _, err := ParseGUID(s); return err }},
		{"target empty", "", func(s string) error { _, err := ParseTarget(s); return err }},
		{"target four parts", "a/gpu1/nvlink2/x", func(s string) error { _, err := ParseTarget(s); return err }},
		{"target bad third", "node1/gpu1/lane2", func(s string) error { _, err := ParseTarget(s); return err }},
	}
	for _, tc := range tests {
		err := tc.parse(tc.in)
		if err == nil {
			t.Errorf("%s: parsing %q gave no error", tc.name, tc.in)
			continue
		}
		if tc.in != "" && !strings.Contains(err.Error(), tc.in) {
			t.Errorf("%s: error %q does not name the input %q", tc.name, err, tc.in)
		}
	}
}

func TestParseGUIDForms(t *testing.T) {
	// Forms from ibnetdiscover dumps and the Slurm topology.conf generated from them.
	tests := []struct {
		in   string
		want GUID
	}{
		{"0xe41d2d030003e470", 0xe41d2d030003e470},
		{"0x5442ba00003080", 0x005442ba00003080},
		{"S-005442ba00003080", 0x005442ba00003080},
		{"H-0002c903003421b0", 0x0002c903003421b0},
		{"e41d2d030003e470", 0xe41d2d030003e470},
		{"0XE41D2D030003E470", 0xe41d2d030003e470},
	}
	for _, tc := range tests {
		got, err := ParseGUID(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseGUID(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if got := GUID(0x5442ba00003080).String(); got != "0x005442ba00003080" {
		t.Errorf("String() = %q", got)
	}
}

func TestGPU(t *testing.T) {
	pci, _ := ParsePCIBusID("00000000:1B:00.0")
	g := GPU{Node: "node1", Index: 0, UUID: "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e", PCIBusID: pci, Model: "NVIDIA H100 80GB HBM3"}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.ID() != (GPUID{"node1", 0}) || g.String() != "node1/gpu0" {
		t.Errorf("ID() = %v, String() = %q", g.ID(), g)
	}
	want := `{gpu_index="0",gpu_uuid="GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e",model="NVIDIA H100 80GB HBM3",node="node1",pci_bus_id="0000:1b:00.0"}`
	if got := g.Labels().String(); got != want {
		t.Errorf("Labels() = %s\nwant %s", got, want)
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"node":"node1","index":0,"uuid":"GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e","pci_bus_id":"0000:1b:00.0","model":"NVIDIA H100 80GB HBM3"}`; string(b) != want {
		t.Errorf("json = %s\nwant %s", b, want)
	}
	var back GPU
	if err := json.Unmarshal(b, &back); err != nil || back != g {
		t.Errorf("json round trip = %+v, %v", back, err)
	}

	bad := []struct {
		name string
		g    GPU
	}{
		{"no node", GPU{Index: 0}},
		{"negative index", GPU{Node: "n", Index: -1}},
		{"bad uuid", GPU{Node: "n", UUID: "20c56d28"}},
	}
	for _, tc := range bad {
		if err := tc.g.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil", tc.name)
		}
	}
	if err := (GPU{Node: "n", UUID: "MIG-aa"}).Validate(); err != nil {
		t.Errorf("MIG uuid: %v", err)
	}
}

func TestTarget(t *testing.T) {
	gpu := GPUID{"node1", 3}
	tests := []struct {
		target Target
		scope  Scope
		labels string
		gpu    bool
	}{
		{NodeTarget("node1"), ScopeNode, `{node="node1"}`, false},
		{GPUTarget(gpu), ScopeGPU, `{gpu_index="3",node="node1"}`, true},
		{NVLinkTarget(NVLinkID{gpu, 5}), ScopeNVLink, `{gpu_index="3",link="5",node="node1"}`, true},
		{NVSwitchTarget(NVSwitchID{"node1", 2}), ScopeNVSwitch, `{node="node1",nvswitch="2"}`, false},
		{IBPortTarget(IBPortID{"node1", "mlx5_0", 1}), ScopeIBPort, `{ib_device="mlx5_0",ib_port="1",node="node1"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.target.String(), func(t *testing.T) {
			if tc.target.Scope != tc.scope {
				t.Errorf("scope %s, want %s", tc.target.Scope, tc.scope)
			}
			if err := tc.target.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if got := tc.target.Labels().String(); got != tc.labels {
				t.Errorf("Labels() = %s, want %s", got, tc.labels)
			}
			g, ok := tc.target.GPUID()
			if ok != tc.gpu || ok && g != gpu {
				t.Errorf("GPUID() = %v, %v", g, ok)
			}
			b, err := json.Marshal(map[string]Target{"t": tc.target})
			if err != nil {
				t.Fatal(err)
			}
			var back map[string]Target
			if err := json.Unmarshal(b, &back); err != nil || back["t"] != tc.target {
				t.Errorf("json %s round trip = %+v, %v", b, back["t"], err)
			}
		})
	}
	// Targets are map keys.
	m := map[Target]int{GPUTarget(gpu): 1}
	if m[GPUTarget(GPUID{"node1", 3})] != 1 {
		t.Error("equal targets are different map keys")
	}

	invalid := []struct {
		name string
		t    Target
	}{
		{"zero", Target{}},
		{"stray field", Target{Scope: ScopeNode, Node: "node1", GPU: 2}},
		{"no device", Target{Scope: ScopeIBPort, Node: "node1", IBPort: 1}},
		{"port zero", Target{Scope: ScopeIBPort, Node: "node1", IBDevice: "mlx5_0"}},
		{"bad node", Target{Scope: ScopeNode, Node: "a b"}},
		{"unknown scope", Target{Scope: "rack", Node: "node1"}},
	}
	for _, tc := range invalid {
		if err := tc.t.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil", tc.name)
		}
	}
}

func TestSwitch(t *testing.T) {
	tests := []struct {
		name    string
		s       Switch
		key     string
		wantErr bool
	}{
		{"named leaf", Switch{Name: "leaf01", Tier: TierLeaf}, "leaf01", false},
		{"guid spine", Switch{GUID: 0x0008f1050010851e, Tier: TierSpine}, "0x0008f1050010851e", false},
		{"both", Switch{GUID: 1, Name: "core1", Tier: TierBlock}, "core1", false},
		{"anonymous", Switch{Tier: TierLeaf}, "0x0000000000000000", true},
		{"node tier", Switch{Name: "x", Tier: TierNode}, "x", true},
		{"no tier", Switch{Name: "x"}, "x", true},
	}
	for _, tc := range tests {
		if got := tc.s.Key(); got != tc.key {
			t.Errorf("%s: Key() = %q, want %q", tc.name, got, tc.key)
		}
		if err := tc.s.Validate(); (err != nil) != tc.wantErr {
			t.Errorf("%s: Validate() = %v, want error %v", tc.name, err, tc.wantErr)
		}
	}
	b, err := json.Marshal(Switch{GUID: 0xe41d2d030003e470, Name: "leaf01", Tier: TierLeaf})
	if err != nil || string(b) != `{"guid":"0xe41d2d030003e470","name":"leaf01","tier":"leaf"}` {
		t.Errorf("json = %s, %v", b, err)
	}
}
