//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
)

var stragglersCommand = command{"name the GPUs of multi-GPU jobs whose SM clock, activity or power lag their peers, with the evidence and throttle reasons", runStragglers}

func runStragglers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stragglers", stderr)
	var cf clientFlags
	cf.register(fs)
	var win windowFlags
	win.register(fs, "10m")
	output := fs.String("output", "table", "table or json")
	minGap := fs.String("min-gap", "10%", "how far behind its job's reference a GPU's median must be (a percentage or a fraction)")
	minDuration := fs.Duration("min-duration", 2*time.Minute, "how long the GPU must lag by --min-gap or more")
	job := fs.String("job-id", "", "only this job (a Slurm job id, or namespace/pod)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch stragglers --server URL [--last 10m | --from T --to T] [--output table|json]")
		fmt.Fprintln(stderr, "                           [--min-gap 10%] [--min-duration 2m] [--job-id ID]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Names, in each job with two GPUs or more, the GPUs whose median SM clock, SM activity (else GPU")
		fmt.Fprintln(stderr, "utilization) or power lags the job's reference (the median of its upper half of GPUs) by --min-gap")
		fmt.Fprintln(stderr, "or more, beyond 3 median absolute deviations, for --min-duration or more, with the clock-throttle")
		fmt.Fprintln(stderr, "reasons they reported. Definitions: docs/reports.md (Stragglers).")
		fmt.Fprintln(stderr, "Example:")
		fmt.Fprintln(stderr, "  gpuwatch stragglers --server http://gpuwatch:9402 --last 30m --min-gap 15%")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	format, err := stragglers.ParseFormat(*output)
	if err != nil {
		return fmt.Errorf("%w: --output: %v", errUsage, err)
	}
	v := url.Values{}
	if err := win.set(v); err != nil {
		return err
	}
	v.Set(stragglers.ParamMinGap, *minGap)
	v.Set(stragglers.ParamMinDuration, minDuration.String())
	if *job != "" {
		v.Set(stragglers.ParamJob, *job)
	}
	// The server checks the same; checking here first names the flag.
	if _, err := stragglers.ParseQuery(v, time.Now(), func(p string) string {
		if p == stragglers.ParamJob {
			return "--job-id"
		}
		return "--" + strings.ReplaceAll(p, "_", "-")
	}); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var rep stragglers.Report
	if err := c.do(ctx, http.MethodGet, "/stragglers?"+v.Encode(), nil, &rep); err != nil {
		return err
	}
	return stragglers.Render(stdout, &rep, format)
}
