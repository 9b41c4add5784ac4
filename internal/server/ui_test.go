package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
)

// TestUIRoutes: the web UI is mounted at the root URL behind the front door:
// with a token file a browser is sent to the login page and the assets need
// no token; the UI's actions need the roles the access table gives them;
// the health push keeps the node's latest report for the node page.
func TestUIRoutes(t *testing.T) {
	s, ts, _ := authedServer(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, secret, accept string) (int, string, http.Header) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	if code, _, h := get("/", "", "text/html"); code != http.StatusSeeOther || h.Get("Location") != "/login?next=%2F" {
		t.Errorf("the fleet page without a session: %d to %q, want 303 to the login page", code, h.Get("Location"))
	}
	if code, _, _ := get("/", "", ""); code != http.StatusUnauthorized {
		t.Errorf("the fleet page for an API client without a token: %d, want 401", code)
	}
	for _, p := range []string{"/login", "/static/style.css"} {
		if code, _, _ := get(p, "", "text/html"); code != http.StatusOK {
			t.Errorf("%s without a token: %d, want 200", p, code)
		}
	}
	if code, body, h := get("/", testSecrets["read"], "text/html"); code != 200 || !strings.Contains(body, "<h1>Fleet</h1>") ||
		!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("the fleet page with a read token: %d %.300s", code, body)
	}
	// The latest pushed report reaches the node page.
	if code, body := call(t, "POST", ts.URL+APIPrefix+"/health", testSecrets["agent"], "application/json", healthReport("node-05"), nil); code != http.StatusAccepted {
		t.Fatalf("health push: %d %s", code, body)
	}
	if code, body, _ := get("/node/node-05", testSecrets["read"], ""); code != 200 || !strings.Contains(body, "verdict") {
		t.Errorf("node-05's page: %d %.500s", code, body)
	}
	// The actions: the role, then the controller.
	form := url.Values{"node": {"node-05"}, "reason": {"fan"}}.Encode()
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	if code, _ := call(t, "POST", ts.URL+"/ui/drain", testSecrets["agent"], "", []byte(form), hdr); code != http.StatusForbidden {
		t.Errorf("a UI drain with an agent token: %d, want 403", code)
	}
	if code, _ := call(t, "POST", ts.URL+"/ui/budget/reset", testSecrets["operate"], "", nil, hdr); code != http.StatusForbidden {
		t.Errorf("a UI budget reset with an operate token: %d, want 403", code)
	}
	if code, body := call(t, "POST", ts.URL+"/ui/drain", testSecrets["operate"], "", []byte(form), hdr); code != http.StatusOK {
		// The client follows the 303 to the node page.
		t.Errorf("a UI drain with an operate token: %d %.300s", code, body)
	}
	n, ok := s.Drain().Node("node-05")
	if !ok || !n.Manual || n.User != "oncall" || n.Reason != "fan" {
		t.Errorf("node-05 after the UI drain: %+v, want a manual drain by oncall for \"fan\"", n)
	}
}

// TestUIWithoutTokens: without a token file the UI reads for everyone and
// acts from loopback, but a browser page's action needs the forms' CSRF
// token and this server's origin.
func TestUIWithoutTokens(t *testing.T) {
	act := drain.NewLogActuator(io.Discard)
	s, err := New(Options{DataDir: t.TempDir(), Drain: &DrainOptions{Actuator: act, ActuatorName: "log", PollInterval: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "no token file") {
		t.Errorf("the login page without a token file: %.400s", b)
	}
	resp, _ = http.Get(ts.URL + "/drains")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	_, rest, _ := strings.Cut(string(b), `name="csrf_token" value="`)
	token, _, _ := strings.Cut(rest, `"`)
	if token == "" {
		t.Fatalf("no CSRF token in the drains page's forms")
	}
	browser := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": ts.URL, "Sec-Fetch-Site": "same-origin"}
	form := url.Values{"node": {"node-09"}, "reason": {"fan"}}
	if code, _ := call(t, "POST", ts.URL+"/ui/drain", "", "", []byte(form.Encode()), browser); code != http.StatusForbidden {
		t.Errorf("a page's drain without the CSRF token: %d, want 403", code)
	}
	browser["Origin"] = "http://evil.example"
	form.Set("csrf_token", token)
	if code, _ := call(t, "POST", ts.URL+"/ui/drain", "", "", []byte(form.Encode()), browser); code != http.StatusForbidden {
		t.Errorf("another site's drain: %d, want 403", code)
	}
	if _, ok := s.Drain().Node("node-09"); ok {
		t.Fatalf("a refused drain reached the controller")
	}
	browser["Origin"] = ts.URL
	if code, body := call(t, "POST", ts.URL+"/ui/drain", "", "", []byte(form.Encode()), browser); code != http.StatusOK {
		t.Errorf("the page's own drain from loopback: %d %.300s", code, body)
	}
	if n, ok := s.Drain().Node("node-09"); !ok || n.User != "loopback" {
		t.Errorf("node-09 after the loopback drain: %+v", n)
	}
}
