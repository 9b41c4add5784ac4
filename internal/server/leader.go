package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/internal/httpjson"
	"github.com/gpuwatch/gpuwatch/internal/ui"
)

// Elector elects the one server, of several replicas, that acts on the
// scheduler (scheduler/adapters/kube.Elector, through a Kubernetes Lease).
//
// Run campaigns until ctx ends and calls lead once this replica leads, with a
// context that ends when it stops leading; it returns nil when ctx ended and
// an error when this replica led and lost the lead, after lead returned.
// Leader names the leader last seen ("" before one is), Identity this
// replica.
type Elector interface {
	Run(ctx context.Context, lead func(context.Context)) error
	Leader() string
	Identity() string
}

// LeaderService points a Service at the acting leader
// (scheduler/adapters/kube.LeaderService: a selector-less Service whose
// EndpointSlice the leader writes with its own address).
//
// Publish makes the Service reach this replica alone; it is idempotent and
// called when this replica has taken over and acts, then from time to time.
// Name is the Service's address for clients (its DNS name).
type LeaderService interface {
	Publish(ctx context.Context) error
	Name() string
}

// leaderSvcMetrics are gpuwatch_server_leader_service_*.
type leaderSvcMetrics struct {
	errors    prometheus.Counter
	published atomic.Bool
}

// LeaderStatus is GET /api/gpuwatch/v1/leader.
type LeaderStatus struct {
	// Election: replicas elect a leader (Options.Elector); without, this
	// server is the only one and acts.
	Election bool `json:"election"`
	// Acting: this server acts on the scheduler (drains, resumes, Slurm site
	// factors) and takes control requests. A leader acts once its drain
	// controller has taken over.
	Acting   bool   `json:"acting"`
	Identity string `json:"identity,omitempty"`
	Leader   string `json:"leader,omitempty"`
	// Service reaches the acting leader whichever replica that is
	// (Options.LeaderService): where to send control requests.
	Service string `json:"service,omitempty"`
}

// Leader says who acts.
func (s *Server) Leader() LeaderStatus {
	st := LeaderStatus{Acting: s.acting()}
	if e := s.opts.Elector; e != nil {
		st.Election, st.Identity, st.Leader = true, e.Identity(), e.Leader()
	}
	if ls := s.opts.LeaderService; ls != nil {
		st.Service = ls.Name()
	}
	return st
}

// roleLine is the UI footer's word on this replica: the leader, or a
// follower naming the leader that takes drains and resumes.
func (s *Server) roleLine() string {
	st := s.Leader()
	via := ""
	if st.Service != "" {
		via = " (through " + st.Service + ")"
	}
	switch {
	case st.Acting:
		return "leader " + st.Identity
	case st.Leader == "" || st.Leader == st.Identity:
		return "follower " + st.Identity + " (election or takeover under way): drain and resume on the leader" + via
	}
	return "follower " + st.Identity + " of leader " + st.Leader + ": drain and resume there" + via
}

// acting reports whether this server acts on the scheduler: it is the only
// one, or the leader that has taken over.
func (s *Server) acting() bool { return s.opts.Elector == nil || s.leading.Load() }

// lead is what the leader runs while it leads: the drain controller takes
// over (retried until it can read the scheduler's drains), then acts until
// the lead ends; the report's downsampler runs on the leader only.
func (s *Server) lead(ctx context.Context) {
	log := s.opts.Logger.With("component", "leader")
	if s.drain != nil {
		wait := time.Second
		for {
			start := time.Now()
			res, err := s.drain.Takeover(ctx, nil)
			if err == nil {
				log.Info("took over the drain controller", "adopted", len(res.Adopted), "released", len(res.Released),
					"known", len(res.Known), "replayed", res.Replayed, "evacuations", len(res.Evacuations), "took", time.Since(start))
				break
			}
			log.Warn("takeover failed; retrying before acting", "err", err, "retry_in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 30*time.Second)
		}
	}
	s.leading.Store(true)
	defer s.leading.Store(false)
	log.Info("acting as the leader", "identity", s.opts.Elector.Identity())
	if s.opts.LeaderService != nil {
		// Only now, acting, does the leader Service send control requests
		// here; a new leader overwrites it when it takes over.
		done := make(chan struct{})
		go func() { defer close(done); s.publishLeader(ctx, log) }()
		defer func() { <-done }()
	}
	if s.downsample != nil {
		// The report's summaries go into the store the replicas share: the
		// leader alone writes them (a new leader carries on from the
		// intervals the store marks summarized).
		done := make(chan struct{})
		go func() { defer close(done); s.downsample.run(ctx) }()
		defer func() { <-done }()
	}
	if s.drain != nil {
		s.drain.Run(ctx)
		return
	}
	<-ctx.Done()
}

// publishLeader points the leader Service at this server until ctx ends
// (the lead ends): at once, then every LeaderServiceInterval to repair a
// slice changed by someone else, and after a failure sooner (1 s, doubling
// up to the interval). A failure does not stop the leader acting: it is
// logged and counted, and the Service reaches no server, or the old leader
// (which has stopped acting and answers nothing), until a retry succeeds.
func (s *Server) publishLeader(ctx context.Context, log *slog.Logger) {
	ls, every := s.opts.LeaderService, s.opts.LeaderServiceInterval
	defer s.leaderSvc.published.Store(false)
	backoff := min(time.Second, every)
	for {
		pctx, cancel := context.WithTimeout(ctx, every)
		err := ls.Publish(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		next := every
		if err != nil {
			s.leaderSvc.errors.Inc()
			s.leaderSvc.published.Store(false)
			log.Error("cannot point the leader Service at this server; acting regardless, retrying", "service", ls.Name(), "err", err, "retry_in", backoff)
			next, backoff = backoff, min(2*backoff, every)
		} else {
			if !s.leaderSvc.published.Swap(true) {
				log.Info("the leader Service reaches this server", "service", ls.Name())
			}
			backoff = min(time.Second, every)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}

// leaderOnly are the requests that change what the acting server holds:
// drain, resume and budget reset (the drain controller's state), place and
// release (the placement service's reservations), and the UI's drain and
// resume forms.
func leaderOnly(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	switch path.Clean("/" + r.URL.Path) {
	case APIPrefix + "/drain", APIPrefix + "/resume", APIPrefix + "/budget/reset", APIPrefix + "/place", APIPrefix + "/release",
		ui.DrainPath, ui.ResumePath:
		return true
	}
	return false
}

// followerRefuses answers the leader-only requests 503 on a server that does
// not act, naming the leader, so that no write is taken and then lost: the
// client sends it to the leader (or again after Retry-After, when a takeover
// is under way). Everything else, reads and agents' pushes, is served.
func (s *Server) followerRefuses(next http.Handler) http.Handler {
	if s.opts.Elector == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !leaderOnly(r) || s.acting() {
			next.ServeHTTP(w, r)
			return
		}
		st := s.Leader()
		leader := st.Leader
		if leader == "" || leader == st.Identity {
			leader = "none yet (an election or a takeover is under way)"
		}
		if st.Service != "" {
			leader += ", through the leader Service " + st.Service + ", which reaches the acting leader"
		}
		w.Header().Set("Retry-After", "2")
		body := map[string]any{
			"error":  fmt.Sprintf("%s %s: this server (%s) is a follower and takes no control requests; send it to the leader: %s", r.Method, r.URL.Path, st.Identity, leader),
			"leader": st.Leader,
		}
		if st.Service != "" {
			body["leader_service"] = st.Service
		}
		httpjson.Write(w, http.StatusServiceUnavailable, body)
	})
}

// leaderRoutes serves GET {APIPrefix}/leader and the gpuwatch_server_leader
// gauge.
func (s *Server) leaderRoutes(mux *http.ServeMux, reg prometheus.Registerer) error {
	mux.HandleFunc("GET "+APIPrefix+"/leader", func(w http.ResponseWriter, _ *http.Request) {
		httpjson.Write(w, http.StatusOK, s.Leader())
	})
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gpuwatch_server_leader",
		Help: "1 while this server acts on the scheduler (the only server, or the elected leader once it has taken over), 0 while it is a follower.",
	}, func() float64 {
		if s.acting() {
			return 1
		}
		return 0
	})); err != nil {
		return err
	}
	if s.opts.LeaderService == nil {
		return nil
	}
	s.leaderSvc.errors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gpuwatch_server_leader_service_errors_total",
		Help: "Failed attempts of the acting leader to point the leader Service (its EndpointSlice) at itself.",
	})
	if err := reg.Register(s.leaderSvc.errors); err != nil {
		return err
	}
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gpuwatch_server_leader_service_published",
		Help: "1 while this server acts and its last write of the leader Service's EndpointSlice succeeded (the Service reaches it), 0 otherwise; a leader at 0 acts, but clients of the Service do not reach it.",
	}, func() float64 {
		if s.leaderSvc.published.Load() {
			return 1
		}
		return 0
	}))
}
