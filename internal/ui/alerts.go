package ui

import (
	"net/http"
	"strconv"
	"time"
)

// alertView is one active alert as the pages list it.
type alertView struct {
	Name, State, Severity, Summary, Runbook, Node string
	GPU                                           int // -1 when the alert names none
	ActiveAt                                      time.Time
	Labels                                        map[string]string
	Highlight                                     bool
}

// alertViews are the active alerts, those of node only when node is set.
func (u *UI) alertViews(node string) []alertView {
	if u.opts.Alerts == nil {
		return nil
	}
	var out []alertView
	for _, a := range u.opts.Alerts() {
		n := a.Labels["node"]
		if n == "" {
			n = a.Labels["Hostname"]
		}
		if node != "" && n != node {
			continue
		}
		v := alertView{Name: a.Labels["alertname"], State: a.State, Severity: a.Labels["severity"], Summary: a.Annotations["summary"],
			Runbook: a.Annotations["runbook_url"], Node: n, GPU: -1, ActiveAt: a.ActiveAt, Labels: a.Labels}
		for _, k := range []string{"gpu_index", "gpu"} {
			if i, err := strconv.Atoi(a.Labels[k]); err == nil {
				v.GPU = i
				break
			}
		}
		out = append(out, v)
	}
	return out
}

type alertsView struct {
	Alerts    []alertView
	Highlight string
	Enabled   bool
}

func (u *UI) handleAlerts(w http.ResponseWriter, r *http.Request) {
	v := &alertsView{Alerts: u.alertViews(""), Highlight: r.URL.Query().Get("alert"), Enabled: u.opts.Alerts != nil}
	for i := range v.Alerts {
		v.Alerts[i].Highlight = v.Alerts[i].Name == v.Highlight
	}
	u.render(w, r, http.StatusOK, "alerts", u.page(r, "Alerts", "alerts", v))
}
