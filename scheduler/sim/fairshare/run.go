package fairshare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	fs "github.com/gpuwatch/gpuwatch/scheduler/fairshare"
)

// Options are what `gpuwatch simulate fairshare` passes in; the CLI turns
// its flags into them. Zero fields take the defaults.
type Options struct {
	// Charge is allocation, measured or blend; empty runs all three and
	// prints the comparison.
	Charge string
	// BlendWeight is w of the blend policy (default 0.5).
	BlendWeight float64
	// IdleFloor is the measured policies' least charge per GPU-second
	// (default 0.1, the fairshare package's). Set NoIdleFloor for 0.
	IdleFloor   float64
	NoIdleFloor bool
	// TracePath replays a CSV or JSON trace (see ParseTrace) instead of the
	// composed Helios × GenAI workload.
	TracePath string
	// DataDir is the shared data folder for the default workload.
	DataDir string
	// Output is "text" (default) or "json".
	Output string
	// Helios chooses the default workload's window, seed and cluster
	// (DataDir above overrides its DataDir).
	Helios HeliosOptions
	// Cluster overrides the workload's cluster when set.
	Cluster Cluster
	// Replay settings shared by every policy (its Policy is ignored).
	Replay Config
}

// Policies are the charge policies compared when Options.Charge is empty.
var Policies = []fs.ChargePolicy{fs.ChargeAllocation, fs.ChargeMeasured, fs.ChargeBlend}

// Run loads the workload, replays it under the chosen charge policy (or all
// three) and writes the comparison table or its JSON to stdout.
func Run(ctx context.Context, o Options, stdout io.Writer) error {
	if o.Output == "" {
		o.Output = "text"
	}
	if o.Output != "text" && o.Output != "json" {
		return fmt.Errorf("output %q: want text or json", o.Output)
	}
	policies := Policies
	if o.Charge != "" {
		p := fs.ChargePolicy(o.Charge)
		if p != fs.ChargeAllocation && p != fs.ChargeMeasured && p != fs.ChargeBlend {
			return fmt.Errorf("charge %q: want allocation, measured or blend (or none to compare all three)", o.Charge)
		}
		policies = []fs.ChargePolicy{p}
	}
	w, err := LoadWorkload(o)
	if err != nil {
		return err
	}
	res, err := Compare(ctx, w, o.Replay, o.policies(policies))
	if err != nil {
		return err
	}
	if o.Output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteTable(stdout)
}

func (o Options) policies(charges []fs.ChargePolicy) []fs.Policy {
	floor := o.IdleFloor
	if floor == 0 && !o.NoIdleFloor {
		floor = fs.DefaultIdleFloor
	}
	bw := o.BlendWeight
	if bw == 0 {
		bw = DefaultBlendWeight
	}
	var out []fs.Policy
	for _, c := range charges {
		p := fs.Policy{Charge: c, IdleFloor: floor}
		if c == fs.ChargeBlend {
			p.BlendWeight = bw
		}
		out = append(out, p)
	}
	return out
}

// LoadWorkload reads the trace named in the options, or composes the
// default Helios × GenAI workload.
func LoadWorkload(o Options) (*Workload, error) {
	var w *Workload
	var err error
	if o.TracePath != "" {
		w, err = LoadTrace(o.TracePath)
	} else {
		ho := o.Helios
		if o.DataDir != "" {
			ho.DataDir = o.DataDir
		}
		if ho.DataDir == "" {
			return nil, fmt.Errorf("no trace and no data folder: give a trace file, or the shared data folder holding %s and %s", HeliosSequenceFile, DutyCycleFile)
		}
		w, err = ComposeHelios(ho)
	}
	if err != nil {
		return nil, err
	}
	if o.Cluster != (Cluster{}) {
		w.Cluster = o.Cluster
	}
	if w.Cluster == (Cluster{}) {
		return nil, fmt.Errorf("workload %s names no cluster: set one (nodes × GPUs per node)", w.Name)
	}
	return w, w.Validate()
}

// Compare replays the workload once per policy, all else identical.
func Compare(ctx context.Context, w *Workload, cfg Config, policies []fs.Policy) (*Result, error) {
	res := &Result{Workload: Summarize(w), Runs: make([]PolicyResult, len(policies))}
	errs := make([]error, len(policies))
	var wg sync.WaitGroup
	for i, p := range policies {
		c := cfg
		c.Policy = p
		wg.Go(func() {
			tr, err := Replay(ctx, w, c)
			if err != nil {
				errs[i] = err
				return
			}
			res.Runs[i] = Evaluate(w, c, tr)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return res, nil
}
