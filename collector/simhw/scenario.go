package simhw

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
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

// scenarioFields are the top-level keys of a scenario file.
var scenarioFields = []string{"name", "description", "faults"}

// faultFields are the keys a fault may have, in documentation order.
var faultFields = []string{"at", "node", "gpu", "kind", "xid", "link", "hca", "port", "count",
	"duration", "temp", "watts", "action", "sxid", "nvswitch"}

// yamlDuration is a Go duration written with its unit ("30s", "1m30s").
type yamlDuration time.Duration

func (d *yamlDuration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: bad duration: want a duration like 30s, not a %s", n.Line, kindName(n))}}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		hint := "want a duration like 30s, 5m or 1h30m"
		if _, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil {
			hint = "add a unit, like " + n.Value + "s"
		}
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: bad duration %q: %s", n.Line, n.Value, hint)}}
	}
	*d = yamlDuration(v)
	return nil
}

// yamlHCA is an HCA given by name ("mlx5_3") or index (3).
type yamlHCA string

func (h *yamlHCA) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: bad hca: want a name like mlx5_3 or an index", n.Line)}}
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

// ParseScenario parses a scenario file's contents. Errors name the fault
// (faults[i] and its line) and the problem; every problem found is reported.
func ParseScenario(data []byte) (*Scenario, error) { return parseScenario("scenario", data) }

// LoadScenario reads and parses the scenario file at path; errors start with path.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read scenario: %w", err)
	}
	return parseScenario(path, data)
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

func parseScenario(source string, data []byte) (sc *Scenario, err error) {
	defer func() {
		// yaml.v3 has panicked on malformed input before (CVE-2022-28948); a
		// scenario file must never take the process down.
		if p := recover(); p != nil {
			sc, err = nil, fmt.Errorf("%s: cannot parse: %v", source, p)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", source, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty scenario: want a faults: list", source)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: want a mapping with a faults: list, got a %s", source, root.Line, kindName(root))
	}
	items := faultItems(root)
	if items == nil {
		return nil, fmt.Errorf("%s: no faults: list (write faults: [] for none)", source)
	}

	var raw rawScenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, decodeErrors(source, err, items)
	}

	sc = &Scenario{Name: raw.Name, Description: raw.Description, Source: source}
	var errs []error
	for i, rf := range raw.Faults {
		line := 0
		if i < len(items) {
			line = items[i].Line
		}
		f, err := rf.fault()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: faults[%d] (line %d): %w", source, i, line, err))
			continue
		}
		sc.Faults = append(sc.Faults, f)
		sc.lines = append(sc.lines, line)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return sc, nil
}

// faultItems returns the nodes of the faults list, or nil when there is none.
func faultItems(root *yaml.Node) []*yaml.Node {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "faults" {
			v := root.Content[i+1]
			if v.Kind == yaml.SequenceNode {
				return append([]*yaml.Node{}, v.Content...)
			}
			if v.Tag == "!!null" {
				return []*yaml.Node{}
			}
			return nil
		}
	}
	return nil
}

// decodeErrors turns yaml.v3's "line N: …" decode errors into messages naming the
// fault and the field.
func decodeErrors(source string, err error, items []*yaml.Node) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %s", source, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var errs []error
	for _, msg := range te.Errors {
		m := lineRE.FindStringSubmatch(msg)
		if m == nil {
			errs = append(errs, fmt.Errorf("%s: %s", source, msg))
			continue
		}
		line, _ := strconv.Atoi(m[1])
		problem := m[2]
		idx, field := locate(items, line)
		if rest, ok := strings.CutPrefix(problem, "field "); ok {
			if name, typ, ok := strings.Cut(rest, " not found in type "); ok {
				fields := faultFields
				if strings.HasSuffix(typ, "rawScenario") {
					fields, idx = scenarioFields, -1
				}
				problem = fmt.Sprintf("unknown field %q%s (want one of %s)", name, suggest(name, fields), strings.Join(fields, ", "))
				field = ""
			}
		}
		if strings.HasPrefix(problem, "cannot unmarshal") {
			problem = "bad value: " + strings.TrimPrefix(problem, "cannot unmarshal ")
		}
		if field != "" && !strings.HasPrefix(problem, field) {
			problem = field + ": " + problem
		}
		if idx < 0 {
			errs = append(errs, fmt.Errorf("%s: line %d: %s", source, line, problem))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: faults[%d] (line %d): %s", source, idx, line, problem))
	}
	return errors.Join(errs...)
}

// locate finds the fault that holds line, and the field whose value is on it.
func locate(items []*yaml.Node, line int) (int, string) {
	idx := -1
	for i, it := range items {
		if it.Line <= line {
			idx = i
		}
	}
	if idx < 0 {
		return -1, ""
	}
	it := items[idx]
	for i := 0; i+1 < len(it.Content); i += 2 {
		if it.Content[i+1].Line == line {
			return idx, it.Content[i].Value
		}
	}
	return idx, ""
}

// suggest proposes the field a misspelt key was probably meant to be.
func suggest(name string, fields []string) string {
	best, bestD := "", 3
	for _, f := range fields {
		if d := editDistance(strings.ToLower(name), f); d < bestD {
			best, bestD = f, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(", did you mean %q?", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
			where = fmt.Sprintf("%s (line %d)", where, sc.lines[i])
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
