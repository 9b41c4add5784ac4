package kube

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func fastElector(t *testing.T, c *fake.Clientset, id string) *Elector {
	t.Helper()
	e, err := NewElector(c, ElectorOptions{Namespace: "gpuwatch", Name: "gpuwatch-server", Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func waitTrue(t *testing.T, what string, d time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestElectorOneLeaderAndTakeover: of two electors on one Lease, one leads and
// the other only sees it; when the leader's process stops without releasing
// the Lease, the other leads once the lease expires.
func TestElectorOneLeaderAndTakeover(t *testing.T) {
	c := fake.NewClientset()
	a, b := fastElector(t, c, "server-0"), fastElector(t, c, "server-1")
	var leadingA, leadingB atomic.Int32
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() {
		errA <- a.Run(ctxA, func(ctx context.Context) { leadingA.Add(1); <-ctx.Done() })
	}()
	waitTrue(t, "server-0 leads", 5*time.Second, a.Leading)
	go func() {
		errB <- b.Run(ctxB, func(ctx context.Context) { leadingB.Add(1); <-ctx.Done() })
	}()
	waitTrue(t, "server-1 sees server-0 lead", 5*time.Second, func() bool { return b.Leader() == "server-0" })
	time.Sleep(3 * time.Second) // longer than the lease: server-0 keeps renewing it
	if b.Leading() || leadingB.Load() != 0 {
		t.Fatal("server-1 leads while server-0 renews its lease")
	}
	stopA()
	if err := <-errA; err != nil {
		t.Errorf("server-0 stopped: %v, want nil", err)
	}
	start := time.Now()
	waitTrue(t, "server-1 takes over", 5*time.Second, b.Leading)
	t.Logf("took over in %s (lease 2 s; the Lease stores whole seconds)", time.Since(start).Round(time.Millisecond))
	if leadingA.Load() != 1 || leadingB.Load() != 1 || b.Leader() != "server-1" {
		t.Errorf("lead calls %d/%d, leader %q", leadingA.Load(), leadingB.Load(), b.Leader())
	}
}

// TestElectorLeaseLost: a leader that cannot renew its Lease (the API server
// refuses) stops leading: lead's context ends and Run returns ErrLeaseLost.
func TestElectorLeaseLost(t *testing.T) {
	c := fake.NewClientset()
	e := fastElector(t, c, "server-0")
	var refuse atomic.Bool
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, errors.New("etcd unavailable")
		}
		return false, nil, nil
	})
	errc := make(chan error, 1)
	stopped := make(chan struct{})
	go func() {
		errc <- e.Run(context.Background(), func(ctx context.Context) { <-ctx.Done(); close(stopped) })
	}()
	waitTrue(t, "leads", 5*time.Second, e.Leading)
	refuse.Store(true)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Run = %v, want ErrLeaseLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the lease could not be renewed")
	}
	select {
	case <-stopped:
	default:
		t.Error("Run returned before lead did")
	}
	if e.Leading() {
		t.Error("still leading")
	}
}
