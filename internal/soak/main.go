package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

func main() {
	var o Options
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	fs.StringVar(&o.Bin, "bin", "bin/gpuwatch", "the gpuwatch binary whose server is soaked (make build)")
	fs.IntVar(&o.Nodes, "nodes", 1000, "simulated HGX H100 nodes, one real agent each")
	fs.DurationVar(&o.Duration, "duration", 30*time.Minute, "measured soak, after the warm-up")
	fs.DurationVar(&o.Warmup, "warmup", 0, "warm-up before measuring (default: three full intervals)")
	fs.DurationVar(&o.Interval, "interval", time.Minute, "each agent's full collection interval (production: 10s)")
	fs.DurationVar(&o.HealthInterval, "health-interval", 10*time.Second, "each agent's health-critical collection interval (production: 1s)")
	fs.DurationVar(&o.KmsgPoll, "kmsg-poll", time.Second, "how often each agent polls its kernel log (production: 250ms)")
	fs.DurationVar(&o.SampleEvery, "sample", time.Minute, "how often memory, goroutines and counts are read")
	fs.DurationVar(&o.QueryEvery, "query", time.Minute, "how often the dashboard queries run")
	fs.DurationVar(&o.FaultEvery, "fault-every", time.Minute, "heat one random GPU for 3 minutes this often (negative: never)")
	fs.DurationVar(&o.PushBound, "push-bound", time.Second, "bound on the health pushes' p99")
	fs.StringVar(&o.FleetDir, "fleet-dir", "", "where the simulated nodes' files go, best a tmpfs (default: /dev/shm)")
	fs.StringVar(&o.HeapProfile, "heap-profile", "", "write a heap profile of the agents' process here at the end of the measured window")
	fs.Int64Var(&o.Seed, "seed", 1, "fleet, workload and fault seed")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/soak [flags] (see go doc ./internal/soak)")
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[1:])
	o.Out = os.Stdout
	if os.Getenv("GOGC") == "" {
		// A thousand agents share this process: at Go's default the heap
		// may grow to twice their few GiB of live data, memory the server
		// next to it needs. Each real agent is a process of its own.
		debug.SetGCPercent(50)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("go run ./internal/soak %s\n", strings.Join(os.Args[1:], " "))
	res, err := Run(ctx, o)
	if res != nil && len(res.Checks) > 0 {
		fmt.Println()
		printReport(os.Stdout, res)
	}
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	case err != nil:
		fmt.Fprintln(os.Stderr, "soak: interrupted")
		os.Exit(1)
	case !res.Pass():
		fmt.Fprintln(os.Stderr, "soak: FAILED")
		os.Exit(1)
	}
}

// printReport prints the results as the tables docs/BENCHMARKS.md keeps.
func printReport(w io.Writer, res *Result) {
	o := res.Options
	var measured []reading
	for _, r := range res.Readings {
		if !r.warm {
			measured = append(measured, r)
		}
	}
	fmt.Fprintf(w, "%d nodes, %s measured after %s of warm-up (%s in all from the agents' start); load average %s at the start, %s at the end\n\n",
		o.Nodes, o.Duration, o.Warmup, res.Wall.Round(time.Second), res.Load[0], res.Load[1])

	fmt.Fprintln(w, "| reading (every "+o.SampleEvery.String()+" after warm-up) | first third | last third | change | allowed | flat |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, f := range res.Flat {
		unit := ""
		if f.unit != "" {
			unit = " " + f.unit
		}
		if f.info {
			fmt.Fprintf(w, "| %s | %.0f%s | %.0f%s | %+.1f %% | | |\n", f.name, f.f.First, unit, f.f.Last, unit, 100*f.f.Change)
			continue
		}
		fmt.Fprintf(w, "| %s | %.0f%s | %.0f%s | %+.1f %% | +%.0f %%%s | %s |\n", f.name, f.f.First, unit, f.f.Last, unit,
			100*f.f.Change, 100*f.f.Tolerance, slackText(f.f.Slack), yes(f.f.OK))
	}
	if len(measured) >= 2 {
		a, b := measured[0], measured[len(measured)-1]
		wall := (b.at - a.at).Seconds()
		fmt.Fprintf(w, "\nCPU over the measured window: server %.2f cores, agents' process (agents, simulator, soak) %.2f cores; the simulator's steps took %s of wall time in all\n",
			(b.serverCPU-a.serverCPU).Seconds()/wall, (b.agentsCPU-a.agentsCPU).Seconds()/wall, res.SimWall.Round(time.Second))
		fmt.Fprintf(w, "waiting for a CPU (runnable, not running; /proc schedstat): server %.2f s per s, agents' process %.2f s per s\n",
			(b.serverWait-a.serverWait).Seconds()/wall, (b.agentsWait-a.agentsWait).Seconds()/wall)
		fmt.Fprintf(w, "samples accepted over the measured window: %.0f = %.0f samples/s\n", b.accepted-a.accepted, (b.accepted-a.accepted)/wall)
	}

	fmt.Fprintln(w, "\n| end to end | |\n|---|---|")
	fmt.Fprintf(w, "| samples the agents' shippers sent | %.0f |\n", res.Sent)
	fmt.Fprintf(w, "| samples the server accepted (gpuwatch_ingest_samples_accepted_total) | %.0f |\n", res.Accepted)
	fmt.Fprintf(w, "| samples the store holds (count_over_time per metric and node: %d queries, %s) | %.0f |\n", res.StoreQueries, res.StoreCount.Round(time.Millisecond), res.Stored)
	fmt.Fprintf(w, "| dropped by shippers / rejected by the server | %v / %v |\n", res.Dropped, res.Rejected)
	fmt.Fprintf(w, "| requests the server's listener shed (gpuwatch_http_refused_total) | %v |\n", res.Refused)
	fmt.Fprintf(w, "| largest backlog in the shippers at a reading | %d samples |\n", res.MaxPending)
	fmt.Fprintf(w, "| every shipper empty after the last cycle | %s |\n", res.Drain.Round(time.Millisecond))
	fmt.Fprintf(w, "| remote writes (agent POST → server answer) | %s; %s |\n", res.Writes, codesText(res.WriteCodes))
	fmt.Fprintf(w, "| health pushes (agent POST → server 202) | %s; %s |\n", res.Pushes, codesText(res.PushCodes))
	fmt.Fprintf(w, "| nodes whose health the server holds, fresh at the end | %d of %d |\n", res.NodesReported, o.Nodes)
	fmt.Fprintf(w, "| thermal faults injected | %d |\n", res.Faults)
	fmt.Fprintf(w, "| server log lines (warn and above) | %d |\n", len(res.ServerLogLines))

	fmt.Fprintln(w, "\n| dashboard panel (every "+o.QueryEvery.String()+") | query | runs | p50 | p99 | max | bound | within |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, q := range res.Queries {
		s := q.lat.summary()
		expr := q.expr
		if q.rng > 0 {
			expr += fmt.Sprintf(" over %s step %s", q.rng, q.step)
		}
		fmt.Fprintf(w, "| %s | `%s` | %d | %s | %s | %s | %s | %s |\n", q.name, expr, s.N, ms(s.P50), ms(s.P99), ms(s.Max), q.bound,
			yes(q.errs == 0 && s.N > 0 && s.P99 < q.bound))
	}

	fmt.Fprintln(w)
	for _, c := range res.Checks {
		v := "ok  "
		if !c.ok {
			v = "FAIL"
		}
		fmt.Fprintf(w, "%s %s: %s\n", v, c.name, c.detail)
	}
	if n := len(res.ServerLogLines); n > 0 {
		fmt.Fprintf(w, "\nthe server logged %d lines; the first:\n", n)
		for _, l := range res.ServerLogLines[:min(5, n)] {
			fmt.Fprintln(w, "  "+l)
		}
	}
	verdict := "PASS"
	if !res.Pass() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\nsoak: %s\n", verdict)
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
