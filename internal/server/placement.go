package server

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// PlacementOptions configure the placement service: a fleet snapshot built
// from the store every Interval (agents' inventory, health, load, topology
// and allocations, the drain controller's exclusions), and the place, release,
// explain and kube-scheduler extender endpoints under /api/gpuwatch/v1.
type PlacementOptions struct {
	// Interval between snapshots (default 10 s).
	Interval time.Duration
	// Slurm, when set, adds Slurm's running jobs (with their GPU indices) to
	// the allocations the agents report.
	Slurm *slurm.Scontrol
	// Locations, when set, places nodes in the fabric from a site source (an
	// ibnetdiscover dump, a site YAML, a topology.conf), overriding what the
	// agents report.
	Locations []telemetry.NodeLocation
	// Scorers replace the engine's scorers and weights (nil:
	// placement.DefaultScorers()); placement.WithWeight tunes one, such as the
	// straggler scorer's.
	Scorers []placement.WeightedScorer
	// StragglerWindow is how long a GPU named a straggler stays marked for the
	// straggler scorer (default 30 minutes).
	StragglerWindow time.Duration
	// LiveLocations, when set (and Locations not), is read every
	// LiveInterval (default 1 minute) for the nodes' places, overriding what
	// the agents report: the Kubernetes nodes' live topology labels
	// (kube.NodeLocations). A failed read keeps the last good places (logged,
	// gpuwatch_placement_topology_read_errors_total); before the first good
	// one the agents' labels are used.
	LiveLocations func(ctx context.Context) ([]telemetry.NodeLocation, error)
	LiveInterval  time.Duration
}

// liveTopology keeps the latest node places LiveLocations read.
type liveTopology struct {
	read     func(ctx context.Context) ([]telemetry.NodeLocation, error)
	interval time.Duration
	log      *slog.Logger
	errors   prometheus.Counter
	lastOK   prometheus.Gauge

	mu   sync.Mutex
	locs []telemetry.NodeLocation
}

func (l *liveTopology) get() []telemetry.NodeLocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.locs
}

// refresh reads the places once; it reports whether the read succeeded.
func (l *liveTopology) refresh(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, max(l.interval, 10*time.Second))
	defer cancel()
	locs, err := l.read(ctx)
	if err != nil {
		l.errors.Inc()
		l.log.Warn("live topology not read; the last good places stay", "err", err)
		return false
	}
	l.mu.Lock()
	l.locs = locs
	l.mu.Unlock()
	l.lastOK.SetToCurrentTime()
	return true
}

// run reads the places every interval until ctx ends (Run read them once
// before).
func (l *liveTopology) run(ctx context.Context) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.refresh(ctx)
	}
}

func (s *Server) startPlacement(mux *http.ServeMux, reg prometheus.Registerer) error {
	p := s.opts.Placement
	if p == nil {
		return nil
	}
	o := service.Options{Querier: s.querier, Interval: p.Interval, Now: s.opts.Clock,
		Logger: s.opts.Logger.With("component", "placement"), StragglerWindow: p.StragglerWindow}
	o.Engine.Scorers = p.Scorers
	o.Exclusions = func() []drain.Exclusion {
		if s.drain == nil {
			return nil
		}
		return s.drain.Exclusions()
	}
	switch {
	case len(p.Locations) > 0:
		locs := p.Locations
		o.Locations = func() []telemetry.NodeLocation { return locs }
	case p.LiveLocations != nil:
		every := p.LiveInterval
		if every <= 0 {
			every = time.Minute
		}
		l := &liveTopology{read: p.LiveLocations, interval: every, log: s.opts.Logger.With("component", "placement-topology"),
			errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuwatch_placement_topology_read_errors_total",
				Help: "Failed reads of the nodes' live topology (Kubernetes node labels) for placement."}),
			lastOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuwatch_placement_topology_last_read_timestamp_seconds",
				Help: "When the nodes' live topology was last read for placement (Unix time; 0: never)."})}
		if err := reg.Register(l.errors); err != nil {
			return err
		}
		if err := reg.Register(l.lastOK); err != nil {
			return err
		}
		s.liveTopo = l
		o.Locations = l.get
	}
	if p.Slurm != nil {
		sc := *p.Slurm
		o.Allocations = func(ctx context.Context) ([]snapshot.Allocation, error) {
			return service.SlurmAllocations(sc.RunningJobs)(ctx)
		}
	}
	svc, err := service.New(o)
	if err != nil {
		return err
	}
	if err := reg.Register(svc.Collector()); err != nil {
		return err
	}
	svc.Register(mux, APIPrefix)
	s.placement = svc
	return nil
}

// Placement is the placement service, nil unless Options.Placement was set.
func (s *Server) Placement() *service.Service { return s.placement }
