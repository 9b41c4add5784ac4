package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The browser's credential: a person cannot send a bearer header, so the web
// UI's login page takes a pasted token once and the server answers with a
// session cookie. The cookie holds a random session id, never the secret;
// the server keeps, per session, the SHA-256 of the token it was opened with
// and looks that hash up in the token file on every request, so a token
// dropped from (or re-roled in) the file ends (or changes) its sessions at
// the file's next reload. Sessions live in memory: a restart logs everyone
// out.
//
// A request with an unsafe method that rides a session cookie must also
// carry the session's CSRF token (form field CSRFField or header
// CSRFHeader); one from a browser's page that rides the loopback rule (no
// token file) must carry the anonymous one; and every browser request with
// an unsafe method must come from this server's own origin (Origin, else
// Referer, else Sec-Fetch-Site). The front door refuses them otherwise,
// before any handler runs.

// SessionCookie is the session cookie's name.
const SessionCookie = "gpuwatch_session"

// CSRFField is the form field, and CSRFHeader the header, that carry the
// CSRF token of a request with an unsafe method from a browser.
const (
	CSRFField  = "csrf_token"
	CSRFHeader = "X-CSRF-Token"
)

// DefaultSessionTTL is how long a session lasts from its login.
const DefaultSessionTTL = 12 * time.Hour

// maxSessions bounds the sessions held; past it the oldest is dropped.
const maxSessions = 10000

// ErrUnknownToken is Login's answer to a secret the token file does not
// hold.
var ErrUnknownToken = errors.New("the token is not known to this server")

// ErrNoTokenFile is Login's answer on a server without a token file: there
// is nothing to log in with (reads are open; actions are taken from loopback
// only).
var ErrNoTokenFile = errors.New("this server has no token file: reads are open and actions are accepted from loopback only, without logging in")

// Sessions are the browser sessions of one server.
type Sessions struct {
	tokens *TokenFile // nil: no token file, no logins
	ttl    time.Duration
	now    func() time.Time
	key    [32]byte // HMAC key of the CSRF tokens, random per process

	mu sync.Mutex
	m  map[string]*session // by session id
}

type session struct {
	hash    [sha256.Size]byte // the token's
	created time.Time
	expires time.Time
}

// SessionOptions configure NewSessions.
type SessionOptions struct {
	// Tokens is the token file logins are checked against; nil: no logins
	// (Login answers ErrNoTokenFile).
	Tokens *TokenFile
	// TTL is how long a session lasts from login (DefaultSessionTTL).
	TTL time.Duration
	// Now is the clock (time.Now). Sessions expire on the wall clock even
	// where the control plane runs on simulated time.
	Now func() time.Time
}

// NewSessions returns an empty session table.
func NewSessions(o SessionOptions) (*Sessions, error) {
	if o.TTL <= 0 {
		o.TTL = DefaultSessionTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Sessions{tokens: o.Tokens, ttl: o.TTL, now: o.Now, m: map[string]*session{}}
	if _, err := rand.Read(s.key[:]); err != nil {
		return nil, err
	}
	return s, nil
}

// Enabled says whether people log in (there is a token file).
func (s *Sessions) Enabled() bool { return s != nil && s.tokens != nil }

// TTL is how long a session lasts.
func (s *Sessions) TTL() time.Duration { return s.ttl }

// Login checks a pasted secret against the token file and opens a session
// for it, returning the cookie's value, the caller and when it expires.
func (s *Sessions) Login(secret string) (string, *Identity, time.Time, error) {
	if !s.Enabled() {
		return "", nil, time.Time{}, ErrNoTokenFile
	}
	secret = strings.TrimSpace(secret)
	if strings.HasPrefix(strings.ToLower(secret), "bearer ") {
		secret = strings.TrimSpace(secret[len("bearer "):])
	}
	id, ok := s.tokens.Get().Lookup(secret)
	if !ok {
		return "", nil, time.Time{}, ErrUnknownToken
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, time.Time{}, err
	}
	sid := base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	sess := &session{hash: sha256.Sum256([]byte(secret)), created: now, expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purgeLocked(now)
	if len(s.m) >= maxSessions {
		oldest := ""
		for k, v := range s.m {
			if oldest == "" || v.created.Before(s.m[oldest].created) {
				oldest = k
			}
		}
		delete(s.m, oldest)
	}
	s.m[sid] = sess
	return sid, id, sess.expires, nil
}

// Logout ends a session.
func (s *Sessions) Logout(sid string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.m, sid)
	s.mu.Unlock()
}

// Len is the number of open sessions (expired ones included until purged).
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *Sessions) purgeLocked(now time.Time) {
	for k, v := range s.m {
		if !now.Before(v.expires) {
			delete(s.m, k)
		}
	}
}

// identity resolves a session id against the tokens in force: nil and false
// for an unknown or expired session, or one whose token left the file (the
// session is then dropped).
func (s *Sessions) identity(sid string, tokens *Tokens) (*Identity, bool) {
	s.mu.Lock()
	sess, ok := s.m[sid]
	if ok && !s.now().Before(sess.expires) {
		delete(s.m, sid)
		ok = false
	}
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	id, found := tokens.lookupHash(sess.hash)
	if !found {
		s.Logout(sid)
		return nil, false
	}
	id.Session = true
	return id, true
}

// anonymousCSRF is what the CSRF token is derived from for a browser
// without a session (the login form; a server without a token file).
const anonymousCSRF = "anonymous"

// CSRFToken is the token the forms of a page answering r must carry: derived
// from r's session (HMAC-SHA256 of the session id under a per-process key),
// or, without one, from the anonymous value. Pages of other origins cannot
// read it, so they cannot forge the forms.
func (s *Sessions) CSRFToken(r *http.Request) string {
	if s == nil {
		return ""
	}
	v := anonymousCSRF
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		s.mu.Lock()
		_, ok := s.m[c.Value]
		s.mu.Unlock()
		if ok {
			v = "session:" + c.Value
		}
	}
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF compares the request's CSRF token with the one expected for it.
func (s *Sessions) checkCSRF(r *http.Request) bool {
	got := r.Header.Get(CSRFHeader)
	if got == "" && isForm(r) {
		got = r.PostFormValue(CSRFField)
	}
	want := s.CSRFToken(r)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// SetSessionCookie sets the session cookie on w: HttpOnly, SameSite=Strict,
// Secure when r came over TLS, path /, expiring with the session.
func SetSessionCookie(w http.ResponseWriter, r *http.Request, sid string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: sid, Path: "/", Expires: expires,
		MaxAge: max(1, int(time.Until(expires).Seconds())), HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// ClearSessionCookie removes the session cookie.
func ClearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// isForm says whether the request body is an HTML form.
func isForm(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/x-www-form-urlencoded") || strings.HasPrefix(ct, "multipart/form-data")
}

// unsafeMethod is a method that may change state.
func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// sameOrigin says whether a browser sent r from this server's own pages:
// Origin names this host, or (without Origin) Referer does, or (without
// both) Sec-Fetch-Site says same-origin or none. A request with none of the
// three is not from a browser's page (curl, the CLI) and passes.
func sameOrigin(r *http.Request) bool {
	host := r.Host
	check := func(raw string) bool {
		if raw == "null" {
			return false
		}
		u, err := url.Parse(raw)
		return err == nil && strings.EqualFold(u.Host, host)
	}
	if o := r.Header.Get("Origin"); o != "" {
		return check(o)
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		return check(ref)
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// fromBrowser says whether a request comes from a browser's page: it
// carries an Origin, Referer or Sec-Fetch-Site header, which browsers send
// with every POST and API clients (the CLI, agents, Grafana's backend) do not.
func fromBrowser(r *http.Request) bool {
	return r.Header.Get("Origin") != "" || r.Header.Get("Referer") != "" || r.Header.Get("Sec-Fetch-Site") != ""
}
