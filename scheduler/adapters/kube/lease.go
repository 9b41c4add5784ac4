package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Default timings of an Elector. A follower counts the lease from when it
// last saw the leader renew it, and it looks every RetryPeriod (client-go adds
// up to 20% jitter): a killed leader is replaced after at most LeaseDuration
// plus two jittered RetryPeriods, 8 + 1.2 + 1.2 = 10.4 s, well within the 15 s
// gpuwatch promises (10 s / 2 s measured 13.4 s on the real API server, too
// close). A leader that cannot renew for RenewDeadline stops acting 2 s
// before its lease can expire for the others.
const (
	DefaultLeaseDuration = 8 * time.Second
	DefaultRenewDeadline = 6 * time.Second
	DefaultRetryPeriod   = time.Second
)

// ErrLeaseLost is what Elector.Run returns when this replica was leading and
// lost the Lease: it must stop acting at once (the server exits, and
// Kubernetes restarts it as a follower).
var ErrLeaseLost = errors.New("lost the leader Lease")

// ElectorOptions configure an Elector.
type ElectorOptions struct {
	// Namespace and Name of the coordination.k8s.io Lease.
	Namespace, Name string
	// Identity names this replica in the Lease (its pod name); required and
	// unique among the replicas.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod: client-go's leader
	// election timings (zero: the defaults above).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Logger                                    *slog.Logger
}

// Elector elects one leader among gpuwatch server replicas through a
// Kubernetes Lease (client-go's leaderelection with a LeaseLock). The lease is
// never released on purpose: a leader that stops, stopped or not, is replaced
// once its lease expires, so two replicas never act at once as long as their
// clocks advance at the same rate.
type Elector struct {
	opts ElectorOptions
	le   *leaderelection.LeaderElector
	log  *slog.Logger

	mu      sync.Mutex
	lead    func(context.Context)
	leading bool
	done    bool // Run returned
	leader  string
}

// NewElector returns an Elector on client's Leases.
func NewElector(client kubernetes.Interface, o ElectorOptions) (*Elector, error) {
	if o.Namespace == "" || o.Name == "" {
		return nil, errors.New("leader election: the Lease needs a namespace and a name")
	}
	if o.Identity == "" {
		return nil, errors.New("leader election: no identity (the pod's name)")
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if err := CheckTimings(o.LeaseDuration, o.RenewDeadline, o.RetryPeriod); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Elector{opts: o, log: o.Logger.With("lease", o.Namespace+"/"+o.Name, "identity", o.Identity)}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: o.Name,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: e.started,
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				e.mu.Lock()
				e.leader = id
				e.mu.Unlock()
				e.log.Info("leader elected", "leader", id)
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	e.le = le
	return e, nil
}

// CheckTimings says whether an Elector's timings work: a lease of whole
// seconds (the Lease stores seconds) longer than the renew deadline, itself
// longer than the retry period.
func CheckTimings(lease, renewDeadline, retry time.Duration) error {
	if lease <= 0 || lease%time.Second != 0 || renewDeadline >= lease || retry >= renewDeadline || retry <= 0 {
		return fmt.Errorf("leader election: lease %s, renew deadline %s, retry %s: want a lease of whole seconds (the Lease stores seconds) > renew deadline > retry > 0",
			lease, renewDeadline, retry)
	}
	return nil
}

func (e *Elector) started(ctx context.Context) {
	e.mu.Lock()
	if e.done || ctx.Err() != nil {
		// client-go starts this in a goroutine: Run may have returned (the
		// lease lost at once) before it ran. Too late to act.
		e.mu.Unlock()
		return
	}
	e.leading = true
	lead := e.lead
	e.mu.Unlock()
	e.log.Info("leading")
	lead(ctx)
}

// Run campaigns for the Lease until ctx ends, and calls lead once this
// replica leads, with a context that ends when it stops leading. It returns
// nil when ctx ended, or ErrLeaseLost (after lead returned) when this replica
// led and lost the Lease. An Elector runs once.
func (e *Elector) Run(ctx context.Context, lead func(context.Context)) error {
	done := make(chan struct{})
	e.mu.Lock()
	e.lead = func(ctx context.Context) {
		defer close(done)
		lead(ctx)
	}
	e.mu.Unlock()
	e.le.Run(ctx)
	e.mu.Lock()
	e.done = true
	led := e.leading
	e.leading = false
	e.mu.Unlock()
	if led {
		<-done
	}
	// client-go's Run returns before ctx ends only after it acquired the
	// Lease and failed to renew it.
	if ctx.Err() != nil {
		return nil
	}
	e.log.Error("lost the leader Lease: stop acting")
	return fmt.Errorf("%w %s/%s as %s", ErrLeaseLost, e.opts.Namespace, e.opts.Name, e.opts.Identity)
}

// Leading reports whether this replica holds the Lease now.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Leader is the identity of the leader last seen, "" before one is seen.
func (e *Elector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader
}

// Identity is this replica's identity in the Lease.
func (e *Elector) Identity() string { return e.opts.Identity }
