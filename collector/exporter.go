package collector

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// LabelMode chooses how GPU identity labels are spelled on DCGM_FI_* series.
type LabelMode string

// Label modes.
const (
	// LabelsDCGM spells them as dcgm-exporter does (gpu, UUID, pci_bus_id, device,
	// modelName, Hostname, DCGM_FI_DRIVER_VERSION), so its dashboards and alerts work
	// unchanged. The default.
	LabelsDCGM LabelMode = "dcgm"
	// LabelsSnake uses gpuwatch's lower_snake keys everywhere (node, gpu_index,
	// gpu_uuid, pci_bus_id, model, driver_version), the same keys as gpuwatch_* series.
	LabelsSnake LabelMode = "snake"
)

// ParseLabelMode reads "dcgm" or "snake".
func ParseLabelMode(s string) (LabelMode, error) {
	switch LabelMode(s) {
	case LabelsDCGM, LabelsSnake:
		return LabelMode(s), nil
	}
	return "", fmt.Errorf("invalid label mode %q: want dcgm or snake", s)
}

// ExporterOptions configure an Exporter.
type ExporterOptions struct {
	Node   string
	Labels LabelMode // zero means LabelsDCGM
	// Timestamps exposes each sample's collection time. Off by default: Prometheus
	// does not mark series with explicit timestamps stale when they vanish.
	Timestamps bool
	// Attributor, when set, adds pod, namespace and container to DCGM_FI_* series of
	// GPUs a Kubernetes pod uses, as dcgm-exporter's pod mapper does.
	Attributor Attributor
	// Version and Revision label gpuwatch_build_info.
	Version, Revision string
}

// Exporter renders snapshots into Prometheus metric families. Render runs once per
// published snapshot (off the scrape path); Gather hands out the last rendering.
type Exporter struct {
	opts ExporterOptions

	mu       sync.Mutex // serialises Render; guards the caches below
	gpuPairs map[int][]*dto.LabelPair
	gpuInv   *Inventory
	pairs    map[[2]string]*dto.LabelPair
	unknown  map[string]bool

	families atomic.Pointer[[]*dto.MetricFamily]
	renders  atomic.Uint64
}

// NewExporter builds an exporter.
func NewExporter(opts ExporterOptions) *Exporter {
	if opts.Labels == "" {
		opts.Labels = LabelsDCGM
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	if opts.Revision == "" {
		opts.Revision = vcsRevision()
	}
	return &Exporter{opts: opts, pairs: map[[2]string]*dto.LabelPair{}, unknown: map[string]bool{}}
}

func vcsRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// Gather implements prometheus.Gatherer: the families of the last rendered snapshot.
// They are shared and must not be modified.
func (e *Exporter) Gather() ([]*dto.MetricFamily, error) {
	if p := e.families.Load(); p != nil {
		return *p, nil
	}
	return nil, nil
}

// Renders returns how many snapshots have been rendered.
func (e *Exporter) Renders() uint64 { return e.renders.Load() }

// pair returns an interned label pair; pairs are immutable once built.
func (e *Exporter) pair(name, value string) *dto.LabelPair {
	k := [2]string{name, value}
	if p, ok := e.pairs[k]; ok {
		return p
	}
	if len(e.pairs) > 1<<16 { // bound the cache: label values churn (job ids)
		clear(e.pairs)
	}
	p := &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
	e.pairs[k] = p
	return p
}

// identity returns the GPU identity label pairs for GPU index i in the given family.
func (e *Exporter) identity(inv *Inventory, i int, family telemetry.MetricFamily) []*dto.LabelPair {
	if inv != e.gpuInv {
		e.gpuInv = inv
		e.gpuPairs = map[int][]*dto.LabelPair{}
	}
	// Three spellings, cached apart: dcgm-exporter's, lower_snake on DCGM_FI_*
	// series (with model and driver), lower_snake on gpuwatch_* series.
	variant := 0
	switch {
	case family == telemetry.FamilyDCGMExporter && e.opts.Labels == LabelsSnake:
		variant = 1
	case family != telemetry.FamilyDCGMExporter:
		variant = 2
	}
	key := 3*i + variant
	if ps, ok := e.gpuPairs[key]; ok {
		return ps
	}
	g, ok := inv.ByIndex(i)
	if !ok {
		g = GPUInfo{Index: i}
	}
	idx := strconv.Itoa(i)
	var ps []*dto.LabelPair
	add := func(k, v string) {
		if v != "" {
			ps = append(ps, e.pair(k, v))
		}
	}
	driver := ""
	if inv != nil {
		driver = inv.DriverVersion
	}
	if variant == 0 {
		add(telemetry.DCGMLabelGPU, idx)
		add(telemetry.DCGMLabelUUID, g.UUID)
		if !g.PCIBusID.IsZero() {
			add(telemetry.DCGMLabelPCIBusID, g.PCIBusID.NVML())
		}
		if ok {
			add(telemetry.DCGMLabelDevice, "nvidia"+strconv.Itoa(g.Minor))
		}
		add(telemetry.DCGMLabelModelName, g.Model)
		add(telemetry.DCGMLabelHostname, e.opts.Node)
		add(telemetry.DCGMLabelDriverVersion, driver)
	} else {
		add(telemetry.LabelNode, e.opts.Node)
		add(telemetry.LabelGPUIndex, idx)
		add(telemetry.LabelGPUUUID, g.UUID)
		if !g.PCIBusID.IsZero() {
			add(telemetry.LabelPCIBusID, g.PCIBusID.String())
		}
		if variant == 1 {
			add(telemetry.LabelModel, g.Model)
			add(telemetry.LabelDriverVersion, driver)
		}
	}
	e.gpuPairs[key] = ps
	return ps
}

// Render turns a snapshot into metric families, stores them for Gather and returns
// them. Series missing from the catalog are rendered untyped and logged once by the
// caller through Unknown.
func (e *Exporter) Render(snap *Snapshot) []*dto.MetricFamily {
	e.mu.Lock()
	defer e.mu.Unlock()
	var pods map[int]Allocation
	if e.opts.Attributor != nil {
		for _, a := range e.opts.Attributor.Allocations() {
			if a.Pod != "" {
				if pods == nil {
					pods = map[int]Allocation{}
				}
				pods[a.GPUIndex] = a
			}
		}
	}
	byName := map[string]*dto.MetricFamily{}
	var order []string
	family := func(name string) (*dto.MetricFamily, telemetry.MetricDesc) {
		d, known := telemetry.LookupMetric(name)
		mf, ok := byName[name]
		if !ok {
			mf = &dto.MetricFamily{Name: proto.String(name)}
			switch {
			case !known:
				mf.Type = dto.MetricType_UNTYPED.Enum()
				e.unknown[name] = true
			case d.Type == telemetry.MetricCounter:
				mf.Type = dto.MetricType_COUNTER.Enum()
				mf.Help = proto.String(d.Help)
			default:
				mf.Type = dto.MetricType_GAUGE.Enum()
				mf.Help = proto.String(d.Help)
			}
			byName[name] = mf
			order = append(order, name)
		}
		return mf, d
	}
	for i := range snap.Samples {
		s := &snap.Samples[i]
		mf, d := family(s.Name)
		m := &dto.Metric{}
		labels := make([]*dto.LabelPair, 0, len(s.Labels)+8)
		gpu := -1
		for _, l := range s.Labels {
			if l.Name == telemetry.LabelGPUIndex && l.Value != "" {
				if n, err := strconv.Atoi(l.Value); err == nil {
					gpu = n
					continue
				}
			}
			if l.Value != "" {
				labels = append(labels, e.pair(l.Name, l.Value))
			}
		}
		switch {
		case gpu >= 0:
			labels = append(labels, e.identity(snap.Inventory, gpu, d.Family)...)
			if d.Family == telemetry.FamilyDCGMExporter {
				if a, ok := pods[gpu]; ok {
					labels = append(labels, e.pair(telemetry.DCGMLabelPod, a.Pod),
						e.pair(telemetry.DCGMLabelNamespace, a.Namespace),
						e.pair(telemetry.DCGMLabelContainer, a.Container))
				}
			}
		case d.Family == telemetry.FamilyGPUWatch && e.opts.Node != "":
			labels = append(labels, e.pair(telemetry.LabelNode, e.opts.Node))
		case d.Family == telemetry.FamilyDCGMExporter && e.opts.Node != "":
			if e.opts.Labels == LabelsSnake {
				labels = append(labels, e.pair(telemetry.LabelNode, e.opts.Node))
			} else {
				labels = append(labels, e.pair(telemetry.DCGMLabelHostname, e.opts.Node))
			}
		}
		sort.SliceStable(labels, func(a, b int) bool { return labels[a].GetName() < labels[b].GetName() })
		labels = dedupPairs(labels)
		m.Label = labels
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			m.Counter = &dto.Counter{Value: proto.Float64(s.Value)}
		case dto.MetricType_GAUGE:
			m.Gauge = &dto.Gauge{Value: proto.Float64(s.Value)}
		default:
			m.Untyped = &dto.Untyped{Value: proto.Float64(s.Value)}
		}
		if e.opts.Timestamps && !s.Time.IsZero() {
			m.TimestampMs = proto.Int64(s.Time.UnixMilli())
		}
		mf.Metric = append(mf.Metric, m)
	}
	e.selfMetrics(snap, family)
	sort.Strings(order)
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, n := range order {
		out = append(out, byName[n])
	}
	e.families.Store(&out)
	e.renders.Add(1)
	return out
}

// dedupPairs drops a label repeated after sorting, keeping the first (the source's
// own value wins over an identity label of the same name).
func dedupPairs(ps []*dto.LabelPair) []*dto.LabelPair {
	return slices.CompactFunc(ps, func(a, b *dto.LabelPair) bool { return a.GetName() == b.GetName() })
}

// selfMetrics adds the per-source up/duration/errors/last-success series and the
// build info.
func (e *Exporter) selfMetrics(snap *Snapshot, family func(string) (*dto.MetricFamily, telemetry.MetricDesc)) {
	node := e.pair(telemetry.LabelNode, e.opts.Node)
	add := func(name string, labels []*dto.LabelPair, v float64) {
		mf, _ := family(name)
		m := &dto.Metric{Label: labels}
		if mf.GetType() == dto.MetricType_COUNTER {
			m.Counter = &dto.Counter{Value: proto.Float64(v)}
		} else {
			m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		}
		mf.Metric = append(mf.Metric, m)
	}
	for _, st := range snap.Sources {
		ls := []*dto.LabelPair{node, e.pair(telemetry.LabelSource, st.Name)}
		up := 0.0
		if st.Up {
			up = 1
		}
		add(telemetry.MetricSourceUp, ls, up)
		add(telemetry.MetricSourceDurationSeconds, ls, st.Duration.Seconds())
		add(telemetry.MetricSourceErrorsTotal, ls, float64(st.Errors))
		if !st.LastSuccess.IsZero() {
			add(telemetry.MetricSourceLastSuccessTimestampSeconds, ls, float64(st.LastSuccess.UnixNano())/1e9)
		}
	}
	bi := []*dto.LabelPair{
		e.pair(telemetry.LabelGoVersion, goVersion()),
		node,
		e.pair(telemetry.LabelRevision, e.opts.Revision),
		e.pair(telemetry.LabelVersion, e.opts.Version),
	}
	add(telemetry.MetricBuildInfo, bi, 1)
}

func goVersion() string { return strings.TrimPrefix(runtime.Version(), "go") }

// Unknown returns the names of series that were rendered but are not in the
// catalog: a bug in a source, reported by the agent's self-check and tests.
func (e *Exporter) Unknown() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.unknown))
	for n := range e.unknown {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
