//go:build !agentonly

package main

import (
	"fmt"
	"io"
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
		cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--actuator kubernetes: no cluster configuration (in-cluster, or --kubeconfig): %w", err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("--actuator kubernetes: %w", err)
		}
		o.Actuator = kube.New(cs, kube.Options{})
	default:
		return nil, fmt.Errorf("%w: --actuator %q: want slurm, kubernetes, log or none", errUsage, f.actuator)
	}
	return o, nil
}
