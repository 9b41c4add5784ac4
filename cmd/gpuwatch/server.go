//go:build !agentonly

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
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/kube"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/scheduler/plugins/straggler"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/ingest"
)

// promDuration is a flag.Value in Prometheus's duration syntax ("15d", "2h30m").
type promDuration struct{ d *time.Duration }

func (p promDuration) String() string {
	if p.d == nil {
		return ""
	}
	return model.Duration(*p.d).String()
}

func (p promDuration) Set(s string) error {
	d, err := model.ParseDuration(s)
	if err != nil {
		return err
	}
	*p.d = time.Duration(d)
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func runServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("server", stderr)
	o := server.Options{Retention: 15 * 24 * time.Hour, OutOfOrderWindow: 2 * time.Hour, Limits: ingest.DefaultLimits(), Version: version}
	listen := fs.String("listen", ":9402", "address to serve the ingest endpoints, the Prometheus query API and /metrics on")
	fs.StringVar(&o.DataDir, "data-dir", "data", "directory of the embedded store (TSDB blocks and WAL)")
	fs.Var(promDuration{&o.Retention}, "retention", "how long the embedded store keeps samples (Prometheus syntax: 15d, 12h)")
	fs.Int64Var(&o.RetentionBytes, "retention.size", 0, "largest size in bytes of the embedded store's blocks (0: no limit)")
	fs.Int64Var(&o.MinFreeBytes, "store.min-free-bytes", 64<<20, "the embedded store refuses writes (503: agents keep their queues) while its disk has less free space than this, so that its WAL never meets a full disk (negative: no check)")
	fs.Var(promDuration{&o.OutOfOrderWindow}, "out-of-order-window", "how far back agents may replay samples buffered during an outage")
	fs.StringVar(&o.StoreURL, "store.url", "", "use this VictoriaMetrics or Prometheus instead of the embedded store (http://host:port)")
	fs.StringVar(&o.StoreWriteURL, "store.write-url", "", "with --store.url: where the server writes the report's summaries by remote write (default: --store.url + /api/v1/write; Prometheus needs --web.enable-remote-write-receiver)")
	downsample := fs.Bool("report.downsample", true, "keep five-minute and hourly summaries of every GPU allocation in the store, so that a week's utilization report reads them instead of every sample (docs/reports.md)")
	dsOpts := report.DownsampleOptions{}
	fs.DurationVar(&dsOpts.Delay, "report.downsample-delay", 2*time.Minute, "with --report.downsample: summarize an interval this long after it ends (samples that arrive later are left out of its summary)")
	fs.Int64Var(&o.Limits.MaxBodyBytes, "limits.request-bytes", o.Limits.MaxBodyBytes, "largest compressed ingest request body")
	fs.IntVar(&o.Limits.MaxSamplesPerRequest, "limits.samples", o.Limits.MaxSamplesPerRequest, "most samples in one ingest request")
	fs.IntVar(&o.Limits.MaxSeriesPerRequest, "limits.series", o.Limits.MaxSeriesPerRequest, "most series in one ingest request")
	fs.IntVar(&o.Limits.MaxLabelsPerSeries, "limits.labels", o.Limits.MaxLabelsPerSeries, "most labels on one series")
	fs.IntVar(&o.Limits.MaxLabelValueLength, "limits.label-value-length", o.Limits.MaxLabelValueLength, "longest label value")
	fs.Uint64Var(&o.Limits.MaxActiveSeries, "limits.active-series", o.Limits.MaxActiveSeries, "most active series in the store before new ones are refused (0: no limit)")
	fs.StringVar(&o.StateDir, "state-dir", "", "directory of the control plane's state: fair-share ledger, drain state and audit log (default: --data-dir)")
	fsConfig := fs.String("fairshare.config", "", "fair-share accounts, shares and charge policy (YAML); turns on fair share charged by measured GPU use")
	fs.DurationVar(&o.FairShareInterval, "fairshare.interval", time.Minute, "with --fairshare.config: how often measured use is read from the store into the ledger")
	fs.DurationVar(&o.FairShareRebuild, "fairshare.rebuild", 14*24*time.Hour, "with --fairshare.config: when no ledger is saved yet (or it was deleted), rebuild usage from this much of the store's history")
	fsSlurm := fs.Bool("fairshare.slurm", false, "with --fairshare.config: set every pending Slurm job's SiteFactor from its user's factor (scontrol from PATH, SLURM_CONF honoured; needs PriorityType=priority/multifactor)")
	fsScale := fs.Int64("fairshare.slurm-scale", 10000, "with --fairshare.slurm: SiteFactor = factor × this")
	placementOn := fs.Bool("placement", true, "run the placement service: fleet snapshot from the store, place/release/explain and the kube-scheduler extender under /api/gpuwatch/v1")
	placementInterval := fs.Duration("placement.interval", 10*time.Second, "how often the placement snapshot is rebuilt from the store")
	stragglerWeight := fs.Float64("placement.straggler-weight", placement.StragglerWeight, "weight of the straggler scorer among the placement scores (gpuset and fragmentation 2, the others 1); 0 ignores stragglers")
	stragglerWindow := fs.Duration("placement.straggler-window", snapshot.DefaultStragglerWindow, "how long a GPU named a straggler (gpuwatch_straggler_gpu) stays less preferred by placement")
	placementSlurm := fs.Bool("placement.slurm", false, "add Slurm's running jobs (scontrol/squeue from PATH) to the allocations agents report")
	site := topologyInput{names: topologyFlagNames{"--placement.ibnetdiscover", "--placement.guid-map", "--placement.site-yaml", "--placement.slurm-topology", "--placement.k8s-nodes"}}
	fs.StringVar(&site.IBNetDiscover, "placement.ibnetdiscover", "", "place nodes in the fabric from this ibnetdiscover dump instead of the agents' labels")
	fs.StringVar(&site.GUIDMap, "placement.guid-map", "", "with --placement.ibnetdiscover: GUID→host map")
	fs.StringVar(&site.SiteYAML, "placement.site-yaml", "", "place nodes in the fabric from this site YAML (nodes with leaf, spine, core, nvlink_domain)")
	fs.StringVar(&site.SlurmTopology, "placement.slurm-topology", "", "place nodes in the fabric from this Slurm topology.conf")
	fs.StringVar(&site.KubeNodes, "placement.k8s-nodes", "", "place nodes in the fabric from their Kubernetes labels (topograph scheme), given as `kubectl get nodes -o json` output")
	k8sLive := fs.Bool("placement.k8s-live", false, "place nodes in the fabric from their live Kubernetes labels (topograph scheme, what `gpuwatch topology labels` writes), read from the API (--kubeconfig or in-cluster) every --placement.k8s-interval; needs list nodes")
	k8sSelector := fs.String("placement.k8s-selector", "", "with --placement.k8s-live: only the nodes this label selector matches (nvidia.com/gpu.present=true)")
	k8sInterval := fs.Duration("placement.k8s-interval", time.Minute, "with --placement.k8s-live: how often the labels are read again")
	otlp := fs.String("otlp.endpoint", "", "OTLP/HTTP endpoint (http://collector:4318) for a trace span per placement decision (default: no tracing)")
	var df drainFlags
	fs.StringVar(&df.actuator, "actuator", "log", "drain controller's actuator: slurm (scontrol from PATH, SLURM_CONF honoured), kubernetes (cordon, taint, condition), log (print what it would do) or none (no controller)")
	fs.StringVar(&df.policy, "policy", "", "drain policy (YAML): which conditions drain, cordon, reboot or only exclude a GPU; hysteresis, budget, probation (default: the built-in policy)")
	fs.StringVar(&df.budget, "drain.budget", "10%", "safety budget: most nodes automation may drain within --drain.window, a share of the known nodes (10%) or a count (3); overrides the policy's")
	fs.DurationVar(&df.window, "drain.window", time.Hour, "the budget's sliding window; overrides the policy's")
	fs.BoolVar(&df.dryRun, "drain.dry-run", false, "decide and audit, never act")
	fs.StringVar(&df.kubeconfig, "kubeconfig", "", "with --actuator kubernetes, --leader-elect or --placement.k8s-live: kubeconfig file (default: in-cluster configuration)")
	fs.StringVar(&df.scontrol, "slurm.scontrol", "", "with --actuator slurm: the scontrol binary (default: from PATH)")
	var ef electFlags
	ef.register(fs)
	fs.DurationVar(&df.verify, "drain.verify-interval", 0, "how often a node gpuwatch holds drained is checked to still be drained while its fault persists (default 5m)")
	logLevel := fs.String("log.level", "info", "log level: debug, info, warn or error")
	var sec securityFlags
	sec.register(fs, true)
	ro := &server.RulesOptions{}
	var ruleFiles, alertmanagers stringList
	fs.Var(&ruleFiles, "rules", "more Prometheus rule files (repeatable; globs); a group named like a built-in group replaces it")
	fs.BoolVar(&ro.Builtin, "rules.builtin", true, "evaluate the alerting and recording rules built into the binary (alerts/*.rules.yml)")
	fs.DurationVar(&ro.Interval, "rules.interval", 15*time.Second, "how often rules are evaluated")
	fs.Var(&alertmanagers, "alertmanager.url", "Alertmanager to send alerts to (http://host:9093; repeatable)")
	fs.StringVar(&ro.ExternalURL, "web.external-url", "", "this server's URL as people reach it (alerts link to it)")
	fs.StringVar(&ro.RunbookBase, "alerts.runbook-base", "", "where the built-in alerts' runbook_url points (default: the runbooks in gpuwatch's repository)")
	fs.StringVar(&o.UI.GrafanaURL, "ui.grafana-url", "", "Grafana's URL (https://grafana.example.org): the web UI's node and GPU pages link to its gpuwatch dashboards")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch server [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Runs the control plane: the store (agents remote-write to /api/v1/write or import to")
		fmt.Fprintln(stderr, "/api/v1/import/prometheus; Grafana queries the Prometheus API under /api/v1/), the drain")
		fmt.Fprintln(stderr, "controller, placement and the kube-scheduler extender, fair share, and the alerting and")
		fmt.Fprintln(stderr, "recording rules, all under /api/gpuwatch/v1. Every request but /healthz goes through bearer")
		fmt.Fprintln(stderr, "tokens with roles (--auth.tokens; docs/security.md), over TLS with --tls.cert-file.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var lvl slog.Level
	var err error
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("%w: --log.level %q: want debug, info, warn or error", errUsage, *logLevel)
	}
	o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	if o.Auth, o.Listen, err = sec.options(o.Logger); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.StoreURL != "" && (set["data-dir"] || set["retention"] || set["retention.size"]) {
		return fmt.Errorf("%w: --store.url uses an external store; --data-dir and --retention belong to the embedded one", errUsage)
	}
	if *fsConfig != "" {
		cfg, err := fairshare.LoadConfig(*fsConfig)
		if err != nil {
			return err
		}
		o.FairShare = cfg
	}
	if *fsSlurm {
		if o.FairShare == nil {
			return fmt.Errorf("%w: --fairshare.slurm needs --fairshare.config", errUsage)
		}
		if *fsScale <= 0 {
			return fmt.Errorf("%w: --fairshare.slurm-scale must be positive", errUsage)
		}
		o.SiteFactor = &slurm.SiteFactorWriter{Scontrol: slurm.Scontrol{Path: df.scontrol}, Scale: *fsScale}
	}
	if o.Drain, err = df.drainOptions(set, stdout); err != nil {
		return err
	}
	if o.Elector, o.LeaderService, err = ef.elector(set, df.kubeconfig, o.StoreURL, *listen, o.Logger); err != nil {
		return err
	}
	if o.StoreURL != "" && o.StateDir == "" && (o.FairShare != nil || o.Drain != nil) {
		return fmt.Errorf("%w: with --store.url, the control plane's state needs --state-dir", errUsage)
	}
	if *placementOn {
		o.Placement = &server.PlacementOptions{Interval: *placementInterval, StragglerWindow: *stragglerWindow}
		if *stragglerWindow < time.Minute {
			return fmt.Errorf("%w: --placement.straggler-window %s: want 1m or more", errUsage, *stragglerWindow)
		}
		if o.Placement.Scorers, err = placement.WithWeight(placement.DefaultScorers(), straggler.Name, *stragglerWeight); err != nil {
			return fmt.Errorf("%w: --placement.straggler-weight %v: want a number ≥ 0", errUsage, *stragglerWeight)
		}
		if *placementSlurm {
			o.Placement.Slurm = &slurm.Scontrol{Path: df.scontrol}
		}
		if *k8sLive && !site.Empty() {
			return fmt.Errorf("%w: --placement.k8s-live reads the topology from the API; the other --placement topology sources are files: give one", errUsage)
		}
		if !site.Empty() {
			tree, _, err := site.load(stderr)
			if err != nil {
				return err
			}
			h, err := tree.Hierarchy()
			if err != nil {
				return fmt.Errorf("site topology: %w", err)
			}
			o.Placement.Locations = h.Nodes()
		}
		if *k8sLive {
			if *k8sInterval <= 0 {
				return fmt.Errorf("%w: --placement.k8s-interval %s: must be positive", errUsage, *k8sInterval)
			}
			cs, err := kubeClient(df.kubeconfig)
			if err != nil {
				return fmt.Errorf("--placement.k8s-live: %w", err)
			}
			sel := *k8sSelector
			o.Placement.LiveLocations = func(ctx context.Context) ([]telemetry.NodeLocation, error) {
				return kube.NodeLocations(ctx, cs, sel)
			}
			o.Placement.LiveInterval = *k8sInterval
		} else if set["placement.k8s-selector"] || set["placement.k8s-interval"] {
			return fmt.Errorf("%w: --placement.k8s-selector and --placement.k8s-interval need --placement.k8s-live", errUsage)
		}
	} else if set["placement.interval"] || set["placement.slurm"] || set["placement.straggler-weight"] || set["placement.straggler-window"] || set["placement.k8s-live"] {
		return fmt.Errorf("%w: --placement.* need --placement", errUsage)
	}
	if *downsample {
		o.Downsample = &dsOpts
	} else if set["report.downsample-delay"] || set["store.write-url"] {
		return fmt.Errorf("%w: --report.downsample-delay and --store.write-url need --report.downsample", errUsage)
	}
	ro.Files, ro.Alertmanagers = ruleFiles, alertmanagers
	if o.StoreURL == "" {
		o.Rules = ro
	} else if len(ruleFiles) > 0 || len(alertmanagers) > 0 {
		return fmt.Errorf("%w: with --store.url the external store evaluates rules: load alerts/*.rules.yml and your files into vmalert or Prometheus (docs/alerts.md); --rules and --alertmanager.url belong to the embedded store", errUsage)
	}
	if *otlp != "" {
		shutdown, err := service.SetupTracing(ctx, *otlp)
		if err != nil {
			return fmt.Errorf("--otlp.endpoint: %w", err)
		}
		defer shutdown(context.Background())
	}
	if host, port, err := net.SplitHostPort(*listen); err == nil {
		if host == "" || host == "0.0.0.0" || host == "::" {
			host, _ = os.Hostname()
		}
		o.Instance = net.JoinHostPort(host, port)
	}
	srv, err := server.New(o)
	if err != nil {
		return err
	}
	defer srv.Close(context.Background())
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan struct{})
	lost := make(chan error, 1)
	go func() {
		if err := srv.Run(runCtx); err != nil {
			lost <- err
		}
		close(runDone)
	}()
	defer func() { stopRun(); <-runDone }()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", *listen, err)
	}
	hs := srv.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	where := "embedded store in " + o.DataDir
	if o.StoreURL != "" {
		where = "external store " + o.StoreURL
	}
	base := hs.Scheme() + "://" + ln.Addr().String()
	fmt.Fprintf(stdout, "gpuwatch server on %s (%s)\n", base, where)
	fmt.Fprintf(stdout, "  web UI:  %s/\n", base)
	fmt.Fprintf(stdout, "  agents:  gpuwatch agent --remote-write %s/api/v1/write --server %s --auth.token-file FILE\n", base, base)
	fmt.Fprintf(stdout, "  Grafana: add a Prometheus data source with URL %s\n", base)
	fmt.Fprintf(stdout, "  access:  %s\n", o.Auth.Mode())
	if o.Auth.Tokens == nil && !o.Auth.Insecure {
		fmt.Fprintln(stdout, "           to accept agents and operators from other hosts, give --auth.tokens FILE (see `gpuwatch token --help`)")
	}
	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
	case first = <-lost:
		// The leader lost its lease: stop serving and exit non-zero, so
		// that nothing acts on a lead it no longer holds; the pod restarts
		// as a follower.
	}
	shutdownCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	hs.Shutdown(shutdownCtx)
	if first != nil && !errors.Is(first, http.ErrServerClosed) {
		return first
	}
	return nil
}
