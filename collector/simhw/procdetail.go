package simhw

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WriteJobProcDetails writes, for every process of a running job, the
// /proc/<pid>/status and /proc/<pid>/environ files a root-run agent reads on a
// Slurm node: status carries the owner's uid on its "Uid:" line, environ (NUL
// separated, as the kernel shows it) SLURM_JOB_ID, SLURM_JOB_USER (the job's User),
// SLURM_JOB_ACCOUNT (its Account) and SLURM_JOB_PARTITION. StartJob writes only
// cgroup and comm; call this after it for tests that need the owner and account.
// It needs a fleet Root.
func (n *Node) WriteJobProcDetails(jobID string, uid int, partition string) error {
	n.mu.RLock()
	js, ok := n.jobs[jobID]
	var pids []int
	var job Job
	var comm string
	if ok {
		pids, job, comm = append([]int(nil), js.PIDs...), js.Job, js.procName()
	}
	dir := n.ProcRoot()
	n.mu.RUnlock()
	if !ok {
		return fmt.Errorf("write process details of job %s on %s: no such job", jobID, n.name)
	}
	if dir == "" {
		return fmt.Errorf("write process details of job %s on %s: the fleet has no Root", jobID, n.name)
	}
	u := strconv.Itoa(uid)
	for _, pid := range pids {
		p := filepath.Join(dir, strconv.Itoa(pid))
		status := fmt.Sprintf("Name:\t%s\nUmask:\t0022\nState:\tR (running)\nTgid:\t%d\nPid:\t%d\nPPid:\t1\n"+
			"Uid:\t%s\t%s\t%s\t%s\nGid:\t%s\t%s\t%s\t%s\n", comm, pid, pid, u, u, u, u, u, u, u, u)
		env := strings.Join([]string{
			"PATH=/usr/bin:/bin",
			"SLURM_JOB_ID=" + jobID,
			"SLURM_JOB_USER=" + job.User,
			"SLURM_JOB_ACCOUNT=" + job.Account,
			"SLURM_JOB_PARTITION=" + partition,
			"CUDA_VISIBLE_DEVICES=0",
		}, "\x00") + "\x00"
		if err := os.WriteFile(filepath.Join(p, "status"), []byte(status), 0o644); err != nil {
			return fmt.Errorf("write process %d of job %s: %w", pid, jobID, err)
		}
		if err := os.WriteFile(filepath.Join(p, "environ"), []byte(env), 0o600); err != nil {
			return fmt.Errorf("write process %d of job %s: %w", pid, jobID, err)
		}
	}
	return nil
}
