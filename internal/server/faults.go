package server

import (
	"net/http"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
	"github.com/gpuwatch/gpuwatch/internal/httpjson"
)

// faultRoutes serves the analyzer's fault report:
//
//	GET /api/gpuwatch/v1/faults?from=&to=|last=&lemon_count=&lemon_window=&top=
//
// answers the report as JSON (400 for bad parameters). Drains come from the
// drain controller's audit log; a server without a drain controller says so
// in the report's drain_audit_note. Like every GET it needs the read role
// (auth.go). It reads the store and the controller lazily, so it can be
// registered before either is started.
func (s *Server) faultRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+APIPrefix+"/faults", s.serveFaults)
}

func (s *Server) serveFaults(w http.ResponseWriter, r *http.Request) {
	now := time.Now
	if s.opts.Clock != nil {
		now = s.opts.Clock
	}
	opts, err := faults.ParseQuery(r.URL.Query(), now(), func(p string) string { return p })
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "faults: "+err.Error())
		return
	}
	opts.Now = now
	var drains []faults.Drain
	note := "the server runs no drain controller (--drain), so drains are not counted"
	if s.drain != nil {
		// Only drains inside the window count, for lemons too.
		recs, err := s.drain.Audit(opts.From, 0)
		if err != nil {
			httpjson.Error(w, http.StatusInternalServerError, "faults: reading the drain audit log: "+err.Error())
			return
		}
		drains, note = faults.FromAudit(recs), ""
	}
	rep, err := faults.Compute(r.Context(), s.querier, opts, drains, note)
	if err != nil {
		httpjson.Error(w, http.StatusInternalServerError, "faults: "+err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, rep)
}
