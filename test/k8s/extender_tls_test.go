package k8s

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/serve"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/internal/tlsconf"
	"github.com/gpuwatch/gpuwatch/internal/tlsconf/tlstest"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
)

// mtlsSchedulerName is the profile of the second kube-scheduler this test
// runs: only pods that ask for it by name are its.
const mtlsSchedulerName = "gpuwatch-mtls"

// TestSchedulerExtenderMutualTLS wires the extender as production does with
// the chart's TLS values, every piece taken from the rendered chart: the
// server's --tls.client-auth, its token file (kube-scheduler named by its
// certificate's common name, role read; the agents' and Grafana's tokens) and
// the KubeSchedulerConfiguration of the scheduler-extender ConfigMap (HTTPS,
// tlsConfig with a client certificate). A second real kube-scheduler runs that
// configuration, with only the Service's address replaced by the test server's
// loopback one. The agents ship over TLS with the chart's agent token.
//
// The extender's answer is what keeps pods off a node whose GPUs gpuwatch
// excludes (Xid 79, an exclude-only policy: Kubernetes sees the node's 8 GPUs
// free). The extender is ignorable, so were the TLS handshake or the
// certificate's identity refused, the scheduler would go on without it and
// place pods there: the test fails then. A certificate from the same CA whose
// common name the token file does not name, and a call with no credentials,
// are refused (401).
func TestSchedulerExtenderMutualTLS(t *testing.T) {
	const suite, ns, prefix = "mtls", "mtls", "mtls-"
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "gpuwatch-test")
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := ca.Issue("gpuwatch-server", true)
	if err != nil {
		t.Fatal(err)
	}
	schedCert, schedKey, err := ca.Issue("kube-scheduler", false)
	if err != nil {
		t.Fatal(err)
	}
	intruderCert, intruderKey, err := ca.Issue("intruder", false)
	if err != nil {
		t.Fatal(err)
	}
	const agentSecret, readSecret = "agent-secret-mtls-0123456789", "read-secret-mtls-0123456789"
	objs := renderChart(t, map[string]any{
		"server": map[string]any{"tls": map[string]any{"secretName": "gpuwatch-tls"}},
		"auth":   map[string]any{"agentToken": agentSecret, "readToken": readSecret},
		"schedulerExtender": map[string]any{
			"certFile": schedCert, "keyFile": schedKey, "caFile": ca.File,
		},
	})

	// The server as the chart runs it: its token file and its client-auth mode.
	tokensFile := filepath.Join(dir, "tokens.yaml")
	tokens := find[*corev1.Secret](t, objs, "v1/Secret", "gpuwatch-tokens")
	if err := os.WriteFile(tokensFile, []byte(tokens.StringData["tokens.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := auth.OpenTokenFile(tokensFile, nil)
	if err != nil {
		t.Fatalf("the chart's token file: %v", err)
	}
	sts := find[*appsv1.StatefulSet](t, objs, "apps/v1/StatefulSet", "gpuwatch-server")
	clientAuth := ""
	for _, a := range sts.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--tls.client-auth="); ok {
			clientAuth = v
		}
	}
	if clientAuth == "" {
		t.Fatalf("the chart's server with TLS has no --tls.client-auth: args %v", sts.Spec.Template.Spec.Containers[0].Args)
	}
	serverTLS, err := tlsconf.Server(tlsconf.ServerFiles{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: ca.File, ClientAuth: clientAuth}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + ln.Addr().String()
	clientTLS := func(certFile, keyFile string) *tls.Config {
		c, err := tlsconf.Client(tlsconf.ClientFiles{CAFile: ca.File, CertFile: certFile, KeyFile: keyFile})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	withToken := func(secret string) http.RoundTripper {
		return &auth.Transport{Base: &http.Transport{TLSClientConfig: clientTLS("", "")}, Secret: auth.StaticSecret(secret)}
	}

	createNamespace(t, ns)
	g := startGpuwatchOn(t, server.Options{StateDir: t.TempDir(),
		Auth:   auth.Options{Tokens: tf},
		Listen: serve.Options{TLS: serverTLS},
		Drain:  &server.DrainOptions{Policy: excludePolicy(), Actuator: drain.NewLogActuator(io.Discard), PollInterval: 200 * time.Millisecond},
	}, ln, base, &http.Client{Transport: withToken(readSecret), Timeout: 10 * time.Second})
	fl := startFleetTo(t, prefix, 2, base, withToken(agentSecret))
	createNodes(t, suite, fl.names, 8)
	good, bad := fl.names[0], fl.names[1]
	g.waitSnapshot("2 nodes, 16 schedulable GPUs, shipped over TLS with the agent token", func(s service.SnapshotSummary) bool {
		return s.Nodes == 2 && s.SchedulableGPUs == 16
	})
	for gpu := range 8 {
		fl.inject(1, simhw.Fault{Kind: simhw.FaultXid, Xid: 79, GPU: gpu})
	}
	g.waitSnapshot(bad+" excluded", func(s service.SnapshotSummary) bool {
		for _, n := range s.NodeList {
			if n.Name == bad {
				return n.SchedulableGPUs == 0
			}
		}
		return false
	})

	// The extender's front door: kube-scheduler's certificate is read access;
	// another certificate of the same CA, or nothing, is not.
	filter := func(rt http.RoundTripper) (int, string) {
		names := []string{good, bad}
		body, _ := json.Marshal(extenderv1.ExtenderArgs{Pod: gpuPod(ns, "probe", suite, 1, nil), NodeNames: &names})
		resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Post(base+"/api/gpuwatch/v1/extender/filter", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		who  string
		rt   http.RoundTripper
		want int
	}{
		{"kube-scheduler's certificate", &http.Transport{TLSClientConfig: clientTLS(schedCert, schedKey)}, http.StatusOK},
		{"a certificate the token file does not name", &http.Transport{TLSClientConfig: clientTLS(intruderCert, intruderKey)}, http.StatusUnauthorized},
		{"no credentials", &http.Transport{TLSClientConfig: clientTLS("", "")}, http.StatusUnauthorized},
	} {
		if code, body := filter(c.rt); code != c.want {
			t.Errorf("extender filter with %s: %d %s, want %d", c.who, code, strings.TrimSpace(body), c.want)
		}
	}

	// A second real kube-scheduler with the chart's extender configuration.
	sc := find[*corev1.ConfigMap](t, objs, "v1/ConfigMap", "gpuwatch-scheduler-extender")
	cfg := sc.Data["scheduler-config.yaml"]
	const svc = "https://gpuwatch-server.gpuwatch.svc:9402/"
	if !strings.Contains(cfg, svc) || !strings.Contains(cfg, "enableHTTPS: true") {
		t.Fatalf("the chart's extender configuration with TLS does not call %s over HTTPS:\n%s", svc, cfg)
	}
	cfg = strings.Replace(cfg, svc, base+"/", 1)
	head := "kind: KubeSchedulerConfiguration\n"
	cfg = strings.Replace(cfg, head, head+fmt.Sprintf("clientConnection:\n  kubeconfig: %q\nleaderElection:\n  leaderElect: false\nprofiles:\n  - schedulerName: %s\n", cp.kubeconfig, mtlsSchedulerName), 1)
	cfgFile := filepath.Join(dir, "scheduler-mtls.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stopSched, err := startScheduler(context.Background(), cfgFile, filepath.Join(dir, "scheduler"))
	if err != nil {
		t.Fatalf("kube-scheduler with the chart's extender configuration: %v\n%s", err, cfg)
	}
	t.Cleanup(stopSched)

	pod := func(name string, gpus int) *corev1.Pod {
		p := gpuPod(ns, name, suite, gpus, nil)
		p.Spec.SchedulerName = mtlsSchedulerName
		if _, err := cp.client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := g.metric("gpuwatch_extender_requests_total", `verb="filter"`)
	for i := range 2 {
		name := fmt.Sprintf("train-%d", i)
		pod(name, 4)
		if got := waitBound(t, cp.client, ns, name); got != good {
			t.Errorf("pod %s bound on %s, want %s: gpuwatch excludes every GPU of %s, so the scheduler did not follow its extender over mutual TLS", name, got, good, bad)
		}
	}
	// good is full: the next pod fits only on the excluded node and stays
	// pending, the scheduler naming gpuwatch.
	pending := pod("train-pending", 2)
	poll(t, 60*time.Second, "pod train-pending marked unschedulable naming gpuwatch", func() (bool, error) {
		p, err := cp.client.CoreV1().Pods(ns).Get(context.Background(), pending.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("pod %s bound on %s: only the excluded %s had room", pending.Name, p.Spec.NodeName, bad)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "gpuwatch") {
				t.Logf("%s: %s", pending.Name, c.Message)
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	// The scheduler's own calls reached the extender (one filter per attempt).
	if after := g.metric("gpuwatch_extender_requests_total", `verb="filter"`); after < before+3 {
		t.Errorf("gpuwatch_extender_requests_total{verb=filter} %v → %v over three pods: the scheduler did not call the extender", before, after)
	}
}
