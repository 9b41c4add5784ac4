package ui

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// Paths of the UI's routes that the server's access table names.
const (
	LoginPath       = "/login"
	LogoutPath      = "/logout"
	StaticPrefix    = "/static/"
	DrainPath       = "/ui/drain"
	ResumePath      = "/ui/resume"
	BudgetResetPath = "/ui/budget/reset"
)

//go:embed templates/*.html static/*
var files embed.FS

// Alert is one pending or firing alert of the server's rules engine.
type Alert struct {
	Labels      map[string]string
	Annotations map[string]string
	State       string // pending or firing
	ActiveAt    time.Time
	Value       string
}

// Options are what the UI reads from. Every source but Querier may be nil
// (that part of the control plane is not configured), and the page says so.
type Options struct {
	// Querier is the store, embedded or external.
	Querier store.Querier
	// Drain is the drain controller.
	Drain *drain.Controller
	// Snapshot is the placement engine's current fleet snapshot; nil: the UI
	// reads one from the store itself (service.Feed) at most every
	// SnapshotEvery.
	Snapshot      func() *snapshot.Snapshot
	SnapshotEvery time.Duration
	// Decisions lists the placement engine's recent decisions, newest first,
	// and Decision finds one by id.
	Decisions func(n int) []*framework.Decision
	Decision  func(id string) (*framework.Decision, bool)
	// FairShare is the latest standing and the feeder's last error.
	FairShare func() (*fairshare.Standing, error)
	// Alerts are the rules engine's active alerts; nil without rules.
	Alerts func() []Alert
	// Report is the latest health report a node's agent pushed.
	Report func(node string) (healthreport.Report, bool)
	// Sessions are the browser sessions the front door accepts; nil: no
	// login page.
	Sessions *auth.Sessions
	// Now is the control plane's clock (the demo's simulated time).
	Now func() time.Time
	// GrafanaURL, when set, is the Grafana the node and GPU pages link to
	// (its gpuwatch-node and gpuwatch-gpu dashboards).
	GrafanaURL string
	// Store describes the store for the footer ("embedded Prometheus TSDB in …").
	Store string
	// Role, when set, says for the footer which part this server plays among
	// replicas ("leader gpuwatch-server-0", "follower of …"); "" says nothing.
	Role    func() string
	Version string
	Logger  *slog.Logger
}

// UI serves the pages.
type UI struct {
	opts   Options
	pages  map[string]*template.Template
	static http.Handler

	fleetMu   sync.Mutex
	fleetSnap *snapshot.Snapshot // the snapshot fleetData was built from
	fleetAt   time.Time          // when (wall clock) the UI fed its own
	fleet     *fleetData
}

// New parses the templates.
func New(opts Options) (*UI, error) {
	if opts.Querier == nil {
		return nil, errors.New("ui: no store querier")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SnapshotEvery <= 0 {
		opts.SnapshotEvery = 10 * time.Second
	}
	opts.GrafanaURL = strings.TrimRight(opts.GrafanaURL, "/")
	u := &UI{opts: opts, pages: map[string]*template.Template{}}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	names, _ := fs.Glob(files, "templates/*.html")
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || base == "partials" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(files, n)
		if err != nil {
			return nil, fmt.Errorf("ui: %w", err)
		}
		u.pages[base] = t
	}
	sub, _ := fs.Sub(files, "static")
	u.static = http.StripPrefix(StaticPrefix, http.FileServer(http.FS(sub)))
	return u, nil
}

// Register mounts the pages on mux; the front door in front of it decides
// who may see and do what (server.RequiredRole).
func (u *UI) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", u.handleFleet)
	mux.HandleFunc("GET /node/{node}", u.handleNode)
	mux.HandleFunc("GET /node/{node}/gpu/{gpu}", u.handleGPU)
	mux.HandleFunc("GET /alerts", u.handleAlerts)
	mux.HandleFunc("GET /drains", u.handleDrains)
	mux.HandleFunc("GET /placements", u.handlePlacements)
	mux.HandleFunc("GET /placements/{id}", u.handlePlacement)
	mux.HandleFunc("GET /fairshare", u.handleFairShare)
	mux.HandleFunc("GET /reports", u.handleReports)
	mux.HandleFunc("GET "+ReportCSSPath, u.handleReportCSS)
	mux.HandleFunc("GET "+LoginPath, u.handleLoginPage)
	mux.HandleFunc("POST "+LoginPath, u.handleLogin)
	mux.HandleFunc("POST "+LogoutPath, u.handleLogout)
	mux.HandleFunc("POST "+DrainPath, u.handleDrain)
	mux.HandleFunc("POST "+ResumePath, u.handleResume)
	mux.HandleFunc("POST "+BudgetResetPath, u.handleBudgetReset)
	mux.Handle("GET "+StaticPrefix, u.static)
}

// page is what every page's layout needs.
type page struct {
	Title   string
	Nav     string // the nav entry to mark current
	User    *auth.Identity
	CanAct  bool // operate or more
	CanAdm  bool // admin
	Login   bool // the server has a token file: show log in/out
	CSRF    string
	CSRFKey string
	Now     time.Time
	Store   string
	Role    string
	Version string
	Flash   string
	Error   string
	Data    any
}

func (u *UI) page(r *http.Request, title, nav string, data any) *page {
	id := auth.FromContext(r.Context())
	p := &page{Title: title, Nav: nav, User: id, Login: u.opts.Sessions.Enabled(), CSRFKey: auth.CSRFField,
		Now: u.opts.Now(), Store: u.opts.Store, Version: u.opts.Version, Data: data}
	if u.opts.Role != nil {
		p.Role = u.opts.Role()
	}
	if id != nil {
		p.CanAct, p.CanAdm = id.Role >= auth.RoleOperate, id.Role >= auth.RoleAdmin
	}
	if !p.Login && isLoopback(r.RemoteAddr) {
		// No token file: the front door takes actions from loopback (the
		// identity of a read is "anonymous", but a POST would be "loopback").
		p.CanAct, p.CanAdm = true, true
	}
	p.CSRF = u.opts.Sessions.CSRFToken(r)
	p.Flash = r.URL.Query().Get("done")
	return p
}

// render writes a page, gzipped when the browser takes it (the fleet page of a
// large fleet is mostly repeated cells: about 20 times smaller).
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	t := u.pages[name]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		u.opts.Logger.Error("ui: rendering a page failed", "page", name, "err", err)
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Vary", "Accept-Encoding")
	if buf.Len() > 8<<10 && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		w.WriteHeader(status)
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		_, _ = zw.Write(buf.Bytes())
		_ = zw.Close()
		return
	}
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders the error page.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	p := u.page(r, title, "", nil)
	p.Error = msg
	u.render(w, r, status, "error", p)
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// nodeName checks a node name from a URL: what a scheduler may call a node.
var nodeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$`)

func (u *UI) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 20*time.Second)
}

// nodeURL is a node page's path, with a GPU highlighted when gpu ≥ 0.
func nodeURL(node string, gpu int) string {
	p := "/node/" + url.PathEscape(node)
	if gpu >= 0 {
		p += "?gpu=" + strconv.Itoa(gpu) + "#gpu-" + strconv.Itoa(gpu)
	}
	return p
}

// AlertLink is where an alert's generator link points in the UI under base
// (the server's --web.external-url): the node page with the alert's GPU
// highlighted when the alert names a node, else the alerts page.
func AlertLink(base string, labels map[string]string) string {
	base = strings.TrimRight(base, "/")
	node := labels["node"]
	if node == "" {
		node = labels["Hostname"]
	}
	if node != "" && nodeName.MatchString(node) {
		gpu := -1
		for _, k := range []string{"gpu_index", "gpu"} {
			if v, err := strconv.Atoi(labels[k]); err == nil && v >= 0 {
				gpu = v
				break
			}
		}
		return base + nodeURL(node, gpu)
	}
	return base + "/alerts?alert=" + url.QueryEscape(labels["alertname"])
}
