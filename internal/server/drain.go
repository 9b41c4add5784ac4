package server

import (
	"encoding/json"
	"fmt"
	"github.com/gpuwatch/gpuwatch/internal/httpjson"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/internal/auth"
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
	// Workloads names the work on a node's GPUs for evacuation (optional).
	Workloads func(node string, gpus []string) []string
	// PollInterval, VerifyInterval and CallTimeout: see drain.Options.
	PollInterval, VerifyInterval, CallTimeout time.Duration
	// Clock; nil is Options.Clock (itself time.Now when nil).
	Clock func() time.Time
}

// maxReport bounds a pushed health report.
const maxReport = 4 << 20

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
	c, err := drain.New(drain.Options{Dir: dir, Policy: d.Policy, Actuator: d.Actuator, Clock: clock,
		Logger: s.opts.Logger.With("component", "drain"), Workloads: d.Workloads,
		PollInterval: d.PollInterval, VerifyInterval: d.VerifyInterval, CallTimeout: d.CallTimeout})
	if err != nil {
		return err
	}
	s.drain = c
	if err := reg.Register(c); err != nil {
		c.Close()
		return err
	}

	mux.HandleFunc("POST "+APIPrefix+"/health", func(w http.ResponseWriter, r *http.Request) {
		var rep healthreport.Report
		if err := json.NewDecoder(io.LimitReader(r.Body, maxReport)).Decode(&rep); err != nil {
			httpjson.Error(w, http.StatusBadRequest, "health report: "+err.Error())
			return
		}
		if rep.Node == "" {
			httpjson.Error(w, http.StatusBadRequest, "health report: node is empty")
			return
		}
		if err := drain.CheckNodeName(rep.Node); err != nil {
			httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("health report: node %q: %v", rep.Node, err))
			return
		}
		if id := auth.FromContext(r.Context()); id != nil && !id.AllowsNode(rep.Node) {
			auth.Forbidden(w, fmt.Sprintf("health report for %s: token %s is bound to nodes %s", rep.Node, id.Name, strings.Join(id.Nodes, ",")))
			return
		}
		if !rep.State.Valid() {
			httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("health report from %s: state %d is not a health state", rep.Node, int(rep.State)))
			return
		}
		c.Observe(rep)
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("GET "+APIPrefix+"/nodes", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, http.StatusOK, map[string]any{"nodes": c.Nodes(), "budget": c.Budget()})
	})
	mux.HandleFunc("GET "+APIPrefix+"/nodes/{node}", func(w http.ResponseWriter, r *http.Request) {
		n, ok := c.Node(r.PathValue("node"))
		if !ok {
			httpjson.Error(w, http.StatusNotFound, fmt.Sprintf("node %q has not reported and was never drained through gpuwatch", r.PathValue("node")))
			return
		}
		httpjson.Write(w, http.StatusOK, n)
	})
	mux.HandleFunc("GET "+APIPrefix+"/exclusions", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, http.StatusOK, map[string]any{"exclusions": c.Exclusions()})
	})
	mux.HandleFunc("GET "+APIPrefix+"/budget", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, http.StatusOK, c.Budget())
	})
	mux.HandleFunc("GET "+APIPrefix+"/audit", func(w http.ResponseWriter, r *http.Request) {
		var since time.Time
		if v := r.URL.Query().Get("since"); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("since %q: want RFC 3339 time", v))
				return
			}
			since = t
		}
		limit := 1000
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("limit %q: want a positive number", v))
				return
			}
			limit = n
		}
		recs, err := c.Audit(since, limit)
		if err != nil {
			httpjson.Error(w, http.StatusInternalServerError, err.Error())
			return
		}
		httpjson.Write(w, http.StatusOK, map[string]any{"audit": recs})
	})
	type manual struct {
		Node   string `json:"node"`
		Reason string `json:"reason"`
		User   string `json:"user"`
	}
	decode := func(w http.ResponseWriter, r *http.Request) (manual, bool) {
		var m manual
		data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = httpjson.DecodeStrict(data, &m)
		}
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, "request: "+err.Error()+` (want {"node": …, "reason": …, "user": …})`)
			return m, false
		}
		m.User = actor(r, m.User)
		return m, true
	}
	mux.HandleFunc("POST "+APIPrefix+"/drain", func(w http.ResponseWriter, r *http.Request) {
		m, ok := decode(w, r)
		if !ok {
			return
		}
		if err := c.ManualDrain(m.Node, m.Reason, m.User); err != nil {
			httpjson.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		n, _ := c.Node(m.Node)
		httpjson.Write(w, http.StatusAccepted, n)
	})
	mux.HandleFunc("POST "+APIPrefix+"/resume", func(w http.ResponseWriter, r *http.Request) {
		m, ok := decode(w, r)
		if !ok {
			return
		}
		if err := c.ManualResume(m.Node, m.User); err != nil {
			httpjson.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		n, _ := c.Node(m.Node)
		httpjson.Write(w, http.StatusAccepted, n)
	})
	mux.HandleFunc("POST "+APIPrefix+"/budget/reset", func(w http.ResponseWriter, r *http.Request) {
		m, ok := decode(w, r)
		if !ok {
			return
		}
		if err := c.ResetBudget(m.User); err != nil {
			httpjson.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		httpjson.Write(w, http.StatusOK, c.Budget())
	})
	return nil
}

// Drain is the drain controller, nil unless Options.Drain was set.
func (s *Server) Drain() *drain.Controller { return s.drain }
