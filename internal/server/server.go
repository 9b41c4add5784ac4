// Package server assembles `gpuwatch server`: the telemetry store (the embedded
// Prometheus TSDB by default, or an external VictoriaMetrics or Prometheus behind
// --store.url), the ingest endpoints agents remote-write to, and the Prometheus
// query API Grafana reads; and the control plane on that store: the drain
// controller, placement with the kube-scheduler extender, fair share, and the
// alerting and recording rules, under /api/gpuwatch/v1 behind bearer tokens with
// roles (auth.go). The control plane reaches the store only through Querier.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/serve"
	"github.com/gpuwatch/gpuwatch/internal/ui"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare/feed"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/api"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/ingest"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
)

// Options configure a server.
type Options struct {
	// DataDir holds the embedded store (TSDB blocks and WAL). Required unless
	// StoreURL is set.
	DataDir string
	// Retention and RetentionBytes bound the embedded store by age and size.
	Retention      time.Duration
	RetentionBytes int64
	// OutOfOrderWindow is how far back agents may replay buffered samples.
	OutOfOrderWindow time.Duration
	// MinFreeBytes is the free space the embedded store keeps on its disk
	// (embedded.Options.MinFreeBytes; 0: its default, negative: no check).
	MinFreeBytes int64
	// StoreURL points at an external Prometheus-compatible store (VictoriaMetrics
	// "http://host:8428", Prometheus "http://host:9090"); queries go there and
	// /api/v1/* is proxied to it, so agents and Grafana may use either address.
	StoreURL string
	// StoreWriteURL is where the server writes into the external store (the
	// report's summaries) by remote write; default StoreURL + /api/v1/write
	// (VictoriaMetrics; Prometheus with --web.enable-remote-write-receiver).
	StoreWriteURL string
	// Downsample, when set, keeps the utilization report's summaries in the
	// store (analyzer/report.Downsampler), so that a week's report reads
	// them instead of every sample: docs/reports.md.
	Downsample *report.DownsampleOptions
	// Limits bound what one ingest request may carry.
	Limits ingest.Limits
	// StateDir holds the control plane's own state (the fair-share ledger, the
	// drain controller's state and audit log); default DataDir.
	StateDir string
	// FairShare, when set, turns on fair share charged by measured GPU use:
	// the store is read every FairShareInterval (default 1 minute) into a
	// ledger, and the standing is served at /api/gpuwatch/v1/fairshare and
	// exported as gpuwatch_fairshare_*.
	FairShare         *fairshare.Config
	FairShareInterval time.Duration
	// FairShareRebuild: with no saved ledger, read this much history from the
	// store first (feed.Options.Rebuild).
	FairShareRebuild time.Duration
	// SiteFactor, with FairShare, sets every pending Slurm job's SiteFactor
	// from its user's factor after each interval.
	SiteFactor *slurm.SiteFactorWriter
	// Drain, when set, runs the drain controller: agents push their health
	// reports to POST /api/gpuwatch/v1/health, and the controller drains and
	// resumes nodes through the actuator under the policy's safety budget.
	Drain *DrainOptions
	// Placement, when set, runs the placement service (snapshot, place,
	// release, explain, the kube-scheduler extender).
	Placement *PlacementOptions
	// Rules, when set, evaluates recording and alerting rules over the
	// embedded store and sends alerts to Alertmanager. With StoreURL the
	// external store's own rule evaluator (vmalert, Prometheus) runs the same
	// files; the server does not.
	Rules *RulesOptions
	// Clock is the control plane's clock; nil is time.Now. The fair-share
	// feeder reads it for "now" (feed.Options.Now), and the drain controller
	// uses it unless DrainOptions.Clock is set. `gpuwatch demo` passes its
	// simulated time, so that intervals, hysteresis and probation run on it.
	Clock   func() time.Time
	Version string
	Logger  *slog.Logger
	// Auth is the front door's configuration: a token file, or nothing
	// (reads open, writes and control from loopback only), or Insecure.
	// Required, Registerer and Logger are the server's own.
	Auth auth.Options
	// Instance names this server in its own series in its store
	// (instance="…", job="gpuwatch-server"); default the host name.
	Instance string
	// SelfInterval is how often the server writes its own metrics into its
	// embedded store (default: the rules' interval, else 15 s; negative: never).
	SelfInterval time.Duration
	// Listen bounds the listener (timeouts, connections, requests in flight)
	// and sets its TLS; MaxBodyBytes, Name and Registerer are the server's.
	Listen serve.Options
	// UI configures the web UI at the root URL (ui.go).
	UI UIOptions
	// Elector, when set, makes this server one of several replicas of which
	// the elected leader acts (leader.go): the drain controller starts as a
	// standby and takes over when this replica leads, the Slurm site factors
	// are set by the leader only, and a follower answers control requests
	// 503 naming the leader while it serves reads and takes health reports.
	// Replicas share an external store (StoreURL).
	Elector Elector
	// LeaderService, with Elector, points a Service at the acting leader
	// (leader.go): once this replica has taken over and acts, it publishes
	// itself there, and again every LeaderServiceInterval (default 10 s;
	// sooner after a failure), so that control requests sent to the Service
	// reach the one server that takes them. A failure is logged and counted;
	// the leader acts regardless. Followers name it in their 503.
	LeaderService         LeaderService
	LeaderServiceInterval time.Duration
}

// Server is one gpuwatch server.
type Server struct {
	opts     Options
	embedded *embedded.Store // nil with an external store
	querier  store.Querier
	handler  http.Handler
	reg      *prometheus.Registry

	fairshare      *feed.Feeder // nil unless Options.FairShare
	fairshareHooks []func(*fairshare.Standing)
	drain          *drain.Controller // nil unless Options.Drain
	placement      *service.Service  // nil unless Options.Placement
	liveTopo       *liveTopology     // nil unless PlacementOptions.LiveLocations
	rules          *ruleEngine       // nil unless Options.Rules and the embedded store
	downsample     *downsampler      // nil unless Options.Downsample
	ui             uiState           // the web UI's sessions and latest health reports (ui.go)
	leading        atomic.Bool       // with Options.Elector: this replica leads and has taken over (leader.go)
	leaderSvc      leaderSvcMetrics  // with Options.LeaderService (leader.go)
}

// New opens the store and builds the HTTP handler.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Instance == "" {
		opts.Instance, _ = os.Hostname()
	}
	if opts.Limits == (ingest.Limits{}) {
		opts.Limits = ingest.DefaultLimits()
	}
	if opts.LeaderService != nil && opts.Elector == nil {
		return nil, errors.New("server: a leader Service needs leader election (Options.Elector)")
	}
	if opts.LeaderServiceInterval <= 0 {
		opts.LeaderServiceInterval = 10 * time.Second
	}
	s := &Server{opts: opts}
	reg := prometheus.NewRegistry()
	s.reg = reg
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	s.reportRoutes(mux) // the analyzer's utilization report (report.go)
	s.faultRoutes(mux)  // the analyzer's fault report (faults.go)
	s.jobStatsRoutes(mux)
	s.stragglerRoutes(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		// A store refusing writes (a full or read-only disk, a failed WAL
		// write that needs a restart) makes the server unhealthy: agents
		// queue meanwhile, and whoever watches /healthz sees why.
		if s.embedded != nil {
			if err := s.embedded.Writable(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})

	if opts.StoreURL != "" {
		u, err := url.Parse(opts.StoreURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("--store.url %q: want http://host:port of a VictoriaMetrics or Prometheus", opts.StoreURL)
		}
		q, err := remote.New(opts.StoreURL, remote.Options{})
		if err != nil {
			return nil, fmt.Errorf("--store.url %q: %w", opts.StoreURL, err)
		}
		s.querier = q
		proxy := httputil.NewSingleHostReverseProxy(u)
		mux.Handle("/api/v1/", refuseBoundProxyWrites(proxy))
		if err := s.control(mux, reg); err != nil {
			return nil, err
		}
		if err := s.startDownsampler(reg); err != nil {
			return nil, err
		}
		if err := s.mountUI(mux, "external store at "+opts.StoreURL); err != nil {
			return nil, err
		}
		s.handler = s.frontDoor(mux, reg)
		return s, nil
	}
	if opts.DataDir == "" {
		return nil, errors.New("a data directory is needed for the embedded store (--data-dir), or an external one (--store.url)")
	}
	st, err := embedded.Open(embedded.Options{Dir: opts.DataDir, Retention: opts.Retention, MaxBytes: opts.RetentionBytes,
		OutOfOrderWindow: opts.OutOfOrderWindow, MinFreeBytes: opts.MinFreeBytes, Logger: opts.Logger, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("opening the embedded store in %s: %w", opts.DataDir, err)
	}
	s.embedded, s.querier = st, st
	in := ingest.NewHandler(nodeBoundAppender{st}, opts.Limits, ingest.Options{Registerer: reg, ActiveSeries: st.ActiveSeries, Logger: opts.Logger})
	mux.Handle("POST "+ingest.WritePath, in)
	mux.Handle("POST "+ingest.ImportPrometheusPath, in)
	mux.Handle("/api/v1/", api.NewHandler(st.Queryable(), st.Engine(), api.Options{
		GPUWatchVersion: opts.Version, Metadata: telemetry.Metrics, Logger: opts.Logger}))
	if err := s.control(mux, reg); err != nil {
		st.Close()
		return nil, err
	}
	if err := s.startRules(mux, reg); err != nil {
		if s.drain != nil {
			s.drain.Close()
		}
		st.Close()
		return nil, err
	}
	if err := s.startDownsampler(reg); err != nil {
		s.Close(context.Background())
		return nil, err
	}
	if err := s.mountUI(mux, "embedded Prometheus TSDB in "+opts.DataDir); err != nil {
		s.Close(context.Background())
		return nil, err
	}
	s.handler = s.frontDoor(mux, reg)
	return s, nil
}

// frontDoor puts authentication in front of every route.
func (s *Server) frontDoor(mux http.Handler, reg prometheus.Registerer) http.Handler {
	a := s.opts.Auth
	a.Required, a.Registerer, a.Logger = RequiredRole, reg, s.opts.Logger.With("component", "auth")
	a.Sessions, a.LoginPath = s.ui.sessions, ui.LoginPath
	return auth.Middleware(a, s.keepReports(s.followerRefuses(mux)))
}

// Handler serves the server's HTTP API behind the front door.
func (s *Server) Handler() http.Handler { return s.handler }

// HTTPServer is the hardened listener for Handler: Options.Listen's bounds
// and TLS, the per-endpoint body limits, its metrics on /metrics.
func (s *Server) HTTPServer() *serve.Server {
	l := s.opts.Listen
	l.Name, l.Registerer, l.MaxBodyBytes = "server", s.reg, s.bodyLimit
	return serve.New(s.handler, l)
}

// Querier is the store, embedded or external, behind the one interface the
// scheduler and analyzer use.
func (s *Server) Querier() store.Querier { return s.querier }

// Appender is the embedded store's appender, nil with an external store.
func (s *Server) Appender() store.Appender {
	if s.embedded == nil {
		return nil
	}
	return s.embedded
}

// Close closes the drain controller and the embedded store (flushing its head
// to the WAL).
func (s *Server) Close(ctx context.Context) error {
	var errs []error
	if s.rules != nil {
		s.rules.stop()
	}
	if s.drain != nil {
		errs = append(errs, s.drain.Close())
	}
	if s.embedded != nil {
		errs = append(errs, s.embedded.Close())
	}
	return errors.Join(errs...)
}
