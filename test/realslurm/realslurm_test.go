package realslurm

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClusterLifecycle proves the cluster is a real Slurm: four idle nodes with
// eight GPUs each, a job placed on gpu02 sees the GPUs it was given, a drain
// shows with its reason while the job keeps running, the drain and the job
// survive a controller restart, resume returns the nodes, and Close leaves no
// process behind.
func TestClusterLifecycle(t *testing.T) {
	begin := time.Now()
	c := Start(t, Options{})
	t.Logf("cluster started in %s", time.Since(begin).Round(time.Millisecond))

	// Four nodes, idle, eight H100 each.
	got := strings.TrimSpace(c.Sinfo(t, "-h", "-N", "-o", "%N %T %G"))
	want := "gpu01 idle gpu:h100:8\ngpu02 idle gpu:h100:8\ngpu03 idle gpu:h100:8\ngpu04 idle gpu:h100:8"
	if got != want {
		t.Fatalf("sinfo:\n%s\nwant:\n%s", got, want)
	}

	// A job on gpu02 with two GPUs sees GPU indices 0 and 1.
	job := c.Submit(t, "echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; echo SLURM_JOB_GPUS=$SLURM_JOB_GPUS; exec sleep 300", "--gres=gpu:2", "-w", "gpu02", "-A", "team-a")
	c.WaitJobState(t, job, "RUNNING", 15*time.Second)
	c.WaitFor(t, 10*time.Second, "job output", func() bool { return strings.Contains(c.JobOutput(job), "SLURM_JOB_GPUS=") })
	if out := c.JobOutput(job); !strings.Contains(out, "CUDA_VISIBLE_DEVICES=0,1\n") || !strings.Contains(out, "SLURM_JOB_GPUS=0,1\n") {
		t.Errorf("job %s output %q: want GPUs 0,1 visible", job, out)
	}
	if used := strings.TrimSpace(c.Sinfo(t, "-h", "-N", "-n", "gpu02", "-O", "GresUsed:40")); used != "gpu:h100:2(IDX:0-1)" {
		t.Errorf("gpu02 GresUsed %q, want gpu:h100:2(IDX:0-1)", used)
	}
	// A node with one small job is "mixed", though Slurm 22.05 may show it
	// "allocated" until something else changes on it.
	if st := c.NodeState(t, "gpu02"); st != "mixed" && st != "allocated" {
		t.Errorf("gpu02 with a job: %q, want mixed or allocated", st)
	}

	// Drain the busy gpu02 and the idle gpu01.
	const reason = "gpuwatch: xid79 gpu=GPU-1b8b action=RESTART_BM"
	c.Run(t, "scontrol", "update", "nodename=gpu02", "state=drain", "reason="+reason)
	c.Run(t, "scontrol", "update", "nodename=gpu01", "state=drain", "reason=ops: replacing PSU")
	checkDrains := func(when string) {
		t.Helper()
		if st := c.NodeState(t, "gpu02"); st != "draining" {
			t.Errorf("%s: gpu02 %q, want draining", when, st)
		}
		if st := c.NodeState(t, "gpu01"); st != "drained" {
			t.Errorf("%s: gpu01 %q, want drained", when, st)
		}
		reasons := strings.TrimSpace(c.Sinfo(t, "-h", "-N", "-n", "gpu01,gpu02", "-o", "%N|%E"))
		if want := "gpu01|ops: replacing PSU\ngpu02|" + reason; reasons != want {
			t.Errorf("%s: reasons\n%s\nwant\n%s", when, reasons, want)
		}
		if st := c.JobState(t, job); st != "RUNNING" {
			t.Errorf("%s: job %s %q, want RUNNING", when, job, st)
		}
	}
	checkDrains("after drain")

	// The controller goes down and comes back on its saved state.
	c.StopController(t)
	if c.ControllerRunning() {
		t.Fatal("ControllerRunning after StopController")
	}
	if out, err := c.Output("scontrol", "ping"); err == nil || !strings.Contains(out, "DOWN") {
		t.Fatalf("scontrol ping with the controller stopped: %q, %v", out, err)
	}
	restart := time.Now()
	c.StartController(t)
	t.Logf("controller restarted in %s", time.Since(restart).Round(time.Millisecond))
	// Nodes show "unknown" until their slurmd registers again.
	c.WaitFor(t, 30*time.Second, "nodes registered after restart", func() bool {
		out, err := c.Output("sinfo", "-h", "-N", "-O", "StateComplete:60")
		return err == nil && !strings.Contains(out, "unknown")
	})
	checkDrains("after controller restart")

	// Resume both.
	c.Run(t, "scontrol", "update", "nodename=gpu01,gpu02", "state=resume")
	c.WaitFor(t, 15*time.Second, "gpu02 busy and undrained", func() bool {
		st := c.NodeState(t, "gpu02")
		return st == "mixed" || st == "allocated"
	})
	c.WaitNodeState(t, "gpu01", "idle", 15*time.Second)
	if st := c.JobState(t, job); st != "RUNNING" {
		t.Errorf("after resume: job %s %q, want RUNNING", job, st)
	}

	// Close stops every process of the cluster, job included.
	pids := c.DaemonPIDs()
	var jobProcs []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && c.Owns(pid) {
			jobProcs = append(jobProcs, pid)
		}
	}
	if len(jobProcs) < len(pids)+2 { // daemons, munged, slurmstepd, job script
		t.Errorf("only %d processes of the cluster found before Close: %v", len(jobProcs), jobProcs)
	}
	stop := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster stopped in %s", time.Since(stop).Round(time.Millisecond))
	for _, pid := range jobProcs {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
			if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(stat), ") Z ") {
				t.Errorf("process %d (%s) alive after Close", pid, stat)
			}
		}
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s still there after Close (%v)", c.Dir(), err)
	}
}
