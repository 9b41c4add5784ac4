package topology

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Defaults.
const (
	DefaultRefresh = 10 * time.Minute
	retryAfter     = time.Minute // after a discovery that met errors
)

// Options configures the source.
type Options struct {
	// SysfsRoot is the directory that stands for /sys ("/sys" when empty).
	SysfsRoot string
	// Refresh is how often the topology is discovered again (DefaultRefresh when 0).
	Refresh time.Duration
	// Node names the topology when the inventory has no node name (the host name
	// when both are empty).
	Node string
	// NVLinkDomain, Leaf, Spine and Block place the node in the fleet; when any is
	// set the source emits gpuwatch_topology_node_info with them.
	NVLinkDomain, Leaf, Spine, Block string
	// Now is the clock (time.Now when nil); tests set it.
	Now func() time.Time
}

// Source discovers and emits the node's topology. Collect is not called
// concurrently with itself (collector.Source's contract); Topology may be called
// from any goroutine.
type Source struct {
	lib  nvml.Interface
	inv  *collector.Inventory
	opts Options

	cur atomic.Pointer[state]
	mu  sync.Mutex // serialises discovery
}

// state is one discovery's result; immutable once stored.
type state struct {
	topo    *telemetry.NodeTopology
	samples []telemetry.Sample
	err     error
	at      time.Time
}

var _ collector.Source = (*Source)(nil)

// New returns the source. lib must be initialised (nvml.Init) by the caller; inv is
// the agent's inventory (nil: ask NVML for the GPUs).
func New(lib nvml.Interface, inv *collector.Inventory, opts Options) *Source {
	if opts.SysfsRoot == "" {
		opts.SysfsRoot = "/sys"
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Node == "" && (inv == nil || inv.Node == "") {
		opts.Node, _ = os.Hostname()
	}
	return &Source{lib: lib, inv: inv, opts: opts}
}

// Name returns "topology".
func (s *Source) Name() string { return string(telemetry.SourceTopology) }

// Topology returns the latest discovered topology, or nil before the first
// Collect. The result is shared and must not be modified.
func (s *Source) Topology() *telemetry.NodeTopology {
	if st := s.cur.Load(); st != nil {
		return st.topo
	}
	return nil
}

// Collect discovers the topology when it is due and emits the info series of the
// latest one. It returns the latest discovery's errors (the series then describe
// what could be learnt), or collector.ErrNoDevices on a node without GPUs.
func (s *Source) Collect(ctx context.Context, emit func(telemetry.Sample)) error {
	st := s.cur.Load()
	now := s.opts.Now()
	if st == nil || s.due(st, now) {
		st = s.discover(now)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, x := range st.samples {
		emit(x)
	}
	if st.err == nil && len(st.topo.GPUs) == 0 {
		return collector.ErrNoDevices
	}
	return st.err
}

func (s *Source) due(st *state, now time.Time) bool {
	wait := s.opts.Refresh
	if st.err != nil {
		wait = min(wait, retryAfter)
	}
	return now.Sub(st.at) >= wait
}

// Refresh discovers the topology now, for a caller that knows it changed (a GPU
// reset or hot-plug) instead of waiting for the next refresh; it returns the
// discovery's errors.
func (s *Source) Refresh() error {
	return s.discover(s.opts.Now()).err
}

func (s *Source) discover(now time.Time) *state {
	s.mu.Lock()
	defer s.mu.Unlock()
	topo, err := Discover(s.lib, s.inv, s.opts.SysfsRoot, s.opts.Node)
	st := &state{topo: topo, err: err, at: now, samples: s.samples(topo)}
	s.cur.Store(st)
	return st
}

// samples renders the topology as info series.
func (s *Source) samples(t *telemetry.NodeTopology) []telemetry.Sample {
	var out []telemetry.Sample
	info := func(name string, kv ...string) {
		out = append(out, telemetry.Sample{Name: name, Value: 1, Labels: telemetry.NewLabels(kv...)})
	}
	o := s.opts
	if o.NVLinkDomain != "" || o.Leaf != "" || o.Spine != "" || o.Block != "" {
		info(telemetry.MetricTopologyNodeInfo, telemetry.LabelNVLinkDomain, o.NVLinkDomain,
			telemetry.LabelLeaf, o.Leaf, telemetry.LabelSpine, o.Spine, telemetry.LabelBlock, o.Block)
	}
	for _, g := range t.GPUs {
		numa := ""
		if g.NUMANode >= 0 {
			numa = strconv.Itoa(g.NUMANode)
		}
		info(telemetry.MetricTopologyGPUInfo, telemetry.LabelGPUIndex, strconv.Itoa(g.Index), telemetry.LabelNUMANode, numa)
	}
	for _, l := range t.GPULinks {
		a, b := min(l.A, l.B), max(l.A, l.B)
		info(telemetry.MetricTopologyGPULinkInfo, telemetry.LabelGPUIndex, strconv.Itoa(a),
			telemetry.LabelPeerGPUIndex, strconv.Itoa(b), telemetry.LabelLinkType, string(l.Type),
			telemetry.LabelNVLinkCount, strconv.Itoa(l.NVLinks))
	}
	rails := map[int]string{}
	for _, g := range t.GPUs {
		if r, ok := t.Rail(g.Index); ok {
			rails[g.Index] = r.NIC
		}
	}
	for _, l := range t.NICLinks {
		info(telemetry.MetricTopologyGPUNICInfo, telemetry.LabelGPUIndex, strconv.Itoa(l.GPU),
			telemetry.LabelIBDevice, l.NIC, telemetry.LabelLinkType, string(l.Type),
			telemetry.LabelRail, strconv.FormatBool(rails[l.GPU] == l.NIC))
	}
	return out
}
