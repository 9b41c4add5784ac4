package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/health"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// exitCode ends a command with a status and no further message: the command has
// already said what it had to.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Exit codes of `gpuwatch check`, NHC's convention: 0 healthy, 1 the node should
// take no work; 2 is bad usage (as for every command), 3 the check itself could
// not run.
const (
	checkUnhealthy exitCode = 1
	checkFailed    exitCode = 3
)

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", stderr)
	var f agentFlags
	f.register(fs, "/var/lib/gpuwatch")
	f.labels = "dcgm"
	fs.Lookup("log.level").DefValue = "warn"
	f.logLevel = "warn"
	f.o.HealthInterval, f.o.Interval = time.Second, time.Second
	cycles := fs.Int("cycles", 3, "collection cycles to run before judging (the health state moves one step per cycle)")
	asJSON := fs.Bool("json", false, "print the full health report as JSON instead of one line")
	useSlurm := fs.Bool("slurm", false, "act on Slurm as a HealthCheckProgram does: drain this node when unhealthy (reason \"gpuwatch: …\"), resume it when healthy if gpuwatch drained it")
	slurmNode := fs.String("slurm.node", "", "the node's Slurm NodeName (default: --node, else the short host name)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch check [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Reads the node once, judges its GPUs' health and prints one line. Exit status: 0 healthy")
		fmt.Fprintln(stderr, "(warnings are printed but do not fail), 1 the node should take no new work, 3 the check")
		fmt.Fprintln(stderr, "could not run. With --slurm it drains and resumes the node itself, as NHC does, so it can be")
		fmt.Fprintln(stderr, "Slurm's HealthCheckProgram on sites without a gpuwatch server.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cycles < 1 {
		return fmt.Errorf("%w: --cycles must be at least 1, got %d", errUsage, *cycles)
	}
	o, sim, err := f.options(stderr)
	if err != nil {
		return err
	}
	o.StateFile = "check-health.json" // its own: it may run beside an agent
	o.KmsgPoll = 10 * time.Millisecond
	if sim != nil {
		defer sim.cleanup()
		// A one-shot check of a simulated node looks at it after its scenario
		// has played.
		if err := sim.playScenario(); err != nil {
			return err
		}
	}
	a, err := agent.New(o)
	if err != nil {
		fmt.Fprintf(stdout, "gpuwatch: check failed: %v\n", err)
		return checkFailed
	}
	runCtx, cancel := context.WithCancel(ctx)
	wait := a.Start(runCtx)
	for i := range *cycles {
		if i > 0 && sim != nil {
			if err := sim.fleet.Advance(time.Second); err != nil {
				cancel()
				wait()
				a.Close()
				return err
			}
		}
		a.Collect(runCtx, true)
	}
	cancel()
	wait()
	if err := a.Close(); err != nil {
		o.Logger.Warn("saving the check's health state", "err", err)
	}
	r := a.Health.Report()

	line := checkLine(r, len(a.Inventory.GPUs))
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, line)
	}
	if *useSlurm {
		node := *slurmNode
		if node == "" {
			node = f.o.Node
		}
		if node == "" {
			h, err := os.Hostname()
			if err != nil {
				return fmt.Errorf("cannot tell the Slurm node name: %w", err)
			}
			node, _, _ = strings.Cut(h, ".")
		}
		if err := actOnSlurm(ctx, slurm.Scontrol{}, node, r, o.Logger.Info); err != nil {
			fmt.Fprintf(stderr, "gpuwatch check: %v\n", err)
			return checkFailed
		}
	}
	if r.Drain() {
		return checkUnhealthy
	}
	return nil
}

// checkLine is the one line a HealthCheckProgram prints.
func checkLine(r health.Report, gpus int) string {
	switch {
	case r.Drain():
		return r.Summary()
	case r.Severity >= telemetry.SeverityWarning:
		return fmt.Sprintf("gpuwatch: ok with warnings (%d GPUs): %s", gpus, strings.TrimPrefix(r.Summary(), "gpuwatch: "))
	}
	return fmt.Sprintf("gpuwatch: healthy (%d GPUs)", gpus)
}

// actOnSlurm drains the node when the report says so and resumes it when healthy,
// but only a drain gpuwatch made: the NHC convention.
func actOnSlurm(ctx context.Context, sc slurm.Scontrol, node string, r health.Report, logf func(string, ...any)) error {
	st, err := sc.ShowNode(ctx, node)
	if err != nil {
		return err
	}
	switch {
	case r.Drain() && !st.Drained():
		logf("draining the node in Slurm", "node", node, "reason", r.Summary())
		return sc.Drain(ctx, node, r.Summary())
	case r.Drain() && slurm.Owned(st.Reason) && st.Reason != r.Summary():
		logf("updating gpuwatch's drain reason", "node", node, "reason", r.Summary())
		return sc.Drain(ctx, node, r.Summary())
	case r.Drain():
		logf("node already drained", "node", node, "reason", st.Reason)
	case st.Drained() && slurm.Owned(st.Reason):
		logf("resuming the node gpuwatch drained", "node", node, "was", st.Reason)
		return sc.Resume(ctx, node)
	case st.Drained():
		logf("node drained by someone else; leaving it", "node", node, "reason", st.Reason)
	}
	return nil
}
