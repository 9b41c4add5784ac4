// Package realslurm gives gpuwatch's tests a real Slurm cluster on one host:
// internal/localslurm's launcher (one slurmctld, N slurmd, their own munged,
// GPUs on /dev/null placeholders; see its package doc), with Start and Shared
// that skip or fail a test when Slurm cannot run here, and methods that fail
// the calling test on error. Tests keep a Shared per package (started on first
// use, closed by TestMain after m.Run), since starting takes a few seconds.
package realslurm

import (
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/localslurm"
)

// RequireEnv is the environment variable that turns "Slurm is not available here"
// from a skip into a failure.
const RequireEnv = "GPUWATCH_REQUIRE_REALSLURM"

// ErrUnavailable is wrapped by Launch's error when the cluster cannot run here
// at all (a binary is missing, or not root), as opposed to failing to start.
var ErrUnavailable = localslurm.ErrUnavailable

// Options shape the cluster (localslurm.Options).
type Options = localslurm.Options

// Cluster is one running cluster. Its methods that take a testing.TB fail that
// test on error, so a Cluster shared by several tests (see Shared) is always
// used with the calling test's t.
type Cluster struct {
	*localslurm.Cluster
}

// Launch starts a cluster outside any one test (for TestMain or Shared); the
// caller must Close it.
func Launch(opts Options) (*Cluster, error) {
	c, err := localslurm.Launch(opts)
	if err != nil {
		return nil, err
	}
	return &Cluster{c}, nil
}

// Start starts a cluster for t and stops it when t ends. It skips t when Slurm
// cannot run here (unless GPUWATCH_REQUIRE_REALSLURM=1) and fails it when the
// cluster does not come up.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Launch(opts)
	if err != nil {
		SkipOrFail(t, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("realslurm: %v", err)
		}
	})
	return c
}

// SkipOrFail ends t for an error from Launch: a skip when it wraps ErrUnavailable
// and GPUWATCH_REQUIRE_REALSLURM is not "1", a failure otherwise.
func SkipOrFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrUnavailable) && os.Getenv(RequireEnv) != "1" {
		t.Skip(err.Error())
	}
	if errors.Is(err, ErrUnavailable) {
		t.Fatalf("%v and %s=1", err, RequireEnv)
	}
	t.Fatal(err)
}

// Shared is a cluster started on the first Get and shared by a package's tests;
// TestMain calls Close after m.Run. A test that changes the cluster (drains,
// submits) puts it back with Reset before it ends.
type Shared struct {
	Options Options

	mu      sync.Mutex
	started bool
	c       *Cluster
	err     error
	took    time.Duration
}

// Get returns the shared cluster, starting it on the first call; it skips or
// fails t as Start does when the cluster cannot start (and keeps that answer).
func (s *Shared) Get(t testing.TB) *Cluster {
	t.Helper()
	s.mu.Lock()
	if !s.started {
		s.started = true
		begin := time.Now()
		s.c, s.err = Launch(s.Options)
		s.took = time.Since(begin)
		if s.err == nil {
			t.Logf("realslurm: cluster of %d nodes started in %s", len(s.c.Nodes()), s.took.Round(time.Millisecond))
		}
	}
	c, err := s.c, s.err
	s.mu.Unlock()
	if err != nil {
		SkipOrFail(t, err)
	}
	return c
}

// Close stops the shared cluster if it was started.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return nil
	}
	err := s.c.Close()
	s.c, s.err = nil, errors.New("realslurm: shared cluster already closed")
	return err
}

func fatal(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("realslurm: %v", err)
	}
}

// Run runs a Slurm command and fails t when it fails.
func (c *Cluster) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := c.Output(name, args...)
	fatal(t, err)
	return out
}

// Submit submits script with the sbatch options args and returns the job ID
// (localslurm.Cluster.SubmitJob).
func (c *Cluster) Submit(t testing.TB, script string, args ...string) string {
	t.Helper()
	id, err := c.SubmitJob(script, args...)
	fatal(t, err)
	return id
}

// Sinfo runs sinfo with args and returns its output.
func (c *Cluster) Sinfo(t testing.TB, args ...string) string {
	t.Helper()
	return c.Run(t, "sinfo", args...)
}

// NodeState is sinfo's long state of the node ("idle", "drained", "idle@"…).
func (c *Cluster) NodeState(t testing.TB, name string) string {
	t.Helper()
	st, err := c.NodeStateOf(name)
	fatal(t, err)
	return st
}

// JobState is squeue's state of the job, "" once squeue no longer lists it.
func (c *Cluster) JobState(t testing.TB, id string) string {
	t.Helper()
	st, err := c.JobStateOf(id)
	fatal(t, err)
	return st
}

// WaitFor polls cond every 100 ms until it holds, failing t after timeout with
// what and the end of slurmctld's log.
func (c *Cluster) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("realslurm: %s: not true after %s\n%s", what, timeout, c.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitNodeState waits until NodeState(name) is want.
func (c *Cluster) WaitNodeState(t testing.TB, name, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := c.NodeState(t, name)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("realslurm: node %s is %q, not %q, after %s\n%s", name, got, want, timeout, c.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitJobState waits until JobState(id) is want.
func (c *Cluster) WaitJobState(t testing.TB, id, want string, timeout time.Duration) {
	t.Helper()
	c.WaitFor(t, timeout, "job "+id+" "+want, func() bool { return c.JobState(t, id) == want })
}

// Reset puts a shared cluster back as it started: every job cancelled, every
// pending reboot cancelled, every node resumed, and all nodes idle.
func (c *Cluster) Reset(t testing.TB) {
	t.Helper()
	fatal(t, c.ResetCluster())
}

// StopController stops slurmctld (it saves its state) and waits for it to exit.
func (c *Cluster) StopController(t testing.TB) {
	t.Helper()
	fatal(t, c.StopControllerNow())
}

// StartController starts slurmctld again on the saved state (no-op when it
// runs) and waits until it answers.
func (c *Cluster) StartController(t testing.TB) {
	t.Helper()
	fatal(t, c.StartControllerAgain())
}
