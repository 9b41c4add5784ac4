package collector

import (
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// LabelMode chooses how GPU identity labels are spelled on DCGM_FI_* series.
type LabelMode string

// Label modes.
const (
	// LabelsDCGM spells them as dcgm-exporter does (gpu, UUID, pci_bus_id, device,
	// modelName, hostname, DCGM_FI_DRIVER_VERSION), so its dashboards and alerts work
	// unchanged. The default. The host-name key is ExporterOptions.HostnameLabel.
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
//
// Every series carries gpuwatch's node label (telemetry.LabelNode), in either
// mode and beside dcgm-exporter's host-name label: rules, feeds and reports key
// on it, and a scrape of /metrics gives the label sets remote write ships.
type ExporterOptions struct {
	Node   string
	Labels LabelMode // zero means LabelsDCGM
	// HostnameLabel is the key of the node's host name on DCGM_FI_* series in
	// LabelsDCGM mode: telemetry.DCGMLabelHostname ("hostname", dcgm-exporter 4.8
	// and later; the default) or telemetry.DCGMLabelHostnameLegacy ("Hostname",
	// before 4.8).
	HostnameLabel string
	// Timestamps exposes each sample's collection time. Off by default: Prometheus
	// does not mark series with explicit timestamps stale when they vanish.
	Timestamps bool
	// Attributor, when set, adds pod, namespace and container to DCGM_FI_* series of
	// GPUs a Kubernetes pod uses, as dcgm-exporter's pod mapper does.
	Attributor Attributor
	// Version and Revision label gpuwatch_build_info.
	Version, Revision string
}

// Exporter turns published snapshots into what /metrics serves and remote write
// ships. Publishing costs nothing but a pointer swap: a snapshot is rendered into
// metric families only when a scrape asks for it, once per snapshot however many
// scrapes read it (Gather), and the shipper reads the series it needs straight from
// the snapshot (Exposition.Series) without a full rendering every health cycle.
type Exporter struct {
	opts ExporterOptions

	mu       sync.Mutex // serialises rendering; guards the caches below
	gpuPairs map[int][]*dto.LabelPair
	gpuInv   *Inventory
	pairs    map[[2]string]*dto.LabelPair
	unknown  map[string]bool
	seed     maphash.Seed
	cache    map[uint64]*rendered // by the hash of a sample's name and own labels
	byPos    []*rendered          // the entry each snapshot position had last time
	uses     uint32               // renders and walks, to age the cache

	pmu       sync.Mutex // serialises Publish; guards the three below
	pods      map[int]Allocation
	inv       *Inventory
	labelling uint64

	current atomic.Pointer[Exposition]
	renders atomic.Uint64
}

// NewExporter builds an exporter.
func NewExporter(opts ExporterOptions) *Exporter {
	if opts.Labels == "" {
		opts.Labels = LabelsDCGM
	}
	if opts.HostnameLabel == "" {
		opts.HostnameLabel = telemetry.DCGMLabelHostname
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	if opts.Revision == "" {
		opts.Revision = vcsRevision()
	}
	return &Exporter{opts: opts, pairs: map[[2]string]*dto.LabelPair{}, unknown: map[string]bool{},
		seed: maphash.MakeSeed(), cache: map[uint64]*rendered{}}
}

// rendered is the label set a sample renders with under one labelling, kept
// between renders: a node's series keep their labels from one snapshot to the
// next, and building and sorting them is most of a render's work.
type rendered struct {
	name      string
	raw       telemetry.Labels // the sample's own labels
	labelling uint64
	labels    []*dto.LabelPair // sorted; shared, never modified
	key       uint64           // seriesKey of name and labels
	used      uint32
}

// cacheAge is how many renders and walks an entry of the label cache survives
// unused (series come and go with job ids and pods).
const cacheAge = 64

// labelsOf returns the labels sample s, at position i of its snapshot, renders
// with in exposition x, from the cache or built and cached (a series missing from
// the catalog is noted for Unknown then). The snapshots of a node keep their
// series in the same order, so the entry the same position had last time is
// tried first, without hashing. e.mu is held.
func (e *Exporter) labelsOf(x *Exposition, i int, s *telemetry.Sample) *rendered {
	if i < len(e.byPos) {
		if r := e.byPos[i]; r != nil && r.labelling == x.labelling && r.name == s.Name && slices.Equal(r.raw, s.Labels) {
			r.used = e.uses
			return r
		}
	} else {
		e.byPos = append(e.byPos, make([]*rendered, i+1-len(e.byPos))...)
	}
	r := e.lookup(x, s)
	e.byPos[i] = r
	return r
}

// lookup is labelsOf's cache lookup by the sample's identity.
func (e *Exporter) lookup(x *Exposition, s *telemetry.Sample) *rendered {
	var h maphash.Hash
	h.SetSeed(e.seed)
	h.WriteString(s.Name)
	for _, l := range s.Labels {
		h.WriteByte(0xff)
		h.WriteString(l.Name)
		h.WriteByte(0xfe)
		h.WriteString(l.Value)
	}
	k := h.Sum64()
	if r := e.cache[k]; r != nil && r.labelling == x.labelling && r.name == s.Name && slices.Equal(r.raw, s.Labels) {
		r.used = e.uses
		return r
	}
	d, known := telemetry.LookupMetric(s.Name)
	if !known {
		e.unknown[s.Name] = true
	}
	labels := slices.Clip(e.sampleLabels(make([]*dto.LabelPair, 0, len(s.Labels)+8), x.snap.Inventory, x.pods, s, d.Family))
	r := &rendered{name: s.Name, raw: s.Labels, labelling: x.labelling, labels: labels, key: e.seriesKey(s.Name, labels), used: e.uses}
	e.cache[k] = r
	return r
}

// seriesKey hashes a series' name and rendered labels: the same series has the
// same key in every exposition of this exporter.
func (e *Exporter) seriesKey(name string, labels []*dto.LabelPair) uint64 {
	var h maphash.Hash
	h.SetSeed(e.seed)
	h.WriteString(name)
	for _, l := range labels {
		h.WriteByte(0xff)
		h.WriteString(l.GetName())
		h.WriteByte(0xfe)
		h.WriteString(l.GetValue())
	}
	return h.Sum64()
}

// use counts a render or walk, and every cacheAge of them drops the cache
// entries none of the last cacheAge used. e.mu is held.
func (e *Exporter) use() {
	e.uses++
	if e.uses%cacheAge != 0 {
		return
	}
	for k, r := range e.cache {
		if e.uses-r.used >= cacheAge {
			delete(e.cache, k)
		}
	}
	for i, r := range e.byPos {
		if r != nil && e.uses-r.used >= cacheAge {
			e.byPos[i] = nil
		}
	}
}

// Exposition is one published snapshot as the exporter exposes it: the snapshot,
// and the GPU → pod attribution of the moment it was published (the labels of a
// DCGM_FI_* series name the pod using the GPU when the snapshot was taken, however
// late it is rendered). It is immutable; Families renders it at most once.
type Exposition struct {
	e         *Exporter
	snap      *Snapshot
	pods      map[int]Allocation
	labelling uint64

	once sync.Once
	fams []*dto.MetricFamily
}

// Publish makes snap the snapshot /metrics serves and returns its exposition. It
// renders nothing: the run loop calls it every cycle, and rendering waits for a
// scrape (Families) or is skipped. A nil snapshot changes nothing.
func (e *Exporter) Publish(snap *Snapshot) *Exposition {
	if snap == nil {
		return nil
	}
	e.pmu.Lock()
	defer e.pmu.Unlock()
	pods := e.attribution()
	if e.labelling == 0 || snap.Inventory != e.inv || !maps.EqualFunc(pods, e.pods, samePod) {
		e.labelling++
	}
	e.pods, e.inv = pods, snap.Inventory
	x := &Exposition{e: e, snap: snap, pods: pods, labelling: e.labelling}
	e.current.Store(x)
	return x
}

// attribution is the GPU → pod map of the moment, nil without pods.
func (e *Exporter) attribution() map[int]Allocation {
	if e.opts.Attributor == nil {
		return nil
	}
	var pods map[int]Allocation
	for _, a := range e.opts.Attributor.Allocations() {
		if a.Pod != "" {
			if pods == nil {
				pods = map[int]Allocation{}
			}
			pods[a.GPUIndex] = a
		}
	}
	return pods
}

// samePod compares what the exporter takes from an allocation.
func samePod(a, b Allocation) bool {
	return a.Pod == b.Pod && a.Namespace == b.Namespace && a.Container == b.Container
}

// Render publishes snap and renders it at once: Publish followed by Families.
func (e *Exporter) Render(snap *Snapshot) []*dto.MetricFamily {
	if snap == nil {
		return nil
	}
	return e.Publish(snap).Families()
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

// Gather implements prometheus.Gatherer: the families of the last published
// snapshot, rendered on the first call after its publication. They are shared and
// must not be modified.
func (e *Exporter) Gather() ([]*dto.MetricFamily, error) {
	if x := e.current.Load(); x != nil {
		return x.Families(), nil
	}
	return nil, nil
}

// Renders returns how many snapshots have been rendered into metric families.
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
		add(e.opts.HostnameLabel, e.opts.Node)
		add(telemetry.DCGMLabelDriverVersion, driver)
		add(telemetry.LabelNode, e.opts.Node)
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

// Snapshot returns the published snapshot.
func (x *Exposition) Snapshot() *Snapshot { return x.snap }

// Labelling identifies what, besides a sample itself, decides the labels it
// renders with: the GPU → pod attribution and the inventory. Two expositions with
// the same Labelling render the same sample with the same labels.
func (x *Exposition) Labelling() uint64 { return x.labelling }

// Len is how many series the exposition renders: one per sample, plus the
// per-source self-metrics and the build info.
func (x *Exposition) Len() int {
	n := len(x.snap.Samples) + 1
	for _, st := range x.snap.Sources {
		n += 3
		if !st.LastSuccess.IsZero() {
			n++
		}
	}
	return n
}

// Families renders the exposition into metric families, sorted by name, the
// first time it is called; later calls return the same families, which are
// shared and must not be modified. Series missing from the catalog are rendered
// untyped and reported by Unknown.
func (x *Exposition) Families() []*dto.MetricFamily {
	x.once.Do(func() { x.fams = x.e.render(x) })
	return x.fams
}

func (e *Exporter) render(x *Exposition) []*dto.MetricFamily {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.use()
	snap := x.snap
	byName := map[string]*dto.MetricFamily{}
	var order []string
	family := func(name string) *dto.MetricFamily {
		mf, ok := byName[name]
		if !ok {
			d, known := telemetry.LookupMetric(name)
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
		return mf
	}
	for i := range snap.Samples {
		s := &snap.Samples[i]
		mf := family(s.Name)
		m := &dto.Metric{Label: e.labelsOf(x, i, s).labels}
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
	e.selfMetrics(snap, func(name string, labels []*dto.LabelPair, v float64) {
		mf := family(name)
		m := &dto.Metric{Label: labels}
		if mf.GetType() == dto.MetricType_COUNTER {
			m.Counter = &dto.Counter{Value: proto.Float64(v)}
		} else {
			m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		}
		mf.Metric = append(mf.Metric, m)
	})
	sort.Strings(order)
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, n := range order {
		out = append(out, byName[n])
	}
	e.renders.Add(1)
	return out
}

// sampleLabels appends to dst the labels sample s renders with, sorted by name:
// its own (gpu_index replaced by the GPU's identity in the family's spelling),
// the pod using its GPU on DCGM_FI_* series, the node on node-scoped ones.
func (e *Exporter) sampleLabels(dst []*dto.LabelPair, inv *Inventory, pods map[int]Allocation, s *telemetry.Sample, family telemetry.MetricFamily) []*dto.LabelPair {
	labels := dst
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
		labels = append(labels, e.identity(inv, gpu, family)...)
		if family == telemetry.FamilyDCGMExporter {
			if a, ok := pods[gpu]; ok {
				labels = append(labels, e.pair(telemetry.DCGMLabelPod, a.Pod),
					e.pair(telemetry.DCGMLabelNamespace, a.Namespace),
					e.pair(telemetry.DCGMLabelContainer, a.Container))
			}
		}
	case e.opts.Node == "":
	case family == telemetry.FamilyDCGMExporter && e.opts.Labels != LabelsSnake:
		labels = append(labels, e.pair(e.opts.HostnameLabel, e.opts.Node), e.pair(telemetry.LabelNode, e.opts.Node))
	default: // gpuwatch_*, node_infiniband_*, DCGM_FI_* in snake mode
		labels = append(labels, e.pair(telemetry.LabelNode, e.opts.Node))
	}
	slices.SortStableFunc(labels, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return dedupPairs(labels)
}

// Series is one series of an exposition as Exposition.Series hands it out: what
// Families renders for one sample or self-metric, without building a metric.
type Series struct {
	Name string
	// Labels are the rendered label pairs, sorted by name; shared, not to be
	// modified.
	Labels []*dto.LabelPair
	Value  float64
	// Time is the sample's collection time, or the snapshot's for series without
	// one of their own (the self-metrics, samples with no time).
	Time time.Time
	// Part is the Gen of the SamplePart the sample belongs to; 0 for the
	// self-metrics and for samples outside any part.
	Part uint64
	// Key identifies the series (a hash of Name and Labels): the same series has
	// the same Key in every exposition of the exporter.
	Key uint64
}

// Series calls fn with every series of the exposition, in snapshot order and
// then the self-metrics, as Families renders them (same names, labels and
// values), except the samples of the parts skip says to leave out: skip is asked
// once per part of Snapshot.Parts, in order, and never for Gen 0. It renders no
// metric families: a shipper that has already sent a part (a full collection
// riding along unchanged in every health snapshot) skips it at no cost.
func (x *Exposition) Series(skip func(gen uint64) bool, fn func(*Series)) {
	e := x.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.use()
	snap := x.snap
	var sr Series
	visit := func(from, to int, gen uint64) {
		for i := from; i < to; i++ {
			s := &snap.Samples[i]
			r := e.labelsOf(x, i, s)
			sr = Series{Name: s.Name, Labels: r.labels, Value: s.Value, Time: s.Time, Part: gen, Key: r.key}
			if sr.Time.IsZero() {
				sr.Time = snap.Time
			}
			fn(&sr)
		}
	}
	from := 0
	for _, p := range snap.Parts {
		to := min(p.End, len(snap.Samples))
		if to <= from {
			continue
		}
		if p.Gen == 0 || !skip(p.Gen) {
			visit(from, to, p.Gen)
		}
		from = to
	}
	visit(from, len(snap.Samples), 0)
	e.selfMetrics(snap, func(name string, labels []*dto.LabelPair, v float64) {
		sr = Series{Name: name, Labels: labels, Value: v, Time: snap.Time, Key: e.seriesKey(name, labels)}
		fn(&sr)
	})
}

// dedupPairs drops a label repeated after sorting, keeping the first (the source's
// own value wins over an identity label of the same name).
func dedupPairs(ps []*dto.LabelPair) []*dto.LabelPair {
	return slices.CompactFunc(ps, func(a, b *dto.LabelPair) bool { return a.GetName() == b.GetName() })
}

// selfMetrics calls add with the per-source up/duration/errors/last-success series
// and the build info, in that order. Each call gets a label slice of its own.
func (e *Exporter) selfMetrics(snap *Snapshot, add func(name string, labels []*dto.LabelPair, v float64)) {
	node := e.pair(telemetry.LabelNode, e.opts.Node)
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
