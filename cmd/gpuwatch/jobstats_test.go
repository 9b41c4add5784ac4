//go:build !agentonly

package main

import (
	"encoding/json"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/jobstats"
	"github.com/gpuwatch/gpuwatch/analyzer/jobstats/jobstatstest"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers/stragglerstest"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realslurm"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestJobStatsCommand: gpuwatch jobstats against a real gpuwatch server fed
// jobstatstest's synthetic job by remote write: table and JSON carry the
// numbers its comment derives by hand; an unknown job exits 1 with one line,
// bad flags exit 2 with one line naming what to change.
func TestJobStatsCommand(t *testing.T) {
	url, _ := startServerCommand(t, "--out-of-order-window", "4h") // the job is two hours old
	t0 := time.Now().Add(-140 * time.Minute).Truncate(time.Minute)
	realstore.RemoteWrite(t, url, jobstatstest.Samples(t0), 0)

	code, out, errOut := gw(t, "jobstats", jobstatstest.Job, "--server", url)
	for _, want := range []string{"Job 4242: 3 GPUs allocated, 1 did nothing, 1 idle for 30m0s or more; mean activity 34%; 1 Xid",
		"6.00 GPU-hours", "GPU-a0", "60000/81559 MiB (74%)", "0.992 kWh", "2h0m0s (did nothing)", "13×1", "Idle stretches (below 5% for 30m0s or more)"} {
		if code != 0 || errOut != "" || !strings.Contains(out, want) {
			t.Errorf("table: exit %d, stderr %q, want %q in\n%s", code, errOut, want, out)
		}
	}
	// Flags after the job id, and a threshold that makes nobody idle.
	code, out, errOut = gw(t, "jobstats", "--server", url, jobstatstest.Job, "--output", "json", "--idle-below", "1%", "--last", "24h")
	var r jobstats.Result
	if err := json.Unmarshal([]byte(out), &r); code != 0 || errOut != "" || err != nil || len(r.GPUs) != 3 || r.Idle != 0 ||
		r.Verdict != "3 GPUs allocated; mean activity 34%; 1 Xid" || r.GPUs[2].Utilization == nil || *r.GPUs[2].Utilization != 41 {
		t.Errorf("json: exit %d, stderr %q, %v: %s", code, errOut, err, out)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"12345", "--server", url}, 1, `job "12345": no such job`},
		{[]string{"12345", "--server", dead}, 1, "gpuwatch server"},
		{[]string{"--server", url}, 2, "which job?"},
		{[]string{"1", "2", "--server", url}, 2, `one job at a time: got "1" and "2"`},
		{[]string{"4242", "--server", url, "--output", "csv"}, 2, `--output: unknown output "csv": want one of table, json`},
		{[]string{"4242", "--server", url, "--idle-below", "150%"}, 2, "--idle-below"},
		{[]string{"4242", "--server", url, "--idle-for", "-5m"}, 2, "--idle-for"},
		{[]string{"4242", "--server", url, "--last", "1h", "--from", "2026-11-01T00:00:00Z"}, 2, "not both"},
		{[]string{"4242", "--server", url, "--nope"}, 2, "flag provided but not defined: -nope"},
	} {
		code, out, errOut := gw(t, append([]string{"jobstats"}, c.args...)...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) || (c.code == 1 && strings.Count(strings.TrimSpace(errOut), "\n") != 0) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d with %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

// TestJobStatsToSlurm: `gpuwatch jobstats JOBID --slurm`, as EpilogSlurmctld
// runs it, writes the verdict into the real Slurm job's AdminComment, where
// scontrol (and sacct) show it; a job id Slurm cannot have is refused before
// anything is asked.
func TestJobStatsToSlurm(t *testing.T) {
	c := realslurm.Start(t, realslurm.Options{Nodes: 1})
	t.Setenv("SLURM_CONF", c.Conf())
	id := c.Submit(t, "sleep 600", "--gres=gpu:h100:2")
	url, _ := startServerCommand(t, "--out-of-order-window", "4h")
	t0 := time.Now().Add(-140 * time.Minute).Truncate(time.Minute)
	var samples []telemetry.Sample
	for _, s := range jobstatstest.Samples(t0) {
		if s.Labels.Get(telemetry.LabelJobID) == jobstatstest.Job {
			ls := make(telemetry.Labels, len(s.Labels))
			copy(ls, s.Labels)
			for i := range ls {
				if ls[i].Name == telemetry.LabelJobID {
					ls[i].Value = id
				}
			}
			s.Labels = ls
		}
		samples = append(samples, s)
	}
	realstore.RemoteWrite(t, url, samples, 0)

	code, out, errOut := gw(t, "jobstats", id, "--server", url, "--slurm")
	if code != 0 || errOut != "" {
		t.Fatalf("jobstats --slurm: exit %d, stderr %q\n%s", code, errOut, out)
	}
	want := "AdminComment=gpuwatch: 3 GPUs allocated, 1 did nothing, 1 idle for 30m0s or more; mean activity 34%; 1 Xid"
	if show := c.Run(t, "scontrol", "show", "job", id); !strings.Contains(show, want) {
		t.Errorf("scontrol show job %s lacks %q:\n%s", id, want, show)
	}
	if code, _, errOut := gw(t, "jobstats", "ml/train-0", "--server", url, "--slurm"); code != 2 || !strings.Contains(errOut, `--slurm: "ml/train-0" is not a Slurm job id`) {
		t.Errorf("a pod with --slurm: exit %d, stderr %q", code, errOut)
	}
}

// TestJobStatsStragglersCommand: `gpuwatch jobstats` names a job's stragglers
// in the verdict, a table section and the JSON, against a real server fed
// analyzer/stragglers' simulated fleet: train-a's throttled GPU 3, train-b's
// power-capped node-3 (a multi-node job), none for the healthy noisy pod.
func TestJobStatsStragglersCommand(t *testing.T) {
	url, _ := startServerCommand(t)
	t0 := time.Now().Add(-11 * time.Minute).Truncate(stragglerstest.Every)
	samples := stragglerstest.Fleet(t0)
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	realstore.RemoteWrite(t, url, samples, 2*time.Minute)

	code, out, errOut := gw(t, "jobstats", "train-a", "--server", url, "--last", "1h")
	for _, want := range []string{"Job train-a: 8 GPUs allocated; mean activity 90%; 1 straggler (GPU 3: ", "% behind, hw_thermal_slowdown)",
		"Stragglers (behind the job's other GPUs):", "node-1/3  GPU-a3  sm_clock", "node-1/3  GPU-a3  power"} {
		if code != 0 || errOut != "" || !strings.Contains(out, want) {
			t.Errorf("train-a table: exit %d, stderr %q, want %q in\n%s", code, errOut, want, out)
		}
	}
	code, out, errOut = gw(t, "jobstats", "train-b", "--server", url, "--last", "1h", "--output", "json")
	var r jobstats.Result
	if err := json.Unmarshal([]byte(out), &r); code != 0 || errOut != "" || err != nil || len(r.Stragglers) != 8 || r.Stragglers[0].Node != "node-3" ||
		!strings.Contains(r.Verdict, "8 stragglers (node-3, 8 GPUs: power ") {
		t.Errorf("train-b json: exit %d, stderr %q, %v: verdict %q, %d stragglers", code, errOut, err, r.Verdict, len(r.Stragglers))
	}
	code, out, errOut = gw(t, "jobstats", "ml/healthy", "--server", url, "--last", "1h")
	if code != 0 || errOut != "" || strings.Contains(out, "straggler") || strings.Contains(out, "Stragglers") || !strings.Contains(out, "Job ml/healthy: 8 GPUs allocated") {
		t.Errorf("ml/healthy: exit %d, stderr %q, want no stragglers in\n%s", code, errOut, out)
	}
}
