package server

import (
	"context"
	"fmt"
	"github.com/gpuwatch/gpuwatch/internal/httpjson"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare/feed"
)

// APIPrefix is where gpuwatch's own API lives, next to the Prometheus API.
const APIPrefix = "/api/gpuwatch/v1"

// control adds the control plane to the server, each part when its options
// are set: fair share and the drain controller, their API routes and metrics.
func (s *Server) control(mux *http.ServeMux, reg prometheus.Registerer) error {
	if s.opts.StateDir == "" {
		s.opts.StateDir = s.opts.DataDir
	}
	if s.opts.FairShare != nil {
		if s.opts.StateDir == "" {
			return fmt.Errorf("fair share keeps a ledger: give a state directory (--state-dir)")
		}
		if err := os.MkdirAll(s.opts.StateDir, 0o755); err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		f, err := feed.New(feed.Options{Querier: s.querier, Config: s.opts.FairShare,
			LedgerPath: filepath.Join(s.opts.StateDir, "fairshare-ledger.json"),
			Interval:   s.opts.FairShareInterval, Rebuild: s.opts.FairShareRebuild, Logger: s.opts.Logger.With("component", "fairshare"),
			Now: s.opts.Clock, OnUpdate: s.onFairShare})
		if err != nil {
			return err
		}
		s.fairshare = f
		if err := reg.Register(f.Collector()); err != nil {
			return err
		}
		if w := s.opts.SiteFactor; w != nil {
			log := s.opts.Logger.With("component", "fairshare-slurm")
			s.fairshareHooks = append(s.fairshareHooks, func(st *fairshare.Standing) {
				if !s.acting() {
					return // a follower writes nothing to Slurm: the leader does
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				res, err := w.Apply(ctx, st)
				if err != nil {
					log.Warn("setting Slurm site factors failed; retried next interval", "err", err, "updated", res.Updated)
					return
				}
				log.Debug("Slurm site factors set", "pending", res.Pending, "updated", res.Updated, "unchanged", res.Unchanged, "unknown", res.Unknown)
			})
		}
	}
	if err := s.startDrain(mux, reg); err != nil {
		return err
	}
	if err := s.startPlacement(mux, reg); err != nil {
		return err
	}
	if err := s.leaderRoutes(mux, reg); err != nil {
		return err
	}
	mux.HandleFunc(APIPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		msg := fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path)
		if s.drain == nil {
			msg += "; the drain endpoints (health, nodes, audit, drain, resume) need the drain controller: gpuwatch server --actuator slurm|kubernetes|log"
		}
		httpjson.Error(w, http.StatusNotFound, msg)
	})
	mux.HandleFunc("GET "+APIPrefix+"/fairshare", func(w http.ResponseWriter, r *http.Request) {
		if s.fairshare == nil {
			httpjson.Error(w, http.StatusNotFound, "fair share is not configured on this server (gpuwatch server --fairshare.config FILE)")
			return
		}
		st, err := s.fairshare.Standing()
		resp := map[string]any{"standing": st}
		if err != nil {
			resp["error"] = err.Error()
		}
		httpjson.Write(w, http.StatusOK, resp)
	})
	return nil
}

// onFairShare is called after each fair-share interval; the scheduler
// adapters that feed factors back (Slurm's SiteFactor) hang off it.
func (s *Server) onFairShare(st *fairshare.Standing) {
	for _, f := range s.fairshareHooks {
		f(st)
	}
}

// Run runs the control plane's background loops until ctx is done. With an
// Elector, the drain controller acts only while this replica leads, and Run
// returns the Elector's error at once when the lead is lost: the caller must
// exit (the process restarts as a follower).
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var lost error
	if s.fairshare != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.fairshare.Run(ctx) }()
	}
	switch {
	case s.opts.Elector != nil:
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.opts.Elector.Run(ctx, s.lead); err != nil {
				lost = err
				cancel()
			}
		}()
	case s.drain != nil:
		wg.Add(1)
		go func() { defer wg.Done(); s.drain.Run(ctx) }()
	}
	if s.liveTopo != nil {
		// The first read before the first snapshot, so that it places nodes
		// by the live topology from the start when the API answers.
		s.liveTopo.refresh(ctx)
		wg.Add(1)
		go func() { defer wg.Done(); s.liveTopo.run(ctx) }()
	}
	if s.placement != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.placement.Run(ctx) }()
	}
	if s.rules != nil {
		s.rules.start()
	}
	// With an Elector the leader downsamples while it leads (lead): the
	// replicas share one store, and one writer keeps each interval's
	// summaries written once.
	if s.downsample != nil && s.opts.Elector == nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.downsample.run(ctx) }()
	}
	if s.embedded != nil && s.opts.SelfInterval >= 0 {
		every := s.opts.SelfInterval
		if every == 0 {
			every = 15 * time.Second
			if s.opts.Rules != nil && s.opts.Rules.Interval > 0 {
				every = s.opts.Rules.Interval
			}
		}
		wg.Add(1)
		go func() { defer wg.Done(); s.recordSelf(ctx, s.reg, every) }()
	}
	wg.Wait()
	return lost
}

// FairShare is the latest fair-share standing and the last read error; nil
// without Options.FairShare.
func (s *Server) FairShare() (*fairshare.Standing, error) {
	if s.fairshare == nil {
		return nil, nil
	}
	return s.fairshare.Standing()
}
