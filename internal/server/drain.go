package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
)

// DrainOptions configure the server's drain controller.
type DrainOptions struct {
	// Policy; nil is drain.DefaultPolicy.
	Policy *drain.Policy
	// Actuator acts on the scheduler (Slurm, Kubernetes, or a log). Required
	// unless the policy is a dry run.
	Actuator drain.Actuator
	// ActuatorName names it in logs and the index page.
	ActuatorName string
	// Workloads names the work on a node's GPUs for evacuation; nil reads it from
	// the agents' attribution in the store (workloadsFromStore).
	Workloads func(node string, gpus []string) []string
	// PollInterval, VerifyInterval and CallTimeout: see drain.Options.
	PollInterval, VerifyInterval, CallTimeout time.Duration
	// Clock; nil is Options.Clock (itself time.Now when nil).
	Clock func() time.Time
}

func (s *Server) startDrain(mux *http.ServeMux, reg prometheus.Registerer) error {
	d := s.opts.Drain
	if d == nil {
		return nil
	}
	if s.opts.StateDir == "" {
		return fmt.Errorf("the drain controller keeps its state and audit log on disk: give a state directory (--state-dir)")
	}
	dir := filepath.Join(s.opts.StateDir, "drain")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("drain state directory: %w", err)
	}
	clock := d.Clock
	if clock == nil {
		clock = s.opts.Clock
	}
	workloads := d.Workloads
	if workloads == nil {
		now := clock
		if now == nil {
			now = time.Now
		}
		workloads = s.workloadsFromStore(now)
	}
	c, err := drain.New(drain.Options{Dir: dir, Policy: d.Policy, Actuator: d.Actuator, Clock: clock,
		Logger: s.opts.Logger.With("component", "drain"), Workloads: workloads,
		PollInterval: d.PollInterval, VerifyInterval: d.VerifyInterval, CallTimeout: d.CallTimeout,
		Standby: s.opts.Elector != nil})
	if err != nil {
		return err
	}
	s.drain = c
	if err := reg.Register(c); err != nil {
		c.Close()
		return err
	}
	c.Register(mux, APIPrefix)
	return nil
}

// Drain is the drain controller, nil unless Options.Drain was set.
func (s *Server) Drain() *drain.Controller { return s.drain }
