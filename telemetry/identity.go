package telemetry

import (
	"fmt"
	"strconv"
	"strings"
)

// Identities of the things gpuwatch observes. Every ID type is comparable (usable as a
// map key), has a String form that its Parse function reads back, and marshals to
// that string in JSON, so maps keyed by IDs encode as JSON objects.
//
// String forms, "/"-separated from the node down:
//
//	node1                 NodeID
//	node1/gpu3            GPUID
//	node1/gpu3/nvlink5    NVLinkID
//	node1/nvswitch2       NVSwitchID
//	node1/mlx5_0/port1    IBPortID
//	0000:1b:00.0          PCIBusID
//	0x7cfe900300a5b2c0    GUID

// NodeID names a node as the scheduler (Slurm, Kubernetes) knows it.
type NodeID string

// ParseNodeID checks that s can name a node: non-empty, printable ASCII without
// spaces, "/" (it separates the parts of longer IDs) or quotes.
func ParseNodeID(s string) (NodeID, error) {
	if s == "" {
		return "", fmt.Errorf("invalid node name %q: empty", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '/' || c == '"' || c == '\'' || c == '\\' {
			return "", fmt.Errorf("invalid node name %q: character %q not allowed", s, c)
		}
	}
	return NodeID(s), nil
}

// String returns the node name.
func (n NodeID) String() string { return string(n) }

// Validate reports whether n is a usable node name (see ParseNodeID).
func (n NodeID) Validate() error {
	_, err := ParseNodeID(string(n))
	return err
}

// PCIBusID is a PCI address: domain, bus, device and function. Its canonical string
// form is the sysfs one, lower-case "0000:1b:00.0".
type PCIBusID struct {
	Domain   uint32
	Bus      uint8
	Device   uint8 // 0–31
	Function uint8 // 0–7
}

// ParsePCIBusID reads a PCI address in any of the forms GPU tooling prints:
//
//	00000000:1B:00.0   NVML, nvidia-smi, dcgm-exporter's pci_bus_id label
//	0000:1b:00.0       sysfs, lspci -D
//	PCI:0000:1b:00     the kernel log's NVRM Xid lines (no function: 0)
//	1b:00.0            lspci without -D (domain 0)
//
// Hex digits may be either case; the domain has 1 to 8 digits (Intel VMD domains have
// 5), bus and device 1 or 2, function 1. The error names the input and what is wrong.
func ParsePCIBusID(s string) (PCIBusID, error) {
	var p PCIBusID
	in := s
	bad := func(format string, args ...any) (PCIBusID, error) {
		return PCIBusID{}, fmt.Errorf("invalid PCI bus id %q: %s", in, fmt.Sprintf(format, args...))
	}
	s = strings.TrimSpace(s)
	if len(s) >= 4 && strings.EqualFold(s[:4], "PCI:") {
		s = s[4:]
	}
	if s == "" {
		return bad("empty")
	}
	// Function: optional ".F" suffix.
	if dot := strings.LastIndexByte(s, '.'); dot >= 0 {
		f := s[dot+1:]
		if len(f) != 1 {
			return bad("function %q must be one digit 0-7", f)
		}
		if f[0] < '0' || f[0] > '7' {
			return bad("function %q must be 0-7", f)
		}
		p.Function = f[0] - '0'
		s = s[:dot]
	}
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 2: // bus:device
	case 3: // domain:bus:device
		d, err := parseHex(parts[0], 8)
		if err != nil {
			return bad("domain %q %v", parts[0], err)
		}
		p.Domain = uint32(d)
		parts = parts[1:]
	default:
		return bad("want [domain:]bus:device[.function]")
	}
	b, err := parseHex(parts[0], 2)
	if err != nil {
		return bad("bus %q %v", parts[0], err)
	}
	d, err := parseHex(parts[1], 2)
	if err != nil {
		return bad("device %q %v", parts[1], err)
	}
	if d > 0x1f {
		return bad("device %q must be 00-1f", parts[1])
	}
	p.Bus, p.Device = uint8(b), uint8(d)
	return p, nil
}

// parseHex parses 1 to maxDigits hex digits, nothing else.
func parseHex(s string, maxDigits int) (uint64, error) {
	if s == "" || len(s) > maxDigits {
		return 0, fmt.Errorf("must be 1-%d hex digits", maxDigits)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return 0, fmt.Errorf("is not hex")
		}
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("is not hex")
	}
	return v, nil
}

// String returns the canonical form, "0000:1b:00.0".
func (p PCIBusID) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", p.Domain, p.Bus, p.Device, p.Function)
}

// NVML returns the form NVML and dcgm-exporter use, "00000000:1B:00.0".
func (p PCIBusID) NVML() string {
	return fmt.Sprintf("%08X:%02X:%02X.%X", p.Domain, p.Bus, p.Device, p.Function)
}

// IsZero reports whether p is the zero address, which gpuwatch uses for "unknown".
func (p PCIBusID) IsZero() bool { return p == PCIBusID{} }

// MarshalText writes the canonical form; the zero address writes "".
func (p PCIBusID) MarshalText() ([]byte, error) {
	if p.IsZero() {
		return []byte{}, nil
	}
	return []byte(p.String()), nil
}

// UnmarshalText reads any form ParsePCIBusID accepts; "" reads as the zero address.
func (p *PCIBusID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*p = PCIBusID{}
		return nil
	}
	v, err := ParsePCIBusID(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// GPUID identifies a GPU by node and NVML index: the identity schedulers use
// (CUDA_VISIBLE_DEVICES, Slurm GRES). The UUID in GPU is what survives a reboot that
// renumbers GPUs.
type GPUID struct {
	Node  NodeID
	Index int
}

// String returns "node1/gpu3".
func (g GPUID) String() string { return string(g.Node) + "/gpu" + strconv.Itoa(g.Index) }

// ParseGPUID reads "node1/gpu3".
func ParseGPUID(s string) (GPUID, error) {
	node, rest, ok := strings.Cut(s, "/")
	if !ok {
		return GPUID{}, fmt.Errorf("invalid GPU id %q: want node/gpuN", s)
	}
	n, err := ParseNodeID(node)
	if err != nil {
		return GPUID{}, fmt.Errorf("invalid GPU id %q: %w", s, err)
	}
	i, err := parseIndex(rest, "gpu")
	if err != nil {
		return GPUID{}, fmt.Errorf("invalid GPU id %q: %w", s, err)
	}
	return GPUID{Node: n, Index: i}, nil
}

// MarshalText writes String.
func (g GPUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText reads the String form.
func (g *GPUID) UnmarshalText(b []byte) error {
	v, err := ParseGPUID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// parseIndex reads prefix followed by a non-negative decimal number, "gpu3".
func parseIndex(s, prefix string) (int, error) {
	num, ok := strings.CutPrefix(s, prefix)
	if !ok || num == "" {
		return 0, fmt.Errorf("%q is not %sN", s, prefix)
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return 0, fmt.Errorf("%q is not %sN", s, prefix)
		}
	}
	if len(num) > 1 && num[0] == '0' {
		return 0, fmt.Errorf("%q has a leading zero", s)
	}
	v, err := strconv.Atoi(num)
	if err != nil || v > maxIndex {
		return 0, fmt.Errorf("%q: index out of range", s)
	}
	return v, nil
}

// maxIndex bounds GPU, link, switch and port numbers: far above any real node, low
// enough that nobody allocates by index.
const maxIndex = 1 << 16

// GPU is a GPU's full identity.
type GPU struct {
	Node     NodeID   `json:"node"`
	Index    int      `json:"index"`
	UUID     string   `json:"uuid"`                // "GPU-…"; "MIG-…" for a MIG instance
	PCIBusID PCIBusID `json:"pci_bus_id,omitzero"` // canonical form in JSON
	Model    string   `json:"model,omitempty"`     // "NVIDIA H100 80GB HBM3"
}

// ID returns the node and index.
func (g GPU) ID() GPUID { return GPUID{Node: g.Node, Index: g.Index} }

// String returns the ID's string form.
func (g GPU) String() string { return g.ID().String() }

// Validate checks the node name, the index and, when set, the UUID's prefix.
func (g GPU) Validate() error {
	if err := g.Node.Validate(); err != nil {
		return fmt.Errorf("gpu %d: %w", g.Index, err)
	}
	if g.Index < 0 || g.Index > maxIndex {
		return fmt.Errorf("gpu %s: index %d out of range", g.Node, g.Index)
	}
	if g.UUID != "" && !strings.HasPrefix(g.UUID, "GPU-") && !strings.HasPrefix(g.UUID, "MIG-") {
		return fmt.Errorf("gpu %s: uuid %q does not start with GPU- or MIG-", g.ID(), g.UUID)
	}
	return nil
}

// Labels returns gpuwatch's labels for the GPU: node, gpu_index, gpu_uuid,
// pci_bus_id and model; empty values are left out.
func (g GPU) Labels() Labels {
	kv := []string{LabelNode, string(g.Node), LabelGPUIndex, strconv.Itoa(g.Index)}
	if g.UUID != "" {
		kv = append(kv, LabelGPUUUID, g.UUID)
	}
	if !g.PCIBusID.IsZero() {
		kv = append(kv, LabelPCIBusID, g.PCIBusID.String())
	}
	if g.Model != "" {
		kv = append(kv, LabelModel, g.Model)
	}
	return NewLabels(kv...)
}

// NVLinkID identifies one NVLink of a GPU.
type NVLinkID struct {
	GPU  GPUID
	Link int
}

// String returns "node1/gpu3/nvlink5".
func (l NVLinkID) String() string { return l.GPU.String() + "/nvlink" + strconv.Itoa(l.Link) }

// ParseNVLinkID reads "node1/gpu3/nvlink5".
func ParseNVLinkID(s string) (NVLinkID, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return NVLinkID{}, fmt.Errorf("invalid NVLink id %q: want node/gpuN/nvlinkM", s)
	}
	g, err := ParseGPUID(s[:i])
	if err != nil {
		return NVLinkID{}, fmt.Errorf("invalid NVLink id %q: %w", s, err)
	}
	l, err := parseIndex(s[i+1:], "nvlink")
	if err != nil {
		return NVLinkID{}, fmt.Errorf("invalid NVLink id %q: %w", s, err)
	}
	return NVLinkID{GPU: g, Link: l}, nil
}

// MarshalText writes String.
func (l NVLinkID) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads the String form.
func (l *NVLinkID) UnmarshalText(b []byte) error {
	v, err := ParseNVLinkID(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// NVSwitchID identifies an NVSwitch by the node that manages it (the HGX host, or the
// switch tray of an NVL72 rack) and its index there.
type NVSwitchID struct {
	Node  NodeID
	Index int
}

// String returns "node1/nvswitch2".
func (s NVSwitchID) String() string { return string(s.Node) + "/nvswitch" + strconv.Itoa(s.Index) }

// ParseNVSwitchID reads "node1/nvswitch2".
func ParseNVSwitchID(s string) (NVSwitchID, error) {
	node, rest, ok := strings.Cut(s, "/")
	if !ok {
		return NVSwitchID{}, fmt.Errorf("invalid NVSwitch id %q: want node/nvswitchN", s)
	}
	n, err := ParseNodeID(node)
	if err != nil {
		return NVSwitchID{}, fmt.Errorf("invalid NVSwitch id %q: %w", s, err)
	}
	i, err := parseIndex(rest, "nvswitch")
	if err != nil {
		return NVSwitchID{}, fmt.Errorf("invalid NVSwitch id %q: %w", s, err)
	}
	return NVSwitchID{Node: n, Index: i}, nil
}

// MarshalText writes String.
func (s NVSwitchID) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the String form.
func (s *NVSwitchID) UnmarshalText(b []byte) error {
	v, err := ParseNVSwitchID(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// IBPortID identifies an InfiniBand port: the HCA as /sys/class/infiniband names it
// ("mlx5_0") and the 1-based port number.
type IBPortID struct {
	Node   NodeID
	Device string
	Port   int
}

// String returns "node1/mlx5_0/port1".
func (p IBPortID) String() string {
	return string(p.Node) + "/" + p.Device + "/port" + strconv.Itoa(p.Port)
}

// ParseIBPortID reads "node1/mlx5_0/port1".
func ParseIBPortID(s string) (IBPortID, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return IBPortID{}, fmt.Errorf("invalid InfiniBand port id %q: want node/device/portN", s)
	}
	n, err := ParseNodeID(parts[0])
	if err != nil {
		return IBPortID{}, fmt.Errorf("invalid InfiniBand port id %q: %w", s, err)
	}
	if err := validIBDevice(parts[1]); err != nil {
		return IBPortID{}, fmt.Errorf("invalid InfiniBand port id %q: %w", s, err)
	}
	port, err := parseIndex(parts[2], "port")
	if err != nil {
		return IBPortID{}, fmt.Errorf("invalid InfiniBand port id %q: %w", s, err)
	}
	if port < 1 {
		return IBPortID{}, fmt.Errorf("invalid InfiniBand port id %q: ports are numbered from 1", s)
	}
	return IBPortID{Node: n, Device: parts[1], Port: port}, nil
}

// validIBDevice checks an HCA name: a sysfs directory name, so non-empty, no "/", no
// spaces.
func validIBDevice(d string) error {
	if d == "" {
		return fmt.Errorf("empty InfiniBand device name")
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; c <= ' ' || c >= 0x7f || c == '/' {
			return fmt.Errorf("InfiniBand device name %q: character %q not allowed", d, c)
		}
	}
	return nil
}

// MarshalText writes String.
func (p IBPortID) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads the String form.
func (p *IBPortID) UnmarshalText(b []byte) error {
	v, err := ParseIBPortID(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// GUID is an InfiniBand node or port GUID. Its string form is "0x" and 16 lower-case
// hex digits.
type GUID uint64

// ParseGUID reads the forms ibnetdiscover and Slurm's topology.conf use:
// "0x7cfe900300a5b2c0", "0x5442ba00003080" (leading zeros dropped),
// "S-005442ba00003080" (switch), "H-0002c903003421b0" (host channel adapter), or bare
// hex.
func ParseGUID(s string) (GUID, error) {
	h := s
	switch {
	case strings.HasPrefix(h, "0x"), strings.HasPrefix(h, "0X"),
		strings.HasPrefix(h, "S-"), strings.HasPrefix(h, "H-"):
		h = h[2:]
	}
	v, err := parseHex(h, 16)
	if err != nil {
		return 0, fmt.Errorf("invalid GUID %q: %v", s, err)
	}
	return GUID(v), nil
}

// String returns "0x7cfe900300a5b2c0".
func (g GUID) String() string { return fmt.Sprintf("0x%016x", uint64(g)) }

// MarshalText writes String.
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText reads any form ParseGUID accepts.
func (g *GUID) UnmarshalText(b []byte) error {
	v, err := ParseGUID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// Switch is a fabric switch: its GUID when discovered from the fabric, its name (host
// name or ibnetdiscover's node description) and the tier it sits at.
type Switch struct {
	GUID GUID   `json:"guid,omitzero"`
	Name string `json:"name,omitempty"`
	Tier Tier   `json:"tier"` // TierLeaf, TierSpine or TierBlock (core)
}

// Key returns the name the fleet hierarchy uses for the switch: its name when it has
// one, else its GUID.
func (s Switch) Key() string {
	if s.Name != "" {
		return s.Name
	}
	return s.GUID.String()
}

// String returns the key and the tier, "leaf01 (leaf)".
func (s Switch) String() string { return s.Key() + " (" + s.Tier.String() + ")" }

// Validate checks that the switch has a GUID or a name and sits at a switch tier.
func (s Switch) Validate() error {
	if s.GUID == 0 && s.Name == "" {
		return fmt.Errorf("switch has neither GUID nor name")
	}
	switch s.Tier {
	case TierLeaf, TierSpine, TierBlock:
		return nil
	}
	return fmt.Errorf("switch %s: tier %q is not leaf, spine or block", s.Key(), s.Tier)
}

// Scope says what kind of thing a Target names.
type Scope string

// Scopes, from the node down.
const (
	ScopeNode     Scope = "node"
	ScopeGPU      Scope = "gpu"
	ScopeNVLink   Scope = "nvlink"
	ScopeNVSwitch Scope = "nvswitch"
	ScopeIBPort   Scope = "ib_port"
)

// Target names what a health condition or an action is about: a node, a GPU, one
// NVLink of a GPU, an NVSwitch or an InfiniBand port. Build one with NodeTarget,
// GPUTarget, NVLinkTarget, NVSwitchTarget or IBPortTarget so that fields a scope does
// not use stay zero and equal targets compare equal. The zero Target is invalid.
type Target struct {
	Scope    Scope
	Node     NodeID
	GPU      int    // ScopeGPU, ScopeNVLink
	Link     int    // ScopeNVLink
	NVSwitch int    // ScopeNVSwitch
	IBDevice string // ScopeIBPort
	IBPort   int    // ScopeIBPort
}

// NodeTarget targets a whole node.
func NodeTarget(n NodeID) Target { return Target{Scope: ScopeNode, Node: n} }

// GPUTarget targets a GPU.
func GPUTarget(g GPUID) Target { return Target{Scope: ScopeGPU, Node: g.Node, GPU: g.Index} }

// NVLinkTarget targets one NVLink of a GPU.
func NVLinkTarget(l NVLinkID) Target {
	return Target{Scope: ScopeNVLink, Node: l.GPU.Node, GPU: l.GPU.Index, Link: l.Link}
}

// NVSwitchTarget targets an NVSwitch.
func NVSwitchTarget(s NVSwitchID) Target {
	return Target{Scope: ScopeNVSwitch, Node: s.Node, NVSwitch: s.Index}
}

// IBPortTarget targets an InfiniBand port.
func IBPortTarget(p IBPortID) Target {
	return Target{Scope: ScopeIBPort, Node: p.Node, IBDevice: p.Device, IBPort: p.Port}
}

// GPUID returns the GPU a GPU or NVLink target is on.
func (t Target) GPUID() (GPUID, bool) {
	if t.Scope != ScopeGPU && t.Scope != ScopeNVLink {
		return GPUID{}, false
	}
	return GPUID{Node: t.Node, Index: t.GPU}, true
}

// String returns the ID form of the target's scope ("node1", "node1/gpu3",
// "node1/gpu3/nvlink5", "node1/nvswitch2", "node1/mlx5_0/port1"), or "" for the zero
// Target.
func (t Target) String() string {
	switch t.Scope {
	case ScopeNode:
		return string(t.Node)
	case ScopeGPU:
		return GPUID{t.Node, t.GPU}.String()
	case ScopeNVLink:
		return NVLinkID{GPUID{t.Node, t.GPU}, t.Link}.String()
	case ScopeNVSwitch:
		return NVSwitchID{t.Node, t.NVSwitch}.String()
	case ScopeIBPort:
		return IBPortID{t.Node, t.IBDevice, t.IBPort}.String()
	}
	return ""
}

// ParseTarget reads any String form back. The scope follows from the shape: one part
// is a node, "gpuN" or "nvswitchN" second parts are a GPU or an NVSwitch, a third part
// "nvlinkM" is an NVLink and "portM" an InfiniBand port.
func ParseTarget(s string) (Target, error) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 1:
		n, err := ParseNodeID(s)
		if err != nil {
			return Target{}, fmt.Errorf("invalid target %q: %w", s, err)
		}
		return NodeTarget(n), nil
	case 2:
		if strings.HasPrefix(parts[1], "nvswitch") {
			id, err := ParseNVSwitchID(s)
			if err != nil {
				return Target{}, fmt.Errorf("invalid target: %w", err)
			}
			return NVSwitchTarget(id), nil
		}
		id, err := ParseGPUID(s)
		if err != nil {
			return Target{}, fmt.Errorf("invalid target: %w", err)
		}
		return GPUTarget(id), nil
	case 3:
		if strings.HasPrefix(parts[2], "nvlink") {
			id, err := ParseNVLinkID(s)
			if err != nil {
				return Target{}, fmt.Errorf("invalid target: %w", err)
			}
			return NVLinkTarget(id), nil
		}
		id, err := ParseIBPortID(s)
		if err != nil {
			return Target{}, fmt.Errorf("invalid target: %w", err)
		}
		return IBPortTarget(id), nil
	}
	return Target{}, fmt.Errorf("invalid target %q: too many parts", s)
}

// Validate checks that the target is well formed: a known scope, a valid node, and
// the numbers its scope uses in range. It round-trips through its string form, which
// also catches fields set that the scope does not use.
func (t Target) Validate() error {
	if t.Scope == "" {
		return fmt.Errorf("target has no scope")
	}
	p, err := ParseTarget(t.String())
	if err != nil {
		return err
	}
	if p != t {
		return fmt.Errorf("target %s: fields set that scope %s does not use", t, t.Scope)
	}
	return nil
}

// MarshalText writes String.
func (t Target) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads the String form; "" reads as the zero Target.
func (t *Target) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*t = Target{}
		return nil
	}
	v, err := ParseTarget(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Labels returns gpuwatch's labels locating the target: node, and gpu_index, link,
// nvswitch, ib_device and ib_port as its scope has them.
func (t Target) Labels() Labels {
	kv := []string{LabelNode, string(t.Node)}
	switch t.Scope {
	case ScopeGPU:
		kv = append(kv, LabelGPUIndex, strconv.Itoa(t.GPU))
	case ScopeNVLink:
		kv = append(kv, LabelGPUIndex, strconv.Itoa(t.GPU), LabelLink, strconv.Itoa(t.Link))
	case ScopeNVSwitch:
		kv = append(kv, LabelNVSwitch, strconv.Itoa(t.NVSwitch))
	case ScopeIBPort:
		kv = append(kv, LabelIBDevice, t.IBDevice, LabelIBPort, strconv.Itoa(t.IBPort))
	}
	return NewLabels(kv...)
}
