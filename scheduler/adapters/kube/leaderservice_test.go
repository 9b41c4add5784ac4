package kube

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func leaderService(t *testing.T, c *fake.Clientset, id, addr string) *LeaderService {
	t.Helper()
	l, err := NewLeaderService(c, LeaderServiceOptions{Namespace: "gpuwatch", Name: "gpuwatch-server-leader",
		Address: netip.MustParseAddrPort(addr), Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// verbs are the EndpointSlice calls c saw, in order.
func verbs(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "endpointslices" {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

// TestLeaderServicePublish: the first leader creates the EndpointSlice with
// its address, labelled for the Service and as gpuwatch's; publishing again
// only reads it; a new leader overwrites it with its own address (one update,
// the labels someone added kept), and a slice changed by hand is repaired.
func TestLeaderServicePublish(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	a := leaderService(t, c, "gpuwatch-server-0", "10.244.1.7:9402")
	if err := a.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(verbs(c), " "); got != "get create get" {
		t.Errorf("calls %q, want get create get", got)
	}
	get := func() *discoveryv1.EndpointSlice {
		t.Helper()
		s, err := c.DiscoveryV1().EndpointSlices("gpuwatch").Get(ctx, "gpuwatch-server-leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := get()
	if s.Labels[discoveryv1.LabelServiceName] != "gpuwatch-server-leader" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
		t.Errorf("labels %v", s.Labels)
	}
	if s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != "10.244.1.7" ||
		!*s.Endpoints[0].Conditions.Ready || s.Endpoints[0].TargetRef.Name != "gpuwatch-server-0" {
		t.Errorf("slice %+v", s)
	}
	if len(s.Ports) != 1 || *s.Ports[0].Port != 9402 || *s.Ports[0].Name != LeaderServicePort {
		t.Errorf("ports %+v", s.Ports)
	}

	s.Labels["team"] = "oncall"
	if _, err := c.DiscoveryV1().EndpointSlices("gpuwatch").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
	b := leaderService(t, c, "gpuwatch-server-1", "10.244.2.9:9402")
	if err := b.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	s = get()
	if s.Endpoints[0].Addresses[0] != "10.244.2.9" || s.Endpoints[0].TargetRef.Name != "gpuwatch-server-1" || len(s.Endpoints) != 1 || s.Labels["team"] != "oncall" {
		t.Errorf("after the takeover: %+v", s)
	}
	if got := strings.Join(verbs(c), " "); got != "get update get" {
		t.Errorf("calls %q, want get update (and the test's get)", got)
	}

	s.Endpoints[0].Addresses = []string{"10.9.9.9"}
	if _, err := c.DiscoveryV1().EndpointSlices("gpuwatch").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := get().Endpoints[0].Addresses[0]; got != "10.244.2.9" {
		t.Errorf("a slice changed by hand not repaired: %s", got)
	}
	if b.Name() != "gpuwatch-server-leader.gpuwatch.svc" {
		t.Errorf("Name %q", b.Name())
	}
}

// TestLeaderServiceErrors: a refused write is an error naming the slice, a
// slice of the other address family is not overwritten, and an address that
// cannot be an endpoint is refused up front.
func TestLeaderServiceErrors(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	c.PrependReactor("create", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	a := leaderService(t, c, "gpuwatch-server-0", "10.244.1.7:9402")
	if err := a.Publish(ctx); err == nil || !strings.Contains(err.Error(), "gpuwatch/gpuwatch-server-leader") {
		t.Errorf("refused create: %v", err)
	}

	c = fake.NewClientset()
	if err := leaderService(t, c, "gpuwatch-server-0", "10.244.1.7:9402").Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leaderService(t, c, "gpuwatch-server-1", "[fd00::7]:9402").Publish(ctx); err == nil || !strings.Contains(err.Error(), "address type") {
		t.Errorf("IPv6 over an IPv4 slice: %v", err)
	}

	for _, addr := range []string{"127.0.0.1:9402", "10.0.0.1:0", "0.0.0.0:9402"} {
		_, err := NewLeaderService(c, LeaderServiceOptions{Namespace: "gpuwatch", Name: "x", Address: netip.MustParseAddrPort(addr)})
		if err == nil {
			t.Errorf("address %s accepted", addr)
		}
	}
	if _, err := NewLeaderService(c, LeaderServiceOptions{Name: "x", Address: netip.MustParseAddrPort("10.0.0.1:1")}); err == nil {
		t.Error("no namespace accepted")
	}
}
