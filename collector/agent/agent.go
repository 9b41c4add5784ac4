// Package agent assembles the gpuwatch node agent: it initialises NVML, discovers
// the node's GPUs, builds every source from the explicit registry below, the health
// engine and the exporter, and runs them. NVML failing to start does not stop it:
// the PCI bus, InfiniBand and the kernel log are still read, and the health engine
// reports the driver missing while GPUs are on the bus (gpu-count). `gpuwatch agent`, `gpuwatch check` and
// `gpuwatch demo` (one agent per simulated node) all go through New.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/attribution"
	"github.com/gpuwatch/gpuwatch/collector/dcgm"
	"github.com/gpuwatch/gpuwatch/collector/health"
	"github.com/gpuwatch/gpuwatch/collector/healthpush"
	"github.com/gpuwatch/gpuwatch/collector/infiniband"
	"github.com/gpuwatch/gpuwatch/collector/nvlink"
	nvmlsrc "github.com/gpuwatch/gpuwatch/collector/nvml"
	"github.com/gpuwatch/gpuwatch/collector/pci"
	"github.com/gpuwatch/gpuwatch/collector/shipper"
	"github.com/gpuwatch/gpuwatch/collector/topology"
	"github.com/gpuwatch/gpuwatch/collector/xid"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Options configure an agent. Zero values take the documented defaults.
type Options struct {
	// Node is the node's name as the scheduler knows it (default: the host name).
	Node string
	// NVML is the library the agent reads GPUs through: go-nvml's nvml.New() on a
	// real node, a simulated node's NVML() in tests and the demo. The agent calls
	// Init and Shutdown.
	NVML gonvml.Interface

	SysfsRoot string // default "/sys"
	ProcRoot  string // default "/proc"
	KmsgPath  string // default "/dev/kmsg"
	// KmsgFromStart reads the kernel log's history (since boot) before following it.
	KmsgFromStart bool
	// BootTime overrides how kernel-log timestamps are turned into wall time (the
	// simulated nodes' logs count from the fleet's start).
	BootTime func() (time.Time, error)
	// BootID identifies this boot for the health engine's reset detection; "" reads
	// /proc/sys/kernel/random/boot_id.
	BootID string
	// StateDir keeps the health engine's baselines and conditions across restarts;
	// "" keeps them in memory only.
	StateDir string
	// StateFile is the file name inside StateDir (default "agent-health.json";
	// `gpuwatch check` keeps its own so it can run beside an agent).
	StateFile string
	// KmsgPoll is how often a kernel-log file (not /dev/kmsg) is polled for new
	// lines (default 250ms).
	KmsgPoll time.Duration

	Interval       time.Duration // full collection, default 10s
	HealthInterval time.Duration // health-critical fields, default 1s
	Timeout        time.Duration // one source's collection, default the health interval

	Labels     collector.LabelMode // default dcgm
	Timestamps bool
	// HostnameLabel is the key of the host name on DCGM_FI_* series with dcgm
	// labels: telemetry.DCGMLabelHostname ("hostname", dcgm-exporter 4.8 and
	// later; the default) or telemetry.DCGMLabelHostnameLegacy ("Hostname").
	// Every series carries node whichever it is.
	HostnameLabel string

	DCGMAddress string // default localhost:5555
	DCGMDisable bool
	// DCGM is the DCGM library the dcgm source reads profiling fields and health
	// watches through: nil is go-dcgm (a real node's host engine at DCGMAddress);
	// a simulated node passes its DCGM() in tests, the demo and --simulate.
	DCGM dcgm.Library

	KubeletSocket       string        // "" the default socket when present; "-" off
	AttributionInterval time.Duration // default 10s

	IBInclude, IBExclude string // device name patterns

	// RequirePersistenceMode makes a GPU whose persistence mode is off raise
	// persistence-mode (warning); `gpuwatch agent` and `check` turn it on by
	// default (--health.require-persistence-mode).
	RequirePersistenceMode bool

	// NVLinkDomain, Leaf, Spine and Block place the node in the fleet when set.
	NVLinkDomain, Leaf, Spine, Block string

	// Remote write (collector/shipper): RemoteWriteURL, when set, ships every
	// sample to a remote-write 1.0 endpoint through a queue in QueueDir ("":
	// memory) bounded by QueueMaxBytes (0: the shipper's default, 256 MiB).
	RemoteWriteURL string
	QueueDir       string
	QueueMaxBytes  int64
	// Instance and Job are the instance and job labels remote write adds to
	// every series, as a Prometheus scrape of /metrics adds them, so a store fed
	// either way holds the same label sets. Instance is the address a scrape
	// would reach the agent at (default: the node name); Job defaults to
	// telemetry.DefaultJob.
	Instance, Job string
	// RemoteWriteUnchanged is the longest a series whose value has not changed
	// goes unshipped (0: Interval, so health-critical fields read every second
	// cost the store their changes and one sample per full cycle; negative: ship
	// every sample).
	RemoteWriteUnchanged time.Duration

	// ServerURL, when set, is the gpuwatch server that gets this node's health
	// report the moment its verdict changes (collector/healthpush), and as a
	// heartbeat otherwise: the drain controller's fast path. Several servers
	// (the replicas of an elected leader, whose follower must hold every
	// node's latest report to take over) are given separated by commas: each
	// gets every report from a pusher of its own, so that one unreachable
	// replica never delays the others.
	ServerURL string
	// Transport, when set, carries the remote write and the health push: it
	// adds the bearer token and trusts the server's TLS CA (nil: Go's
	// default transport settings).
	Transport http.RoundTripper

	Version string
	Logger  *slog.Logger
	// Now is the clock; nil means time.Now. The demo passes simulated time.
	Now func() time.Time
}

// Agent is one node's collector.
type Agent struct {
	opts      Options
	Inventory *collector.Inventory
	Runner    *collector.Runner
	Exporter  *collector.Exporter
	Health    *health.Engine
	// Shipper sends the samples to RemoteWriteURL; nil without one.
	Shipper *shipper.Shipper
	// Pushers send health reports to ServerURL's servers, one each; none
	// without one.
	Pushers []*healthpush.Pusher

	nvml     *nvmlsrc.Source
	xid      *xid.Source
	ib       *infiniband.Source
	topology *topology.Source
	attr     *attribution.Source
	dcgm     *dcgm.Source
	nvmlErr  error
	closeOne sync.Once
}

// unavailable is a source whose library could not start: it reports why every
// cycle, so source_up says 0 and the error is on /sources.
type unavailable struct {
	name string
	err  error
}

func (u unavailable) Name() string { return u.name }
func (u unavailable) Collect(context.Context, func(telemetry.Sample)) error {
	return u.err
}

func (o *Options) fill() error {
	if o.Node == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("no --node given and the host name is unreadable: %w", err)
		}
		o.Node = h
	}
	if err := telemetry.NodeID(o.Node).Validate(); err != nil {
		return fmt.Errorf("node name: %w", err)
	}
	if o.NVML == nil {
		return errors.New("no NVML library given")
	}
	if o.SysfsRoot == "" {
		o.SysfsRoot = "/sys"
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.KmsgPath == "" {
		o.KmsgPath = "/dev/kmsg"
	}
	if o.KmsgPoll == 0 {
		o.KmsgPoll = 250 * time.Millisecond
	}
	if o.Interval == 0 {
		o.Interval = 10 * time.Second
	}
	if o.HealthInterval == 0 {
		o.HealthInterval = time.Second
	}
	if o.Interval < 0 || o.HealthInterval < 0 || o.Timeout < 0 {
		return fmt.Errorf("intervals must be positive: collect %s, health %s, timeout %s", o.Interval, o.HealthInterval, o.Timeout)
	}
	if o.HealthInterval > o.Interval {
		return fmt.Errorf("health interval %s must not exceed the collection interval %s", o.HealthInterval, o.Interval)
	}
	if o.Labels == "" {
		o.Labels = collector.LabelsDCGM
	}
	if _, err := collector.ParseLabelMode(string(o.Labels)); err != nil {
		return err
	}
	switch o.HostnameLabel {
	case "":
		o.HostnameLabel = telemetry.DCGMLabelHostname
	case telemetry.DCGMLabelHostname, telemetry.DCGMLabelHostnameLegacy:
	default:
		return fmt.Errorf("host-name label %q: want %s (dcgm-exporter 4.8 and later) or %s (before)",
			o.HostnameLabel, telemetry.DCGMLabelHostname, telemetry.DCGMLabelHostnameLegacy)
	}
	if o.Instance == "" {
		o.Instance = o.Node
	}
	if o.Job == "" {
		o.Job = telemetry.DefaultJob
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// New initialises NVML and builds the agent. NVML failing to start (no driver) does
// not fail the agent: InfiniBand and the kernel log are still read, and the NVML
// sources report the error.
func New(opts Options) (*Agent, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	a := &Agent{opts: opts}
	log := opts.Logger.With(telemetry.LabelNode, opts.Node)

	if ret := opts.NVML.Init(); ret != gonvml.SUCCESS {
		a.nvmlErr = nvmlsrc.InitError(opts.NVML, ret)
		log.Warn("NVML unavailable; GPU sources report down", "err", a.nvmlErr)
		a.Inventory = &collector.Inventory{Node: opts.Node}
	} else {
		// Discover returns what it could read alongside an error naming the GPUs it
		// could not; only a failed device count leaves no inventory.
		inv, err := nvmlsrc.Discover(opts.NVML, opts.Node)
		switch {
		case inv == nil:
			a.nvmlErr = fmt.Errorf("GPU discovery: %w", err)
			log.Warn("NVML cannot count GPUs; GPU sources report down", "err", err)
			opts.NVML.Shutdown()
			inv = &collector.Inventory{Node: opts.Node}
		case errors.Is(err, collector.ErrNoDevices):
			log.Info("NVML sees no GPUs on this node")
		case err != nil:
			log.Warn("GPU discovery incomplete", "err", err)
		}
		a.Inventory = inv
	}

	stateFile := ""
	if opts.StateDir != "" {
		if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
			return nil, fmt.Errorf("state directory: %w", err)
		}
		name := opts.StateFile
		if name == "" {
			name = "agent-health.json"
		}
		stateFile = filepath.Join(opts.StateDir, name)
	}
	// DCGM's health watches reach the engine as incidents; the source is built
	// below, so the engine asks through the agent.
	eng, err := health.New(health.Options{Node: opts.Node, StateFile: stateFile, Now: opts.Now,
		BootID: opts.BootID, Logger: log, Incidents: a.dcgmIncidents, RequirePersistenceMode: opts.RequirePersistenceMode})
	if err != nil {
		return nil, err
	}
	a.Health = eng

	a.xid = xid.New(xid.Options{KmsgPath: opts.KmsgPath, Inventory: a.Inventory, Sink: eng, SXidSink: eng,
		Now: opts.Now, FromStart: opts.KmsgFromStart, BootTime: opts.BootTime, Logger: log,
		PollInterval: opts.KmsgPoll})

	a.ib, err = infiniband.New(infiniband.Options{SysfsRoot: opts.SysfsRoot,
		DeviceInclude: opts.IBInclude, DeviceExclude: opts.IBExclude})
	if err != nil {
		return nil, fmt.Errorf("infiniband device filter: %w", err)
	}

	// The registry: every source the agent runs, in the order /sources lists them.
	var sources []collector.Source
	if a.nvmlErr == nil {
		a.nvml = nvmlsrc.New(opts.NVML, a.Inventory, nvmlsrc.Options{Now: opts.Now})
		a.topology = topology.New(opts.NVML, a.Inventory, topology.Options{SysfsRoot: opts.SysfsRoot,
			Node: opts.Node, NVLinkDomain: opts.NVLinkDomain, Leaf: opts.Leaf, Spine: opts.Spine, Block: opts.Block, Now: opts.Now})
		a.attr = attribution.New(attribution.Options{NVML: opts.NVML, Inventory: a.Inventory, ProcRoot: opts.ProcRoot,
			KubeletSocket: opts.KubeletSocket, RefreshEvery: opts.AttributionInterval, Logger: log, Now: opts.Now})
		sources = append(sources, a.nvml, nvlink.New(opts.NVML, a.Inventory, opts.Now))
	} else {
		// NVML's count reads 0 and the PCI bus still says how many GPUs there
		// are: the health engine names the difference (gpu-count).
		sources = append(sources, nvmlsrc.Unavailable(a.nvmlErr), unavailable{string(telemetry.SourceNVLink), a.nvmlErr})
	}
	sources = append(sources, pci.New(pci.Options{SysfsRoot: opts.SysfsRoot, Now: opts.Now}))
	if !opts.DCGMDisable {
		a.dcgm = dcgm.New(dcgm.Options{Address: opts.DCGMAddress, Inventory: a.Inventory, Logger: log,
			UpdateEvery: opts.Interval, Now: opts.Now, Library: opts.DCGM})
		sources = append(sources, a.dcgm)
	}
	sources = append(sources, a.ib, a.xid)
	if a.nvmlErr == nil {
		sources = append(sources, a.topology, a.attr)
	}

	// Remote write: the shipper reports itself as a source and is fed every
	// published snapshot as /metrics exposes it.
	if opts.RemoteWriteURL != "" {
		unchanged := opts.RemoteWriteUnchanged
		switch {
		case unchanged == 0:
			unchanged = opts.Interval
		case unchanged < 0:
			unchanged = 0
		}
		a.Shipper, err = shipper.New(shipper.Options{URL: opts.RemoteWriteURL, QueueDir: opts.QueueDir,
			MaxBytes: opts.QueueMaxBytes, ExtraLabels: telemetry.NewLabels(telemetry.LabelNode, opts.Node,
				telemetry.LabelInstance, opts.Instance, telemetry.LabelJob, opts.Job),
			UnchangedInterval: unchanged, Version: opts.Version, Logger: log, Now: opts.Now, Client: client(opts.Transport)})
		if err != nil {
			return nil, err
		}
		sources = append(sources, a.Shipper)
	}
	for _, u := range ServerURLs(opts.ServerURL) {
		p, err := healthpush.New(healthpush.Options{Server: u, Version: opts.Version, Logger: log, Client: client(opts.Transport)})
		if err != nil {
			if a.Shipper != nil {
				a.Shipper.Close()
			}
			return nil, err
		}
		a.Pushers = append(a.Pushers, p)
	}

	var attributor collector.Attributor
	if a.attr != nil {
		attributor = a.attr
	}
	a.Exporter = collector.NewExporter(collector.ExporterOptions{Node: opts.Node, Labels: opts.Labels, HostnameLabel: opts.HostnameLabel,
		Timestamps: opts.Timestamps, Attributor: attributor, Version: opts.Version})
	a.Runner, err = collector.NewRunner(collector.RunnerOptions{
		Sources: sources, Derivers: []collector.Deriver{eng}, Inventory: a.Inventory,
		Interval: opts.Interval, HealthInterval: opts.HealthInterval, Timeout: opts.Timeout,
		OnPublish: func(s *collector.Snapshot) {
			if len(a.Pushers) > 0 {
				r := eng.Report()
				for _, p := range a.Pushers {
					p.Offer(r) // first: a changed verdict leaves at once
				}
			}
			// Publishing renders nothing: a scrape renders the snapshot it reads,
			// and the shipper reads only the series it has not sent.
			x := a.Exporter.Publish(s)
			if a.Shipper != nil {
				a.Shipper.Enqueue(x)
			}
		},
		Logger: log, Now: opts.Now,
	})
	if err != nil {
		if a.Shipper != nil {
			a.Shipper.Close()
		}
		return nil, err
	}
	return a, nil
}

// Run starts the background readers and the collection loop, and blocks until
// ctx is done; then it saves the health state and shuts NVML down.
func (a *Agent) Run(ctx context.Context) error {
	defer a.Close()
	wait := a.Start(ctx)
	err := a.Runner.Run(ctx)
	wait()
	return err
}

// Start starts the background readers (kernel log, NVML events, attribution) and
// returns a function that waits for them to stop after ctx is done. Run calls it;
// `gpuwatch check` and the demo call it and then drive cycles with Collect.
func (a *Agent) Start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	bg := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				a.opts.Logger.Warn("background reader stopped", telemetry.LabelSource, name, "err", err)
			}
		}()
	}
	bg("xid", a.xid.Run)
	if a.nvml != nil {
		bg("nvml-events", func(ctx context.Context) error { return a.nvml.WatchEvents(ctx, a.xid) })
	}
	if a.attr != nil {
		bg("attribution", a.attr.Run)
	}
	if a.Shipper != nil {
		bg("shipper", a.Shipper.Run)
	}
	for _, p := range a.Pushers {
		bg("health-push", p.Run)
	}
	return wg.Wait
}

// Collect runs one cycle now (full: every field; otherwise the health-critical
// ones), after the kernel-log reader has caught up with what is logged and the
// attribution cache has been refreshed, and returns the published snapshot. Start
// must be running. An unreadable kernel log does not stop the cycle: the xid
// source reports it.
func (a *Agent) Collect(ctx context.Context, full bool) *collector.Snapshot {
	syncCtx, cancel := context.WithTimeout(ctx, a.opts.HealthInterval+5*time.Second)
	_ = a.xid.Sync(syncCtx)
	cancel()
	if a.attr != nil && full {
		_ = a.attr.Refresh(ctx)
	}
	return a.Runner.Cycle(ctx, full)
}

// Close saves the health state, closes the files the InfiniBand source keeps
// open, stops DCGM and shuts NVML down. Run calls it.
func (a *Agent) Close() error {
	var errs []error
	a.closeOne.Do(func() {
		errs = append(errs, a.Health.Save(), a.ib.Close())
		if a.Shipper != nil {
			errs = append(errs, a.Shipper.Close()) // Run closes its own queue; this one never ran
		}
		if a.dcgm != nil {
			errs = append(errs, a.dcgm.Close())
		}
		if a.nvmlErr == nil {
			if ret := a.opts.NVML.Shutdown(); ret != gonvml.SUCCESS {
				errs = append(errs, fmt.Errorf("NVML shutdown: %s", gonvml.ErrorString(ret)))
			}
		}
	})
	return errors.Join(errs...)
}

// dcgmIncidents turns DCGM's failed health watches into conditions.
func (a *Agent) dcgmIncidents() []telemetry.Condition {
	if a.dcgm == nil {
		return nil
	}
	incs := a.dcgm.Incidents()
	if len(incs) == 0 {
		return nil
	}
	out := make([]telemetry.Condition, 0, len(incs))
	for _, inc := range incs {
		out = append(out, inc.Condition(telemetry.NodeID(a.opts.Node)))
	}
	return out
}

// client is an HTTP client over t, nil (the caller's default) without one.
func client(t http.RoundTripper) *http.Client {
	if t == nil {
		return nil
	}
	return &http.Client{Transport: t}
}

// Handler serves the agent's HTTP endpoints.
func (a *Agent) Handler() http.Handler {
	return collector.NewHandler(collector.HandlerOptions{
		Runner: a.Runner, Exporter: a.Exporter, Now: a.opts.Now,
		Health: func() any { return a.Health.Report() },
		Topology: func() any {
			if a.topology == nil {
				return nil
			}
			if t := a.topology.Topology(); t != nil {
				return t
			}
			return nil
		},
	})
}

// Topology returns the node's discovered topology, nil before discovery.
func (a *Agent) Topology() *telemetry.NodeTopology {
	if a.topology == nil {
		return nil
	}
	return a.topology.Topology()
}

// ServerURLs splits Options.ServerURL's comma-separated list of servers,
// blanks trimmed and empty entries dropped.
func ServerURLs(list string) []string {
	var out []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}
