//go:build !agentonly

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/kube"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
)

// drainFlags are the server's drain-controller flags.
type drainFlags struct {
	actuator   string
	policy     string
	budget     string
	window     time.Duration
	dryRun     bool
	kubeconfig string
	scontrol   string
	verify     time.Duration
}

// drainOptions builds the server's drain options from the flags: nil when the
// controller is off (--actuator none).
func (f *drainFlags) drainOptions(set map[string]bool, stdout io.Writer) (*server.DrainOptions, error) {
	if f.actuator == "none" {
		for _, n := range []string{"policy", "drain.budget", "drain.window", "drain.dry-run"} {
			if set[n] {
				return nil, fmt.Errorf("%w: --%s needs the drain controller, but --actuator is none", errUsage, n)
			}
		}
		return nil, nil
	}
	pol := drain.DefaultPolicy()
	if f.policy != "" {
		var err error
		if pol, err = drain.LoadPolicy(f.policy); err != nil {
			return nil, err
		}
	}
	if set["drain.budget"] {
		s := strings.TrimSpace(f.budget)
		if pct, ok := strings.CutSuffix(s, "%"); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
			if err != nil || v <= 0 || v > 100 {
				return nil, fmt.Errorf("%w: --drain.budget %q: want a share in (0%%, 100%%] like 10%% or a count of nodes like 3", errUsage, f.budget)
			}
			pol.Budget.Share, pol.Budget.Count = v/100, -1
		} else {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%w: --drain.budget %q: want a share like 10%% or a count of nodes like 3", errUsage, f.budget)
			}
			pol.Budget.Count, pol.Budget.Share = v, 0
		}
	}
	if set["drain.window"] {
		if f.window <= 0 {
			return nil, fmt.Errorf("%w: --drain.window %s: must be positive", errUsage, f.window)
		}
		pol.Budget.Window = f.window
	}
	if set["drain.dry-run"] {
		pol.DryRun = f.dryRun
	}
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	o := &server.DrainOptions{Policy: pol, ActuatorName: f.actuator, VerifyInterval: f.verify}
	switch f.actuator {
	case "log":
		o.Actuator = drain.NewLogActuator(stdout)
	case "slurm":
		sc := slurm.Scontrol{Path: f.scontrol}
		if f.scontrol != "" {
			if _, err := os.Stat(f.scontrol); err != nil {
				return nil, fmt.Errorf("%w: --slurm.scontrol: %v", errUsage, err)
			}
		}
		o.Actuator = slurm.Actuator{Scontrol: sc}
	case "kubernetes":
		cs, err := kubeClient(f.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--actuator kubernetes: %w", err)
		}
		o.Actuator = kube.New(cs, kube.Options{})
	default:
		return nil, fmt.Errorf("%w: --actuator %q: want slurm, kubernetes, log or none", errUsage, f.actuator)
	}
	return o, nil
}

// kubeClient is a client of the cluster in kubeconfig, or of the one the
// process runs in when kubeconfig is "".
func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("no cluster configuration (in-cluster, or --kubeconfig): %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}

// electFlags are the server's leader-election flags.
type electFlags struct {
	on                          bool
	lease, identity             string
	duration, deadline, retries time.Duration
	service, address            string
}

func (f *electFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "leader-elect", false, "run as one of several replicas: elect a leader through a Kubernetes Lease (--kubeconfig or in-cluster); only the leader drains, resumes and sets Slurm site factors, followers serve reads and take health reports (needs --store.url, shared by the replicas)")
	fs.StringVar(&f.lease, "leader-elect.lease", "", "with --leader-elect: the coordination.k8s.io Lease, NAMESPACE/NAME")
	fs.StringVar(&f.identity, "leader-elect.identity", "", "with --leader-elect: this replica's name in the Lease (default: the host name, a pod's name)")
	fs.DurationVar(&f.duration, "leader-elect.lease-duration", kube.DefaultLeaseDuration, "with --leader-elect: how long a leader's lease lasts unrenewed (whole seconds): a killed leader is replaced after at most this plus --leader-elect.retry-period")
	fs.DurationVar(&f.deadline, "leader-elect.renew-deadline", kube.DefaultRenewDeadline, "with --leader-elect: a leader that cannot renew within this stops acting and exits (shorter than the lease duration)")
	fs.DurationVar(&f.retries, "leader-elect.retry-period", kube.DefaultRetryPeriod, "with --leader-elect: how often replicas try to take or renew the lease")
	fs.StringVar(&f.service, "leader-elect.service", "", "with --leader-elect: a selector-less Service, NAMESPACE/NAME, that the acting leader points at itself (it writes the Service's EndpointSlice with --leader-elect.address), so that control requests sent to it reach the leader")
	fs.StringVar(&f.address, "leader-elect.address", "", "with --leader-elect.service: this replica's address, IP[:PORT] (the pod's IP; default port: --listen's)")
}

// elector builds the Elector of the flags, nil without --leader-elect, and
// the leader Service, nil without --leader-elect.service. listen is
// --listen, whose port is the address's default.
func (f *electFlags) elector(set map[string]bool, kubeconfig, storeURL, listen string, log *slog.Logger) (server.Elector, server.LeaderService, error) {
	if !f.on {
		for _, n := range []string{"leader-elect.lease", "leader-elect.identity", "leader-elect.lease-duration", "leader-elect.renew-deadline", "leader-elect.retry-period",
			"leader-elect.service", "leader-elect.address"} {
			if set[n] {
				return nil, nil, fmt.Errorf("%w: --%s needs --leader-elect", errUsage, n)
			}
		}
		return nil, nil, nil
	}
	if storeURL == "" {
		return nil, nil, fmt.Errorf("%w: --leader-elect needs --store.url: replicas share one store (an embedded store per replica would hold only the samples sent to it)", errUsage)
	}
	ns, name, ok := splitNamespaced(f.lease)
	if !ok {
		return nil, nil, fmt.Errorf("%w: --leader-elect.lease %q: want NAMESPACE/NAME of the Lease", errUsage, f.lease)
	}
	id := f.identity
	if id == "" {
		var err error
		if id, err = os.Hostname(); err != nil || id == "" {
			return nil, nil, fmt.Errorf("%w: --leader-elect: no host name for an identity (%v): give --leader-elect.identity", errUsage, err)
		}
	}
	if err := kube.CheckTimings(f.duration, f.deadline, f.retries); err != nil {
		return nil, nil, fmt.Errorf("%w: --leader-elect.*: %v", errUsage, err)
	}
	var lso *kube.LeaderServiceOptions
	switch {
	case f.service != "":
		svcNS, svcName, ok := splitNamespaced(f.service)
		if !ok {
			return nil, nil, fmt.Errorf("%w: --leader-elect.service %q: want NAMESPACE/NAME of the Service", errUsage, f.service)
		}
		addr, err := replicaAddress(f.address, listen)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --leader-elect.address: %v", errUsage, err)
		}
		lso = &kube.LeaderServiceOptions{Namespace: svcNS, Name: svcName, Address: addr, Identity: id}
	case f.address != "":
		return nil, nil, fmt.Errorf("%w: --leader-elect.address needs --leader-elect.service", errUsage)
	}
	cs, err := kubeClient(kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--leader-elect: %w", err)
	}
	e, err := kube.NewElector(cs, kube.ElectorOptions{Namespace: ns, Name: name, Identity: id,
		LeaseDuration: f.duration, RenewDeadline: f.deadline, RetryPeriod: f.retries, Logger: log.With("component", "leader-election")})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if lso == nil {
		return e, nil, nil
	}
	ls, err := kube.NewLeaderService(cs, *lso)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: --leader-elect.service: %v", errUsage, err)
	}
	return e, ls, nil
}

// splitNamespaced splits NAMESPACE/NAME.
func splitNamespaced(s string) (ns, name string, ok bool) {
	ns, name, ok = strings.Cut(s, "/")
	return ns, name, ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// replicaAddress parses --leader-elect.address, IP or IP:PORT ([IPv6]:PORT),
// the port defaulting to listen's.
func replicaAddress(addr, listen string) (netip.AddrPort, error) {
	if addr == "" {
		return netip.AddrPort{}, errors.New("none given: this replica's IP (the pod's, from the downward API)")
	}
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return ap, nil
	}
	ip, err := netip.ParseAddr(strings.Trim(addr, "[]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: want IP or IP:PORT", addr)
	}
	_, p, err := net.SplitHostPort(listen)
	port, perr := strconv.ParseUint(p, 10, 16)
	if err != nil || perr != nil || port == 0 {
		return netip.AddrPort{}, fmt.Errorf("%q has no port and --listen %q gives none: want IP:PORT", addr, listen)
	}
	return netip.AddrPortFrom(ip, uint16(port)), nil
}
