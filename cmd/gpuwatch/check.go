package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/tlsconf"
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
	push := fs.String("push", "", "also push the verdict, the GPU counts and the check's duration to this import endpoint (the gpuwatch server's or VictoriaMetrics's http(s)://host:port/api/v1/import/prometheus); a failed push is a warning, never a changed verdict")
	pushTimeout := fs.Duration("push.timeout", 5*time.Second, "with --push: longest the push may take")
	tokenFile := fs.String("token-file", "", "with --push: file holding the bearer token to send (role agent; default: $"+auth.EnvToken+")")
	var clientTLS tlsconf.ClientFiles
	fs.StringVar(&clientTLS.CAFile, "tls.ca-file", "", "with --push: CA certificates (PEM) that sign the endpoint's certificate")
	fs.StringVar(&clientTLS.CertFile, "tls.client-cert-file", "", "with --push: client certificate (PEM) for an endpoint that asks for mutual TLS")
	fs.StringVar(&clientTLS.KeyFile, "tls.client-key-file", "", "key of --tls.client-cert-file")
	useSlurm := fs.Bool("slurm", false, "act on Slurm as a HealthCheckProgram does: drain this node when unhealthy (reason \"gpuwatch: …\"), resume it when healthy if gpuwatch drained it")
	slurmNode := fs.String("slurm.node", "", "the node's Slurm NodeName (default: --node, else the short host name)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch check [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Reads the node once, judges its GPUs' health and prints one line. Exit status: 0 healthy")
		fmt.Fprintln(stderr, "(warnings are printed but do not fail), 1 the node should take no new work, 3 the check")
		fmt.Fprintln(stderr, "could not run. With --slurm it drains and resumes the node itself, as NHC does, so it can be")
		fmt.Fprintln(stderr, "Slurm's HealthCheckProgram on sites without a gpuwatch server; with --push it also sends its")
		fmt.Fprintln(stderr, "verdict to a store's import endpoint.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cycles < 1 {
		return fmt.Errorf("%w: --cycles must be at least 1, got %d", errUsage, *cycles)
	}
	started := time.Now()
	var pushTo string
	var pushRT http.RoundTripper
	if *push != "" {
		var err error
		if pushTo, err = pushURL(*push); err != nil {
			return err
		}
		if pushRT, err = clientTransport(*tokenFile, clientTLS, os.Getenv(auth.EnvToken)); err != nil {
			return err
		}
	} else if *tokenFile != "" {
		return fmt.Errorf("%w: --token-file is sent with --push; give --push", errUsage)
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
	var snap *collector.Snapshot
	for i := range *cycles {
		if i > 0 && sim != nil {
			if err := sim.fleet.Advance(time.Second); err != nil {
				cancel()
				wait()
				a.Close()
				return err
			}
		}
		snap = a.Collect(runCtx, true)
	}
	cancel()
	wait()
	if err := a.Close(); err != nil {
		o.Logger.Warn("saving the check's health state", "err", err)
	}
	r := a.Health.Report()

	line := checkLine(r, len(a.Inventory.GPUs))
	verdict := checkVerdict{Node: a.Inventory.Node, Healthy: !r.Drain(), GPUs: gpuCounts(snap),
		Duration: time.Since(started), At: time.Now()}
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
	if pushTo != "" {
		// A health check's verdict is its exit status and line; the push is a
		// copy for the store and cannot change them.
		if err := verdict.push(ctx, pushTo, pushRT, *pushTimeout); err != nil {
			fmt.Fprintf(stderr, "gpuwatch check: warning: the verdict was not pushed: %v\n", err)
		}
	}
	if r.Drain() {
		return checkUnhealthy
	}
	return nil
}

// checkLine is the one line a HealthCheckProgram prints.
func checkLine(r healthreport.Report, gpus int) string {
	switch {
	case r.Drain():
		return r.Summary()
	case r.Severity >= telemetry.SeverityWarning:
		return fmt.Sprintf("gpuwatch: ok with warnings (%d GPUs): %s", gpus, strings.TrimPrefix(r.Summary(), "gpuwatch: "))
	}
	if gpus == 0 {
		return "gpuwatch: healthy (no GPUs)"
	}
	return fmt.Sprintf("gpuwatch: healthy (%d GPUs)", gpus)
}

// actOnSlurm drains the node when the report says so and resumes it when healthy,
// but only a drain gpuwatch made: the NHC convention.
func actOnSlurm(ctx context.Context, sc slurm.Scontrol, node string, r healthreport.Report, logf func(string, ...any)) error {
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
