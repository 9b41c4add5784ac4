//go:build !agentonly

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlacementK8sLiveFlags: the live topology needs a cluster, excludes the
// file sources, and its other flags need it.
func TestPlacementK8sLiveFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no cluster", []string{"--placement.k8s-live", "--kubeconfig", "/nonexistent"}, "cluster configuration"},
		{"and a file", []string{"--placement.k8s-live", "--placement.site-yaml", "site.yaml"}, "give one"},
		{"selector alone", []string{"--placement.k8s-selector", "a=b"}, "need --placement.k8s-live"},
		{"no placement", []string{"--placement=false", "--placement.k8s-live"}, "--placement.* need --placement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := gw(t, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--actuator", "none"}, tc.args...)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error naming %q", code, errOut, tc.want)
			}
		})
	}
}

// TestLeaderElectFlags: --leader-elect needs a shared store and a Lease named
// NAMESPACE/NAME, its timings must fit client-go's rules, and its other flags
// need it; each mistake is a usage error (exit 2) that names what to give.
func TestLeaderElectFlags(t *testing.T) {
	store := []string{"--store.url", "http://127.0.0.1:1", "--state-dir", t.TempDir()}
	// A cluster configuration that builds a client (nothing is called
	// before the flags are refused).
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no store", []string{"--leader-elect", "--leader-elect.lease", "gpuwatch/gpuwatch-server"}, "needs --store.url"},
		{"no lease", append([]string{"--leader-elect"}, store...), "NAMESPACE/NAME"},
		{"lease without namespace", append([]string{"--leader-elect", "--leader-elect.lease", "gpuwatch-server"}, store...), "NAMESPACE/NAME"},
		{"flag without election", []string{"--leader-elect.lease", "gpuwatch/gpuwatch-server"}, "--leader-elect.lease needs --leader-elect"},
		{"fractional lease", append([]string{"--leader-elect", "--leader-elect.lease", "gpuwatch/x", "--leader-elect.lease-duration", "1500ms", "--kubeconfig", "/nonexistent"}, store...), "whole seconds"},
		{"no cluster", append([]string{"--leader-elect", "--leader-elect.lease", "gpuwatch/x", "--kubeconfig", "/nonexistent"}, store...), "cluster configuration"},
		{"service without election", []string{"--leader-elect.service", "gpuwatch/gpuwatch-server-leader"}, "--leader-elect.service needs --leader-elect"},
		{"service without namespace", append([]string{"--leader-elect", "--leader-elect.lease", "gpuwatch/x", "--leader-elect.service", "leader", "--leader-elect.address", "10.0.0.7"}, store...), "NAMESPACE/NAME of the Service"},
		{"service without address", append([]string{"--leader-elect", "--leader-elect.lease", "gpuwatch/x", "--leader-elect.service", "gpuwatch/leader"}, store...), "this replica's IP"},
		{"address without service", append([]string{"--leader-elect", "--leader-elect.lease", "gpuwatch/x", "--leader-elect.address", "10.0.0.7"}, store...), "--leader-elect.address needs --leader-elect.service"},
		{"loopback address", append([]string{"--leader-elect", "--leader-elect.lease", "gpuwatch/x", "--kubeconfig", kubeconfig,
			"--leader-elect.service", "gpuwatch/leader", "--leader-elect.address", "127.0.0.1:9402"}, store...), "cannot be an endpoint"},
		{"address not an IP", append([]string{"--leader-elect", "--leader-elect.lease", "gpuwatch/x", "--leader-elect.service", "gpuwatch/leader", "--leader-elect.address", "server-0.gpuwatch"}, store...), "want IP or IP:PORT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := gw(t, append([]string{"server", "--listen", "127.0.0.1:0", "--actuator", "log"}, tc.args...)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error naming %q", code, errOut, tc.want)
			}
		})
	}
}

// TestReplicaAddress: --leader-elect.address is an IP with or without a
// port (IPv6 in brackets with one), the port defaulting to --listen's.
func TestReplicaAddress(t *testing.T) {
	for _, tc := range []struct{ addr, listen, want string }{
		{"10.244.1.7", ":9402", "10.244.1.7:9402"},
		{"10.244.1.7:8080", ":9402", "10.244.1.7:8080"},
		{"fd00::7", "0.0.0.0:9500", "[fd00::7]:9500"},
		{"[fd00::7]", ":9402", "[fd00::7]:9402"},
		{"[fd00::7]:81", ":9402", "[fd00::7]:81"},
		{"10.244.1.7", "bad", ""},
		{"10.244.1.7", ":0", ""},
		{"", ":9402", ""},
	} {
		got, err := replicaAddress(tc.addr, tc.listen)
		if tc.want == "" {
			if err == nil {
				t.Errorf("replicaAddress(%q, %q) = %s, want an error", tc.addr, tc.listen, got)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("replicaAddress(%q, %q) = %s, %v; want %s", tc.addr, tc.listen, got, err, tc.want)
		}
	}
}
