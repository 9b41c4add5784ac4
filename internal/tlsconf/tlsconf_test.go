package tlsconf

import (
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/tlsconf/tlstest"
)

func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := "-"
		if len(r.TLS.VerifiedChains) > 0 {
			cn = r.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		io.WriteString(w, cn)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "https://" + ln.Addr().String()
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestServerReloadsCertificate: a renewed certificate (here: issued by a new
// CA) is served without a restart; a broken one keeps the old in force.
func TestServerReloadsCertificate(t *testing.T) {
	dir := t.TempDir()
	ca1, _ := tlstest.NewCA(dir, "one")
	cert, key, err := ca1.Issue("server", true)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Server(ServerFiles{CertFile: cert, KeyFile: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTLS(t, cfg)
	trusting := func(ca string) *http.Client {
		c, err := Client(ClientFiles{CAFile: ca})
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: c, DisableKeepAlives: true}}
	}
	if _, err := get(trusting(ca1.File), url); err != nil {
		t.Fatalf("client trusting CA one: %v", err)
	}
	if _, err := get(&http.Client{}, url); err == nil {
		t.Fatal("a client trusting only the system's roots accepted the test certificate")
	}
	// Renew: the same file names now hold a certificate from CA two.
	ca2dir := t.TempDir()
	ca2, _ := tlstest.NewCA(ca2dir, "two")
	c2, k2, _ := ca2.Issue("server", true)
	for _, mv := range [][2]string{{c2, cert}, {k2, key}} {
		b, _ := os.ReadFile(mv[0])
		os.WriteFile(mv[1], b, 0o600)
		later := time.Now().Add(time.Minute)
		os.Chtimes(mv[1], later, later)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := get(trusting(ca2.File), url); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate is not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A half-written renewal keeps the certificate in force.
	os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\nbroken"), 0o600)
	time.Sleep(1100 * time.Millisecond)
	if _, err := get(trusting(ca2.File), url); err != nil {
		t.Errorf("a broken certificate file replaced the one in force: %v", err)
	}
}

// TestMutualTLS: with a client CA, a client certificate signed by it is
// verified and its common name reaches the handler; none, or one from
// another CA, is refused in the handshake (require) or let through
// unidentified (verify-if-given).
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, _ := tlstest.NewCA(dir, "site")
	cert, key, _ := ca.Issue("server", true)
	ccert, ckey, _ := ca.Issue("kube-scheduler", false)
	other, _ := tlstest.NewCA(t.TempDir(), "other")
	ocert, okey, _ := other.Issue("intruder", false)
	client := func(cf, kf string) *http.Client {
		c, err := Client(ClientFiles{CAFile: ca.File, CertFile: cf, KeyFile: kf})
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: c}}
	}
	for _, mode := range []string{"require", "verify-if-given"} {
		cfg, err := Server(ServerFiles{CertFile: cert, KeyFile: key, ClientCAFile: ca.File, ClientAuth: mode}, nil)
		if err != nil {
			t.Fatal(err)
		}
		url := serveTLS(t, cfg)
		if cn, err := get(client(ccert, ckey), url); err != nil || cn != "kube-scheduler" {
			t.Errorf("%s: client certificate: %q, %v", mode, cn, err)
		}
		_, errNone := get(client("", ""), url)
		cnOther, errOther := get(client(ocert, okey), url)
		if mode == "require" && (errNone == nil || errOther == nil) {
			t.Errorf("require: no certificate (%v) or another CA's (%v) got through", errNone, errOther)
		}
		if mode == "verify-if-given" && errNone != nil {
			t.Errorf("verify-if-given: a client without a certificate was refused: %v", errNone)
		}
		if errOther == nil && cnOther != "-" {
			// Go's client presents no certificate the server's CAs did not sign;
			// with verify-if-given it is then an unidentified client.
			t.Errorf("%s: a certificate from another CA identified the client as %q", mode, cnOther)
		}
	}
	if _, err := Server(ServerFiles{CertFile: cert, KeyFile: key, ClientCAFile: ca.File, ClientAuth: "sometimes"}, nil); err == nil || !strings.Contains(err.Error(), "require or verify-if-given") {
		t.Errorf("bad --tls.client-auth: %v", err)
	}
	if _, err := Server(ServerFiles{CertFile: cert}, nil); err == nil {
		t.Error("a certificate without a key was accepted")
	}
	if _, err := Server(ServerFiles{CertFile: key, KeyFile: key}, nil); err == nil || !strings.Contains(err.Error(), "--tls.cert-file") {
		t.Errorf("a key as certificate: %v", err)
	}
}
