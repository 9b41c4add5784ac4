package auth

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/internal/httpjson"
)

// Options configure the front door.
type Options struct {
	// Tokens is the token file; nil means none was given: reads are open and
	// write and control calls are accepted from loopback only, unless
	// Insecure.
	Tokens *TokenFile
	// Insecure accepts every call from anywhere as admin (--auth.insecure).
	Insecure bool
	// Required says which role a request needs. It must be total: unknown
	// requests should need RoleAdmin.
	Required func(*http.Request) Role
	// Registerer gets gpuwatch_auth_requests_total; nil registers nothing.
	Registerer prometheus.Registerer
	// Logger reports refused calls (rate-limited); never a secret.
	Logger *slog.Logger
	// Sessions, when set, accepts the web UI's session cookie as a second
	// credential (session.go) and checks the CSRF token of browser requests
	// with unsafe methods.
	Sessions *Sessions
	// LoginPath, when set, is where a browser's page request (GET accepting
	// text/html) without valid credentials is sent (303, with ?next=) instead
	// of a 401.
	LoginPath string
}

type ctxKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext is the caller the front door let in, nil if none (a request
// that needed no role and carried no credentials).
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(ctxKey{}).(*Identity)
	return id
}

// Mode describes the front door's configuration for the start-up message.
func (o Options) Mode() string {
	switch {
	case o.Insecure:
		return "INSECURE: every call from anywhere is accepted (--auth.insecure)"
	case o.Tokens != nil:
		return "bearer tokens from " + o.Tokens.Path()
	default:
		return "no tokens: reads are open, write and control calls are accepted from loopback only"
	}
}

// Middleware is the one front door of a listener: it authenticates the
// caller (a bearer token, or a verified client certificate named in the
// token file), decides whether the caller's role covers what the request
// needs, and either refuses (401 without valid credentials, 403 without the
// role; nothing is passed on, so nothing changes) or passes the request on
// with the caller's Identity in its context. Handlers never check
// credentials themselves.
func Middleware(opts Options, next http.Handler) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Required == nil {
		opts.Required = func(*http.Request) Role { return RoleAdmin }
	}
	m := &middleware{opts: opts, next: next, limit: newLogLimit(time.Second)}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpuwatch_auth_requests_total",
		Help: "Requests seen by the front door, by the role they needed and the outcome (allowed, unauthenticated: 401, forbidden: 403).",
	}, []string{"required_role", "result"})
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(m.requests)
	}
	return m
}

type middleware struct {
	opts     Options
	next     http.Handler
	requests *prometheus.CounterVec
	limit    *logLimit
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	need := m.opts.Required(r)
	id, status, msg := m.decide(r, need)
	if status != 0 {
		m.requests.WithLabelValues(need.String(), map[int]string{401: "unauthenticated", 403: "forbidden"}[status]).Inc()
		if m.limit.allow() {
			who := "no credentials"
			if id != nil {
				who = "token " + id.Name
			}
			m.opts.Logger.Warn("refused a request", "status", status, "method", r.Method, "path", r.URL.Path,
				"remote", r.RemoteAddr, "caller", who, "needs", need.String())
		}
		if status == http.StatusUnauthorized {
			if m.opts.LoginPath != "" && r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
				if _, err := r.Cookie(SessionCookie); err == nil {
					ClearSessionCookie(w, r)
				}
				http.Redirect(w, r, m.opts.LoginPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="gpuwatch"`)
		}
		writeError(w, status, msg)
		return
	}
	m.requests.WithLabelValues(need.String(), "allowed").Inc()
	if id != nil {
		r = r.WithContext(WithIdentity(r.Context(), id))
	}
	m.next.ServeHTTP(w, r)
}

// decide returns the caller, or the refusal's status and message.
func (m *middleware) decide(r *http.Request, need Role) (*Identity, int, string) {
	// A browser's request that could change state must come from this
	// server's own pages (a cross-site form or fetch is refused), and, when
	// it rides the browser's ambient credentials (a session cookie, or the
	// loopback rule without a token file), carry the CSRF token of the page
	// it came from. A bearer header is never ambient: a page cannot make a
	// browser send one to another site.
	unsafe := unsafeMethod(r.Method) && r.Header.Get("Authorization") == ""
	if unsafe && !sameOrigin(r) {
		return nil, http.StatusForbidden, r.Method + " " + r.URL.Path + ": refused a cross-origin request from a browser " +
			"(Origin " + strings.TrimSpace(r.Header.Get("Origin")+" "+r.Header.Get("Referer")) + " is not " + r.Host + ")"
	}
	id, status, msg := m.identify(r, need)
	if status == 0 && unsafe && m.opts.Sessions != nil && id != nil && (id.Session || id.ambient && fromBrowser(r)) &&
		!m.opts.Sessions.checkCSRF(r) {
		return id, http.StatusForbidden, r.Method + " " + r.URL.Path + ": the CSRF token is missing or wrong: " +
			"reload the page and submit its form again (API clients: send Authorization: Bearer <token>)"
	}
	return id, status, msg
}

// identify returns the caller, or the refusal's status and message.
func (m *middleware) identify(r *http.Request, need Role) (*Identity, int, string) {
	if m.opts.Insecure {
		return &Identity{Name: "anonymous", Role: RoleAdmin, ambient: true}, 0, ""
	}
	tf := m.opts.Tokens
	if tf == nil {
		if need <= RoleRead {
			return &Identity{Name: "anonymous", Role: RoleRead, ambient: true}, 0, ""
		}
		if isLoopback(r.RemoteAddr) {
			return &Identity{Name: "loopback", Role: RoleAdmin, ambient: true}, 0, ""
		}
		return nil, http.StatusForbidden, r.Method + " " + r.URL.Path + " changes state and this server has no token file: " +
			"it accepts such calls from loopback only. Configure tokens (gpuwatch server --auth.tokens FILE; `gpuwatch token` makes an entry) " +
			"or, on a trusted network only, --auth.insecure"
	}
	tokens := tf.Get()
	var id *Identity
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, secret, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return nil, http.StatusUnauthorized, "Authorization: want \"Bearer <token>\""
		}
		var ok bool
		if id, ok = tokens.Lookup(strings.TrimSpace(secret)); !ok {
			return nil, http.StatusUnauthorized, "the bearer token is not known to this server"
		}
	} else if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
		id, _ = tokens.LookupCert(cn)
	} else if c, err := r.Cookie(SessionCookie); err == nil && m.opts.Sessions != nil {
		var ok bool
		if id, ok = m.opts.Sessions.identity(c.Value, tokens); !ok && need != RoleNone {
			return nil, http.StatusUnauthorized, "the session has expired, or its token was revoked: log in again"
		}
	}
	if need == RoleNone {
		return id, 0, ""
	}
	if id == nil {
		return nil, http.StatusUnauthorized, r.Method + " " + r.URL.Path + " needs a token with role " + need.String() +
			" or higher: send Authorization: Bearer <token> (the CLI: --token-file FILE or GPUWATCH_TOKEN)"
	}
	if id.Role < need {
		return id, http.StatusForbidden, "token " + id.Name + " has role " + id.Role.String() + "; " +
			r.Method + " " + r.URL.Path + " needs " + need.String() + " or higher"
	}
	return id, 0, ""
}

// Forbidden answers 403 with msg the way the front door does, for handlers
// that refuse an identity's request for what it carries (an agent token
// pushing another node's health).
func Forbidden(w http.ResponseWriter, msg string) { writeError(w, http.StatusForbidden, msg) }

func writeError(w http.ResponseWriter, status int, msg string) {
	errType := "forbidden"
	if status == http.StatusUnauthorized {
		errType = "unauthorized"
	}
	// The Prometheus API's error shape, which the CLI, Grafana and the API's
	// own errors share ("error" is what they print).
	w.Header().Set("X-Content-Type-Options", "nosniff")
	httpjson.Write(w, status, map[string]string{"status": "error", "errorType": errType, "error": msg})
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// logLimit lets one log line through per interval, so a flood of refused
// requests does not flood the log.
type logLimit struct {
	mu    sync.Mutex
	every time.Duration
	last  time.Time
}

func newLogLimit(every time.Duration) *logLimit { return &logLimit{every: every} }

func (l *logLimit) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.last) < l.every {
		return false
	}
	l.last = now
	return true
}
