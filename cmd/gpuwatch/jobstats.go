//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/jobstats"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
)

// runJobStats is `gpuwatch jobstats JOBID --server URL`.
func runJobStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("jobstats", stderr)
	var cf clientFlags
	cf.register(fs)
	var win windowFlags
	win.register(fs, "168h")
	output := fs.String("output", "table", "table or json")
	idleBelow := fs.String("idle-below", "5%", "a GPU measured below this (a percentage, or a fraction such as 0.05) ...")
	idleFor := fs.Duration("idle-for", 30*time.Minute, "... for at least this long is idle for that stretch")
	toSlurm := fs.Bool("slurm", false, "also write the verdict into the Slurm job's AdminComment (scontrol update; run it from EpilogSlurmctld as SlurmUser or root, so sacct shows it after the job)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch jobstats JOBID --server URL [--output table|json] [--last D | --from T --to T]")
		fmt.Fprintln(stderr, "                         [--idle-below 5%] [--idle-for 30m]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Prints how well one job used its GPUs, like Slurm's seff and jobstats: its GPUs (node, index, UUID,")
		fmt.Fprintln(stderr, "model) and span as the store saw them (gpuwatch_gpu_allocation_info), and per GPU the mean SM")
		fmt.Fprintln(stderr, "activity and utilization, the memory peak against the framebuffer, mean power and energy, idle")
		fmt.Fprintln(stderr, "stretches, Xids and health conditions during the job, the GPUs that lagged the others (stragglers:")
		fmt.Fprintln(stderr, "signal, how far behind, throttle reasons), with a one-line verdict such as \"8 GPUs allocated, 2 did")
		fmt.Fprintln(stderr, "nothing\" or \"…; 1 straggler (GPU 3: SM clock 22% behind, hw_thermal_slowdown)\". JOBID is the")
		fmt.Fprintln(stderr, "job_id label (a Slurm job id), or namespace/pod.")
		fmt.Fprintln(stderr, "The window bounds the search for the job (default the last 7 days). Definitions: docs/reports.md.")
		fmt.Fprintln(stderr, "Example:")
		fmt.Fprintln(stderr, "  gpuwatch jobstats 4242 --server http://gpuwatch:9402 --last 720h")
		fmt.Fprintln(stderr, "  gpuwatch jobstats $SLURM_JOB_ID --server http://gpuwatch:9402 --slurm   # in EpilogSlurmctld")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	job, err := parseOneArg(fs, args, "job")
	if err != nil {
		return err
	}
	if job == "" {
		fs.Usage()
		return fmt.Errorf("%w: which job? (gpuwatch jobstats JOBID --server URL)", errUsage)
	}
	var slurmID uint64
	if *toSlurm {
		if slurmID, err = strconv.ParseUint(job, 10, 32); err != nil || slurmID == 0 {
			return fmt.Errorf("%w: --slurm: %q is not a Slurm job id", errUsage, job)
		}
	}
	format, err := jobstats.ParseFormat(*output)
	if err != nil {
		return fmt.Errorf("%w: --output: %v", errUsage, err)
	}
	v := url.Values{}
	if err := win.set(v); err != nil {
		return err
	}
	v.Set(jobstats.ParamIdleBelow, *idleBelow)
	v.Set(jobstats.ParamIdleFor, idleFor.String())
	// The server checks the same; checking here first names the flag.
	if _, err := jobstats.ParseQuery(job, v, time.Now(), func(p string) string { return "--" + strings.ReplaceAll(p, "_", "-") }); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	c.http.Timeout = 0 // a long window takes what it takes; ^C cancels
	var res jobstats.Result
	if err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(job)+"?"+v.Encode(), nil, &res); err != nil {
		return err
	}
	if err := jobstats.Render(stdout, &res, format); err != nil {
		return err
	}
	if *toSlurm {
		if err := (slurm.Scontrol{}).SetAdminComment(ctx, uint32(slurmID), "gpuwatch: "+res.Verdict); err != nil {
			return fmt.Errorf("writing the verdict into job %d's AdminComment: %w", slurmID, err)
		}
	}
	return nil
}
