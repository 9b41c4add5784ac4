package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/internal/httpjson"
)

// stragglerRoutes serves the analyzer's stragglers:
//
//	GET /api/gpuwatch/v1/stragglers?from=&to=|last=&min_gap=&min_duration=&job_id=
//
// answers the report as JSON (400 for bad parameters; the window defaults to
// the last 10 minutes). Like every GET it needs the read role (auth.go).
//
// It also registers gpuwatch_straggler_gpu{job_id,node,gpu_uuid,signal} (the
// relative lag) on the server's registry: /metrics shows the stragglers of
// the last 10 minutes, computed at most once a minute, and the server's own
// recorder (selfmetrics.go) writes them into its embedded store with its
// other series, where rules and dashboards read them.
func (s *Server) stragglerRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+APIPrefix+"/stragglers", s.serveStragglers)
	s.reg.MustRegister(&stragglerCollector{s: s})
}

func (s *Server) now() time.Time {
	if s.opts.Clock != nil {
		return s.opts.Clock()
	}
	return time.Now()
}

func (s *Server) serveStragglers(w http.ResponseWriter, r *http.Request) {
	opts, err := stragglers.ParseQuery(r.URL.Query(), s.now(), func(p string) string { return p })
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "stragglers: "+err.Error())
		return
	}
	opts.Now = s.now
	rep, err := stragglers.Compute(r.Context(), s.querier, opts)
	if err != nil {
		httpjson.Error(w, http.StatusInternalServerError, "stragglers: "+err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, rep)
}

// stragglerRefresh is how long the series' last computation serves.
const stragglerRefresh = time.Minute

var stragglerDesc = prometheus.NewDesc(stragglers.MetricStragglerGPU,
	"Relative lag (0.25: 25 % behind) of a GPU behind the other GPUs of its job on a signal (sm_clock, sm_active or gpu_util, power) over the last 10 minutes; present only while the GPU is a straggler (docs/reports.md).",
	[]string{"job_id", "node", "gpu_uuid", "signal"}, nil)

// stragglerCollector computes the stragglers when gathered, keeping the
// report for stragglerRefresh (a failed computation is tried again at the
// next gather).
type stragglerCollector struct {
	s    *Server
	mu   sync.Mutex
	at   time.Time
	last *stragglers.Report
}

func (c *stragglerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stragglerDesc }

func (c *stragglerCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.report()
	if rep == nil {
		return
	}
	for _, j := range rep.Jobs {
		for _, st := range j.Stragglers {
			for _, e := range st.Evidence {
				ch <- prometheus.MustNewConstMetric(stragglerDesc, prometheus.GaugeValue, e.Lag, j.JobID, st.Node, st.GPU, e.Signal)
			}
		}
	}
}

func (c *stragglerCollector) report() *stragglers.Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.s.now()
	if c.last != nil && now.Sub(c.at) < stragglerRefresh {
		return c.last
	}
	if c.s.querier == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := stragglers.Compute(ctx, c.s.querier, stragglers.Options{From: now.Add(-10 * time.Minute), To: now, Now: c.s.now})
	if err != nil {
		c.s.opts.Logger.Warn("cannot compute the stragglers", "err", err)
		return c.last
	}
	c.at, c.last = now, rep
	return rep
}
