package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/serve"
	"github.com/gpuwatch/gpuwatch/internal/tlsconf"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// agentFlags are the flags `gpuwatch agent` and `gpuwatch check` share: where the
// hardware is read from and how.
type agentFlags struct {
	o         agent.Options
	labels    string
	logLevel  string
	simulate  string
	faults    string
	seed      int64
	speed     float64
	stateDir  string
	fromStart bool
	fs        *flag.FlagSet
}

func (f *agentFlags) register(fs *flag.FlagSet, defaultStateDir string) {
	f.fs = fs
	fs.StringVar(&f.o.Node, "node", "", "node name as the scheduler knows it (default: the host name)")
	fs.StringVar(&f.o.SysfsRoot, "path.sysfs", "/sys", "sysfs mount point (InfiniBand and PCI devices are read under it)")
	fs.StringVar(&f.o.ProcRoot, "path.proc", "/proc", "procfs mount point (process cgroups for Slurm job attribution)")
	fs.StringVar(&f.o.KmsgPath, "path.kmsg", "/dev/kmsg", "kernel log: /dev/kmsg, or a file in kmsg, dmesg or journalctl format")
	fs.BoolVar(&f.fromStart, "kmsg.from-start", true, "read the kernel log's history since boot before following it (Xids logged while the agent was down)")
	fs.StringVar(&f.stateDir, "state-dir", defaultStateDir, "directory for health baselines and conditions that survive restarts (\"\": memory only)")
	fs.DurationVar(&f.o.Interval, "collect.interval", 10*time.Second, "interval between full collections")
	fs.DurationVar(&f.o.HealthInterval, "collect.health-interval", time.Second, "interval between collections of health-critical fields (Xids, ECC, row remapping, NVLink and InfiniBand state)")
	fs.DurationVar(&f.o.Timeout, "collect.timeout", 0, "longest one source may take per collection (default: the health interval)")
	fs.StringVar(&f.o.DCGMAddress, "dcgm.address", "localhost:5555", "DCGM host engine (host:port or unix socket path) for profiling fields and health watches")
	fs.BoolVar(&f.o.DCGMDisable, "dcgm.disable", false, "do not use DCGM even when a host engine is reachable")
	fs.StringVar(&f.o.KubeletSocket, "kubelet.socket", "", "kubelet pod-resources socket for pod attribution (default: /var/lib/kubelet/pod-resources/kubelet.sock when present; \"-\": off)")
	fs.DurationVar(&f.o.AttributionInterval, "attribution.interval", 10*time.Second, "how often the GPU → job/pod attribution cache is refreshed")
	fs.StringVar(&f.o.IBInclude, "infiniband.include", "", "regexp: read only InfiniBand devices whose name matches")
	fs.StringVar(&f.o.IBExclude, "infiniband.exclude", "", "regexp: never read InfiniBand devices whose name matches")
	fs.BoolVar(&f.o.RequirePersistenceMode, "health.require-persistence-mode", true, "a GPU whose persistence mode is off is a warning (persistence-mode): the driver tears an idle GPU down without it (nvidia-persistenced)")
	fs.StringVar(&f.o.NVLinkDomain, "topology.nvlink-domain", "", "NVLink domain (clique) the node belongs to, for gpuwatch_topology_node_info")
	fs.StringVar(&f.o.Leaf, "topology.leaf", "", "leaf switch above the node")
	fs.StringVar(&f.o.Spine, "topology.spine", "", "spine switch above the leaf")
	fs.StringVar(&f.o.Block, "topology.block", "", "block (pod, super-pod) above the spine")
	fs.StringVar(&f.logLevel, "log.level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.simulate, "simulate", "", "run on one simulated node instead of the real hardware: hgx-h100 or dgx-a100")
	fs.StringVar(&f.faults, "faults", "", "with --simulate: fault scenario YAML file to play on the simulated node")
	fs.Int64Var(&f.seed, "seed", 1, "with --simulate: seed of the simulated node and its workload")
	fs.Float64Var(&f.speed, "speed", 1, "with --simulate: simulated seconds per wall-clock second")
}

// set says whether the flag was given on the command line.
func (f *agentFlags) set(name string) bool {
	found := false
	f.fs.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

func (f *agentFlags) logger(stderr io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("%w: --log.level %q: want debug, info, warn or error", errUsage, f.logLevel)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// newNVML is the NVML library a real node is read through: go-nvml, which
// loads libnvidia-ml.so.1 at Init. Tests replace it.
var newNVML = func() gonvml.Interface { return gonvml.New() }

// options turns the flags into agent options; with --simulate it also builds the
// simulated node (returned so the caller can advance it) under a temporary
// directory that cleanup removes.
func (f *agentFlags) options(stderr io.Writer) (o agent.Options, sim *simNode, err error) {
	o = f.o
	if o.Logger, err = f.logger(stderr); err != nil {
		return o, nil, err
	}
	mode, err := collector.ParseLabelMode(f.labels)
	if err != nil {
		return o, nil, fmt.Errorf("%w: --labels: %v", errUsage, err)
	}
	o.Labels = mode
	o.StateDir = f.stateDir
	o.KmsgFromStart = f.fromStart
	o.Version = version
	if f.simulate == "" {
		if f.faults != "" {
			return o, nil, fmt.Errorf("%w: --faults needs --simulate", errUsage)
		}
		o.NVML = newNVML()
		return o, nil, nil
	}
	// The simulated node has its own files and its own DCGM; a flag pointing elsewhere
	// would be silently ignored, so it is an error. Its health state stays in
	// memory unless asked: a simulated node's state file must never replace a real
	// node's in /var/lib/gpuwatch.
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, n := range []string{"path.sysfs", "path.proc", "path.kmsg", "dcgm.address", "kubelet.socket"} {
		if set[n] {
			return o, nil, fmt.Errorf("%w: --%s cannot be used with --simulate: the simulated node has its own", errUsage, n)
		}
	}
	if !set["state-dir"] {
		o.StateDir = ""
	}
	sim, err = newSimNode(f.simulate, f.faults, f.seed, f.speed)
	if err != nil {
		return o, nil, err
	}
	sim.configure(&o)
	return o, sim, nil
}

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("agent", stderr)
	var f agentFlags
	f.register(fs, "/var/lib/gpuwatch")
	listen := fs.String("listen", ":9400", "address to serve /metrics, /health, /topology, /healthz and /debug/pprof on")
	fs.StringVar(&f.labels, "labels", "dcgm", "label keys on DCGM_FI_* series: dcgm (dcgm-exporter's: gpu, UUID, modelName, hostname, ...) or snake (gpuwatch's lower_snake: gpu_index, gpu_uuid, model, ...); every series carries node either way")
	fs.StringVar(&f.o.HostnameLabel, "labels.hostname", "hostname", "with --labels dcgm: the host-name label's key, hostname (dcgm-exporter 4.8 and later) or Hostname (before 4.8, for dashboards written for it)")
	fs.BoolVar(&f.o.Timestamps, "metrics.timestamps", false, "expose each sample's collection time on /metrics (Prometheus then stops marking vanished series stale)")
	// Remote write (collector/shipper).
	fs.StringVar(&f.o.RemoteWriteURL, "remote-write", "", "remote-write 1.0 endpoint to ship every sample to: the gpuwatch server's, VictoriaMetrics's or Prometheus's http://HOST:PORT/api/v1/write")
	fs.StringVar(&f.o.ServerURL, "server", "", "gpuwatch server (http://HOST:9402) that gets this node's health report the moment it changes, for drain decisions; several replicas (an elected leader and its followers) separated by commas, each pushed to independently")
	fs.DurationVar(&f.o.RemoteWriteUnchanged, "remote-write.unchanged-interval", 0, "with --remote-write: the longest a series whose value has not changed goes unshipped; a change ships at once (0: --collect.interval; negative: ship every sample, health-critical fields every --collect.health-interval)")
	fs.StringVar(&f.o.QueueDir, "queue.dir", "", "with --remote-write: directory of the on-disk queue that holds samples while the store is unreachable and across restarts (\"\": memory only)")
	fs.Int64Var(&f.o.QueueMaxBytes, "queue.max-bytes", 256<<20, "with --remote-write: bound of the queue in bytes; past it the oldest samples are dropped and counted")
	fs.StringVar(&f.o.Instance, "remote-write.instance", "", "with --remote-write: the instance label added to every series, as a Prometheus scrape of this agent would add it (default: --listen with an unspecified host replaced by --node, e.g. gpu07:9400)")
	fs.StringVar(&f.o.Job, "remote-write.job", telemetry.DefaultJob, "with --remote-write: the job label added to every series, as a scrape job of that name would add it")
	// What the agent sends with: its token and the TLS files to trust the server with.
	tokenFile := fs.String("auth.token-file", "", "file holding this agent's bearer token, sent with remote write and health push (a token with role agent; default: $"+auth.EnvToken+")")
	var clientTLS tlsconf.ClientFiles
	fs.StringVar(&clientTLS.CAFile, "tls.ca-file", "", "CA certificates (PEM) that sign the server's (or store's) certificate, for https:// in --remote-write and --server")
	fs.StringVar(&clientTLS.CertFile, "tls.client-cert-file", "", "client certificate (PEM) for a server that asks for mutual TLS")
	fs.StringVar(&clientTLS.KeyFile, "tls.client-key-file", "", "key of --tls.client-cert-file")
	// The agent's own listener.
	var sec securityFlags
	sec.register(fs, false)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch agent [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Runs the node agent: reads the GPUs (NVML, DCGM), NVLink, InfiniBand and the kernel log in the")
		fmt.Fprintln(stderr, "background, judges GPU health, and serves dcgm-exporter-compatible /metrics; with --remote-write")
		fmt.Fprintln(stderr, "it ships every sample to a store, with --server it pushes health reports to the gpuwatch server.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o, sim, err := f.options(stderr)
	if err != nil {
		return err
	}
	if sim != nil {
		defer sim.cleanup()
	}
	if o.RemoteWriteURL == "" && (f.set("queue.dir") || f.set("queue.max-bytes")) {
		return fmt.Errorf("%w: --queue.dir and --queue.max-bytes need --remote-write", errUsage)
	}
	if o.QueueMaxBytes <= 0 {
		return fmt.Errorf("%w: --queue.max-bytes must be positive, got %d", errUsage, o.QueueMaxBytes)
	}
	if o.RemoteWriteURL == "" && (f.set("remote-write.instance") || f.set("remote-write.job")) {
		return fmt.Errorf("%w: --remote-write.instance and --remote-write.job need --remote-write", errUsage)
	}
	if o.Job == "" {
		return fmt.Errorf("%w: --remote-write.job must not be empty", errUsage)
	}
	if o.RemoteWriteURL != "" || o.ServerURL != "" {
		if o.Transport, err = clientTransport(*tokenFile, clientTLS, os.Getenv(auth.EnvToken)); err != nil {
			return err
		}
	} else if *tokenFile != "" {
		return fmt.Errorf("%w: --auth.token-file is sent with --remote-write and --server; give one of them", errUsage)
	}
	authOpts, listenOpts, err := sec.options(o.Logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", *listen, err)
	}
	if o.Instance == "" {
		// What a scrape would reach: the port bound (--listen :0 picks one).
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		if o.Instance, err = scrapeInstance(*listen, port, o.Node); err != nil {
			ln.Close()
			return err
		}
	}
	a, err := agent.New(o)
	if err != nil {
		ln.Close()
		return err
	}
	authOpts.Required = agentRequiredRole
	authOpts.Logger = o.Logger.With("component", "auth")
	listenOpts.Name = "agent"
	srv := serve.New(auth.Middleware(authOpts, a.Handler()), listenOpts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- a.Run(ctx) }()
	if sim != nil {
		go func() { errc <- sim.run(ctx) }()
	}
	o.Logger.Info("gpuwatch agent started", "node", a.Inventory.Node, "gpus", len(a.Inventory.GPUs),
		"listen", ln.Addr().String(), "simulate", f.simulate, "remote_write", o.RemoteWriteURL != "")
	fmt.Fprintf(stdout, "gpuwatch agent on %s: %d GPUs, serving %s://%s/metrics\n", a.Inventory.Node, len(a.Inventory.GPUs), srv.Scheme(), ln.Addr())
	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
	}
	cancel()
	shutdownCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	srv.Shutdown(shutdownCtx)
	if first != nil && !errors.Is(first, http.ErrServerClosed) {
		return first
	}
	return nil
}

// scrapeInstance is the instance label a Prometheus scrape of the agent would
// give its series: the listen address's host and the port bound, an unspecified
// host (":9400", "0.0.0.0:9400", "[::]:9400") replaced by the node name, or the
// host name when the node is not given either.
func scrapeInstance(listen, port, node string) (string, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("%w: --listen %q: %v", errUsage, listen, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = node
		if host == "" {
			if host, err = os.Hostname(); err != nil {
				return "", fmt.Errorf("no --node or --remote-write.instance given and the host name is unreadable: %w", err)
			}
		}
	}
	return net.JoinHostPort(host, port), nil
}

// agentRequiredRole is the agent listener's access table: /healthz is open,
// the profiler needs admin (it exposes the process and costs CPU), every
// other endpoint only reads.
func agentRequiredRole(r *http.Request) auth.Role {
	p := path.Clean("/" + r.URL.Path)
	switch {
	case p == "/healthz":
		return auth.RoleNone
	case strings.HasPrefix(p, "/debug/"), r.Method != http.MethodGet && r.Method != http.MethodHead:
		return auth.RoleAdmin
	default:
		return auth.RoleRead
	}
}

// simNode is the one simulated node `--simulate` runs on.
type simNode struct {
	fleet *simhw.Fleet
	node  *simhw.Node
	gen   *simhw.WorkloadGenerator
	dir   string
	speed float64
	// until is when the scenario's last fault has played out.
	until time.Duration
}

func newSimNode(shape, faults string, seed int64, speed float64) (*simNode, error) {
	if speed <= 0 {
		return nil, fmt.Errorf("%w: --speed must be positive, got %g", errUsage, speed)
	}
	sn := simhw.ShapeName(shape)
	if _, err := simhw.ShapeByName(sn); err != nil {
		return nil, fmt.Errorf("%w: --simulate %q: want hgx-h100 or dgx-a100", errUsage, shape)
	}
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "gpuwatch-agent-sim-")
	if err != nil {
		return nil, fmt.Errorf("cannot create the simulated node's directory: %w", err)
	}
	s := &simNode{dir: dir, speed: speed}
	fail := func(err error) (*simNode, error) { os.RemoveAll(dir); return nil, err }
	s.fleet, err = simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: sn, Seed: seed, Root: dir, Start: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return fail(fmt.Errorf("cannot build the simulated node: %w", err))
	}
	s.node = s.fleet.Nodes()[0]
	if faults != "" {
		sc, err := simhw.LoadScenario(faults)
		if err != nil {
			return fail(err)
		}
		// A scenario written for a fleet names its nodes; on the one simulated node
		// every fault lands here.
		for i := range sc.Faults {
			sc.Faults[i].Node = s.node.Name()
			s.until = max(s.until, sc.Faults[i].At+sc.Faults[i].Duration)
		}
		if err := s.fleet.Schedule(sc); err != nil {
			return fail(fmt.Errorf("cannot schedule the faults from %s: %w", faults, err))
		}
	}
	s.gen = simhw.NewWorkloadGenerator(s.fleet, simhw.WorkloadOptions{Seed: seed})
	if err := s.gen.Step(); err != nil {
		return fail(err)
	}
	if err := s.fleet.Advance(0); err != nil {
		return fail(err)
	}
	return s, nil
}

func (s *simNode) configure(o *agent.Options) {
	if o.Node == "" {
		o.Node = s.node.Name()
	}
	o.NVML = s.node.NVML()
	o.SysfsRoot = s.node.SysRoot()
	o.ProcRoot = s.node.ProcRoot()
	o.KmsgPath = s.node.KmsgPath()
	boot := s.node.Boot()
	o.BootTime = func() (time.Time, error) { return boot, nil }
	o.BootID = fmt.Sprintf("simulated-%s-%d", s.node.Name(), boot.Unix())
	o.Now = s.fleet.Now
	if o.KubeletSocket == "" {
		o.KubeletSocket = "-"
	}
	o.DCGM = s.node.DCGM() // the simulated node's host engine, unless --dcgm.disable
}

// run advances the simulated node in step with the wall clock at the chosen speed.
func (s *simNode) run(ctx context.Context) error {
	const tick = 250 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := s.fleet.Advance(time.Duration(float64(tick) * s.speed)); err != nil {
			return fmt.Errorf("simulated hardware failed to advance: %w", err)
		}
		if err := s.gen.Step(); err != nil {
			return fmt.Errorf("simulated workload failed: %w", err)
		}
	}
}

// playScenario advances the node until its scenario has played out, for a
// one-shot check.
func (s *simNode) playScenario() error {
	const step = 5 * time.Second
	for elapsed := time.Duration(0); elapsed <= s.until; elapsed += step {
		if err := s.fleet.Advance(step); err != nil {
			return fmt.Errorf("simulated hardware failed to advance: %w", err)
		}
		if err := s.gen.Step(); err != nil {
			return fmt.Errorf("simulated workload failed: %w", err)
		}
	}
	return nil
}

func (s *simNode) cleanup() { os.RemoveAll(s.dir) }
