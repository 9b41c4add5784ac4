package drain

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/httpjson"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// MaxReportBytes bounds a pushed health report.
const MaxReportBytes = 4 << 20

// maxManualBytes bounds a manual request's body.
const maxManualBytes = 1 << 20

// auditLimit is how many audit records GET {prefix}/audit answers without ?limit.
const auditLimit = 1000

// ManualRequest is the body of POST {prefix}/drain, resume and budget/reset.
// User is who the client acts for; the audit log records the caller's token
// name, and User beside it when it differs ("ops-cli (as alice)").
type ManualRequest struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
	User   string `json:"user"`
}

// Register adds the drain API's routes to mux under prefix. Who may call
// which is the server's access table's business (internal/server
// RequiredRole); the routes only read the caller's identity the front door
// put in the request's context (internal/auth), to name the actor in the
// audit log and to refuse a health report from an agent token bound to other
// nodes.
//
//	POST {prefix}/health         healthreport.Report → 202
//	GET  {prefix}/nodes          {"nodes": [NodeStatus], "budget": BudgetStatus}
//	GET  {prefix}/nodes/{node}   NodeStatus (404: never reported, never drained)
//	GET  {prefix}/exclusions     {"exclusions": [Exclusion]}
//	GET  {prefix}/budget         BudgetStatus
//	GET  {prefix}/audit          {"audit": [AuditRecord]} (?since=RFC 3339, ?limit=N, default 1000)
//	POST {prefix}/drain          ManualRequest → 202 NodeStatus
//	POST {prefix}/resume         ManualRequest → 202 NodeStatus
//	POST {prefix}/budget/reset   ManualRequest → BudgetStatus
//
// A standby controller answers the manual requests 503 (ErrStandby).
func (c *Controller) Register(mux *http.ServeMux, prefix string) {
	prefix = strings.TrimRight(prefix, "/")
	mux.HandleFunc("POST "+prefix+"/health", c.handleHealth)
	mux.HandleFunc("GET "+prefix+"/nodes", c.handleNodes)
	mux.HandleFunc("GET "+prefix+"/nodes/{node}", c.handleNode)
	mux.HandleFunc("GET "+prefix+"/exclusions", c.handleExclusions)
	mux.HandleFunc("GET "+prefix+"/budget", c.handleBudget)
	mux.HandleFunc("GET "+prefix+"/audit", c.handleAudit)
	mux.HandleFunc("POST "+prefix+"/drain", c.manual(func(m ManualRequest) (any, int, error) {
		if err := c.ManualDrain(m.Node, m.Reason, m.User); err != nil {
			return nil, 0, err
		}
		n, _ := c.Node(m.Node)
		return n, http.StatusAccepted, nil
	}))
	mux.HandleFunc("POST "+prefix+"/resume", c.manual(func(m ManualRequest) (any, int, error) {
		if err := c.ManualResume(m.Node, m.Reason, m.User); err != nil {
			return nil, 0, err
		}
		n, _ := c.Node(m.Node)
		return n, http.StatusAccepted, nil
	}))
	mux.HandleFunc("POST "+prefix+"/budget/reset", c.manual(func(m ManualRequest) (any, int, error) {
		if err := c.ResetBudget(m.User); err != nil {
			return nil, 0, err
		}
		return c.Budget(), http.StatusOK, nil
	}))
}

func (c *Controller) handleHealth(w http.ResponseWriter, r *http.Request) {
	var rep healthreport.Report
	if err := json.NewDecoder(io.LimitReader(r.Body, MaxReportBytes)).Decode(&rep); err != nil {
		httpjson.Error(w, http.StatusBadRequest, "health report: "+err.Error())
		return
	}
	if rep.Node == "" {
		httpjson.Error(w, http.StatusBadRequest, "health report: node is empty")
		return
	}
	if err := CheckNodeName(rep.Node); err != nil {
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
}

func (c *Controller) handleNodes(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]any{"nodes": c.Nodes(), "budget": c.Budget()})
}

func (c *Controller) handleNode(w http.ResponseWriter, r *http.Request) {
	n, ok := c.Node(r.PathValue("node"))
	if !ok {
		httpjson.Error(w, http.StatusNotFound, fmt.Sprintf("node %q has not reported and was never drained through gpuwatch", r.PathValue("node")))
		return
	}
	httpjson.Write(w, http.StatusOK, n)
}

func (c *Controller) handleExclusions(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]any{"exclusions": c.Exclusions()})
}

func (c *Controller) handleBudget(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, c.Budget())
}

func (c *Controller) handleAudit(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("since %q: want RFC 3339 time", v))
			return
		}
		since = t
	}
	limit := auditLimit
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
}

// manual decodes a ManualRequest strictly, names its user as the actor, and
// answers what do returns; an error of do is a 400 with its text.
func (c *Controller) manual(do func(ManualRequest) (any, int, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var m ManualRequest
		data, err := io.ReadAll(io.LimitReader(r.Body, maxManualBytes))
		if err == nil {
			err = httpjson.DecodeStrict(data, &m)
		}
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, "request: "+err.Error()+` (want {"node": …, "reason": …, "user": …})`)
			return
		}
		m.User = actor(r, m.User)
		v, code, err := do(m)
		switch {
		case errors.Is(err, ErrStandby):
			httpjson.Error(w, http.StatusServiceUnavailable, err.Error())
			return
		case err != nil:
			httpjson.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		httpjson.Write(w, code, v)
	}
}

// actor names the caller for the audit log: the token's name, and the user
// the client said it acts for when that differs ("ops-cli (as alice)").
func actor(r *http.Request, claimed string) string {
	id := auth.FromContext(r.Context())
	if id == nil {
		if claimed == "" {
			return "unknown"
		}
		return claimed
	}
	if claimed == "" || claimed == id.Name {
		return id.Name
	}
	return id.Name + " (as " + claimed + ")"
}
