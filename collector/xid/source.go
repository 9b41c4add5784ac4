package xid

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Defaults of Options.
const (
	DefaultKmsgPath = "/dev/kmsg"
	// DefaultDedupWindow: an Xid line identical to one counted less than this
	// long before (same GPU, Xid and message) is a flood repeat.
	DefaultDedupWindow = 5 * time.Minute
	// DefaultMergeWindow: an NVML event and a kernel-log line for the same GPU
	// and Xid that arrive less than this far apart are one event.
	DefaultMergeWindow = 5 * time.Second
	// DefaultPollInterval is how often a regular log file is checked for new
	// lines, truncation and rotation.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultMaxDedupEntries bounds the flood-dedup table.
	DefaultMaxDedupEntries = 4096
)

// Bounds on the other tables, so that no input grows memory without bound.
const (
	maxPending  = 1024 // NVML events waiting for their kernel-log line
	maxRecent   = 1024 // live kernel-log Xids remembered for merging
	maxAttached = 256  // PCI→UUID mappings learnt from the log
	maxSeries   = 4096 // (GPU, Xid) series; more Xids than this are not counted apart
	maxSXid     = 1024 // (NVSwitch, SXid) series and SXid dedup entries
)

// Options configures a Source.
type Options struct {
	// KmsgPath is the kernel log: /dev/kmsg (a character device, read record by
	// record) or a regular file in /dev/kmsg, dmesg or journalctl format (tailed).
	// Default DefaultKmsgPath.
	KmsgPath string
	// Inventory maps PCI addresses and UUIDs to GPU indexes. May be nil.
	Inventory *collector.Inventory
	// Sink receives every accepted event (deduplicated, merged); may be nil.
	Sink collector.XidSink
	// SXidSink receives every accepted NVSwitch error (SXid) from the kernel
	// log, flood repeats dropped as for Xids; may be nil.
	SXidSink collector.SXidSink
	// DedupWindow is the flood-dedup window (0: DefaultDedupWindow; negative:
	// no dedup, every line counts).
	DedupWindow time.Duration
	// MergeWindow is how far apart an NVML event and a kernel-log line for the
	// same GPU and Xid may arrive and still be one event (0: DefaultMergeWindow).
	// An NVML event is held this long waiting for its kernel-log line.
	MergeWindow time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// FromStart reads the log's history; otherwise only lines logged after Run
	// starts are read.
	FromStart bool
	// BootTime returns when the machine booted; kmsg record timestamps and
	// dmesg's "[ 1234.5]" are relative to it. Default: now minus /proc/uptime
	// (CLOCK_BOOTTIME, as dmesg -T does), else /proc/stat btime. Without a boot
	// time such lines are stamped with the time they are read.
	BootTime func() (time.Time, error)
	// PollInterval is how often a regular file is polled (0: DefaultPollInterval).
	PollInterval time.Duration
	// MaxDedupEntries bounds the flood-dedup table (0: DefaultMaxDedupEntries).
	MaxDedupEntries int
	// Logger receives read errors, once per distinct error (default: discard).
	Logger *slog.Logger
}

// Stats is what the source has seen since it started.
type Stats struct {
	Lines       uint64 // log lines or records read
	XidLines    uint64 // kernel-log Xid lines parsed
	SXidLines   uint64 // kernel-log SXid (NVSwitch error) lines parsed
	NVMLEvents  uint64 // events received through ObserveXid
	Accepted    uint64 // events counted and forwarded to the sink
	Suppressed  uint64 // Xid lines and NVML events dropped as flood repeats
	Merged      uint64 // NVML events found to be the same event as a kernel-log line
	RecordsLost uint64 // kmsg records overwritten before they were read (sequence gaps)
	Overruns    uint64 // EPIPE answers from /dev/kmsg
	Truncations uint64 // times the log file shrank and was read again from its start
	Rotations   uint64 // times the log path was replaced by a new file
	Ignored     uint64 // malformed kmsg records, and NVRM lines not from the kernel
	Live        bool   // the reader has caught up with the log's history
}

// gpuKey identifies the GPU of an event: its NVML index, or, for a GPU missing
// from the inventory, its PCI address (index -1).
type gpuKey struct {
	index int
	pci   telemetry.PCIBusID
}

type seriesKey struct {
	gpu gpuKey
	xid int
}

type dedupKey struct {
	gpu gpuKey
	xid int
	msg string
}

// countKey is one gpuwatch_xid_errors_total series: the GPU, the Xid and the
// action the catalog resolves for the event.
type countKey struct {
	seriesKey
	action telemetry.Action
}

// sxidKey is one gpuwatch_nvswitch_sxid_errors_total series.
type sxidKey struct {
	nvswitch int
	pci      telemetry.PCIBusID
	sxid     int
	fatal    bool
}

type sxidDedupKey struct {
	sxidKey
	link int
	msg  string
}

type pendingEvent struct {
	ev      collector.XidEvent
	gpu     gpuKey
	arrived time.Time
}

// Source is the xid source: it tails the kernel log for NVRM Xid lines, receives
// NVML Xid events as a collector.XidSink, merges the two, drops flood repeats,
// counts what is left and forwards it to its own sink.
//
// Series:
//   - gpuwatch_xid_errors_total{gpu_index, xid, action}: a counter from 0 at start
//     (or at the start of the history with FromStart); the series appears with
//     the first event of that GPU, Xid and action.
//   - gpuwatch_xid_suppressed_lines_total{gpu_index, xid}: flood repeats dropped.
//   - DCGM_FI_DEV_XID_ERRORS{gpu_index}: the last Xid of each GPU of the
//     inventory, 0 when none since start (dcgm-exporter's meaning).
//   - gpuwatch_xid_kmsg_records_lost_total: kernel-log records overwritten before
//     they were read.
//   - gpuwatch_nvswitch_sxid_errors_total{nvswitch, pci_bus_id, sxid, fatal}:
//     NVSwitch errors from the kernel log.
//
// An Xid on a GPU the inventory does not know (a PCI address no inventory GPU
// has, e.g. a GPU that failed discovery) is counted with gpu_index "" and its own
// pci_bus_id label, plus gpu_uuid when the driver's "GPU at PCI" line named it, so
// it is neither lost nor pinned on another GPU. It has no DCGM_FI_DEV_XID_ERRORS
// series: dcgm-exporter's labels need a GPU index.
type Source struct {
	opts        Options
	log         *slog.Logger
	now         func() time.Time
	dedupWindow time.Duration // < 0: off
	mergeWindow time.Duration
	poll        time.Duration
	maxDedup    int

	bootOnce sync.Once
	boot     time.Time
	haveBoot bool

	// Reader state, owned by the Run goroutine.
	opened bool // the log was opened once
	resume struct {
		info os.FileInfo // the file tailed last
		off  int64       // bytes of it handled
	}

	running atomic.Bool
	live    atomic.Bool
	device  atomic.Bool // the log is a character device (/dev/kmsg)
	lines   atomic.Uint64
	drains  atomic.Uint64 // times a log file was read to its end

	mu         sync.Mutex
	byPCI      map[telemetry.PCIBusID]collector.GPUInfo // inventory
	attached   map[telemetry.PCIBusID]string            // UUIDs from "GPU at PCI" lines
	pciCache   map[string]telemetry.PCIBusID            // driver form → parsed
	counts     map[countKey]uint64
	suppressed map[seriesKey]uint64
	sxids      map[sxidKey]uint64
	sxidDedup  map[sxidDedupKey]time.Time
	driver     int         // the driver branch, for the NVLink5 decode of the action label
	last       map[int]int // GPU index → last Xid
	dedup      map[dedupKey]time.Time
	recent     map[seriesKey]time.Time // live kernel-log Xids by arrival time
	pending    []pendingEvent
	stats      Stats
	readErr    error
	lastSeq    uint64
	haveSeq    bool
}

var (
	_ collector.Source  = (*Source)(nil)
	_ collector.XidSink = (*Source)(nil)
)

// New returns a Source; it reads nothing until Run.
func New(opts Options) *Source {
	s := &Source{
		opts:       opts,
		log:        opts.Logger,
		now:        opts.Now,
		byPCI:      map[telemetry.PCIBusID]collector.GPUInfo{},
		attached:   map[telemetry.PCIBusID]string{},
		pciCache:   map[string]telemetry.PCIBusID{},
		counts:     map[countKey]uint64{},
		suppressed: map[seriesKey]uint64{},
		sxids:      map[sxidKey]uint64{},
		sxidDedup:  map[sxidDedupKey]time.Time{},
		last:       map[int]int{},
		dedup:      map[dedupKey]time.Time{},
		recent:     map[seriesKey]time.Time{},
	}
	if s.opts.KmsgPath == "" {
		s.opts.KmsgPath = DefaultKmsgPath
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	switch {
	case opts.DedupWindow == 0:
		s.dedupWindow = DefaultDedupWindow
	case opts.DedupWindow < 0:
		s.dedupWindow = -1
	default:
		s.dedupWindow = opts.DedupWindow
	}
	s.mergeWindow = cmp.Or(max(opts.MergeWindow, 0), DefaultMergeWindow)
	s.poll = cmp.Or(max(opts.PollInterval, 0), DefaultPollInterval)
	s.maxDedup = cmp.Or(max(opts.MaxDedupEntries, 0), DefaultMaxDedupEntries)
	if opts.Inventory != nil {
		s.driver = telemetry.DriverMajor(opts.Inventory.DriverVersion)
		for _, g := range opts.Inventory.GPUs {
			if !g.PCIBusID.IsZero() {
				s.byPCI[g.PCIBusID] = g
			}
		}
	}
	return s
}

// Name returns "xid".
func (s *Source) Name() string { return string(telemetry.SourceXid) }

// Stats returns what the source has seen so far.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Lines = s.lines.Load()
	st.Live = s.live.Load()
	return st
}

// bootTime returns the boot time, computed once.
func (s *Source) bootTime() (time.Time, bool) {
	s.bootOnce.Do(func() {
		f := s.opts.BootTime
		if f == nil {
			f = func() (time.Time, error) { return systemBootTime(s.now()) }
		}
		t, err := f()
		if err != nil {
			s.log.Warn("xid: boot time unknown; kernel log lines are stamped when read", "error", err)
			return
		}
		s.boot, s.haveBoot = t, true
	})
	return s.boot, s.haveBoot
}

// ObserveXid receives an NVML Xid event. It never blocks: the event waits up to
// MergeWindow for the kernel-log line of the same Xid, which replaces it (the log
// has the message); without one it is accepted as it is.
func (s *Source) ObserveXid(ev collector.XidEvent) {
	now := s.now()
	if ev.Time.IsZero() {
		ev.Time = now
	}
	if ev.Origin == "" {
		ev.Origin = collector.OriginNVML
	}
	var out []collector.XidEvent
	s.mu.Lock()
	s.stats.NVMLEvents++
	key := s.resolveEvent(&ev)
	sk := seriesKey{key, ev.Xid}
	if t, ok := s.recent[sk]; ok && absDur(now.Sub(t)) < s.mergeWindow {
		s.stats.Merged++
	} else {
		if len(s.pending) >= maxPending {
			out = s.acceptLocked(out, s.pending[0].ev, s.pending[0].gpu)
			s.pending = slices.Delete(s.pending, 0, 1)
		}
		s.pending = append(s.pending, pendingEvent{ev: ev, gpu: key, arrived: now})
	}
	s.mu.Unlock()
	s.forward(out)
}

// resolveEvent fills the GPU identity of an NVML event from the inventory and
// returns its key. s.mu is held.
func (s *Source) resolveEvent(ev *collector.XidEvent) gpuKey {
	inv := s.opts.Inventory
	g, ok := inv.ByIndex(ev.GPUIndex)
	if ev.GPUIndex < 0 || !ok {
		if g2, ok2 := inv.ByUUID(ev.UUID); ok2 {
			g, ok = g2, true
		} else if g2, ok2 := s.byPCI[ev.PCIBusID]; ok2 && !ev.PCIBusID.IsZero() {
			g, ok = g2, true
		}
	}
	if ok {
		ev.GPUIndex = g.Index
		ev.UUID = cmp.Or(ev.UUID, g.UUID)
		if ev.PCIBusID.IsZero() {
			ev.PCIBusID = g.PCIBusID
		}
		return gpuKey{index: g.Index}
	}
	if ev.GPUIndex >= 0 {
		return gpuKey{index: ev.GPUIndex}
	}
	ev.GPUIndex = -1
	return gpuKey{index: -1, pci: ev.PCIBusID}
}

// flush accepts the NVML events whose merge window has passed.
func (s *Source) flush() {
	now := s.now()
	var out []collector.XidEvent
	s.mu.Lock()
	out = s.flushLocked(out, now)
	s.mu.Unlock()
	s.forward(out)
}

func (s *Source) flushLocked(out []collector.XidEvent, now time.Time) []collector.XidEvent {
	n := 0
	for _, p := range s.pending {
		if now.Sub(p.arrived) >= s.mergeWindow {
			out = s.acceptLocked(out, p.ev, p.gpu)
			n++
			continue
		}
		break // pending is in arrival order
	}
	if n > 0 {
		s.pending = slices.Delete(s.pending, 0, n)
	}
	return out
}

// observeLog handles one parsed NVRM line read from the kernel log at arrived.
func (s *Source) observeLog(l Line, at, arrived time.Time, live bool) {
	var out []collector.XidEvent
	var sx *collector.SXidEvent
	s.mu.Lock()
	switch l.Kind {
	case KindSXid:
		sx = s.acceptSXidLocked(l, at)
	case KindGPUAttach:
		if pci, ok := s.pciLocked(l.PCI); ok {
			if _, known := s.attached[pci]; known || len(s.attached) < maxAttached {
				s.attached[pci] = l.UUID
			}
		}
	case KindXid:
		s.stats.XidLines++
		pci, _ := s.pciLocked(l.PCI)
		ev := collector.XidEvent{Time: at, GPUIndex: -1, PCIBusID: pci, Xid: l.Xid, Message: l.Message,
			Origin: collector.OriginKmsg}
		key := gpuKey{index: -1, pci: pci}
		g, ok := s.byPCI[pci]
		if !ok {
			ev.UUID = s.attached[pci]
			g, ok = s.opts.Inventory.ByUUID(ev.UUID)
		}
		if ok {
			ev.GPUIndex, ev.UUID = g.Index, g.UUID
			key = gpuKey{index: g.Index}
		}
		sk := seriesKey{key, l.Xid}
		if live {
			out = s.mergeLocked(out, sk, arrived)
		}
		out = s.acceptLocked(out, ev, key)
	}
	s.mu.Unlock()
	s.forward(out)
	if sx != nil && s.opts.SXidSink != nil {
		s.opts.SXidSink.ObserveSXid(*sx)
	}
}

// acceptSXidLocked counts an SXid line unless it repeats one counted within
// the dedup window (same NVSwitch, SXid, link and message), and returns the event to
// forward, nil for a repeat. s.mu is held.
func (s *Source) acceptSXidLocked(l Line, at time.Time) *collector.SXidEvent {
	s.stats.SXidLines++
	pci, err := telemetry.ParsePCIBusID(l.PCI)
	if err != nil {
		return nil
	}
	k := sxidKey{nvswitch: l.NVSwitch, pci: pci, sxid: l.SXid, fatal: l.Fatal}
	if s.dedupWindow > 0 {
		dk := sxidDedupKey{k, l.Link, l.Message}
		if t, ok := s.sxidDedup[dk]; ok && absDur(at.Sub(t)) < s.dedupWindow {
			s.stats.Suppressed++
			return nil
		}
		if _, ok := s.sxidDedup[dk]; !ok && len(s.sxidDedup) >= maxSXid {
			for k, t := range s.sxidDedup {
				if absDur(at.Sub(t)) >= s.dedupWindow {
					delete(s.sxidDedup, k)
				}
			}
			if len(s.sxidDedup) >= maxSXid {
				clear(s.sxidDedup)
			}
		}
		s.sxidDedup[dk] = at
	}
	if _, ok := s.sxids[k]; ok || len(s.sxids) < maxSXid {
		s.sxids[k]++
	}
	return &collector.SXidEvent{Time: at, NVSwitch: l.NVSwitch, PCIBusID: pci, SXid: l.SXid, Fatal: l.Fatal,
		Link: l.Link, Message: l.Message}
}

// mergeLocked records a live kernel-log Xid for merging and drops the pending
// NVML events it stands for. s.mu is held.
func (s *Source) mergeLocked(out []collector.XidEvent, sk seriesKey, arrived time.Time) []collector.XidEvent {
	if _, ok := s.recent[sk]; !ok && len(s.recent) >= maxRecent {
		for k, t := range s.recent {
			if absDur(arrived.Sub(t)) >= s.mergeWindow {
				delete(s.recent, k)
			}
		}
		if len(s.recent) >= maxRecent {
			clear(s.recent)
		}
	}
	s.recent[sk] = arrived
	if len(s.pending) == 0 {
		return out
	}
	s.pending = slices.DeleteFunc(s.pending, func(p pendingEvent) bool {
		if p.gpu == sk.gpu && p.ev.Xid == sk.xid && absDur(arrived.Sub(p.arrived)) < s.mergeWindow {
			s.stats.Merged++
			return true
		}
		return false
	})
	return out
}

// acceptLocked runs one event through the flood dedup and counts it, appending
// it to out when it is to be forwarded. s.mu is held.
func (s *Source) acceptLocked(out []collector.XidEvent, ev collector.XidEvent, key gpuKey) []collector.XidEvent {
	sk := seriesKey{key, ev.Xid}
	if key.index >= 0 {
		s.last[key.index] = ev.Xid
	}
	if s.dedupWindow > 0 {
		dk := dedupKey{key, ev.Xid, ev.Message}
		if t, ok := s.dedup[dk]; ok && absDur(ev.Time.Sub(t)) < s.dedupWindow {
			s.stats.Suppressed++
			if _, ok := s.suppressed[sk]; ok || len(s.suppressed) < maxSeries {
				s.suppressed[sk]++
			}
			return out
		}
		if _, ok := s.dedup[dk]; !ok && len(s.dedup) >= s.maxDedup {
			s.evictLocked(ev.Time)
		}
		s.dedup[dk] = ev.Time
	}
	s.stats.Accepted++
	action, _, _ := telemetry.ClassifyXid(ev.Xid, ev.Message, s.driver)
	ck := countKey{sk, action}
	if _, ok := s.counts[ck]; ok || len(s.counts) < maxSeries {
		s.counts[ck]++
	}
	if s.opts.Sink != nil {
		out = append(out, ev)
	}
	return out
}

// evictLocked makes room in the dedup table: entries whose window has passed go
// first; if that is not enough (more distinct lines within one window than the
// table holds), the oldest quarter goes. A repeat of an evicted line counts again.
func (s *Source) evictLocked(now time.Time) {
	for k, t := range s.dedup {
		if absDur(now.Sub(t)) >= s.dedupWindow {
			delete(s.dedup, k)
		}
	}
	if len(s.dedup) < s.maxDedup {
		return
	}
	times := make([]time.Time, 0, len(s.dedup))
	for _, t := range s.dedup {
		times = append(times, t)
	}
	slices.SortFunc(times, time.Time.Compare)
	cut := times[len(times)/4]
	for k, t := range s.dedup {
		if !t.After(cut) {
			delete(s.dedup, k)
		}
	}
}

// pciLocked parses the driver's "0000:9b:00", caching the result. s.mu is held.
func (s *Source) pciLocked(driver string) (telemetry.PCIBusID, bool) {
	if p, ok := s.pciCache[driver]; ok {
		return p, true
	}
	p, err := telemetry.ParsePCIBusID("PCI:" + driver)
	if err != nil {
		return telemetry.PCIBusID{}, false
	}
	if len(s.pciCache) < maxAttached {
		s.pciCache[driver] = p
	}
	return p, true
}

// forward hands accepted events to the sink, outside the lock.
func (s *Source) forward(out []collector.XidEvent) {
	for _, ev := range out {
		s.opts.Sink.ObserveXid(ev)
	}
}

// Collect emits nothing: the xid source's series are health-critical and come from
// CollectHealth on the short schedule, so a full cycle does not repeat them.
func (s *Source) Collect(context.Context, func(telemetry.Sample)) error { return nil }

// CollectHealth emits the counters accumulated so far; it never waits for the log. It
// returns the reader's error, if the kernel log cannot be read, after emitting.
func (s *Source) CollectHealth(ctx context.Context, emit func(telemetry.Sample)) error {
	s.flush()
	now := s.now()
	s.mu.Lock()
	type row struct {
		k      seriesKey
		action telemetry.Action
		v      uint64
	}
	sortRows := func(rows []row) []row {
		slices.SortFunc(rows, func(a, b row) int {
			return cmp.Or(cmp.Compare(a.k.gpu.index, b.k.gpu.index), cmp.Compare(a.k.gpu.pci.String(), b.k.gpu.pci.String()),
				cmp.Compare(a.k.xid, b.k.xid), cmp.Compare(a.action, b.action))
		})
		return rows
	}
	counts := make([]row, 0, len(s.counts))
	for k, v := range s.counts {
		counts = append(counts, row{k.seriesKey, k.action, v})
	}
	suppressed := make([]row, 0, len(s.suppressed))
	for k, v := range s.suppressed {
		suppressed = append(suppressed, row{k: k, v: v})
	}
	counts, suppressed = sortRows(counts), sortRows(suppressed)
	type sxRow struct {
		k sxidKey
		v uint64
	}
	sxids := make([]sxRow, 0, len(s.sxids))
	for k, v := range s.sxids {
		sxids = append(sxids, sxRow{k, v})
	}
	slices.SortFunc(sxids, func(a, b sxRow) int {
		return cmp.Or(cmp.Compare(a.k.nvswitch, b.k.nvswitch), cmp.Compare(a.k.pci.String(), b.k.pci.String()),
			cmp.Compare(a.k.sxid, b.k.sxid), cmp.Compare(fmt.Sprint(a.k.fatal), fmt.Sprint(b.k.fatal)))
	})
	var last []int
	if inv := s.opts.Inventory; inv != nil {
		last = make([]int, len(inv.GPUs))
		for i, g := range inv.GPUs {
			last[i] = s.last[g.Index]
		}
	}
	lost := s.stats.RecordsLost
	attached := make(map[telemetry.PCIBusID]string, len(s.attached))
	for k, v := range s.attached {
		attached[k] = v
	}
	err := s.readErr
	s.mu.Unlock()

	labels := func(k seriesKey) telemetry.Labels {
		x := strconv.Itoa(k.xid)
		if k.gpu.index >= 0 {
			return telemetry.NewLabels(telemetry.LabelGPUIndex, strconv.Itoa(k.gpu.index), telemetry.LabelXid, x)
		}
		pci := ""
		if !k.gpu.pci.IsZero() {
			pci = k.gpu.pci.String()
		}
		return telemetry.NewLabels(telemetry.LabelGPUIndex, "", telemetry.LabelPCIBusID, pci,
			telemetry.LabelGPUUUID, attached[k.gpu.pci], telemetry.LabelXid, x)
	}
	if inv := s.opts.Inventory; inv != nil {
		for i, g := range inv.GPUs {
			emit(telemetry.Sample{Name: telemetry.DCGMXidErrors, Time: now, Value: float64(last[i]),
				Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, strconv.Itoa(g.Index))})
		}
	}
	for _, r := range counts {
		emit(telemetry.Sample{Name: telemetry.MetricXidErrorsTotal, Labels: withAction(labels(r.k), r.action), Value: float64(r.v), Time: now})
	}
	for _, r := range suppressed {
		emit(telemetry.Sample{Name: telemetry.MetricXidSuppressedLinesTotal, Labels: labels(r.k), Value: float64(r.v), Time: now})
	}
	emit(telemetry.Sample{Name: telemetry.MetricXidKmsgRecordsLostTotal, Value: float64(lost), Time: now})
	for _, r := range sxids {
		emit(telemetry.Sample{Name: telemetry.MetricNVSwitchSXidErrorsTotal, Value: float64(r.v), Time: now,
			Labels: telemetry.NewLabels(telemetry.LabelNVSwitch, strconv.Itoa(r.k.nvswitch), telemetry.LabelPCIBusID, r.k.pci.String(),
				telemetry.LabelSXid, strconv.Itoa(r.k.sxid), telemetry.LabelFatal, strconv.FormatBool(r.k.fatal))})
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// withAction adds the action label (none for ActionNone: the catalog gives no
// action for that Xid, or Xid 154 without a readable action).
func withAction(ls telemetry.Labels, a telemetry.Action) telemetry.Labels {
	if a == telemetry.ActionNone {
		return ls
	}
	at, _ := slices.BinarySearchFunc(ls, telemetry.LabelAction, func(l telemetry.Label, name string) int { return cmp.Compare(l.Name, name) })
	return slices.Insert(slices.Clone(ls), at, telemetry.Label{Name: telemetry.LabelAction, Value: string(a)})
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
