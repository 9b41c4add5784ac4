package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/internal/httpjson"
)

// reportRoutes serves the analyzer's utilization report:
//
//	GET /api/gpuwatch/v1/report?from=&to=|last=&by=&idle_below=&idle_for=&step=
//	    [&account=…][&user=…][&namespace=…]
//
// answers the report as JSON (400 for bad parameters, 404 when no GPU was
// allocated in the window, or none to the filter's accounts, users and
// namespaces: each repeated, one exact value each). With progress=1 it answers NDJSON instead: a
// {"progress":{"done":n,"total":m}} line per chunk of the window read, then
// {"report":…} or {"error":…}. It reads the store lazily, so it can be
// registered before the store is opened.
func (s *Server) reportRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+APIPrefix+"/report", s.serveReport)
}

func (s *Server) serveReport(w http.ResponseWriter, r *http.Request) {
	now := time.Now
	if s.opts.Clock != nil {
		now = s.opts.Clock
	}
	opts, err := report.ParseQuery(r.URL.Query(), now())
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "report: "+err.Error())
		return
	}
	opts.Now = now
	finish := func(rep *report.Report) {
		if rep == nil {
			return
		}
		if s.fairshare != nil {
			st, _ := s.fairshare.Standing()
			report.AttachFairShare(rep, st)
		} else {
			report.AttachFairShare(rep, nil)
		}
	}
	if r.URL.Query().Get(report.ParamProgress) != "1" {
		rep, err := report.Compute(r.Context(), s.querier, opts)
		switch {
		case errors.Is(err, report.ErrNoData):
			httpjson.Error(w, http.StatusNotFound, "report: "+err.Error())
		case err != nil:
			httpjson.Error(w, http.StatusInternalServerError, "report: "+err.Error())
		default:
			finish(rep)
			httpjson.Write(w, http.StatusOK, rep)
		}
		return
	}
	// Streamed: progress lines as the chunks are read, then the answer.
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	line := func(v any) {
		_ = enc.Encode(v) // a client gone away ends the request's context
		if flusher != nil {
			flusher.Flush()
		}
	}
	opts.Progress = func(done, total int) {
		line(map[string]any{"progress": map[string]int{"done": done, "total": total}})
	}
	rep, err := report.Compute(r.Context(), s.querier, opts)
	if err != nil {
		line(map[string]string{"error": "report: " + err.Error()})
		return
	}
	finish(rep)
	line(map[string]any{"report": rep})
}
