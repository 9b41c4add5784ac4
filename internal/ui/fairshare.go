package ui

import (
	"net/http"

	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
)

// fairShareView is the fair-share page's data.
type fairShareView struct {
	Enabled  bool
	Standing *fairshare.Standing
	Err      string
}

func (u *UI) handleFairShare(w http.ResponseWriter, r *http.Request) {
	v := &fairShareView{Enabled: u.opts.FairShare != nil}
	if v.Enabled {
		st, err := u.opts.FairShare()
		v.Standing = st
		if err != nil {
			v.Err = err.Error()
		}
	}
	u.render(w, r, http.StatusOK, "fairshare", u.page(r, "Fair share", "fairshare", v))
}
