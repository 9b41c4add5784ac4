package attribution

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// JobFromCgroup returns the Slurm job id in the contents of a /proc/<pid>/cgroup
// file, or "" when the process is in no Slurm job. It accepts cgroup v2
// ("0::/system.slice/slurmstepd.scope/job_123/step_0/user/task_0"), cgroup v1
// ("4:memory:/slurm/uid_1000/job_123/step_0/task_0") and the multiple-slurmd
// forms ("<node>_slurmstepd.scope", "slurm_<node>"): the first path element
// "job_<digits>" below an element that names Slurm.
func JobFromCgroup(data []byte) string {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		// hierarchy-ID:controller-list:cgroup-path; the path may hold colons.
		_, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		_, path, ok := bytes.Cut(rest, []byte{':'})
		if !ok {
			continue
		}
		if job := jobFromPath(string(path)); job != "" {
			return job
		}
	}
	return ""
}

func jobFromPath(path string) string {
	slurm := false
	for elem := range strings.SplitSeq(path, "/") {
		if !slurm {
			slurm = elem == "slurm" || strings.HasPrefix(elem, "slurm_") ||
				elem == "slurmstepd.scope" || strings.HasSuffix(elem, "_slurmstepd.scope")
			continue
		}
		id, ok := strings.CutPrefix(elem, "job_")
		if ok && id != "" && isDigits(id) {
			return id
		}
	}
	return ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// UIDFromStatus returns the real uid in the contents of /proc/<pid>/status (the
// first field of its "Uid:" line).
func UIDFromStatus(data []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Uid:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 || !isDigits(string(f[0])) {
			return "", false
		}
		return string(f[0]), true
	}
	return "", false
}

// slurmEnv is what a Slurm task's environment says about its job.
type slurmEnv struct {
	JobID, Account, Partition, User string
}

// SlurmFromEnviron reads SLURM_JOB_ID, SLURM_JOB_ACCOUNT, SLURM_JOB_PARTITION and
// SLURM_JOB_USER from the contents of /proc/<pid>/environ (NUL-separated).
func SlurmFromEnviron(data []byte) (jobID, account, partition, user string) {
	e := slurmFromEnviron(data)
	return e.JobID, e.Account, e.Partition, e.User
}

func slurmFromEnviron(data []byte) slurmEnv {
	var e slurmEnv
	for len(data) > 0 {
		kv := data
		if i := bytes.IndexByte(data, 0); i >= 0 {
			kv, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !bytes.HasPrefix(kv, []byte("SLURM_JOB_")) {
			continue
		}
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok {
			continue
		}
		switch string(k) {
		case "SLURM_JOB_ID":
			e.JobID = string(v)
		case "SLURM_JOB_ACCOUNT":
			e.Account = string(v)
		case "SLURM_JOB_PARTITION":
			e.Partition = string(v)
		case "SLURM_JOB_USER":
			e.User = string(v)
		}
	}
	return e
}

// procInfo is what /proc says about one GPU process.
type procInfo struct {
	JobID     string
	UID       string // "" when status was unreadable
	Account   string
	Partition string
	User      string // from the environment; the uid's name is looked up later
}

// maxProcFile bounds what is read of one /proc file.
const maxProcFile = 256 << 10

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxProcFile))
}

// readProc reads one process's cgroup, status and environ under root. A missing
// cgroup file (the process exited, or the PID belongs to another PID namespace) is
// an error; status and environ are optional.
func readProc(root string, pid uint32) (procInfo, error) {
	dir := filepath.Join(root, strconv.FormatUint(uint64(pid), 10))
	cg, err := readLimited(filepath.Join(dir, "cgroup"))
	if err != nil {
		return procInfo{}, fmt.Errorf("process %d: %w", pid, err)
	}
	p := procInfo{JobID: JobFromCgroup(cg)}
	if st, err := readLimited(filepath.Join(dir, "status")); err == nil {
		p.UID, _ = UIDFromStatus(st)
	}
	if env, err := readLimited(filepath.Join(dir, "environ")); err == nil {
		e := slurmFromEnviron(env)
		p.Account, p.Partition, p.User = e.Account, e.Partition, e.User
		if p.JobID == "" {
			p.JobID = e.JobID
		}
	}
	return p, nil
}
