package openb

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
)

// MaxPodsPerNode is the "pods" allocatable the simulator gives every openb node.
const MaxPodsPerNode = 1001

// LoadNodes reads an openb node list (sn,cpu_milli,memory_mib,gpu,model).
func LoadNodes(path string) ([]sim.Node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read node list: %w", err)
	}
	defer f.Close()
	return ParseNodes(f, path)
}

// LoadPods reads an openb pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli
// and optionally gpu_spec (other columns are ignored).
func LoadPods(path string) ([]sim.Pod, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read pod list: %w", err)
	}
	defer f.Close()
	return ParsePods(f, path)
}

// ParseNodes parses a node list; name labels errors ("name:line:column: …").
func ParseNodes(r io.Reader, name string) ([]sim.Node, error) {
	t, err := newTable(r, name, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"})
	if err != nil {
		return nil, err
	}
	var nodes []sim.Node
	seen := map[string]int{}
	for t.next() {
		n := sim.Node{
			Name:      t.str("sn"),
			MilliCPU:  t.int("cpu_milli", 0, 1<<40),
			MemoryMiB: t.int("memory_mib", 0, 1<<40),
			GPUs:      int(t.int("gpu", 0, 1024)),
			Model:     t.str("model"),
			MaxPods:   MaxPodsPerNode,
		}
		if t.err != nil {
			break
		}
		if n.Name == "" {
			t.fail("sn", "empty node name")
			break
		}
		if prev, dup := seen[n.Name]; dup {
			t.fail("sn", fmt.Sprintf("duplicate node %q (first on line %d)", n.Name, prev))
			break
		}
		seen[n.Name] = t.line("sn")
		if n.GPUs > 0 && n.Model == "" {
			t.fail("model", fmt.Sprintf("node %s has %d GPUs but no model", n.Name, n.GPUs))
			break
		}
		nodes = append(nodes, n)
	}
	if t.err != nil {
		return nil, t.err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", name)
	}
	return nodes, nil
}

// ParsePods parses a pod list; name labels errors ("name:line:column: …").
func ParsePods(r io.Reader, name string) ([]sim.Pod, error) {
	t, err := newTable(r, name, []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"})
	if err != nil {
		return nil, err
	}
	var pods []sim.Pod
	seen := map[string]int{}
	for t.next() {
		p := sim.Pod{
			Name:      t.str("name"),
			MilliCPU:  t.int("cpu_milli", 0, 1<<40),
			MemoryMiB: t.int("memory_mib", 0, 1<<40),
			NumGPU:    int(t.int("num_gpu", 0, 1024)),
			MilliGPU:  t.int("gpu_milli", 0, sim.MilliPerGPU),
			GPUSpec:   normalizeSpec(t.str("gpu_spec")),
		}
		if t.err != nil {
			break
		}
		if p.Name == "" {
			t.fail("name", "empty pod name")
			break
		}
		if prev, dup := seen[p.Name]; dup {
			t.fail("name", fmt.Sprintf("duplicate pod %q (first on line %d)", p.Name, prev))
			break
		}
		seen[p.Name] = t.line("name")
		if p.NumGPU == 0 {
			// The simulator ignores gpu_milli and gpu_spec of a pod without GPUs.
			p.MilliGPU, p.GPUSpec = 0, ""
		}
		if err := p.Validate(); err != nil {
			t.fail("gpu_milli", err.Error())
			break
		}
		pods = append(pods, p)
	}
	if t.err != nil {
		return nil, t.err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%s: no pods", name)
	}
	return pods, nil
}

// normalizeSpec drops empty entries from a "|"-separated model list, as the
// simulator's CSV-to-YAML step does.
func normalizeSpec(s string) string {
	var keep []string
	for m := range strings.SplitSeq(s, "|") {
		if m = strings.TrimSpace(m); m != "" {
			keep = append(keep, m)
		}
	}
	return strings.Join(keep, "|")
}

// table reads a CSV with a header and reports errors with file, line and column.
type table struct {
	name string
	r    *csv.Reader
	col  map[string]int
	rec  []string
	err  error
}

func newTable(r io.Reader, name string, required []string) (*table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	cr.FieldsPerRecord = 0 // every row as wide as the header
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file, want a header with %s", name, strings.Join(required, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &table{name: name, r: cr, col: map[string]int{}}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup && h != "" {
			return nil, fmt.Errorf("%s:1:%d: duplicate column %q", name, i+1, h)
		}
		t.col[h] = i
	}
	for _, h := range required {
		if _, ok := t.col[h]; !ok {
			return nil, fmt.Errorf("%s:1: missing column %q (want %s)", name, h, strings.Join(required, ","))
		}
	}
	return t, nil
}

func (t *table) next() bool {
	if t.err != nil {
		return false
	}
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false
	}
	if err != nil {
		// csv.ParseError already says "record on line L: wrong number of fields"
		// or "parse error on line L, column C: …".
		t.err = fmt.Errorf("%s: %w", t.name, err)
		return false
	}
	t.rec = rec
	return true
}

func (t *table) line(col string) int {
	line, _ := t.r.FieldPos(t.col[col])
	return line
}

func (t *table) fail(col, msg string) {
	if t.err != nil {
		return
	}
	line, c := t.r.FieldPos(t.col[col])
	t.err = fmt.Errorf("%s:%d:%d: column %s: %s", t.name, line, c, col, msg)
}

// str is the trimmed field, or "" for an optional column the file lacks.
func (t *table) str(col string) string {
	i, ok := t.col[col]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

func (t *table) int(col string, lo, hi int64) int64 {
	s := t.str(col)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// pandas writes integer columns with missing values as floats ("4.0").
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f == float64(int64(f)) {
			v, err = int64(f), nil
		}
	}
	switch {
	case err != nil:
		t.fail(col, fmt.Sprintf("not an integer: %q", s))
	case v < lo || v > hi:
		t.fail(col, fmt.Sprintf("%d out of range [%d, %d]", v, lo, hi))
	}
	return v
}
