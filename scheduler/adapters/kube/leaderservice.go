package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the
// EndpointSlice a LeaderService writes: the EndpointSlice controller leaves
// slices managed by others alone.
const ManagedBy = "gpuwatch.io"

// LeaderServicePort is the name of the port the leader's EndpointSlice
// carries: kube-proxy matches it with the Service's port of the same name,
// so the selector-less Service names its port so too (the chart does).
const LeaderServicePort = "http"

// LeaderServiceOptions configure a LeaderService.
type LeaderServiceOptions struct {
	// Namespace and Name of the selector-less Service that reaches the
	// acting leader; its EndpointSlice has the same name.
	Namespace, Name string
	// Address is this replica's address (its pod's IP, from the downward
	// API) and the port it serves on.
	Address netip.AddrPort
	// Identity is this replica's pod name, the endpoint's target reference
	// ("" for none).
	Identity string
}

// LeaderService points a selector-less Service at the acting leader, as the
// kube-apiserver's endpoints reconciler does for the default Service
// "kubernetes": the leader writes the Service's EndpointSlice with its own
// address once it acts, and a new leader overwrites it when it takes over.
// The EndpointSlice is read, created once and updated (optimistic
// concurrency); never patched, listed or deleted.
type LeaderService struct {
	c    kubernetes.Interface
	opts LeaderServiceOptions
}

// NewLeaderService returns a LeaderService on client's EndpointSlices.
func NewLeaderService(client kubernetes.Interface, o LeaderServiceOptions) (*LeaderService, error) {
	if o.Namespace == "" || o.Name == "" {
		return nil, errors.New("leader service: the Service needs a namespace and a name")
	}
	if !o.Address.IsValid() || o.Address.Port() == 0 {
		return nil, fmt.Errorf("leader service %s/%s: no address IP:PORT of this replica (%q)", o.Namespace, o.Name, o.Address)
	}
	if a := o.Address.Addr(); a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return nil, fmt.Errorf("leader service %s/%s: address %s cannot be an endpoint (loopback, link-local, multicast or unspecified)", o.Namespace, o.Name, a)
	}
	o.Address = netip.AddrPortFrom(o.Address.Addr().Unmap(), o.Address.Port())
	return &LeaderService{c: client, opts: o}, nil
}

// Name is the Service's DNS name in the cluster,
// <name>.<namespace>.svc, for messages that send clients to the leader.
func (l *LeaderService) Name() string { return l.opts.Name + "." + l.opts.Namespace + ".svc" }

// desired is the EndpointSlice naming this replica alone.
func (l *LeaderService) desired() *discoveryv1.EndpointSlice {
	addr := l.opts.Address.Addr()
	typ := discoveryv1.AddressTypeIPv4
	if addr.Is6() {
		typ = discoveryv1.AddressTypeIPv6
	}
	ready := true
	ep := discoveryv1.Endpoint{Addresses: []string{addr.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
	if l.opts.Identity != "" {
		ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: l.opts.Namespace, Name: l.opts.Identity}
	}
	name, proto, port := LeaderServicePort, corev1.ProtocolTCP, int32(l.opts.Address.Port())
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.opts.Namespace, Name: l.opts.Name, Labels: map[string]string{
			discoveryv1.LabelServiceName: l.opts.Name,
			discoveryv1.LabelManagedBy:   ManagedBy,
		}},
		AddressType: typ,
		Endpoints:   []discoveryv1.Endpoint{ep},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}},
	}
}

// Publish makes the Service's EndpointSlice name this replica alone: it
// creates the slice, or updates one that names anything else (another
// replica, the leader before), and leaves one that already names it as it
// is. It is idempotent; call it once this replica acts, and again from time
// to time to repair a slice changed by hand. An update that races another
// writer fails with a conflict: call it again.
func (l *LeaderService) Publish(ctx context.Context) error {
	want := l.desired()
	eps := l.c.DiscoveryV1().EndpointSlices(l.opts.Namespace)
	cur, err := eps.Get(ctx, l.opts.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := eps.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create EndpointSlice %s/%s: %w", l.opts.Namespace, l.opts.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read EndpointSlice %s/%s: %w", l.opts.Namespace, l.opts.Name, err)
	}
	if cur.AddressType != want.AddressType {
		return fmt.Errorf("EndpointSlice %s/%s has address type %s, this replica's address %s is %s (the type cannot change: delete the slice)",
			l.opts.Namespace, l.opts.Name, cur.AddressType, l.opts.Address.Addr(), want.AddressType)
	}
	labels := maps.Clone(cur.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, want.Labels)
	if maps.Equal(labels, cur.Labels) && sameEndpoints(cur, want) {
		return nil
	}
	next := cur.DeepCopy()
	next.Labels, next.Endpoints, next.Ports = labels, want.Endpoints, want.Ports
	if _, err := eps.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update EndpointSlice %s/%s to %s: %w", l.opts.Namespace, l.opts.Name, l.opts.Address, err)
	}
	return nil
}

// sameEndpoints reports whether cur routes exactly as want: one endpoint of
// the same addresses, ready, for the same pod, and the same ports (fields
// the API server may default compared only when want sets them).
func sameEndpoints(cur, want *discoveryv1.EndpointSlice) bool {
	if len(cur.Endpoints) != 1 || len(cur.Ports) != len(want.Ports) {
		return false
	}
	c, w := cur.Endpoints[0], want.Endpoints[0]
	if !slices.Equal(c.Addresses, w.Addresses) || c.Conditions.Ready == nil || !*c.Conditions.Ready {
		return false
	}
	if (c.TargetRef == nil) != (w.TargetRef == nil) || w.TargetRef != nil && (c.TargetRef.Kind != w.TargetRef.Kind || c.TargetRef.Name != w.TargetRef.Name) {
		return false
	}
	for i, wp := range want.Ports {
		cp := cur.Ports[i]
		if cp.Name == nil || *cp.Name != *wp.Name || cp.Port == nil || *cp.Port != *wp.Port || cp.Protocol == nil || *cp.Protocol != *wp.Protocol {
			return false
		}
	}
	return true
}
