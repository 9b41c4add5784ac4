package slurm

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Job is one job as `squeue --json` reports it.
type Job struct {
	ID uint32
	// ArrayJobID is the array's job ID for an array element (0 otherwise);
	// ArrayTaskID its index, -1 when not an element.
	ArrayJobID  uint32
	ArrayTaskID int
	Name        string
	User        string
	Account     string
	Partition   string
	// State is the job state upper-case (RUNNING, PENDING, COMPLETING…);
	// Reason why it waits (Priority, Resources…) or "None".
	State  string
	Reason string
	// Priority is the job's scheduling priority (with priority/multifactor, its
	// SiteFactor is part of it).
	Priority int64
	// SubmitTime and StartTime (zero when not started or not known).
	SubmitTime, StartTime time.Time
	// GPUsPerNode is what the job asked per node ("gres:gpu:2" → 2; 0 when it
	// asked none per node).
	GPUsPerNode int
	// Nodes is the job's allocation, node by node, with the GPUs it holds on each
	// (empty while pending).
	Nodes []JobNode
}

// JobNode is a job's allocation on one node.
type JobNode struct {
	Name string
	// GRES is what the job holds there, with indices ("gpu:h100:2(IDX:0-1)").
	GRES []GRES
}

// GPUs is the number of GPUs the job holds on the node.
func (n JobNode) GPUs() int { return gpuCount(n.GRES) }

// GPUIndices are the indices of the GPUs the job holds on the node.
func (n JobNode) GPUIndices() []int { return gpuIndices(n.GRES) }

// GPUs is the number of GPUs the job holds across its nodes.
func (j Job) GPUs() int {
	n := 0
	for _, x := range j.Nodes {
		n += x.GPUs()
	}
	return n
}

type squeueJSON struct {
	Meta   jsonMeta   `json:"meta"`
	Errors jsonErrors `json:"errors"`
	Jobs   *[]struct {
		JobID        number   `json:"job_id"`
		ArrayJobID   number   `json:"array_job_id"`
		ArrayTaskID  number   `json:"array_task_id"`
		Name         string   `json:"name"`
		UserName     string   `json:"user_name"`
		Account      string   `json:"account"`
		Partition    string   `json:"partition"`
		JobState     words    `json:"job_state"`
		StateReason  string   `json:"state_reason"`
		Priority     number   `json:"priority"`
		SubmitTime   number   `json:"submit_time"`
		StartTime    number   `json:"start_time"`
		Nodes        string   `json:"nodes"`
		TRESPerNode  string   `json:"tres_per_node"`
		GRESDetail   []string `json:"gres_detail"`
		JobResources *struct {
			AllocatedNodes []struct {
				NodeName string `json:"nodename"`
			} `json:"allocated_nodes"`
		} `json:"job_resources"`
	} `json:"jobs"`
}

// ParseSqueueJSON reads the output of `squeue --json` into jobs sorted by ID.
// A running job's GPU indices come from gres_detail, one entry per allocated
// node in the order of job_resources.allocated_nodes (both follow the job's node
// bitmap); without job_resources the node names come from expanding "nodes".
func ParseSqueueJSON(b []byte) ([]Job, error) {
	const cmd = "squeue --json"
	var doc squeueJSON
	if err := strictJSON(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: cannot parse output: %w", cmd, err)
	}
	if len(doc.Errors) > 0 {
		return nil, &JSONError{Command: cmd, Errors: doc.Errors.String()}
	}
	if doc.Jobs == nil {
		return nil, fmt.Errorf("%s: output has no \"jobs\" list", cmd)
	}
	var jobs []Job
	for i, raw := range *doc.Jobs {
		if !raw.JobID.Set || raw.JobID.Value <= 0 || raw.JobID.Value > 1<<32-1 {
			return nil, fmt.Errorf("%s: jobs[%d]: job_id is missing or not a job ID", cmd, i)
		}
		j := Job{
			ID: uint32(raw.JobID.Value), ArrayTaskID: -1,
			Name: raw.Name, User: raw.UserName, Account: raw.Account, Partition: raw.Partition,
			Reason: raw.StateReason, Priority: raw.Priority.Value,
			SubmitTime: raw.SubmitTime.time(), StartTime: raw.StartTime.time(),
		}
		if len(raw.JobState) == 0 || raw.JobState[0] == "" {
			return nil, fmt.Errorf("%s: job %d has no job_state", cmd, j.ID)
		}
		j.State = strings.ToUpper(raw.JobState[0])
		if raw.ArrayJobID.Set && raw.ArrayJobID.Value > 0 && raw.ArrayJobID.Value <= 1<<32-1 {
			j.ArrayJobID = uint32(raw.ArrayJobID.Value)
		}
		if raw.ArrayTaskID.Set && raw.ArrayTaskID.Value >= 0 && raw.ArrayTaskID.Value < 1<<31 {
			j.ArrayTaskID = int(raw.ArrayTaskID.Value)
		}
		if j.State == "PENDING" {
			// squeue reports a pending job's expected start, if any, not a start.
			j.StartTime = time.Time{}
		}
		n, err := gpusPerNode(raw.TRESPerNode)
		if err != nil {
			return nil, fmt.Errorf("%s: job %d: %w", cmd, j.ID, err)
		}
		j.GPUsPerNode = n
		var names []string
		if raw.JobResources != nil {
			for _, an := range raw.JobResources.AllocatedNodes {
				names = append(names, an.NodeName)
			}
		}
		if len(names) == 0 && raw.Nodes != "" && j.State != "PENDING" {
			if names, err = ExpandHostlist(raw.Nodes); err != nil {
				return nil, fmt.Errorf("%s: job %d: nodes: %w", cmd, j.ID, err)
			}
		}
		if len(raw.GRESDetail) > 0 && len(raw.GRESDetail) != len(names) {
			return nil, fmt.Errorf("%s: job %d: %d gres_detail entries for %d nodes %v", cmd, j.ID, len(raw.GRESDetail), len(names), names)
		}
		for k, name := range names {
			if name == "" {
				return nil, fmt.Errorf("%s: job %d: allocated node %d has no name", cmd, j.ID, k)
			}
			jn := JobNode{Name: name}
			if len(raw.GRESDetail) > 0 {
				if jn.GRES, err = ParseGRES(raw.GRESDetail[k]); err != nil {
					return nil, fmt.Errorf("%s: job %d on %s: %w", cmd, j.ID, name, err)
				}
			}
			j.Nodes = append(j.Nodes, jn)
		}
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	return jobs, nil
}

// gpusPerNode reads the GPU count from tres_per_node: "gres:gpu:2",
// "gres:gpu:h100:2", "gres/gpu:2" (newer Slurm), possibly among other TRES.
func gpusPerNode(s string) (int, error) {
	for _, t := range splitOutside(s, ',') {
		t = strings.Replace(t, "gres/", "gres:", 1)
		parts := strings.Split(t, ":")
		if len(parts) < 2 || parts[0] != "gres" || parts[1] != "gpu" {
			continue
		}
		if len(parts) == 2 {
			return 1, nil
		}
		n, err := parseCount(parts[len(parts)-1])
		if err != nil {
			return 0, fmt.Errorf("tres_per_node %q: %w", truncate(s, 80), err)
		}
		return n, nil
	}
	return 0, nil
}

// Jobs lists every job squeue knows (`squeue --json`, which in 22.05 ignores
// filters).
func (s Scontrol) Jobs(ctx context.Context) ([]Job, error) {
	return jsonCommand(ctx, s, ParseSqueueJSON, "squeue", "--json")
}

// RunningJobs lists the running jobs with their nodes, GPU indices, account and
// user.
func (s Scontrol) RunningJobs(ctx context.Context) ([]Job, error) { return s.jobsIn(ctx, "RUNNING") }

// PendingJobs lists the pending jobs with their account, user and priority.
func (s Scontrol) PendingJobs(ctx context.Context) ([]Job, error) { return s.jobsIn(ctx, "PENDING") }

func (s Scontrol) jobsIn(ctx context.Context, state string) ([]Job, error) {
	all, err := s.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Job
	for _, j := range all {
		if j.State == state {
			out = append(out, j)
		}
	}
	return out, nil
}

// MaxSiteFactor bounds a SiteFactor (scontrol accepts ±2147483645).
const MaxSiteFactor = 2147483645

// SetSiteFactor sets a job's SiteFactor (`scontrol update jobid=N
// sitefactor=V`), which priority/multifactor adds to its priority unweighted;
// gpuwatch's fair-share feedback sets it from measured use. It needs a
// privileged user. Slurm shows it for pending jobs in `sprio` (SiteFactors).
func (s Scontrol) SetSiteFactor(ctx context.Context, jobID uint32, value int64) error {
	if jobID == 0 {
		return fmt.Errorf("set site factor: job ID 0 is not a job")
	}
	if value > MaxSiteFactor || value < -MaxSiteFactor {
		return fmt.Errorf("set site factor of job %d: %d is outside ±%d", jobID, value, MaxSiteFactor)
	}
	_, err := s.run(ctx, "update", "JobId="+strconv.FormatUint(uint64(jobID), 10), "SiteFactor="+strconv.FormatInt(value, 10))
	return err
}

// SiteFactors reads the SiteFactor of every pending job from sprio (which lists
// pending jobs only), by job ID.
func (s Scontrol) SiteFactors(ctx context.Context) (map[uint32]int64, error) {
	out, err := s.exec(ctx, "sprio", "--noheader", "--format=%i %S")
	if err != nil {
		return nil, err
	}
	return ParseSprio(out)
}

// ParseSprio reads `sprio --noheader --format="%i %S"`: a job ID and its
// weighted site (admin) factor per line. sprio names an array element
// "1234_5"; it is keyed by the element's own job ID only when printed plain, so
// elements are skipped.
func ParseSprio(out string) (map[uint32]int64, error) {
	m := map[uint32]int64{}
	for i, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("sprio: line %d %q: want JOBID SITE", i+1, truncate(line, 80))
		}
		if strings.Contains(f[0], "_") {
			continue
		}
		id, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("sprio: line %d: %q is not a job ID", i+1, f[0])
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			// sprio prints weighted factors as integers; accept "12.0" too.
			fv, ferr := strconv.ParseFloat(f[1], 64)
			if ferr != nil || fv != float64(int64(fv)) {
				return nil, fmt.Errorf("sprio: line %d: site factor %q is not a number", i+1, f[1])
			}
			v = int64(fv)
		}
		m[uint32(id)] = v
	}
	return m, nil
}

// MaxAdminComment bounds what SetAdminComment writes: a line, not a report.
const MaxAdminComment = 1000

// SetAdminComment sets a job's AdminComment (`scontrol update jobid=N
// admincomment=TEXT`), where sites keep per-job summaries that sacct shows
// after the job (gpuwatch jobstats --slurm writes its verdict there). It needs
// a privileged user (SlurmUser or root, as in EpilogSlurmctld). Control
// characters become spaces and the text is cut at MaxAdminComment bytes, on a
// character boundary.
func (s Scontrol) SetAdminComment(ctx context.Context, jobID uint32, comment string) error {
	if jobID == 0 {
		return fmt.Errorf("set admin comment: job ID 0 is not a job")
	}
	comment = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(comment, "?"))
	for len(comment) > MaxAdminComment {
		_, size := utf8.DecodeLastRuneInString(comment)
		comment = comment[:len(comment)-size]
	}
	_, err := s.run(ctx, "update", "JobId="+strconv.FormatUint(uint64(jobID), 10), "AdminComment="+comment)
	return err
}
