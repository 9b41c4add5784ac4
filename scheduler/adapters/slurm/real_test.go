package slurm

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/test/realslurm"
)

// The tests named TestReal* run the adapter against a real Slurm 22.05 cluster
// (test/realslurm), started once for the package on first use and stopped after
// all tests. Each test puts the cluster back (Reset) when it ends.
var cluster = &realslurm.Shared{}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cluster.Close(); err != nil {
		os.Stderr.WriteString("realslurm: " + err.Error() + "\n")
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// realCluster returns the shared cluster and an adapter pointed at it.
func realCluster(t *testing.T) (*realslurm.Cluster, Scontrol) {
	t.Helper()
	c := cluster.Get(t)
	t.Cleanup(func() { c.Reset(t) })
	return c, Scontrol{Env: c.Env(), Timeout: 20 * time.Second}
}

func id(t *testing.T, s string) uint32 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(n)
}

func nodeByName(t *testing.T, nodes []Node, name string) Node {
	t.Helper()
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("node %s not in %d nodes", name, len(nodes))
	return Node{}
}

func jobByID(jobs []Job, id uint32) (Job, bool) {
	for _, j := range jobs {
		if j.ID == id {
			return j, true
		}
	}
	return Job{}, false
}

// TestRealNodesAndJobs: GPUs configured and in use per node, and running jobs
// with their nodes, GPU indices, account and user, as Slurm allocated them.
func TestRealNodesAndJobs(t *testing.T) {
	c, sc := realCluster(t)
	ctx := context.Background()
	a := c.Submit(t, "sleep 300", "--gres=gpu:3", "-w", "gpu02", "-A", "team-a")
	b := c.Submit(t, "sleep 300", "-N", "2", "--gres=gpu:8", "-w", "gpu03,gpu04", "-A", "team-b")
	p := c.Submit(t, "sleep 300", "-N", "4", "--gres=gpu:8", "-A", "team-c")
	c.WaitJobState(t, a, "RUNNING", 15*time.Second)
	c.WaitJobState(t, b, "RUNNING", 15*time.Second)

	nodes, err := sc.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 {
		t.Fatalf("%d nodes, want 4", len(nodes))
	}
	for _, n := range nodes {
		if n.GPUs() != 8 || n.Drained() || n.RebootPending() || n.Reason != "" || !reflect.DeepEqual(n.Partitions, []string{"gpu"}) {
			t.Errorf("%s: %+v", n.Name, n)
		}
	}
	wantUsed := map[string][]int{"gpu01": nil, "gpu02": {0, 1, 2}, "gpu03": {0, 1, 2, 3, 4, 5, 6, 7}, "gpu04": {0, 1, 2, 3, 4, 5, 6, 7}}
	for name, idx := range wantUsed {
		n := nodeByName(t, nodes, name)
		if n.GPUsUsed() != len(idx) || !reflect.DeepEqual(n.UsedGPUIndices(), idx) {
			t.Errorf("%s: %d GPUs used %v, want %v", name, n.GPUsUsed(), n.UsedGPUIndices(), idx)
		}
	}

	running, err := sc.RunningJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(running) != 2 {
		t.Fatalf("running jobs %+v, want 2", running)
	}
	ja, _ := jobByID(running, id(t, a))
	if ja.Account != "team-a" || ja.User != "root" || ja.GPUsPerNode != 3 || len(ja.Nodes) != 1 ||
		ja.Nodes[0].Name != "gpu02" || !reflect.DeepEqual(ja.Nodes[0].GPUIndices(), []int{0, 1, 2}) || ja.StartTime.IsZero() {
		t.Errorf("job %s: %+v", a, ja)
	}
	jb, _ := jobByID(running, id(t, b))
	if jb.Account != "team-b" || jb.GPUs() != 16 || len(jb.Nodes) != 2 || jb.Nodes[0].Name != "gpu03" || jb.Nodes[1].Name != "gpu04" ||
		len(jb.Nodes[1].GPUIndices()) != 8 {
		t.Errorf("job %s: %+v", b, jb)
	}
	pending, err := sc.PendingJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID != id(t, p) || pending[0].Account != "team-c" || len(pending[0].Nodes) != 0 || pending[0].GPUsPerNode != 8 {
		t.Errorf("pending %+v, want job %s of team-c", pending, p)
	}
}

// TestRealDrainStates: the drain controller's view of a drain — draining while
// a job runs, drained when idle, the reason kept — and resume.
func TestRealDrainStates(t *testing.T) {
	c, sc := realCluster(t)
	ctx := context.Background()
	job := c.Submit(t, "sleep 300", "--gres=gpu:1", "-w", "gpu02")
	c.WaitJobState(t, job, "RUNNING", 15*time.Second)
	const reason = "gpuwatch: xid79 gpu=GPU-1b8b action=RESTART_BM"
	for _, n := range []string{"gpu01", "gpu02"} {
		if err := sc.Drain(ctx, n, reason); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err := sc.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g1, g2 := nodeByName(t, nodes, "gpu01"), nodeByName(t, nodes, "gpu02")
	if !g1.DrainComplete() || g1.Draining() || g1.Reason != reason || g1.ReasonUser != "root" || g1.ReasonTime.IsZero() {
		t.Errorf("idle drained gpu01: %+v", g1)
	}
	if !g2.Draining() || g2.DrainComplete() || g2.Reason != reason || g2.GPUsUsed() != 1 {
		t.Errorf("busy drained gpu02: %+v", g2)
	}
	if st, err := sc.ShowNode(ctx, "gpu02"); err != nil || !st.Drained() || st.Reason != reason {
		t.Errorf("ShowNode gpu02: %+v %v", st, err)
	}
	if st := c.JobState(t, job); st != "RUNNING" {
		t.Errorf("job %s on draining gpu02: %s", job, st)
	}
	for _, n := range []string{"gpu01", "gpu02"} {
		if err := sc.Resume(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err = sc.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Drained() || n.Reason != "" {
			t.Errorf("after resume %s: %+v", n.Name, n)
		}
	}
}

// TestRealReboot: Reboot on a busy node drains it and marks the reboot
// requested (sinfo's "@") with gpuwatch's reason while the job runs; when the
// job ends the reboot is issued, the fake reboot restarts slurmd, and Slurm
// returns the node to service with the reason cleared (nextstate=RESUME).
// CancelReboot withdraws a requested reboot, and with it the drain and reason
// that ASAP set.
func TestRealReboot(t *testing.T) {
	c, sc := realCluster(t)
	ctx := context.Background()
	job := c.Submit(t, "sleep 300", "--gres=gpu:2", "-w", "gpu02")
	other := c.Submit(t, "sleep 300", "--gres=gpu:1", "-w", "gpu03")
	c.WaitJobState(t, job, "RUNNING", 15*time.Second)
	c.WaitJobState(t, other, "RUNNING", 15*time.Second)
	const reason = "gpuwatch: xid154 action=REBOOT"
	if err := sc.Reboot(ctx, "gpu02", reason); err != nil {
		t.Fatal(err)
	}
	if err := sc.Reboot(ctx, "gpu03", reason); err != nil {
		t.Fatal(err)
	}
	nodes, err := sc.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g2 := nodeByName(t, nodes, "gpu02")
	if !g2.Has(FlagRebootRequested) || !g2.RebootPending() || !g2.Draining() || g2.Reason != reason || !Owned(g2.Reason) {
		t.Errorf("gpu02 after Reboot: %+v", g2)
	}
	if st := c.NodeState(t, "gpu02"); st != "draining@" {
		t.Errorf("sinfo state of gpu02 %q, want draining@", st)
	}
	if st := c.JobState(t, job); st != "RUNNING" {
		t.Errorf("job %s: %s, want RUNNING until it ends", job, st)
	}

	// Withdraw gpu03's reboot: no reboot flag, no drain, no reason.
	if err := sc.CancelReboot(ctx, "gpu03"); err != nil {
		t.Fatal(err)
	}
	st3, err := sc.ShowNode(ctx, "gpu03")
	if err != nil || st3.RebootPending() || st3.Drained() || st3.Reason != "" {
		t.Errorf("gpu03 after CancelReboot: %+v %v", st3, err)
	}

	// The job ends; the reboot is issued and completes.
	booted := nodeByName(t, nodes, "gpu02").SlurmdStartTime
	c.Run(t, "scancel", job)
	var last Node
	c.WaitFor(t, 30*time.Second, "gpu02 rebooted and back in service", func() bool {
		nodes, err := sc.Nodes(ctx)
		if err != nil {
			return false
		}
		last = nodeByName(t, nodes, "gpu02")
		return last.State == "IDLE" && len(last.Flags) == 0
	})
	if last.Reason != "" || !last.SlurmdStartTime.After(booted) {
		t.Errorf("gpu02 after reboot: %+v (slurmd started %s before)", last, booted)
	}
	if log := c.Log("reboots"); !strings.Contains(log, "reboot gpu02") || strings.Contains(log, "reboot gpu03") {
		t.Errorf("reboot log:\n%s", log)
	}
}

// TestRealSiteFactor: SetSiteFactor changes a pending job's priority, and
// sprio shows it; unknown jobs are rejected.
func TestRealSiteFactor(t *testing.T) {
	c, sc := realCluster(t)
	ctx := context.Background()
	all := c.Submit(t, "sleep 300", "-N", "4", "--gres=gpu:8")
	c.WaitJobState(t, all, "RUNNING", 15*time.Second)
	p1 := c.Submit(t, "sleep 300", "--gres=gpu:1", "-A", "team-a")
	p2 := c.Submit(t, "sleep 300", "--gres=gpu:1", "-A", "team-b")
	if err := sc.SetSiteFactor(ctx, id(t, p1), 500); err != nil {
		t.Fatal(err)
	}
	if err := sc.SetSiteFactor(ctx, id(t, p2), -20); err != nil {
		t.Fatal(err)
	}
	// On a running job too (it matters when the job is requeued).
	if err := sc.SetSiteFactor(ctx, id(t, all), 7); err != nil {
		t.Fatal(err)
	}
	sf, err := sc.SiteFactors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sf[id(t, p1)] != 500 || sf[id(t, p2)] != -20 || len(sf) != 2 {
		t.Errorf("sprio site factors %v, want %s:500 %s:-20", sf, p1, p2)
	}
	pending, err := sc.PendingJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := jobByID(pending, id(t, p1))
	j2, _ := jobByID(pending, id(t, p2))
	// With every multifactor weight 0 the priority is the site factor (Slurm
	// keeps a pending job's priority at least 1).
	if j1.Priority != 500 || j2.Priority >= j1.Priority {
		t.Errorf("priorities %d (%s) and %d (%s)", j1.Priority, p1, j2.Priority, p2)
	}
	err = sc.SetSiteFactor(ctx, 999999, 1)
	if !errors.Is(err, ErrRejected) || errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "Invalid job id") {
		t.Errorf("unknown job: %v", err)
	}
}

// TestRealControllerDown: with slurmctld stopped every call fails with
// ErrUnreachable (not ErrRejected), including the JSON commands that exit 0
// and the job update that says "Unexpected message received"; a short Timeout
// gives up early, still as unreachable. After a restart a bad request is
// ErrRejected.
func TestRealControllerDown(t *testing.T) {
	c, sc := realCluster(t)
	ctx := context.Background()
	job := c.Submit(t, "sleep 300", "--gres=gpu:1", "-w", "gpu01")
	c.WaitJobState(t, job, "RUNNING", 15*time.Second)
	c.StopController(t)
	defer c.StartController(t)
	short := sc
	short.Timeout = 300 * time.Millisecond
	calls := map[string]func() error{
		"Nodes":         func() error { _, err := sc.Nodes(ctx); return err },
		"RunningJobs":   func() error { _, err := sc.RunningJobs(ctx); return err },
		"ShowNode":      func() error { _, err := sc.ShowNode(ctx, "gpu01"); return err },
		"Drain":         func() error { return sc.Drain(ctx, "gpu01", "gpuwatch: test") },
		"Reboot":        func() error { return sc.Reboot(ctx, "gpu01", "gpuwatch: test") },
		"SetSiteFactor": func() error { return sc.SetSiteFactor(ctx, id(t, job), 5) },
		"SiteFactors":   func() error { _, err := sc.SiteFactors(ctx); return err },
		"Nodes timeout": func() error { _, err := short.Nodes(ctx); return err },
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	begin := time.Now()
	took := map[string]time.Duration{}
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := call()
			mu.Lock()
			defer mu.Unlock()
			took[name] = time.Since(start).Round(10 * time.Millisecond)
			var ce *CommandError
			if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrRejected) || !errors.As(err, &ce) {
				t.Errorf("%s with the controller down: %v", name, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("calls with the controller down took %v (all, concurrently: %s)", took, time.Since(begin).Round(10*time.Millisecond))
	if took["Nodes timeout"] > 2*time.Second {
		t.Errorf("a 300ms Timeout took %s", took["Nodes timeout"])
	}

	c.StartController(t)
	err := sc.Drain(ctx, "gpu99", "gpuwatch: test")
	if !errors.Is(err, ErrRejected) || errors.Is(err, ErrUnreachable) {
		t.Errorf("drain of an unknown node: %v", err)
	}
	if _, err := sc.RunningJobs(ctx); err != nil {
		t.Errorf("after restart: %v", err)
	}
}
