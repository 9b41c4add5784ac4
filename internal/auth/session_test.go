package auth

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSessions: a pasted token opens a session whose cookie the front door
// takes as the token's identity; it ends at logout, at expiry, and when the
// token leaves the token file; a session's unsafe request needs its CSRF
// token and this server's origin; a bearer request needs neither.
func TestSessions(t *testing.T) {
	path := tokenFile(t, "- {name: ops, role: operate, sha256: "+HashSecret("s-ops")+"}\n- {name: reader, role: read, sha256: "+HashSecret("s-read")+"}\n")
	tf, err := OpenTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sess, err := NewSessions(SessionOptions{Tokens: tf, TTL: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	need := map[string]Role{"/login": RoleNone, "/page": RoleRead, "/drain": RoleOperate}
	var reached []string
	h := Middleware(Options{Tokens: tf, Sessions: sess, LoginPath: "/login", Required: func(r *http.Request) Role { return need[r.URL.Path] }},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := FromContext(r.Context())
			who := "-"
			if id != nil {
				who = id.Name
			}
			reached = append(reached, r.Method+" "+r.URL.Path+" "+who)
		}))
	type req struct {
		method, path, cookie, csrf, origin, bearer, accept string
	}
	do := func(q req) *httptest.ResponseRecorder {
		var body *strings.Reader
		if q.csrf != "" {
			body = strings.NewReader(url.Values{CSRFField: {q.csrf}}.Encode())
		} else {
			body = strings.NewReader("x=1")
		}
		r := httptest.NewRequest(q.method, "http://gpuwatch.example"+q.path, body)
		if q.method == http.MethodPost {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if q.cookie != "" {
			r.AddCookie(&http.Cookie{Name: SessionCookie, Value: q.cookie})
		}
		if q.origin != "" {
			r.Header.Set("Origin", q.origin)
		}
		if q.bearer != "" {
			r.Header.Set("Authorization", "Bearer "+q.bearer)
		}
		if q.accept != "" {
			r.Header.Set("Accept", q.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	if _, _, _, err := sess.Login("wrong"); err != ErrUnknownToken {
		t.Errorf("login with an unknown token: %v", err)
	}
	sid, id, exp, err := sess.Login("  Bearer s-ops\n")
	if err != nil || id.Name != "ops" || !exp.Equal(now.Add(time.Hour)) || strings.Contains(sid, "s-ops") {
		t.Fatalf("login: %q %+v %v %v", sid, id, exp, err)
	}
	csrfReq := httptest.NewRequest("GET", "/", nil)
	csrfReq.AddCookie(&http.Cookie{Name: SessionCookie, Value: sid})
	csrf := sess.CSRFToken(csrfReq)
	anon := sess.CSRFToken(httptest.NewRequest("GET", "/", nil))
	if csrf == anon || csrf == "" {
		t.Fatalf("a session's CSRF token %q is the anonymous one", csrf)
	}
	self := "http://gpuwatch.example"
	for _, tc := range []struct {
		name string
		q    req
		code int
	}{
		{"page with the session", req{method: "GET", path: "/page", cookie: sid}, 200},
		{"page without credentials, a browser", req{method: "GET", path: "/page", accept: "text/html"}, 303},
		{"page without credentials, an API client", req{method: "GET", path: "/page"}, 401},
		{"page with an unknown session", req{method: "GET", path: "/page", cookie: "nope", accept: "text/html"}, 303},
		{"drain with the session and its CSRF token", req{method: "POST", path: "/drain", cookie: sid, csrf: csrf, origin: self}, 200},
		{"drain with the session, no CSRF token", req{method: "POST", path: "/drain", cookie: sid, origin: self}, 403},
		{"drain with the session, the anonymous CSRF token", req{method: "POST", path: "/drain", cookie: sid, csrf: anon, origin: self}, 403},
		{"drain with the session from another origin", req{method: "POST", path: "/drain", cookie: sid, csrf: csrf, origin: "http://evil.example"}, 403},
		{"drain with the session, origin null", req{method: "POST", path: "/drain", cookie: sid, csrf: csrf, origin: "null"}, 403},
		{"drain with a bearer token, no CSRF token", req{method: "POST", path: "/drain", bearer: "s-ops"}, 200},
		{"drain with a read bearer token", req{method: "POST", path: "/drain", bearer: "s-read"}, 403},
		{"login from this origin", req{method: "POST", path: "/login", origin: self}, 200},
		{"login from another origin", req{method: "POST", path: "/login", origin: "http://evil.example"}, 403},
	} {
		reached = nil
		rec := do(tc.q)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.code)
		}
		if tc.code != 200 && len(reached) > 0 {
			t.Errorf("%s: a refused request reached the handler: %v", tc.name, reached)
		}
		if tc.code == 303 && !strings.HasPrefix(rec.Header().Get("Location"), "/login?next=%2Fpage") {
			t.Errorf("%s: redirected to %q", tc.name, rec.Header().Get("Location"))
		}
	}
	reached = nil
	do(req{method: "GET", path: "/page", cookie: sid})
	if len(reached) != 1 || reached[0] != "GET /page ops" {
		t.Errorf("the session's identity: %v", reached)
	}

	// Revocation: the token leaves the file; the session ends at the reload.
	if err := os.WriteFile(path, []byte("- {name: reader, role: read, sha256: "+HashSecret("s-read")+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(path, later, later)
	tf.mu.Lock()
	tf.checked = time.Time{}
	tf.mu.Unlock()
	if rec := do(req{method: "GET", path: "/page", cookie: sid}); rec.Code != 401 {
		t.Errorf("a session of a revoked token: %d, want 401", rec.Code)
	}
	if sess.Len() != 0 {
		t.Errorf("the revoked token's session is still held")
	}

	// Expiry and logout.
	sid2, _, _, err := sess.Login("s-read")
	if err != nil {
		t.Fatal(err)
	}
	if rec := do(req{method: "GET", path: "/page", cookie: sid2}); rec.Code != 200 {
		t.Errorf("a fresh session: %d", rec.Code)
	}
	now = now.Add(time.Hour)
	if rec := do(req{method: "GET", path: "/page", cookie: sid2}); rec.Code != 401 {
		t.Errorf("an expired session: %d, want 401", rec.Code)
	}
	sid3, _, _, _ := sess.Login("s-read")
	sess.Logout(sid3)
	if rec := do(req{method: "GET", path: "/page", cookie: sid3}); rec.Code != 401 {
		t.Errorf("a session after logout: %d, want 401", rec.Code)
	}

	// Without a token file there is nothing to log in with.
	none, _ := NewSessions(SessionOptions{})
	if _, _, _, err := none.Login("s-ops"); err != ErrNoTokenFile {
		t.Errorf("login without a token file: %v", err)
	}
}

// TestLoopbackCSRF: without a token file a loopback call may change state,
// but a browser page's form must carry the anonymous CSRF token and come
// from this server: another site's page cannot ride the loopback rule.
func TestLoopbackCSRF(t *testing.T) {
	sess, _ := NewSessions(SessionOptions{})
	h := Middleware(Options{Sessions: sess, Required: func(r *http.Request) Role { return RoleOperate }},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	anon := sess.CSRFToken(httptest.NewRequest("GET", "/", nil))
	for _, tc := range []struct {
		name, origin, site, csrf string
		code                     int
	}{
		{"the CLI (no browser headers)", "", "", "", 200},
		{"a page of this server with the token", "http://127.0.0.1:9402", "same-origin", anon, 200},
		{"a page of this server without the token", "http://127.0.0.1:9402", "same-origin", "", 403},
		{"another site's page", "http://evil.example", "cross-site", anon, 403},
		{"another site's page without Origin", "", "cross-site", "", 403},
	} {
		body := url.Values{}
		if tc.csrf != "" {
			body.Set(CSRFField, tc.csrf)
		}
		r := httptest.NewRequest("POST", "http://127.0.0.1:9402/ui/drain", strings.NewReader(body.Encode()))
		r.RemoteAddr = "127.0.0.1:5555"
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.site != "" {
			r.Header.Set("Sec-Fetch-Site", tc.site)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.code)
		}
	}
}

// TestSessionCookie: HttpOnly, SameSite=Strict, the whole site, expiring
// with the session, Secure over TLS.
func TestSessionCookie(t *testing.T) {
	exp := time.Now().Add(time.Hour)
	for _, tls := range []bool{false, true} {
		r := httptest.NewRequest("POST", "http://gw.example/login", nil)
		if tls {
			r = httptest.NewRequest("POST", "https://gw.example/login", nil)
		}
		rec := httptest.NewRecorder()
		SetSessionCookie(rec, r, "sid", exp)
		cs := rec.Result().Cookies()
		if len(cs) != 1 {
			t.Fatalf("%d cookies", len(cs))
		}
		c := cs[0]
		if c.Name != SessionCookie || c.Value != "sid" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" ||
			c.Secure != tls || c.MaxAge < 3500 || c.MaxAge > 3600 {
			t.Errorf("TLS %v: cookie %+v", tls, c)
		}
	}
}
