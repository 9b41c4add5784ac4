package ui

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
)

// ReportCSSPath serves report.FragmentCSS: the page's Content-Security-Policy
// allows only this server's style sheets.
const ReportCSSPath = StaticPrefix + "report.css"

// reportsView is the reports page's data: the form and the report.
type reportsView struct {
	By, Last   string
	Dimensions []report.By
	Report     template.HTML
	Err        string
}

// handleReports is the utilization report (analyzer/report) over a window,
// grouped as asked: the same numbers as GET /api/gpuwatch/v1/report and
// `gpuwatch report`, drawn by report.HTMLFragment.
func (u *UI) handleReports(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := &reportsView{By: string(report.ByAccount), Last: "24h", Dimensions: report.Dimensions}
	if b := q.Get(report.ParamBy); b != "" {
		v.By = b
	}
	if l := q.Get(report.ParamLast); l != "" {
		v.Last = l
	}
	if q.Get(report.ParamFrom) == "" && q.Get(report.ParamLast) == "" {
		q.Set(report.ParamLast, v.Last)
	}
	status := http.StatusOK
	opts, err := report.ParseQuery(q, u.opts.Now())
	if err != nil {
		v.Err, status = err.Error(), http.StatusBadRequest
	} else {
		opts.Now = u.opts.Now
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
		defer cancel()
		rep, err := report.Compute(ctx, u.opts.Querier, opts)
		switch {
		case errors.Is(err, report.ErrNoData):
			v.Err = err.Error() + ": widen the window"
		case err != nil:
			v.Err, status = err.Error(), http.StatusInternalServerError
		default:
			if u.opts.FairShare != nil {
				st, _ := u.opts.FairShare()
				report.AttachFairShare(rep, st)
			} else {
				report.AttachFairShare(rep, nil)
			}
			v.Report = report.HTMLFragment(rep)
		}
	}
	u.render(w, r, status, "reports", u.page(r, "Reports", "reports", v))
}

// handleReportCSS serves the report fragment's style sheet.
func (u *UI) handleReportCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=3600")
	_, _ = w.Write([]byte(report.FragmentCSS))
}
