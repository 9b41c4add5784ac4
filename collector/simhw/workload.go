package simhw

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// JobKind is how a job uses its GPUs.
type JobKind string

// Job kinds.
const (
	// JobTraining drives its GPUs near 100% and into the power cap, with a
	// checkpoint pause every 30 minutes; multi-GPU jobs move NVLink traffic and
	// multi-node jobs InfiniBand traffic on every rail.
	JobTraining JobKind = "training"
	// JobInference runs at a per-GPU load level between 35% and 80% that swings
	// over a three-hour period.
	JobInference JobKind = "inference"
	// JobIdleHold holds its GPUs without using them: a CUDA context and a few
	// hundred MiB, 0% utilization, idle power. The waste fair share must see.
	JobIdleHold JobKind = "idle-hold"
)

func (k JobKind) valid() bool {
	return k == JobTraining || k == JobInference || k == JobIdleHold
}

// Job is a workload placed on some GPUs of a node, as a scheduler would start it.
type Job struct {
	ID      string // Slurm job id or any unique name on the node
	Account string
	User    string
	Kind    JobKind
	// PIDs are the job's processes on this node. With one PID per GPU, PID i
	// runs on the i-th GPU given to StartJob (one rank per GPU, as torchrun does);
	// otherwise every PID shows on every GPU. Empty: the node assigns one PID per
	// GPU.
	PIDs []int
	// MultiNode marks a job spanning several nodes: its GPUs exchange traffic over
	// InfiniBand, GPU i on rail i (HCA mlx5_i).
	MultiNode bool
}

// JobInfo is a job as a node runs it.
type JobInfo struct {
	Job
	GPUs  []int
	Start time.Time
}

type jobState struct {
	Job
	gpus     []int
	start    time.Time
	gpusHere int
}

// procName is the command name the job's processes show (SystemGetProcessName,
// the "name=" of Xid lines, /proc/<pid>/comm).
func (j *jobState) procName() string {
	if j.Kind == JobInference {
		return "tritonserver"
	}
	return "python3"
}

// cgroupOf is /proc/<pid>/cgroup of a Slurm job step task under cgroup v2.
func cgroupOf(jobID string) string {
	return "0::/system.slice/slurmstepd.scope/job_" + jobID + "/step_0/user/task_0\n"
}

// StartJob places job on the given GPUs of the node. The GPUs must exist and be
// free; faults do not stop a scheduler from placing work (that is gpuwatch's job),
// but a lost or hung GPU runs nothing. With a fleet Root the job's processes
// appear under <Root>/<node>/proc/<pid>/ (cgroup, comm) at once.
func (n *Node) StartJob(job Job, gpus ...int) error {
	if job.ID == "" {
		return errors.New("start job: empty ID")
	}
	if !job.Kind.valid() {
		return fmt.Errorf("start job %s: unknown kind %q (want %s, %s or %s)", job.ID, job.Kind, JobTraining, JobInference, JobIdleHold)
	}
	if len(gpus) == 0 {
		return fmt.Errorf("start job %s: no GPUs", job.ID)
	}
	n.mu.Lock()
	if _, dup := n.jobs[job.ID]; dup {
		n.mu.Unlock()
		return fmt.Errorf("start job %s on %s: already running", job.ID, n.name)
	}
	seen := map[int]bool{}
	for _, i := range gpus {
		switch {
		case i < 0 || i >= len(n.gpus):
			n.mu.Unlock()
			return fmt.Errorf("start job %s on %s: GPU %d out of range (0-%d)", job.ID, n.name, i, len(n.gpus)-1)
		case seen[i]:
			n.mu.Unlock()
			return fmt.Errorf("start job %s on %s: GPU %d given twice", job.ID, n.name, i)
		case n.gpus[i].job != nil:
			n.mu.Unlock()
			return fmt.Errorf("start job %s on %s: GPU %d is busy with job %s", job.ID, n.name, i, n.gpus[i].job.ID)
		}
		seen[i] = true
	}
	js := &jobState{Job: job, gpus: slices.Clone(gpus), start: n.now, gpusHere: len(gpus)}
	if len(js.PIDs) == 0 {
		for range gpus {
			n.nextPID += 1 + n.rng.IntN(40)
			js.PIDs = append(js.PIDs, n.nextPID)
		}
	} else {
		js.PIDs = slices.Clone(js.PIDs)
	}
	usable := float64((n.shape.MemoryMiB - n.shape.ReservedMiB) << 20)
	for k, i := range gpus {
		g := n.gpus[i]
		g.job, g.busyFor = js, 0
		g.pids = g.pids[:0]
		if len(js.PIDs) == len(gpus) {
			g.pids = append(g.pids, uint32(js.PIDs[k]))
		} else {
			for _, p := range js.PIDs {
				g.pids = append(g.pids, uint32(p))
			}
		}
		var frac float64
		switch job.Kind {
		case JobTraining:
			frac = 0.82 + 0.12*n.rng.Float64()
		case JobInference:
			frac = 0.25 + 0.35*n.rng.Float64()
			g.load = 35 + 45*n.rng.Float64()
		case JobIdleHold:
			frac = 0.006
		}
		g.memJob = uint64(usable*frac) &^ (1<<20 - 1)
	}
	n.jobs[job.ID] = js
	dir := n.ProcRoot()
	n.mu.Unlock()
	if dir == "" {
		return nil
	}
	return writeProcs(dir, js)
}

// StopJob ends a job and frees its GPUs.
func (n *Node) StopJob(id string) error {
	n.mu.Lock()
	js, ok := n.jobs[id]
	if !ok {
		n.mu.Unlock()
		return fmt.Errorf("stop job %s on %s: no such job", id, n.name)
	}
	delete(n.jobs, id)
	for _, i := range js.gpus {
		g := n.gpus[i]
		g.job, g.pids, g.memJob, g.load, g.busyFor = nil, nil, 0, 0, 0
	}
	dir := n.ProcRoot()
	n.mu.Unlock()
	if dir == "" {
		return nil
	}
	var errs []error
	for _, pid := range js.PIDs {
		if err := os.RemoveAll(filepath.Join(dir, strconv.Itoa(pid))); err != nil {
			errs = append(errs, fmt.Errorf("remove process %d of job %s: %w", pid, id, err))
		}
	}
	return errors.Join(errs...)
}

// Jobs returns the jobs running on the node, by ID.
func (n *Node) Jobs() []JobInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]JobInfo, 0, len(n.jobs))
	for _, id := range n.sortedJobIDs() {
		js := n.jobs[id]
		j := js.Job
		j.PIDs = slices.Clone(js.PIDs)
		out = append(out, JobInfo{Job: j, GPUs: slices.Clone(js.gpus), Start: js.start})
	}
	return out
}

// freeGPUs returns the GPUs a job could start on: unallocated and answering.
func (n *Node) freeGPUs() []int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []int
	for _, g := range n.gpus {
		if g.job == nil && !g.lost && !g.hung && !g.stalled {
			out = append(out, g.index)
		}
	}
	return out
}

func writeProcs(procRoot string, js *jobState) error {
	for _, pid := range js.PIDs {
		dir := filepath.Join(procRoot, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write process %d of job %s: %w", pid, js.ID, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroupOf(js.ID)), 0o644); err != nil {
			return fmt.Errorf("write process %d of job %s: %w", pid, js.ID, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(js.procName()+"\n"), 0o644); err != nil {
			return fmt.Errorf("write process %d of job %s: %w", pid, js.ID, err)
		}
	}
	return nil
}
