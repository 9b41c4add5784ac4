package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// drainsView is the drains page's data.
type drainsView struct {
	Enabled  bool
	Budget   drain.BudgetStatus
	Policy   string
	DryRun   bool
	Held     []drain.NodeStatus
	Records  []drain.AuditRecord
	Total    int // records matching before the limit
	Filter   auditFilter
	Events   []string
	Outcomes []string
	Err      string
}

type auditFilter struct {
	Node, Event, Action, Outcome, User string
	Limit                              int
}

func (f auditFilter) match(r *drain.AuditRecord) bool {
	return (f.Node == "" || strings.Contains(r.Node, f.Node)) && (f.Event == "" || r.Event == f.Event) &&
		(f.Action == "" || r.Action == f.Action) && (f.Outcome == "" || string(r.Outcome) == f.Outcome) &&
		(f.User == "" || strings.Contains(r.User, f.User))
}

func (u *UI) handleDrains(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := auditFilter{Node: strings.TrimSpace(q.Get("node")), Event: q.Get("event"), Action: strings.TrimSpace(q.Get("action")),
		Outcome: q.Get("outcome"), User: strings.TrimSpace(q.Get("user")), Limit: 200}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 10000 {
			u.fail(w, r, http.StatusBadRequest, "Bad filter", fmt.Sprintf("limit %q: want 1 to 10000", l))
			return
		}
		f.Limit = n
	}
	v := &drainsView{Filter: f, Events: []string{"decision", "actuation", "transition", "manual", "budget", "clock", "recovery"},
		Outcomes: []string{string(drain.OutcomePending), string(drain.OutcomeAccepted), string(drain.OutcomeRetrying), string(drain.OutcomeFailed),
			string(drain.OutcomeRefused), string(drain.OutcomeSkippedNotOwned), string(drain.OutcomeSkippedBudget), string(drain.OutcomeDryRun), string(drain.OutcomeRecorded)}}
	if c := u.opts.Drain; c != nil {
		v.Enabled = true
		v.Budget = c.Budget()
		if p := c.Policy(); p != nil {
			v.DryRun = p.DryRun
		}
		for _, n := range c.Nodes() {
			if !n.Schedulable || n.State == telemetry.StateProbation || n.Pending != nil || n.Stuck != "" {
				v.Held = append(v.Held, n)
			}
		}
		recs, err := c.Audit(time.Time{}, 0)
		if err != nil {
			v.Err = "cannot read the audit log: " + err.Error()
		}
		for i := len(recs) - 1; i >= 0; i-- {
			if f.match(&recs[i]) {
				v.Total++
				if len(v.Records) < f.Limit {
					v.Records = append(v.Records, recs[i])
				}
			}
		}
	}
	u.render(w, r, http.StatusOK, "drains", u.page(r, "Drains", "drains", v))
}

// actor is the audit log's actor for a person in the UI: their token's name.
func actor(r *http.Request) string {
	if id := auth.FromContext(r.Context()); id != nil {
		return id.Name
	}
	return "unknown"
}

// back returns to the page the form was on (a path of this server only).
func back(r *http.Request, fallback, done string) string {
	to := r.PostFormValue("back")
	if to == "" || !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "//") || strings.ContainsAny(to, "\\\r\n") {
		to = fallback
	}
	u, err := url.Parse(to)
	if err != nil {
		u, _ = url.Parse(fallback)
	}
	q := u.Query()
	q.Set("done", done)
	u.RawQuery = q.Encode()
	return u.String()
}

// handleDrain drains a node on a person's word: the drain controller's
// ManualDrain, as POST /api/gpuwatch/v1/drain calls it, with the person's
// token name as the audit log's actor. The front door has checked the role
// (operate) and the form's CSRF token.
func (u *UI) handleDrain(w http.ResponseWriter, r *http.Request) {
	if u.opts.Drain == nil {
		u.fail(w, r, http.StatusNotFound, "No drain controller", "this server runs no drain controller (gpuwatch server --actuator slurm|kubernetes|log)")
		return
	}
	node, reason := strings.TrimSpace(r.PostFormValue("node")), strings.TrimSpace(r.PostFormValue("reason"))
	if err := u.opts.Drain.ManualDrain(node, reason, actor(r)); err != nil {
		u.fail(w, r, http.StatusBadRequest, "Drain refused", err.Error())
		return
	}
	u.opts.Logger.Info("ui: manual drain", "node", node, "user", actor(r))
	http.Redirect(w, r, back(r, nodeURL(node, -1), "drain of "+node+" requested"), http.StatusSeeOther)
}

// handleResume resumes a node (ManualResume, as POST /api/gpuwatch/v1/resume).
func (u *UI) handleResume(w http.ResponseWriter, r *http.Request) {
	if u.opts.Drain == nil {
		u.fail(w, r, http.StatusNotFound, "No drain controller", "this server runs no drain controller")
		return
	}
	node := strings.TrimSpace(r.PostFormValue("node"))
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		u.fail(w, r, http.StatusBadRequest, "Resume refused", "say why "+node+" may take work again (the audit log keeps it)")
		return
	}
	if err := u.opts.Drain.ManualResume(node, reason, actor(r)); err != nil {
		u.fail(w, r, http.StatusBadRequest, "Resume refused", err.Error())
		return
	}
	u.opts.Logger.Info("ui: manual resume", "node", node, "user", actor(r))
	http.Redirect(w, r, back(r, nodeURL(node, -1), "resume of "+node+" requested"), http.StatusSeeOther)
}

// handleBudgetReset closes a tripped circuit breaker (ResetBudget, as POST
// /api/gpuwatch/v1/budget/reset; admin).
func (u *UI) handleBudgetReset(w http.ResponseWriter, r *http.Request) {
	if u.opts.Drain == nil {
		u.fail(w, r, http.StatusNotFound, "No drain controller", "this server runs no drain controller")
		return
	}
	if err := u.opts.Drain.ResetBudget(actor(r)); err != nil {
		u.fail(w, r, http.StatusBadRequest, "Budget reset refused", err.Error())
		return
	}
	u.opts.Logger.Info("ui: budget reset", "user", actor(r))
	http.Redirect(w, r, back(r, "/drains", "drain budget reset"), http.StatusSeeOther)
}
