package attribution

import (
	"testing"
)

func TestJobFromCgroup(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"v2", "0::/system.slice/slurmstepd.scope/job_123/step_0/user/task_0\n", "123"},
		{"v2 batch step", "0::/system.slice/slurmstepd.scope/job_98765/step_batch/user/task_0\n", "98765"},
		{"v2 extern step", "0::/system.slice/slurmstepd.scope/job_5/step_extern/user/task_special\n", "5"},
		{"v2 multiple slurmd", "0::/system.slice/node01_slurmstepd.scope/job_77/step_0/user/task_1\n", "77"},
		{"v1", "12:memory:/slurm/uid_1000/job_123/step_0/task_0\n11:devices:/slurm/uid_1000/job_123/step_0\n", "123"},
		{"v1 multiple slurmd", "4:cpuset:/slurm_node01/uid_1000/job_4242/step_1/task_3\n", "4242"},
		{"v1 other lines first", "13:pids:/system.slice/sshd.service\n7:freezer:/slurm/uid_0/job_9/step_0\n", "9"},
		{"user session", "0::/user.slice/user-1000.slice/session-4.scope\n", ""},
		{"docker", "0::/system.slice/docker-0123abcd.scope\n", ""},
		{"job_ outside slurm", "0::/system.slice/job_123/step_0\n", ""},
		{"slurmstepd itself", "0::/system.slice/slurmstepd.scope/system\n", ""},
		{"not a number", "0::/system.slice/slurmstepd.scope/job_abc/step_0\n", ""},
		{"empty id", "0::/system.slice/slurmstepd.scope/job_/step_0\n", ""},
		{"no trailing newline", "0::/system.slice/slurmstepd.scope/job_1/step_0", "1"},
		{"colon in path", "0::/system.slice/slurmstepd.scope/job_2/step_0/we:ird\n", "2"},
		{"garbage", "garbage\n\n::\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := JobFromCgroup([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: JobFromCgroup(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestUIDFromStatus(t *testing.T) {
	status := "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4711\nPid:\t4711\nPPid:\t4700\n" +
		"TracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n"
	if uid, ok := UIDFromStatus([]byte(status)); !ok || uid != "1000" {
		t.Errorf("UIDFromStatus = %q, %v", uid, ok)
	}
	for _, bad := range []string{"", "Name:\tx\n", "Uid:\n", "Uid:\tabc\t1\n"} {
		if uid, ok := UIDFromStatus([]byte(bad)); ok {
			t.Errorf("UIDFromStatus(%q) = %q", bad, uid)
		}
	}
}

func TestSlurmFromEnviron(t *testing.T) {
	env := "HOME=/home/alice\x00SLURM_JOB_ID=123\x00SLURM_JOB_ACCOUNT=ml\x00SLURM_JOB_PARTITION=gpu\x00" +
		"SLURM_JOB_USER=alice\x00SLURM_JOB_NAME=train=v2\x00SLURM_JOB_ACCOUNTX=no\x00"
	id, acct, part, user := SlurmFromEnviron([]byte(env))
	if id != "123" || acct != "ml" || part != "gpu" || user != "alice" {
		t.Errorf("SlurmFromEnviron = %q %q %q %q", id, acct, part, user)
	}
	if id, acct, part, user := SlurmFromEnviron([]byte("PATH=/bin\x00SLURM_JOB_ID")); id+acct+part+user != "" {
		t.Errorf("no Slurm variables: %q %q %q %q", id, acct, part, user)
	}
}

func TestIsGPUResource(t *testing.T) {
	for name, want := range map[string]bool{
		"nvidia.com/gpu": true, "nvidia.com/gpu.shared": true, "nvidia.com/mig-1g.10gb": true,
		"nvidia.com/mig-3g.40gb": true, "amd.com/gpu": false, "nvidia.com/gpux": false, "": false,
	} {
		if got := IsGPUResource(name); got != want {
			t.Errorf("IsGPUResource(%q) = %v", name, got)
		}
	}
	if got := deviceUUID("GPU-abc::3"); got != "GPU-abc" {
		t.Errorf("deviceUUID = %q", got)
	}
}

func FuzzJobFromCgroup(f *testing.F) {
	for _, s := range []string{
		"0::/system.slice/slurmstepd.scope/job_123/step_0/user/task_0\n",
		"12:memory:/slurm/uid_1000/job_123/step_0/task_0\n",
		"4:cpuset:/slurm_node01/uid_1000/job_4242/step_1/task_3\n",
		"0::/user.slice\n", "", "::\n:",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		job := JobFromCgroup(data)
		if job != "" && !isDigits(job) {
			t.Errorf("JobFromCgroup(%q) = %q: not a job number", data, job)
		}
	})
}

func FuzzProcFiles(f *testing.F) {
	f.Add([]byte("Uid:\t1000\t1000\t1000\t1000\n"), []byte("SLURM_JOB_ACCOUNT=ml\x00SLURM_JOB_USER=a\x00"))
	f.Add([]byte(""), []byte(""))
	f.Fuzz(func(t *testing.T, status, environ []byte) {
		if uid, ok := UIDFromStatus(status); ok && !isDigits(uid) {
			t.Errorf("uid %q", uid)
		}
		SlurmFromEnviron(environ)
	})
}
