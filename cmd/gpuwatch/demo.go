//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/demo"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	o := demo.Options{Out: stdout, Version: version}
	fs.IntVar(&o.Nodes, "nodes", 16, "number of simulated HGX H100 nodes, each with its own gpuwatch agent")
	fs.IntVar(&o.NodesPerLeaf, "nodes-per-leaf", 8, "nodes under each leaf switch")
	fs.DurationVar(&o.Duration, "duration", 0, "simulated time to run, then print the summary and exit (0: until interrupted)")
	fs.Float64Var(&o.Speed, "speed", 1, "simulated seconds per wall-clock second")
	fs.DurationVar(&o.Interval, "interval", time.Minute, "simulated time between fleet summaries")
	fs.DurationVar(&o.Tick, "tick", 5*time.Second, "simulated step of the hardware model; each agent runs a health cycle after every step")
	fs.IntVar(&o.FullEvery, "full-every", 2, "ticks between the agents' full collections (2: every 10 s of simulated time, a real agent's interval, which the server's fair share assumes)")
	fs.Int64Var(&o.Seed, "seed", 1, "seed for the simulated fleet and its workload")
	fs.StringVar(&o.Dir, "dir", "", "keep each node's simulated files (sysfs, kernel log) and agent state under this directory instead of a temporary one")
	fs.IntVar(&o.ListenBase, "listen-base", 0, "serve node i's agent on 127.0.0.1:PORT+i (0: free ports, printed at the start)")
	fs.StringVar(&o.ShowMetrics, "show-metrics", "", "print this node's whole /metrics at the end (default: the health and Xid series of the worst node)")
	fs.StringVar(&o.ServerListen, "server-listen", "", "address of the demo's gpuwatch server, which stores every agent's samples and serves the Prometheus API for Grafana (default "+demo.DefaultServerListen+", or a free loopback port when that is taken)")
	fs.BoolVar(&o.KeepServing, "keep-serving", false, "after the final summary of a --duration run, keep the server and the agents' endpoints up until interrupted")
	fs.Func("start", "simulated start time, RFC 3339 (default: --duration before now, so that the data is recent for Grafana)", func(v string) error {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fmt.Errorf("want an RFC 3339 time such as 2025-03-03T08:00:00Z: %w", err)
		}
		o.Start = t
		return nil
	})
	faults := fs.String("faults", "", "fault scenario YAML file (default: the built-in story)")
	policy := fs.String("drain-policy", "", "drain policy YAML file for the server's drain controller, as `gpuwatch server --policy` reads it (default: gpuwatch's default policy with the demo's short windows)")
	fsConfig := fs.String("fairshare-config", "", "fair-share accounts and shares YAML file, as `gpuwatch server --fairshare.config` reads it (default: the simulated workload's accounts and users, equal shares)")
	fs.DurationVar(&o.FairShareEvery, "fairshare-every", 3*time.Minute, "simulated time between the fair-share standings printed")
	fs.BoolVar(&o.Slurm, "slurm", false, "drain through a real Slurm cluster started on this host for the run (slurmctld and one slurmd per node, gpu01… for node-01…, on loopback ports, files in a temporary directory; about a second to start); needs root, slurm-wlm and munge. Without it the log actuator prints what it would do")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch demo [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Runs a simulated GPU fleet with a scripted fault story and one gpuwatch agent per node, serves")
		fmt.Fprintln(stderr, "each agent's /metrics on loopback, stores every agent's samples in an in-process gpuwatch server")
		fmt.Fprintln(stderr, "(embedded Prometheus TSDB; add its URL to Grafana as a Prometheus data source), and prints what")
		fmt.Fprintln(stderr, "the agents report and what the store holds.")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "The server also runs the drain controller and fair share on simulated time: the agents push their")
		fmt.Fprintln(stderr, "health reports, the controller drains, reboots and (after probation) resumes nodes as the story's")
		fmt.Fprintln(stderr, "faults call for it, and fair share charges each account what its GPUs measured. Drains go to the")
		fmt.Fprintln(stderr, "log actuator (\"would drain …\") unless --slurm starts a real local Slurm cluster to drain; that is")
		fmt.Fprintln(stderr, "opt-in because it runs slurmctld, slurmd and munged as root on this host.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if o.Speed <= 0 {
		return fmt.Errorf("%w: -speed must be positive, got %g", errUsage, o.Speed)
	}
	if *faults != "" {
		b, err := os.ReadFile(*faults)
		if err != nil {
			return fmt.Errorf("cannot read fault scenario: %w", err)
		}
		o.Faults, o.FaultsName = b, *faults
	}
	if *policy != "" {
		b, err := os.ReadFile(*policy)
		if err != nil {
			return fmt.Errorf("cannot read the drain policy: %w", err)
		}
		o.DrainPolicy, o.DrainPolicyName = b, *policy
	}
	if *fsConfig != "" {
		b, err := os.ReadFile(*fsConfig)
		if err != nil {
			return fmt.Errorf("cannot read the fair-share configuration: %w", err)
		}
		o.FairShare, o.FairShareName = b, *fsConfig
	}
	_, err := demo.Run(ctx, o)
	return err
}
