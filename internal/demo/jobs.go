package demo

import (
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
)

// jobPartition is the Slurm partition the simulated jobs run in.
const jobPartition = "gpu"

// jobDetails gives the simulated workload's processes what a Slurm task has on
// a real node and the agents' attribution reads for fair share: the owner's uid
// in /proc/<pid>/status and SLURM_JOB_ACCOUNT and SLURM_JOB_USER in
// /proc/<pid>/environ. The workload generator writes only each process's cgroup
// (which names the job), so without this every allocation would carry a job id
// but no account, and fair share would have nobody to charge.
type jobDetails struct {
	uids map[string]int             // user → uid, in order of first sight
	done map[string]map[string]bool // node → jobs already written
	// ran lists every job part the fleet started, as the fleet reports it, in
	// order of first sight: what the placement test checks against the engine's
	// decisions.
	ran []ranJob
}

// ranJob is one node's part of a job the simulated fleet ran.
type ranJob struct {
	job, node string
	gpus      []int
	start     time.Time
}

func newJobDetails() *jobDetails {
	return &jobDetails{uids: map[string]int{}, done: map[string]map[string]bool{}}
}

// write writes the details of every job started since the last call.
func (d *jobDetails) write(f *simhw.Fleet) error {
	for _, n := range f.Nodes() {
		prev := d.done[n.Name()]
		cur := map[string]bool{}
		for _, j := range n.Jobs() {
			cur[j.ID] = true
			if prev[j.ID] {
				continue
			}
			d.ran = append(d.ran, ranJob{job: j.ID, node: n.Name(), gpus: j.GPUs, start: j.Start})
			uid, ok := d.uids[j.User]
			if !ok {
				uid = 2000 + len(d.uids)
				d.uids[j.User] = uid
			}
			if err := n.WriteJobProcDetails(j.ID, uid, jobPartition); err != nil {
				return fmt.Errorf("cannot write the processes of simulated job %s: %w", j.ID, err)
			}
		}
		d.done[n.Name()] = cur
	}
	return nil
}
