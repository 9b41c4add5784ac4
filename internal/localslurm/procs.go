package localslurm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Slurm's daemons fork into the background, so they are not this process's
// children: they are found by PID file and recognised as the cluster's by
// /proc before any signal is sent (a PID may have been reused).

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("PID file %s: %q is not a PID", path, b)
	}
	return pid, nil
}

// pidOf is the daemon's PID: its PID file when it is there (a fake reboot starts
// a new slurmd), else the one seen at start.
func (c *Cluster) pidOf(daemon string) (int, bool) {
	if pid, err := readPID(c.pidFile(daemon)); err == nil {
		c.mu.Lock()
		c.pids[daemon] = pid
		c.mu.Unlock()
		return pid, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pid, ok := c.pids[daemon]
	return pid, ok
}

// alive reports whether pid is a live (not zombie) process of this cluster.
func (c *Cluster) alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// State is the field after the ")" that ends the command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return c.ours(pid)
}

// ours reports whether pid belongs to this cluster: its command line, its
// environment's SLURM_CONF, its working directory or one of its open files
// points into the cluster's directory.
func (c *Cluster) ours(pid int) bool {
	if pid <= 1 || pid == os.Getpid() {
		return false
	}
	proc := fmt.Sprintf("/proc/%d", pid)
	if b, err := os.ReadFile(proc + "/cmdline"); err == nil && bytes.Contains(b, []byte(c.dir+"/")) {
		return true
	}
	if b, err := os.ReadFile(proc + "/environ"); err == nil {
		for _, kv := range bytes.Split(b, []byte{0}) {
			if string(kv) == "SLURM_CONF="+c.conf {
				return true
			}
		}
	}
	under := func(p string) bool { return p == c.dir || strings.HasPrefix(p, c.dir+"/") }
	if p, err := os.Readlink(proc + "/cwd"); err == nil && under(p) {
		return true
	}
	fds, _ := os.ReadDir(proc + "/fd")
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join(proc, "fd", fd.Name())); err == nil && under(p) {
			return true
		}
	}
	return false
}

// stopDaemons sends SIGTERM to the named daemons, waits up to grace for them to
// exit, then SIGKILLs those left.
func (c *Cluster) stopDaemons(grace time.Duration, daemons ...string) error {
	var pids []int
	for _, d := range daemons {
		pid, ok := c.pidOf(d)
		if !ok || !c.alive(pid) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop %s (pid %d): %w", d, pid, err)
		}
		pids = append(pids, pid)
	}
	deadline := time.Now().Add(grace)
	for {
		var left []int
		for _, pid := range pids {
			if c.alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return c.waitGone(left, 5*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) waitGone(pids []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, pid := range pids {
			if c.alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still alive %s after SIGKILL", left, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killLeftovers SIGKILLs every process still belonging to the cluster except its
// munged (stopped last, by the caller) and this process.
func (c *Cluster) killLeftovers() error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("list processes: %w", err)
	}
	munged := -1
	if c.munged != nil {
		munged = c.munged.Process.Pid
	}
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == munged || !c.alive(pid) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return c.waitGone(killed, 5*time.Second)
}

// DaemonPIDs are the PIDs of the cluster's daemons (slurmctld, every slurmd,
// munged) as last seen.
func (c *Cluster) DaemonPIDs() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, pid := range c.pids {
		pids = append(pids, pid)
	}
	if c.munged != nil && c.munged.Process != nil {
		pids = append(pids, c.munged.Process.Pid)
	}
	return pids
}

// Owns says whether process pid belongs to the cluster: its command line,
// environment, working directory or open files point into the cluster's
// directory (a daemon, a job's slurmstepd or script).
func (c *Cluster) Owns(pid int) bool { return c.ours(pid) }
