package ui

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
)

// placementsView is the placements page's data.
type placementsView struct {
	Enabled   bool
	Decisions []*framework.Decision
	ID        string // the id asked for with ?id=
}

// placementView is one decision and its explanation.
type placementView struct {
	D       *framework.Decision
	Explain string
	Request string
}

func (u *UI) handlePlacements(w http.ResponseWriter, r *http.Request) {
	if id := strings.TrimSpace(r.URL.Query().Get("id")); id != "" {
		http.Redirect(w, r, "/placements/"+id, http.StatusSeeOther)
		return
	}
	v := &placementsView{Enabled: u.opts.Decisions != nil}
	if v.Enabled {
		v.Decisions = u.opts.Decisions(200)
	}
	u.render(w, r, http.StatusOK, "placements", u.page(r, "Placements", "placements", v))
}

func (u *UI) handlePlacement(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if u.opts.Decision == nil {
		u.fail(w, r, http.StatusNotFound, "No placement service", "this server runs no placement service")
		return
	}
	d, ok := u.opts.Decision(id)
	if !ok {
		u.fail(w, r, http.StatusNotFound, "No such decision",
			fmt.Sprintf("no decision %q: unknown, or older than the decisions the engine keeps", id))
		return
	}
	explain := framework.Explain(d)
	req, _, _ := strings.Cut(strings.SplitN(explain, "\n", 3)[1], "\n")
	v := &placementView{D: d, Explain: explain, Request: strings.TrimPrefix(req, "request: ")}
	u.render(w, r, http.StatusOK, "placement", u.page(r, "Placement "+id, "placements", v))
}
