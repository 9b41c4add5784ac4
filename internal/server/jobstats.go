package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/jobstats"
	"github.com/gpuwatch/gpuwatch/internal/httpjson"
)

// jobStatsRoutes serves one job's GPU efficiency (analyzer/jobstats):
//
//	GET /api/gpuwatch/v1/jobs/{id}?from=&to=|last=&idle_below=&idle_for=
//
// answers the job's stats as JSON; the window bounds the search for the job
// (default the last 7 days). 400 for bad parameters, 404 when the store has
// no allocation of the job in the window. The id is a job_id, or
// namespace/pod escaped as one path segment (%2F). Like every GET it needs
// the read role (auth.go).
func (s *Server) jobStatsRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+APIPrefix+"/jobs/{id}", s.serveJobStats)
}

func (s *Server) serveJobStats(w http.ResponseWriter, r *http.Request) {
	now := time.Now
	if s.opts.Clock != nil {
		now = s.opts.Clock
	}
	opts, err := jobstats.ParseQuery(r.PathValue("id"), r.URL.Query(), now(), func(p string) string { return p })
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "jobstats: "+err.Error())
		return
	}
	opts.Now = now
	res, err := jobstats.Compute(r.Context(), s.querier, opts)
	switch {
	case errors.Is(err, jobstats.ErrNoJob):
		httpjson.Error(w, http.StatusNotFound, "jobstats: "+err.Error())
	case err != nil:
		httpjson.Error(w, http.StatusInternalServerError, "jobstats: "+err.Error())
	default:
		httpjson.Write(w, http.StatusOK, res)
	}
}
