//go:build !agentonly

package main

import (
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := gw(t, append([]string{"server", "--listen", "127.0.0.1:0", "--actuator", "log"}, tc.args...)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error naming %q", code, errOut, tc.want)
			}
		})
	}
}
