package slurm

import (
	"strings"
	"testing"
)

// The multi-line form is what `scontrol show node` prints by default (Slurm 22.05,
// as on Debian bookworm); the one-line form is the same record joined.
const multiLine = `NodeName=gpu02 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.31
   AvailableFeatures=(null)
   ActiveFeatures=(null)
   Gres=gpu:8(S:0)
   NodeAddr=127.0.0.1 NodeHostName=gpu02 Port=6822 Version=22.05.8
   OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)
   RealMemory=1000 AllocMem=0 FreeMem=N/A Sockets=2 Boards=1
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=gpu
   BootTime=2024-03-01T08:00:00 SlurmdStartTime=2024-03-01T08:00:05
   LastBusyTime=2024-03-01T08:00:05
   CfgTRES=cpu=2,mem=1000M,billing=2,gres/gpu=8
   AllocTRES=
   CapWatts=n/a
   CurrentWatts=0 AveWatts=0
   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s
   Reason=gpuwatch: xid79 gpu=GPU-1b8b action=RESTART_BM [root@2024-03-01T08:10:00]
`

func TestParseShowNode(t *testing.T) {
	for name, in := range map[string]string{
		"multi-line": multiLine,
		"one-line":   strings.Join(strings.Fields(multiLine), " "),
	} {
		n, err := ParseShowNode(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n.Name != "gpu02" || n.State != "IDLE" || len(n.Flags) != 1 || !n.Drained() ||
			n.Reason != "gpuwatch: xid79 gpu=GPU-1b8b action=RESTART_BM" || !Owned(n.Reason) {
			t.Errorf("%s: %+v", name, n)
		}
	}
	n, err := ParseShowNode("NodeName=gpu03 State=MIXED Reason=disk replaced by ops [alice@2024-03-01T08:00:00]")
	if err != nil || n.Drained() || Owned(n.Reason) || n.Reason != "disk replaced by ops" {
		t.Errorf("other reason: %+v %v", n, err)
	}
	n, err = ParseShowNode("NodeName=gpu04 State=IDLE ThreadsPerCore=1")
	if err != nil || n.Reason != "" || n.Drained() {
		t.Errorf("no reason: %+v %v", n, err)
	}
	for _, bad := range []string{"", "slurm_load_node error: Invalid node name specified", "NodeName=x"} {
		if _, err := ParseShowNode(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseShowNode(f *testing.F) {
	f.Add(multiLine)
	f.Add("NodeName=a State=DOWN+DRAIN+NOT_RESPONDING Reason=x [u@t]")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseShowNode(s)
		if err == nil && (n.Name == "" || n.State == "") {
			t.Fatalf("accepted without name or state: %+v", n)
		}
	})
}
