package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/tlsconf/tlstest"
)

// makeToken runs `gpuwatch token` as a user would and appends the entry to
// the token file; it returns the secret's file.
func makeToken(t *testing.T, tokens, name, role string, extra ...string) string {
	t.Helper()
	secret := filepath.Join(filepath.Dir(tokens), name+".token")
	code, out, errOut := gw(t, append([]string{"token", "--name", name, "--role", role, "--secret-file", secret}, extra...)...)
	if code != 0 {
		t.Fatalf("gpuwatch token: exit %d: %s", code, errOut)
	}
	f, err := os.OpenFile(tokens, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(out)
	if strings.Contains(out, readFile(t, secret)) {
		t.Fatal("the token file entry holds the secret")
	}
	return secret
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestTrustEndToEnd: `gpuwatch server` with a token file and TLS; a
// simulated `gpuwatch agent` ships its samples and pushes its health with its
// node-bound agent token over HTTPS; `gpuwatch drain` works with an operator's
// token and is refused without one or with the agent's; an agent whose token
// is bound to other nodes gets nothing in.
func TestTrustEndToEnd(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "site")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue("gpuwatch-server", true)
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.yaml")
	agentSecret := makeToken(t, tokens, "agent-node-01", "agent", "--nodes", "node-0*")
	strangerSecret := makeToken(t, tokens, "agent-rack9", "agent", "--nodes", "gpu9*")
	opsSecret := makeToken(t, tokens, "oncall", "operate")
	readSecret := makeToken(t, tokens, "grafana", "read")

	url, serverOut := startServerCommand(t, "--actuator", "log", "--auth.tokens", tokens, "--tls.cert-file", cert, "--tls.key-file", key)
	if !strings.HasPrefix(url, "https://") || !strings.Contains(serverOut.String(), "bearer tokens from "+tokens) {
		t.Fatalf("server: %s\n%s", url, serverOut.String())
	}

	runAgent := func(secret string) (context.CancelFunc, *syncBuffer, chan int) {
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"agent", "--simulate", "hgx-h100", "--listen", "127.0.0.1:0", "--collect.interval", "1s",
				"--remote-write", url + "/api/v1/write", "--server", url, "--auth.token-file", secret, "--tls.ca-file", ca.File}, &stdout, &stderr)
		}()
		return cancel, &stderr, done
	}
	cancel, agentErr, done := runAgent(agentSecret)
	client := httpsClient(t, ca.File)
	query := func(q string) string {
		req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/query?query="+q, nil)
		req.Header.Set("Authorization", "Bearer "+readFile(t, readSecret))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(query("count(DCGM_FI_DEV_GPU_TEMP)"), `"8"]`) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent's samples did not arrive over HTTPS with its token: %s\nagent: %s", query("count(DCGM_FI_DEV_GPU_TEMP)"), agentErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var node struct {
		Node string `json:"node"`
	}
	deadline = time.Now().Add(30 * time.Second)
	for node.Node != "node-01" {
		if time.Now().After(deadline) {
			t.Fatalf("the agent's health push did not arrive; agent: %s", agentErr.String())
		}
		req, _ := http.NewRequest(http.MethodGet, url+"/api/gpuwatch/v1/nodes/node-01", nil)
		req.Header.Set("Authorization", "Bearer "+readFile(t, readSecret))
		if resp, err := client.Do(req); err == nil {
			json.NewDecoder(resp.Body).Decode(&node)
			resp.Body.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done

	// An agent whose token speaks for other nodes: refused, and says so.
	cancel, strangerErr, done := runAgent(strangerSecret)
	deadline = time.Now().Add(20 * time.Second)
	for !strings.Contains(strangerErr.String(), "403") {
		if time.Now().After(deadline) {
			t.Fatalf("an agent with another rack's token was not told it is refused: %s", strangerErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done

	// The CLI: the operator's token drains; none, or the agent's, does not.
	common := []string{"--server", url, "--tls.ca-file", ca.File}
	if code, _, errOut := gw(t, append([]string{"drain", "node-03", "--reason", "fan"}, common...)...); code != 1 || !strings.Contains(errOut, "needs a token with role operate") {
		t.Errorf("drain without a token: exit %d: %s", code, errOut)
	}
	if code, _, errOut := gw(t, append([]string{"drain", "node-03", "--reason", "fan", "--token-file", agentSecret}, common...)...); code != 1 || !strings.Contains(errOut, "token agent-node-01 has role agent") {
		t.Errorf("drain with the agent's token: exit %d: %s", code, errOut)
	}
	if code, _, errOut := gw(t, "drain", "node-03", "--reason", "fan", "--server", url, "--token-file", opsSecret); code != 1 || !strings.Contains(errOut, "certificate") {
		t.Errorf("drain without trusting the server's CA: exit %d: %s", code, errOut)
	}
	if code, out, errOut := gw(t, append([]string{"drain", "node-03", "--reason", "fan", "--token-file", opsSecret, "--user", "alice"}, common...)...); code != 0 {
		t.Errorf("drain with the operator's token: exit %d: %s %s", code, out, errOut)
	}
	t.Setenv("GPUWATCH_TOKEN", readFile(t, opsSecret))
	if code, _, errOut := gw(t, append([]string{"resume", "node-03"}, common...)...); code != 0 {
		t.Errorf("resume with $GPUWATCH_TOKEN: exit %d: %s", code, errOut)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/api/gpuwatch/v1/audit", nil)
	req.Header.Set("Authorization", "Bearer "+readFile(t, readSecret))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	audit, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(audit), "oncall (as alice)") {
		t.Errorf("the audit log does not name the operator's token: %s", audit)
	}
	for _, f := range []string{agentSecret, strangerSecret, opsSecret, readSecret} {
		if s := readFile(t, f); strings.Contains(serverOut.String(), s) || strings.Contains(string(audit), s) {
			t.Errorf("a secret appears in the server's output or audit log")
		}
	}
}

func httpsClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// TestServerWithoutTokensRefusesRemoteWrites: without --auth.tokens the
// server says so at start and takes write and control calls from loopback
// only; a call from another address of this host is refused.
func TestServerWithoutTokensRefusesRemoteWrites(t *testing.T) {
	var other string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			other = ipn.IP.String()
			break
		}
	}
	if other == "" {
		t.Skip("this host has no non-loopback IPv4 address to call from")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"server", "--listen", other + ":0", "--data-dir", t.TempDir(), "--actuator", "log"}, &stdout, &stderr)
	}()
	defer func() { cancel(); <-done }()
	re := regexp.MustCompile(`gpuwatch server on (http://[0-9.:]+)`)
	var url string
	for deadline := time.Now().Add(20 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %s", stderr.String())
		}
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
	}
	if !strings.Contains(stdout.String(), "--auth.tokens FILE") {
		t.Errorf("the server does not say how to configure tokens:\n%s", stdout.String())
	}
	resp, err := http.Post(url+"/api/gpuwatch/v1/drain", "application/json", strings.NewReader(`{"node":"gpu01","reason":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "loopback only") {
		t.Errorf("a drain from %s without a token file: %d %s, want 403", other, resp.StatusCode, b)
	}
	if resp, err := http.Get(url + "/api/gpuwatch/v1/nodes"); err != nil || resp.StatusCode != 200 {
		t.Errorf("a read from %s: %v", other, err)
	}
	_ = fmt.Sprint
}

// TestAgentListenerUnderFlood: hundreds of slow-loris connections and idle
// ones do not stop the agent's collection (its /healthz stays 200, which it
// is only while snapshots are fresh) nor other clients' scrapes.
func TestAgentListenerUnderFlood(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"agent", "--simulate", "hgx-h100", "--listen", "127.0.0.1:0", "--collect.interval", "1s"}, &stdout, &stderr)
	}()
	defer func() { cancel(); <-done }()
	re := regexp.MustCompile(`serving http://([0-9.:]+)/metrics`)
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("agent did not start: %s", stderr.String())
		}
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			addr = m[1]
		}
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 600 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n") // headers never finished
		}
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		for _, p := range []string{"/healthz", "/metrics"} {
			resp, err := client.Get("http://" + addr + p)
			if err != nil {
				t.Fatalf("GET %s during the flood: %v", p, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s during the flood: %s (collection stalled?)", p, resp.Status)
			}
		}
	}
	// The profiler is not open to the network by default; on loopback it is.
	if resp, err := client.Get("http://" + addr + "/debug/pprof/"); err != nil || resp.StatusCode != 200 {
		t.Errorf("pprof from loopback: %v", err)
	}
}
