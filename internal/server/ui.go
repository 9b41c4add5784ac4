package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/httpjson"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/ui"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// UIOptions configure the web UI served at the server's root URL.
type UIOptions struct {
	// GrafanaURL, when set, is the Grafana the node and GPU pages link to.
	GrafanaURL string
	// SessionTTL is how long a browser session lasts from its login
	// (auth.DefaultSessionTTL).
	SessionTTL time.Duration
}

// uiState is the web UI's part of the server: the browser sessions the front
// door accepts, and the latest health report of each node (the node page's
// conditions and evidence).
type uiState struct {
	sessions *auth.Sessions
	reports  reportKeeper
}

// reportKeeper holds the latest health report each node's agent pushed.
type reportKeeper struct {
	mu sync.Mutex
	m  map[string]healthreport.Report
}

func (k *reportKeeper) put(r healthreport.Report) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]healthreport.Report{}
	}
	k.m[r.Node] = r
}

func (k *reportKeeper) get(node string) (healthreport.Report, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.m[node]
	return r, ok
}

// keepReports keeps the latest health report of each node for the node
// page: a report the health push accepted (202; the front door and the drain
// API have checked it) is decoded once more here, so the drain API's handler
// needs no hook.
func (s *Server) keepReports(next http.Handler) http.Handler {
	health := APIPrefix + "/health"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || path.Clean("/"+r.URL.Path) != health || s.drain == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxTapBytes))
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, "health report: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status != http.StatusAccepted {
			return
		}
		var rep healthreport.Report
		if json.Unmarshal(body, &rep) == nil && rep.Node != "" {
			s.ui.reports.put(rep)
		}
	})
}

// maxTapBytes is the most keepReports reads of a push: the health push's own
// bound (4 MiB); a larger one is refused by that handler anyway.
const maxTapBytes = 4<<20 + 1

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// mountUI serves the web UI at the root URL over the same in-process parts
// the JSON API answers from; store describes the store for its footer.
func (s *Server) mountUI(mux *http.ServeMux, store string) error {
	sess, err := auth.NewSessions(auth.SessionOptions{Tokens: s.opts.Auth.Tokens, TTL: s.opts.UI.SessionTTL})
	if err != nil {
		return fmt.Errorf("web UI sessions: %w", err)
	}
	s.ui.sessions = sess
	o := ui.Options{Querier: s.querier, Drain: s.drain, Sessions: sess, Now: s.opts.Clock, GrafanaURL: s.opts.UI.GrafanaURL,
		Store: store, Version: s.opts.Version, Logger: s.opts.Logger.With("component", "ui"), Report: s.ui.reports.get}
	if s.opts.Elector != nil {
		o.Role = s.roleLine
	}
	if s.placement != nil {
		e := s.placement.Engine()
		o.Snapshot = func() *snapshot.Snapshot { return e.Snapshot() }
		o.Decisions = func(n int) []*framework.Decision { return e.Recent(n) }
		o.Decision = e.Decision
	}
	if s.fairshare != nil {
		o.FairShare = func() (*fairshare.Standing, error) { return s.fairshare.Standing() }
	}
	if s.rules != nil {
		o.Alerts = func() []ui.Alert {
			var out []ui.Alert
			for _, a := range s.rules.Alerts() {
				out = append(out, ui.Alert{Labels: a.Labels, Annotations: a.Annotations, State: a.State, ActiveAt: a.ActiveAt, Value: a.Value})
			}
			return out
		}
	}
	u, err := ui.New(o)
	if err != nil {
		return err
	}
	u.Register(mux)
	return nil
}
