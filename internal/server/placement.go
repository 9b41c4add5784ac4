package server

import (
	"context"
	"net/http"
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
	if len(p.Locations) > 0 {
		locs := p.Locations
		o.Locations = func() []telemetry.NodeLocation { return locs }
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
