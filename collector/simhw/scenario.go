package simhw

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/yamlfile"
)

// Scenario is a list of faults to apply at offsets from a fleet's start: the same
// file drives the demo, the agent on a simulated node and the tests. The format
// (docs/faults.md):
//
//	name: nvlink-and-ecc          # optional
//	description: what it shows    # optional
//	faults:
//	  - at: 30s                   # offset from start (required)
//	    node: node-03             # omit on a single-node fleet
//	    gpu: 3                    # GPU index; omit for node-level faults
//	    kind: xid                 # see FaultKinds
//	    xid: 79                   # kind xid
//	    link: 4                   # nvlink-down, nvlink-crc, xid 74
//	    hca: mlx5_3               # ib-*: HCA name or index (default: rail of gpu, else all)
//	    port: 1                   # ib-*: HCA port (default 1)
//	    count: 500                # ecc-dbe, ecc-sbe-storm, nvlink-crc, ib-flap, ib-symbol-errors
//	    duration: 2m              # storms, flaps, thermal, power, nvlink-down, ib-down, xid 119
//	    temp: 95                  # thermal: °C
//	    watts: 300                # power: cap in W
//	    action: node-reboot       # xid 154
//	    sxid: 20034               # kind sxid: the NVSwitch error
//	    nvswitch: 1               # kind sxid: which NVSwitch (default 0)
type Scenario struct {
	Name        string
	Description string
	// Source names where the scenario came from (the file name), for errors.
	Source string
	Faults []Fault
	lines  []int // line of each fault in Source
}

// rawScenario and rawFault are the file's shape; pointers tell a field left out
// from a zero.
type rawScenario struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Faults      []rawFault `yaml:"faults"`
}

type rawFault struct {
	At       *yamlDuration `yaml:"at"`
	Node     string        `yaml:"node"`
	GPU      *int          `yaml:"gpu"`
	Kind     string        `yaml:"kind"`
	Xid      *int          `yaml:"xid"`
	Link     *int          `yaml:"link"`
	HCA      *yamlHCA      `yaml:"hca"`
	Port     *int          `yaml:"port"`
	Count    *int          `yaml:"count"`
	Duration *yamlDuration `yaml:"duration"`
	Temp     *float64      `yaml:"temp"`
	Watts    *float64      `yaml:"watts"`
	Action   *string       `yaml:"action"`
	SXid     *int          `yaml:"sxid"`
	NVSwitch *int          `yaml:"nvswitch"`
}

// yamlDuration is a Go duration written with its unit ("30s", "1m30s").
type yamlDuration time.Duration

func (d *yamlDuration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("bad duration: want a duration like 30s, not a %s", kindName(n))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		hint := "want a duration like 30s, 5m or 1h30m"
		if _, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil {
			hint = "add a unit, like " + n.Value + "s"
		}
		return fmt.Errorf("bad duration %q: %s", n.Value, hint)
	}
	*d = yamlDuration(v)
	return nil
}

// yamlHCA is an HCA given by name ("mlx5_3") or index (3).
type yamlHCA string

func (h *yamlHCA) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return errors.New("bad hca: want a name like mlx5_3 or an index")
	}
	*h = yamlHCA(n.Value)
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// ParseScenario parses a scenario file's contents. Errors read
// "scenario:LINE: faults[i].field: problem" (internal/yamlfile); every problem
// found is reported.
func ParseScenario(data []byte) (*Scenario, error) { return parseScenario("scenario", data) }

// LoadScenario reads and parses the scenario file at path; errors start with path.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read scenario: %w", err)
	}
	return parseScenario(path, data)
}

// maxScenario bounds a scenario file.
const maxScenario = 16 << 20

func parseScenario(source string, data []byte) (*Scenario, error) {
	doc, err := yamlfile.Parse(source, data, maxScenario)
	if err != nil {
		return nil, err
	}
	root := doc.Root()
	switch {
	case root == nil:
		doc.Errorf("", "empty scenario: want a faults: list")
	case root.Kind != yaml.MappingNode:
		doc.Errorf("", "want a mapping with a faults: list, got a %s", kindName(root))
	case !hasFaults(root):
		doc.Errorf("", "no faults: list (write faults: [] for none)")
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	var raw rawScenario
	if err := doc.Decode(&raw); err != nil {
		return nil, err
	}
	sc := &Scenario{Name: raw.Name, Description: raw.Description, Source: source}
	for i, rf := range raw.Faults {
		path := fmt.Sprintf("faults[%d]", i)
		f, err := rf.fault()
		if err != nil {
			doc.Errorf(path, "%v", err)
			continue
		}
		sc.Faults = append(sc.Faults, f)
		sc.lines = append(sc.lines, doc.Line(path))
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return sc, nil
}

// hasFaults reports whether the top-level mapping has a faults key.
func hasFaults(root *yaml.Node) bool {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "faults" {
			return true
		}
	}
	return false
}

// fault checks a fault on its own (the fleet checks nodes, GPUs, links and HCAs
// again when it schedules) and converts it.
func (r *rawFault) fault() (Fault, error) {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	kind := FaultKind(r.Kind)
	f := Fault{Kind: kind, Node: r.Node, GPU: AllGPUs}
	switch {
	case r.Kind == "":
		bad("missing kind (want one of %s)", kindList())
	case !kind.valid():
		bad("unknown kind %q (want one of %s)", r.Kind, kindList())
	}
	if r.At == nil {
		bad("missing at (the offset from start, like 30s)")
	} else if f.At = time.Duration(*r.At); f.At < 0 {
		bad("at %v: want 0s or later", f.At)
	}
	if r.GPU != nil {
		f.GPU = *r.GPU
		if f.GPU < 0 || f.GPU >= MaxGPUs {
			bad("gpu %d out of range (0-%d)", f.GPU, MaxGPUs-1)
		}
		if kind.nodeOnly() {
			bad("gpu does not apply to kind %s: it acts on the node", kind)
		}
	} else if kind.valid() && kind.gpuLevel() && !kind.allowsAllGPUs() {
		bad("kind %s needs gpu", kind)
	}

	only := func(present bool, field string, kinds ...FaultKind) {
		if present && kind.valid() && !slices.Contains(kinds, kind) {
			bad("%s does not apply to kind %s", field, kind)
		}
	}
	if r.Xid != nil {
		f.Xid = *r.Xid
		if kind == FaultXid && (f.Xid <= 0 || f.Xid > 999) {
			bad("xid %d: want an Xid number 1-999", f.Xid)
		}
	} else if kind == FaultXid {
		bad("missing xid (kind xid needs the Xid number)")
	}
	only(r.Xid != nil, "xid", FaultXid)
	if r.Link != nil {
		f.Link = *r.Link
		if f.Link < 0 {
			bad("link %d: want 0 or more", f.Link)
		}
		if kind == FaultXid && f.Xid != 74 {
			bad("link applies to xid 74 only")
		}
	}
	only(r.Link != nil, "link", FaultNVLinkDown, FaultNVLinkCRC, FaultXid, FaultSXid)
	if r.SXid != nil {
		f.SXid = *r.SXid
		if f.SXid <= 0 {
			bad("sxid %d: want an SXid number", f.SXid)
		}
	} else if kind == FaultSXid {
		bad("missing sxid (kind sxid needs the SXid number)")
	}
	only(r.SXid != nil, "sxid", FaultSXid)
	if r.NVSwitch != nil {
		f.NVSwitch = *r.NVSwitch
		if f.NVSwitch < 0 {
			bad("nvswitch %d: want 0 or more", f.NVSwitch)
		}
	}
	only(r.NVSwitch != nil, "nvswitch", FaultSXid)
	if r.HCA != nil {
		f.HCA = string(*r.HCA)
	}
	only(r.HCA != nil, "hca", FaultIBDown, FaultIBFlap, FaultIBSymbolErrors)
	if r.Port != nil {
		f.Port = *r.Port
		if f.Port < 1 {
			bad("port %d: want 1 or more", f.Port)
		}
	}
	only(r.Port != nil, "port", FaultIBDown, FaultIBFlap, FaultIBSymbolErrors)
	if r.Count != nil {
		f.Count = *r.Count
		if f.Count < 1 {
			bad("count %d: want 1 or more", f.Count)
		}
	}
	only(r.Count != nil, "count", FaultECCDBE, FaultECCSBEStorm, FaultNVLinkCRC, FaultIBFlap, FaultIBSymbolErrors, FaultXid)
	if r.Duration != nil {
		f.Duration = time.Duration(*r.Duration)
		if f.Duration <= 0 {
			bad("duration %v: want more than 0s", f.Duration)
		}
	}
	only(r.Duration != nil, "duration", FaultECCSBEStorm, FaultNVLinkCRC, FaultIBFlap, FaultIBSymbolErrors,
		FaultThermal, FaultPower, FaultNVLinkDown, FaultIBDown, FaultXid)
	if r.Temp != nil {
		f.TempC = *r.Temp
		if f.TempC < 20 || f.TempC > 120 {
			bad("temp %g: want 20-120 °C", f.TempC)
		}
	}
	only(r.Temp != nil, "temp", FaultThermal)
	if r.Watts != nil {
		f.Watts = *r.Watts
		if f.Watts <= 0 {
			bad("watts %g: want more than 0", f.Watts)
		}
	}
	only(r.Watts != nil, "watts", FaultPower)
	if r.Action != nil {
		f.Action = *r.Action
		if _, ok := recoveryActions[f.Action]; !ok {
			bad("action %q: want none, gpu-reset, node-reboot, drain-p2p or drain-and-reset", f.Action)
		}
		if kind == FaultXid && f.Xid != 154 {
			bad("action applies to xid 154 only")
		}
	}
	only(r.Action != nil, "action", FaultXid)
	if len(errs) > 0 {
		return Fault{}, errors.New(strings.Join(errs, "; "))
	}
	return f, nil
}

// Schedule queues the scenario's faults; each is applied when an Advance crosses
// its time (the fleet's start plus At; a time already past applies at the next
// Advance). Every fault is checked against the fleet first (node, GPU, NVLink,
// HCA and port), and nothing is scheduled unless all pass. A fault without a node
// goes to the only node of a single-node fleet.
func (f *Fleet) Schedule(sc *Scenario) error {
	if sc == nil {
		return errors.New("schedule: nil scenario")
	}
	src := sc.Source
	if src == "" {
		src = "scenario"
	}
	var add []scheduledFault
	var errs []error
	for i, flt := range sc.Faults {
		where := fmt.Sprintf("%s: faults[%d]", src, i)
		if i < len(sc.lines) && sc.lines[i] > 0 {
			where = fmt.Sprintf("%s:%d: faults[%d]", src, sc.lines[i], i)
		}
		n, err := f.nodeFor(flt.Node)
		if err == nil {
			err = n.check(&flt)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		add = append(add, scheduledFault{at: f.start.Add(flt.At), node: n, fault: flt, where: where})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range add {
		add[i].seq = f.seq
		f.seq++
	}
	f.pending = append(f.pending, add...)
	sort.SliceStable(f.pending, func(i, j int) bool {
		if !f.pending[i].at.Equal(f.pending[j].at) {
			return f.pending[i].at.Before(f.pending[j].at)
		}
		return f.pending[i].seq < f.pending[j].seq
	})
	return nil
}

func (f *Fleet) nodeFor(name string) (*Node, error) {
	if name == "" {
		if len(f.nodes) == 1 {
			return f.nodes[0], nil
		}
		return nil, fmt.Errorf("missing node (the fleet has %d nodes)", len(f.nodes))
	}
	if n := f.byName[name]; n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("unknown node %q (the fleet has %s … %s)", name, f.nodes[0].name, f.nodes[len(f.nodes)-1].name)
}

// Pending returns how many scheduled faults have not been applied yet.
func (f *Fleet) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

// Only returns a copy of s holding the faults keep accepts, and how many it
// dropped. The demo uses it to play its built-in story on a fleet smaller than the
// one the story was written for.
func (s *Scenario) Only(keep func(Fault) bool) (*Scenario, int) {
	out := &Scenario{Name: s.Name, Description: s.Description, Source: s.Source}
	for i, f := range s.Faults {
		if !keep(f) {
			continue
		}
		out.Faults = append(out.Faults, f)
		if i < len(s.lines) {
			out.lines = append(out.lines, s.lines[i])
		}
	}
	return out, len(s.Faults) - len(out.Faults)
}
