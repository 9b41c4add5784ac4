package auth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func tokenFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const sampleTokens = `
- name: reader
  role: read
  sha256: %READ%
- name: agent-rack1
  role: agent
  sha256: %AGENT%
  nodes: ["node-0*"]
- name: ops
  role: operate
  sha256: %OPS%
- name: root
  role: admin
  sha256: %ADMIN%
- name: kube-scheduler
  role: read
  client_cert_cn: kube-scheduler
`

func sampleFile(t *testing.T) string {
	r := strings.NewReplacer("%READ%", HashSecret("s-read"), "%AGENT%", HashSecret("s-agent"),
		"%OPS%", HashSecret("s-ops"), "%ADMIN%", strings.ToUpper(HashSecret("s-admin")))
	return tokenFile(t, r.Replace(sampleTokens))
}

func TestParseTokens(t *testing.T) {
	tf, err := LoadTokens(sampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		secret, name string
		role         Role
	}{{"s-read", "reader", RoleRead}, {"s-agent", "agent-rack1", RoleAgent}, {"s-ops", "ops", RoleOperate}, {"s-admin", "root", RoleAdmin}} {
		id, ok := tf.Lookup(tc.secret)
		if !ok || id.Name != tc.name || id.Role != tc.role {
			t.Errorf("Lookup(%s) = %+v, %v; want %s %s", tc.secret, id, ok, tc.name, tc.role)
		}
	}
	for _, s := range []string{"", "s-rea", "s-read ", HashSecret("s-read")} {
		if id, ok := tf.Lookup(s); ok {
			t.Errorf("Lookup(%q) = %+v: only the secret itself may match", s, id)
		}
	}
	if id, ok := tf.LookupCert("kube-scheduler"); !ok || id.Role != RoleRead {
		t.Errorf("LookupCert = %+v, %v", id, ok)
	}
	id, _ := tf.Lookup("s-agent")
	for node, want := range map[string]bool{"node-01": true, "node-0": true, "gpu01": false, "node-10": false} {
		if got := id.AllowsNode(node); got != want {
			t.Errorf("agent bound to node-0* AllowsNode(%s) = %v", node, got)
		}
	}
}

func TestParseTokensErrors(t *testing.T) {
	h := HashSecret("x")
	for _, tc := range []struct{ name, body, want string }{
		{"empty", "", "tokens.yaml: empty: want a YAML list"},
		{"empty list", "[]", "tokens.yaml:1: no tokens"},
		{"not a list", "name: a\n", "tokens.yaml:1: want a YAML list"},
		{"no name", "- role: read\n  sha256: " + h, "tokens.yaml:1: [0].name: missing"},
		{"no role", "- name: a\n  sha256: " + h, "tokens.yaml:1: [0].role: missing"},
		{"bad role", "- name: a\n  role: root\n  sha256: " + h, `tokens.yaml:2: [0].role: role "root": want read, agent, operate or admin`},
		{"no hash", "- name: a\n  role: read", "tokens.yaml:1: [0].sha256: missing"},
		{"secret given", "- name: a\n  role: read\n  secret: hunter2", "tokens.yaml:3: [0].secret: the token file holds no secrets"},
		{"short hash", "- name: a\n  role: read\n  sha256: abc", "tokens.yaml:3: [0].sha256: want 64 hex digits"},
		{"unknown field", "- name: a\n  role: read\n  sha256: " + h + "\n  roles: x", `tokens.yaml:4: [0].roles: unknown field, did you mean "role"? (want one of name, role, sha256, client_cert_cn, nodes)`},
		{"duplicate name", "- name: a\n  role: read\n  sha256: " + h + "\n- name: a\n  role: read\n  sha256: " + HashSecret("y"), `tokens.yaml:4: [1].name: "a" is the name of token 1 too`},
		{"duplicate secret", "- name: a\n  role: read\n  sha256: " + h + "\n- name: b\n  role: read\n  sha256: " + h, `tokens.yaml:6: [1].sha256: same secret as "a"`},
		{"nodes on operator", "- name: a\n  role: operate\n  sha256: " + h + "\n  nodes: [x]", "tokens.yaml:4: [0].nodes: nodes bind an agent token"},
		{"bad glob", "- name: a\n  role: agent\n  sha256: " + h + "\n  nodes: ['[']", `tokens.yaml:4: [0].nodes[0]: "[" is not a valid glob`},
		{"bad name", "- name: 'a b'\n  role: read\n  sha256: " + h, `tokens.yaml:1: [0].name: "a b": use letters`},
		{"both", "- name: a\n  role: read\n  sha256: " + h + "\n  client_cert_cn: x", "tokens.yaml:4: [0].client_cert_cn: give sha256 or client_cert_cn, not both"},
		{"two docs", "- name: a\n  role: read\n  sha256: " + h + "\n---\n- x", "tokens.yaml:4: more than one YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTokens("tokens.yaml", []byte(tc.body))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v, want one starting %q", err, tc.want)
			}
		})
	}
}

// FuzzParseTokens: any input either loads into entries that each have a
// name, a role and a way to authenticate, or fails with an error naming the
// file; nothing panics, and no input makes an empty secret match.
func FuzzParseTokens(f *testing.F) {
	data, _ := os.ReadFile(filepath.Join("testdata", "tokens.yaml"))
	f.Add(data)
	f.Add([]byte(strings.NewReplacer("%READ%", HashSecret("a"), "%AGENT%", HashSecret("b"), "%OPS%", HashSecret("c"), "%ADMIN%", HashSecret("d")).Replace(sampleTokens)))
	f.Add([]byte("- name: a\n  role: agent\n  sha256: " + HashSecret("x") + "\n  nodes: ['n*', 'g[0-3]']\n"))
	f.Add([]byte("[{name: a, role: read, client_cert_cn: c}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := ParseTokens("f.yaml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml:") && !strings.HasPrefix(err.Error(), "f.yaml: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if tf.Len() == 0 {
			t.Fatal("an empty token list loaded")
		}
		for _, e := range tf.list {
			if e.Name == "" || e.Role < RoleRead || e.Role > RoleAdmin || (!e.hasHash && e.ClientCertCN == "") {
				t.Fatalf("incomplete entry loaded: %+v", e)
			}
		}
		if id, ok := tf.Lookup(""); ok {
			t.Fatalf("the empty secret matched %s", id.Name)
		}
	})
}

func TestMiddleware(t *testing.T) {
	tf, err := OpenTokenFile(sampleFile(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	need := map[string]Role{"/open": RoleNone, "/read": RoleRead, "/write": RoleAgent, "/drain": RoleOperate, "/reset": RoleAdmin}
	var reached []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := "-"
		if id := FromContext(r.Context()); id != nil {
			who = id.Name
		}
		reached = append(reached, r.URL.Path+" "+who)
	})
	reg := prometheus.NewRegistry()
	h := Middleware(Options{Tokens: tf, Required: func(r *http.Request) Role { return need[r.URL.Path] }, Registerer: reg}, next)
	call := func(path, header string) int {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if strings.Contains(rec.Body.String(), "s-") {
			t.Errorf("%s: the answer repeats a secret: %s", path, rec.Body)
		}
		return rec.Code
	}
	levels := []struct {
		path   string
		secret string // the lowest role that may
		below  string // a token one role short
	}{{"/read", "s-read", ""}, {"/write", "s-agent", "s-read"}, {"/drain", "s-ops", "s-agent"}, {"/reset", "s-admin", "s-ops"}}
	for _, l := range levels {
		reached = nil
		if c := call(l.path, ""); c != 401 {
			t.Errorf("%s without a token: %d, want 401", l.path, c)
		}
		if c := call(l.path, "Bearer wrong"); c != 401 {
			t.Errorf("%s with an unknown token: %d, want 401", l.path, c)
		}
		if c := call(l.path, "Basic czpz"); c != 401 {
			t.Errorf("%s with basic auth: %d, want 401", l.path, c)
		}
		if l.below != "" {
			if c := call(l.path, "Bearer "+l.below); c != 403 {
				t.Errorf("%s with %s: %d, want 403", l.path, l.below, c)
			}
		}
		if len(reached) != 0 {
			t.Errorf("%s: refused requests reached the handler: %v", l.path, reached)
		}
		if c := call(l.path, "Bearer "+l.secret); c != 200 {
			t.Errorf("%s with %s: %d, want 200", l.path, l.secret, c)
		}
		if c := call(l.path, "bearer  s-admin"); c != 200 {
			t.Errorf("%s with admin (lower-case scheme): %d, want 200", l.path, c)
		}
	}
	reached = nil
	if c := call("/open", ""); c != 200 || len(reached) != 1 || reached[0] != "/open -" {
		t.Errorf("/open: %d %v", c, reached)
	}
	if got := testutil.ToFloat64(h.(*middleware).requests.WithLabelValues("operate", "forbidden")); got != 1 {
		t.Errorf("forbidden operate requests counted %g, want 1", got)
	}
}

func TestMiddlewareWithoutTokens(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(FromContext(r.Context()).Name)) })
	h := Middleware(Options{Required: func(r *http.Request) Role {
		if r.Method == http.MethodGet {
			return RoleRead
		}
		return RoleOperate
	}}, next)
	for _, tc := range []struct {
		method, remote string
		code           int
		who            string
	}{
		{"GET", "10.0.0.5:4000", 200, "anonymous"},
		{"POST", "10.0.0.5:4000", 403, ""},
		{"POST", "127.0.0.1:4000", 200, "loopback"},
		{"POST", "[::1]:4000", 200, "loopback"},
	} {
		req := httptest.NewRequest(tc.method, "/x", nil)
		req.RemoteAddr = tc.remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || (tc.who != "" && rec.Body.String() != tc.who) {
			t.Errorf("%s from %s: %d %q, want %d %q", tc.method, tc.remote, rec.Code, rec.Body, tc.code, tc.who)
		}
		if rec.Code == 403 && !strings.Contains(rec.Body.String(), "--auth.tokens") {
			t.Errorf("the refusal does not say how to configure tokens: %s", rec.Body)
		}
	}
	ins := Middleware(Options{Insecure: true, Required: func(*http.Request) Role { return RoleAdmin }}, next)
	req := httptest.NewRequest("POST", "/x", nil)
	req.RemoteAddr = "10.0.0.5:4000"
	rec := httptest.NewRecorder()
	ins.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("--auth.insecure refused a remote admin call: %d", rec.Code)
	}
}

func TestMiddlewareClientCertificate(t *testing.T) {
	tf, err := OpenTokenFile(sampleFile(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := Middleware(Options{Tokens: tf, Required: func(*http.Request) Role { return RoleRead }},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(FromContext(r.Context()).Name)) }))
	for cn, want := range map[string]int{"kube-scheduler": 200, "someone-else": 401} {
		req := httptest.NewRequest("POST", "/x", nil)
		req.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: cn}}}}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("verified certificate %s: %d, want %d", cn, rec.Code, want)
		}
	}
	// A presented but unverified certificate is no identity.
	req := httptest.NewRequest("POST", "/x", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Subject: pkix.Name{CommonName: "kube-scheduler"}}}}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Errorf("unverified certificate: %d, want 401", rec.Code)
	}
}

func TestTokenFileReload(t *testing.T) {
	p := tokenFile(t, "- {name: a, role: read, sha256: "+HashSecret("one")+"}\n")
	tf, err := OpenTokenFile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tf.Get().Lookup("one"); !ok {
		t.Fatal("token one not loaded")
	}
	rewrite := func(body string) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Duration(len(body)) * time.Second)
		os.Chtimes(p, later, later)
		tf.mu.Lock()
		tf.checked = time.Time{}
		tf.mu.Unlock()
	}
	rewrite("- {name: a, role: read, sha256: " + HashSecret("two") + "}\n")
	if _, ok := tf.Get().Lookup("one"); ok {
		t.Error("a revoked token still works after the file changed")
	}
	if _, ok := tf.Get().Lookup("two"); !ok {
		t.Error("a rotated token does not work after the file changed")
	}
	rewrite("- {name: a, role: nonsense}\n")
	if _, ok := tf.Get().Lookup("two"); !ok {
		t.Error("a broken file replaced the tokens in force")
	}
}

func TestTransport(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Authorization") }))
	defer srv.Close()
	p := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(p, []byte("  s3cret\n"), 0o600)
	src, err := FileSecret(p)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &Transport{Secret: src}}
	if _, err := c.Get(srv.URL); err != nil {
		t.Fatal(err)
	}
	if got != "Bearer s3cret" {
		t.Errorf("Authorization = %q", got)
	}
	os.WriteFile(p, []byte("a\nb\n"), 0o600)
	if _, err := ReadSecretFile(p); err == nil {
		t.Error("a two-line secret file was accepted")
	}
}
