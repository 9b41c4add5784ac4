// Command gpuwatch watches GPU fleets and feeds what it sees back into scheduling.
//
// One binary, many subcommands; see `gpuwatch help`. Built with the tag
// agentonly (`make build` does both) it is `gpuwatch-agent`, the node agent alone:
// agent, check and version, without the control plane's dependencies (the
// Prometheus TSDB and PromQL, client-go, the rules engine), a third of the size
// and less than half the memory on every GPU node. Flags live only in this
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
	"strings"
	"syscall"
)

// command is one subcommand. run gets the arguments after the subcommand's name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// agentCommands are the subcommands of a GPU node, in both builds.
func agentCommands() map[string]command {
	return map[string]command{
		"agent":   {"run the node agent: collect GPU, NVLink, InfiniBand and Xid telemetry, judge health, serve /metrics", runAgent},
		"check":   {"check this node's GPUs once and exit non-zero with a one-line reason if unhealthy (a Slurm HealthCheckProgram)", runCheck},
		"version": {"print the version and build information", runVersion},
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
	if defaultCommand != "" && len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		args = append([]string{defaultCommand}, args...)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", programName, args[0])
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
		fmt.Fprintf(stderr, "%s %s: %v\n", programName, args[0], err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, programSummary)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Usage: %s <command> [flags]\n", programName)
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
	fmt.Fprintf(w, "Run '%s <command> -h' for a command's flags.\n", programName)
	if defaultCommand != "" {
		fmt.Fprintf(w, "Flags without a command are %s's: '%s --simulate hgx-h100' is '%s %s --simulate hgx-h100'.\n", defaultCommand, programName, programName, defaultCommand)
	}
}

// newFlagSet returns a flag set that reports errors instead of exiting, so tests
// can drive every subcommand in process.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(programName+" "+name, flag.ContinueOnError)
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
