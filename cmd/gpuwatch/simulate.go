//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
	"github.com/gpuwatch/gpuwatch/scheduler/sim/openb"
	"github.com/gpuwatch/gpuwatch/scheduler/sim/packing"
)

// simulation is one `gpuwatch simulate` subcommand.
type simulation struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// simulations is the explicit registry of `gpuwatch simulate` subcommands.
func simulations() map[string]simulation {
	return map[string]simulation{
		"openb":     {"replay an Alibaba openb GPU trace with the FGD paper's protocol and print the GPU allocation curve", runSimulateOpenB},
		"fairshare": {"what-if: replay jobs under fair share charged by allocation, measured GPU use or a blend, and compare", runSimulateFairShare},
	}
}

func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sims := simulations()
	if len(args) == 0 {
		simulateUsage(stderr, sims)
		return fmt.Errorf("%w: missing simulation name", errUsage)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		simulateUsage(stdout, sims)
		return nil
	}
	s, ok := sims[args[0]]
	if !ok {
		simulateUsage(stderr, sims)
		return fmt.Errorf("%w: unknown simulation %q (known: %s)", errUsage, args[0], strings.Join(simulationNames(sims), ", "))
	}
	return s.run(ctx, args[1:], stdout, stderr)
}

func simulationNames(sims map[string]simulation) []string {
	names := make([]string, 0, len(sims))
	for n := range sims {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func simulateUsage(w io.Writer, sims map[string]simulation) {
	fmt.Fprintln(w, "Usage: gpuwatch simulate <simulation> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Simulations:")
	for _, n := range simulationNames(sims) {
		fmt.Fprintf(w, "  %-10s %s\n", n, sims[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'gpuwatch simulate <simulation> -h' for its flags.")
}

func runSimulateOpenB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("simulate openb", stderr)
	nodeList := fs.String("node-list", "", "openb node list CSV (sn,cpu_milli,memory_mib,gpu,model), e.g. openb_node_list_gpu_node.csv")
	podList := fs.String("pod-list", "", "openb pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,…])")
	policy := fs.String("policy", "", "placement policy: "+strings.Join(packing.Names(), ", "))
	seed := fs.Int64("seed", 42, "random seed of the shuffle, inflation and node ranking (the simulator's -tuneseed)")
	seeds := fs.String("seeds", "", `several seeds, e.g. "42-51" (the paper's); prints the mean curve and each seed's final ratio (overrides --seed)`)
	tune := fs.Float64("tune", openb.DefaultTune, "inflate (or trim) the GPU request to this multiple of GPU capacity; 0 replays the list as is")
	noShuffle := fs.Bool("no-shuffle", false, "submit pods in name order instead of shuffling them (the paper shuffles)")
	output := fs.String("output", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch simulate openb --node-list CSV --pod-list CSV --policy NAME [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Replays the pod list on the nodes with the protocol of the FGD paper (ATC '23) as its simulator")
		fmt.Fprintln(stderr, "runs it, and prints the GPU allocation ratio (%) at each arrived-demand percentage of GPU")
		fmt.Fprintln(stderr, "capacity up to tune×100. The last line (JSON: final) is the ratio at the end.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *nodeList == "":
		return fmt.Errorf("%w: --node-list is required", errUsage)
	case *podList == "":
		return fmt.Errorf("%w: --pod-list is required", errUsage)
	case *policy == "":
		return fmt.Errorf("%w: --policy is required (one of %s)", errUsage, strings.Join(packing.Names(), ", "))
	case *output != "text" && *output != "json":
		return fmt.Errorf("%w: --output must be text or json, got %q", errUsage, *output)
	case *tune < 0:
		return fmt.Errorf("%w: --tune must not be negative, got %v", errUsage, *tune)
	}
	if !isPolicy(*policy) {
		return fmt.Errorf("%w: unknown --policy %q (one of %s)", errUsage, *policy, strings.Join(packing.Names(), ", "))
	}
	var seedList []int64
	if *seeds != "" {
		var err error
		if seedList, err = openb.ParseSeeds(*seeds); err != nil {
			return fmt.Errorf("%w: --seeds: %v", errUsage, err)
		}
	}
	nodes, err := openb.LoadNodes(*nodeList)
	if err != nil {
		return err
	}
	pods, err := openb.LoadPods(*podList)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	o := openb.Options{Nodes: nodes, Pods: pods, Policy: strings.ToLower(*policy), Seed: *seed, Tune: *tune, NoShuffle: *noShuffle}
	if seedList == nil {
		r, err := openb.Run(o)
		if err != nil {
			return err
		}
		return printOpenB(stdout, *output, openBReport{Policy: r.Policy, PodList: *podList, Seeds: []int64{r.Seed}, Tune: *tune,
			TotalGPUs: r.TotalGPUs, Curve: r.Curve, Final: r.Final, Runs: []*openb.Result{r}})
	}
	s, err := openb.RunSeeds(o, seedList)
	if err != nil {
		return err
	}
	return printOpenB(stdout, *output, openBReport{Policy: s.Policy, PodList: *podList, Seeds: s.Seeds, Tune: *tune,
		TotalGPUs: s.Runs[0].TotalGPUs, Curve: s.Curve, Final: s.Final, Runs: s.Runs})
}

func isPolicy(name string) bool {
	for _, n := range packing.Names() {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// openBReport is what `gpuwatch simulate openb` prints.
type openBReport struct {
	Policy    string      `json:"policy"`
	PodList   string      `json:"pod_list"`
	Seeds     []int64     `json:"seeds"`
	Tune      float64     `json:"tune"`
	TotalGPUs int         `json:"total_gpus"`
	Curve     []sim.Point `json:"curve"`
	// Final is the allocation ratio (%) at the end (the mean over seeds).
	Final float64         `json:"final"`
	Runs  []*openb.Result `json:"-"`
}

func printOpenB(w io.Writer, format string, r openBReport) error {
	curve := make([]sim.Point, 0, len(r.Curve))
	for _, p := range r.Curve {
		if p.OK {
			curve = append(curve, p)
		}
	}
	r.Curve = curve
	if format == "json" {
		type run struct {
			Seed       int64   `json:"seed"`
			Final      float64 `json:"final"`
			FailedPods int     `json:"failed_pods"`
			Pods       int     `json:"arrived_pods"`
		}
		out := struct {
			openBReport
			PerSeed []run `json:"per_seed"`
		}{openBReport: r}
		for _, x := range r.Runs {
			out.PerSeed = append(out.PerSeed, run{x.Seed, x.Final, x.Failed, x.Arrived})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(w, "# policy %s, pod list %s, tune %v, %d GPUs, seeds %s\n", r.Policy, r.PodList, r.Tune, r.TotalGPUs, seedString(r.Seeds))
	for _, x := range r.Runs {
		fmt.Fprintf(w, "# seed %d: final %.2f%%, %d of %d pods failed\n", x.Seed, x.Final, x.Failed, x.Arrived)
	}
	fmt.Fprintln(w, "# demand_pct alloc_pct")
	for _, p := range r.Curve {
		fmt.Fprintf(w, "%d %.2f\n", p.DemandPct, p.AllocPct)
	}
	if len(r.Seeds) > 1 {
		fmt.Fprintf(w, "final %.3f\n", r.Final)
	} else {
		fmt.Fprintf(w, "final %.2f\n", r.Final)
	}
	return nil
}

func seedString(s []int64) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}
