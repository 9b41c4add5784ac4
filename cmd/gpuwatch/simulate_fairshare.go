//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"os"

	fssim "github.com/gpuwatch/gpuwatch/scheduler/sim/fairshare"
)

// defaultDataDir is where the real third-party data lives next to a checkout.
const defaultDataDir = "../shared/data"

func runSimulateFairShare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("simulate fairshare", stderr)
	charge := fs.String("charge", "", "charge policy: allocation, measured or blend (default: all three, compared)")
	blend := fs.Float64("blend-weight", 0.5, "with --charge blend: weight of measured use (the rest is allocation)")
	floor := fs.Float64("idle-floor", 0.1, "least charge per allocated GPU-second under measured and blend charging")
	trace := fs.String("trace", "", "job trace to replay (CSV or JSON: arrival, duration, gpus, account, user, utilization profile); default: Helios team demand × Alibaba GenAI duty cycles")
	data := fs.String("data", defaultDataDir, "the shared real-data folder (helios-earth-vc-sequences, alibaba-genai-v2026) for the default workload")
	output := fs.String("output", "text", "text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch simulate fairshare [--charge allocation|measured|blend] [--trace FILE] [--output json]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Replays a job trace through a queue ordered by fair share and age with EASY backfill, charging")
		fmt.Fprintln(stderr, "usage by allocation, by measured GPU use, or a blend, and reports per account: measured GPU-hours")
		fmt.Fprintln(stderr, "against entitlement, Jain's fairness index, waits, utilization, idle allocated GPU-hours.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch *charge {
	case "", "allocation", "measured", "blend":
	default:
		return fmt.Errorf("%w: --charge %q: want allocation, measured or blend", errUsage, *charge)
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("%w: --output %q: want text or json", errUsage, *output)
	}
	if *floor < 0 || *floor > 1 || *blend < 0 || *blend > 1 {
		return fmt.Errorf("%w: --idle-floor and --blend-weight are in [0,1]", errUsage)
	}
	if *trace == "" {
		if st, err := os.Stat(*data); err != nil || !st.IsDir() {
			return fmt.Errorf("%w: the default workload is composed from real data in %s, which is not there: give --data DIR or --trace FILE", errUsage, *data)
		}
	}
	o := fssim.Options{Charge: *charge, BlendWeight: *blend, IdleFloor: *floor, NoIdleFloor: *floor == 0,
		TracePath: *trace, DataDir: *data, Output: *output}
	return fssim.Run(ctx, o, stdout)
}
