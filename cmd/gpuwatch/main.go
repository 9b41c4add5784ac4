// Command gpuwatch watches GPU fleets and feeds what it sees back into scheduling.
//
// One binary, many subcommands; see `gpuwatch help`. Flags live only in this
// package: each subcommand parses its own flag set into the Options struct of the
// library package it drives.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. run gets the arguments after the subcommand's name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is the explicit registry of subcommands.
func commands() map[string]command {
	return map[string]command{
		"agent":     {"run the node agent: collect GPU, NVLink, InfiniBand and Xid telemetry, judge health, serve /metrics", runAgent},
		"check":     {"check this node's GPUs once and exit non-zero with a one-line reason if unhealthy (a Slurm HealthCheckProgram)", runCheck},
		"drain":     {"drain a node through the gpuwatch server's actuator, as a person (audited, never resumed by automation)", runDrain},
		"resume":    {"resume a node through the gpuwatch server's actuator, as a person (audited)", runResume},
		"place":     {"ask the gpuwatch server for a topology- and health-aware gang placement (dry run or reserved with a lease)", runPlace},
		"explain":   {"show why the gpuwatch server placed a job where it did: every filter verdict and score", runExplain},
		"topology":  {"export the fabric (ibnetdiscover dump, site YAML, topology.conf) as Slurm topology.conf, node labels, a Kueue Topology, Volcano HyperNodes", runTopology},
		"simulate":  {"replay real traces: `simulate openb` (GPU packing with the FGD paper's protocol)", runSimulate},
		"report":    {"print a GPU utilization report (allocated vs measured GPU-hours, efficiency, idle, headroom) by account, user, job, namespace, node or model", runReport},
		"fairshare": {"print the fair-share standing (shares, measured and allocated GPU usage, factors) from a gpuwatch server", runFairShare},
		"demo":      {"run a simulated GPU fleet with a scripted fault story and a gpuwatch agent per node; print what the agents report", runDemo},
		"server":    {"run the control plane: the store (remote-write ingest, Prometheus query API), drain controller, placement, fair share; behind bearer tokens and TLS", runServer},
		"token":     {"make a bearer token: a random secret into a file and the token-file entry (name, role, sha256) for the server", runToken},
		"version":   {"print the version and build information", runVersion},
	}
}

// errUsage marks an error caused by bad command-line input; main exits 2 for it.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gpuwatch: unknown command %q\n\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		fmt.Fprintf(stderr, "gpuwatch %s: %v\n", args[0], err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "gpuwatch watches GPU fleets and feeds what it sees back into scheduling.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: gpuwatch <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'gpuwatch <command> -h' for a command's flags.")
}

// newFlagSet returns a flag set that reports errors instead of exiting, so tests
// can drive every subcommand in process.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("gpuwatch "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and rejects stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}
