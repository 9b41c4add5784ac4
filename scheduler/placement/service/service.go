package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/scheduler/adapters/kube/extender"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// ErrStale is wrapped by Fresh when the snapshot is older than Options.MaxAge or
// none has been built yet.
var ErrStale = errors.New("placement snapshot is stale")

// Options configure a Service. Querier is required; everything else has a default.
type Options struct {
	// Querier is the store the agents write to.
	Querier store.Querier
	// Exclusions returns the drain controller's exclusions (drain.Controller's
	// Exclusions method); nil: none.
	Exclusions func() []drain.Exclusion
	// Locations returns node places in the fleet from a site source (a topology
	// Tree's Hierarchy().Nodes()), overriding the agents'
	// gpuwatch_topology_node_info; nil: the agents' labels.
	Locations func() []telemetry.NodeLocation
	// Allocations returns a scheduler's allocations besides the store's
	// gpuwatch_gpu_allocation_info (SlurmAllocations(scontrol.RunningJobs)); nil:
	// the store's only. When it fails, the cycle goes on with the store's and the
	// error is reported.
	Allocations func(ctx context.Context) ([]snapshot.Allocation, error)
	// Interval between snapshots (default 10 s).
	Interval time.Duration
	// Staleness is the bound past which a value is stale (default 1 minute);
	// Lookback how long inventory, health and topology are remembered (default 15
	// minutes); AgentInterval the agents' collection interval (default 10 s).
	Staleness, Lookback, AgentInterval time.Duration
	// StragglerWindow is how long a GPU named a straggler stays marked for the
	// straggler scorer after it was last named (default 30 minutes).
	StragglerWindow time.Duration
	// MaxAge is the oldest snapshot Fresh accepts (default 3 × Interval): past it
	// the kube-scheduler extender fails open.
	MaxAge time.Duration
	// Engine configures the placement engine.
	Engine placement.Options
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Service feeds the engine and serves the placement API.
type Service struct {
	opts     Options
	engine   *placement.Engine
	extender *extender.Handler
	metrics  *metrics

	refreshMu sync.Mutex // one feed at a time

	mu        sync.Mutex
	fed       bool
	builtAt   time.Time // the snapshot's Now
	stats     FeedStats
	lastErr   error
	lastOK    time.Time // wall time of the last good feed
	took      time.Duration
	allocsErr error
}

// New returns a service over opts.Querier. The engine starts on an empty
// snapshot; Run (or Refresh) fills it.
func New(opts Options) (*Service, error) {
	if opts.Querier == nil {
		return nil, errors.New("placement service: no store querier: the feeder reads the agents' series from the store")
	}
	if opts.Interval == 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.Staleness == 0 {
		opts.Staleness = time.Minute
	}
	if opts.Lookback == 0 {
		opts.Lookback = 15 * time.Minute
	}
	if opts.AgentInterval == 0 {
		opts.AgentInterval = 10 * time.Second
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = 3 * opts.Interval
	}
	if opts.StragglerWindow == 0 {
		opts.StragglerWindow = snapshot.DefaultStragglerWindow
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"interval", opts.Interval}, {"staleness", opts.Staleness}, {"lookback", opts.Lookback},
		{"agent interval", opts.AgentInterval}, {"max age", opts.MaxAge}, {"straggler window", opts.StragglerWindow}} {
		if d.v < 0 {
			return nil, fmt.Errorf("placement service: %s %v: want > 0", d.name, d.v)
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Engine.Now == nil {
		opts.Engine.Now = opts.Now
	}
	if opts.Engine.Logger == nil {
		opts.Engine.Logger = opts.Logger
	}
	empty, err := snapshot.NewBuilder(opts.Now(), opts.Staleness).Build()
	if err != nil {
		return nil, fmt.Errorf("placement service: %w", err)
	}
	e, err := placement.New(empty, opts.Engine)
	if err != nil {
		return nil, fmt.Errorf("placement service: %w", err)
	}
	s := &Service{opts: opts, engine: e, metrics: newMetrics()}
	s.extender, err = extender.New(extender.Options{Evaluate: e.Evaluate, EvaluateAppend: e.EvaluateAppend, Fresh: s.Fresh,
		Logger: opts.Logger.With("component", "extender")})
	if err != nil {
		return nil, fmt.Errorf("placement service: %w", err)
	}
	return s, nil
}

// Engine returns the placement engine the service feeds.
func (s *Service) Engine() *placement.Engine { return s.engine }

// Extender returns the kube-scheduler extender's handler (Register mounts it
// under prefix/extender/).
func (s *Service) Extender() *extender.Handler { return s.extender }

// Run feeds the engine every Interval until ctx is done; the first feed is at
// once.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.opts.Logger.Warn("placement snapshot not refreshed; the last good one stays", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh reads the store once, builds a snapshot and hands it to the engine.
// On error the engine keeps the last good snapshot.
func (s *Service) Refresh(ctx context.Context) error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, max(s.opts.Interval, 5*time.Second))
	defer cancel()
	start := time.Now()
	fo := FeedOptions{Now: s.opts.Now(), Staleness: s.opts.Staleness, Lookback: s.opts.Lookback, AgentInterval: s.opts.AgentInterval,
		StragglerWindow: s.opts.StragglerWindow}
	if s.opts.Exclusions != nil {
		for _, e := range s.opts.Exclusions() {
			fo.Exclusions = append(fo.Exclusions, snapshot.Exclusion(e))
		}
	}
	if s.opts.Locations != nil {
		fo.Locations = s.opts.Locations()
	}
	var allocsErr error
	if s.opts.Allocations != nil {
		fo.Allocations, allocsErr = s.opts.Allocations(ctx)
		if allocsErr != nil {
			s.metrics.feedErrors.WithLabelValues("allocations").Inc()
			s.opts.Logger.Warn("scheduler allocations not read; the store's are used alone this cycle", "err", allocsErr)
		}
	}
	snap, stats, err := Feed(ctx, s.opts.Querier, fo)
	took := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.took, s.allocsErr = took, allocsErr
	s.metrics.feedDuration.Set(took.Seconds())
	if err != nil {
		s.lastErr = err
		s.metrics.feedErrors.WithLabelValues("store").Inc()
		return err
	}
	s.engine.SetSnapshot(snap)
	s.fed, s.builtAt, s.stats, s.lastErr, s.lastOK = true, snap.Now(), stats, nil, time.Now()
	s.metrics.observeSnapshot(snap, s.lastOK)
	for _, w := range stats.Skipped {
		s.opts.Logger.Debug("feed skipped a value", "what", w)
	}
	return nil
}

// Fresh returns nil when the engine's snapshot is at most MaxAge old, else an
// error wrapping ErrStale that says how old it is or that none was built.
func (s *Service) Fresh() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fed {
		if s.lastErr != nil {
			return fmt.Errorf("%w: none built yet: %v", ErrStale, s.lastErr)
		}
		return fmt.Errorf("%w: none built yet", ErrStale)
	}
	if age := s.opts.Now().Sub(s.builtAt); age > s.opts.MaxAge {
		msg := fmt.Sprintf("%v old, more than %v", age.Round(time.Millisecond), s.opts.MaxAge)
		if s.lastErr != nil {
			msg += ": last read failed: " + s.lastErr.Error()
		}
		return fmt.Errorf("%w: %s", ErrStale, msg)
	}
	return nil
}

// Collector returns the service's metrics: the engine's gpuwatch_placement_*
// quality and latency series, the feeder's, the API's and the extender's.
func (s *Service) Collector() prometheus.Collector {
	return collectors{s.engine, s.metrics, s.extender.Collector()}
}

type collectors []prometheus.Collector

func (c collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range c {
		x.Describe(ch)
	}
}

func (c collectors) Collect(ch chan<- prometheus.Metric) {
	for _, x := range c {
		x.Collect(ch)
	}
}
