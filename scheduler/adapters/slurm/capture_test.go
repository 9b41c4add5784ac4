package slurm

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/test/realslurm"
)

var capture = flag.Bool("capture", false, "rewrite testdata/real/ from a real Slurm cluster (test/realslurm)")

// TestCaptureReal rewrites testdata/real/ with what Slurm 22.05's commands print
// in the states the parsers must read (go test -run TestCaptureReal -capture).
// It starts a cluster of its own whose fake reboot takes 30 s, so a node can be
// caught with its reboot issued.
func TestCaptureReal(t *testing.T) {
	if !*capture {
		t.Skip("only with -capture")
	}
	c := realslurm.Start(t, realslurm.Options{RebootDelay: 30 * time.Second})
	dir := filepath.Join("testdata", "real")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	save := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	version := strings.TrimSpace(c.Run(t, "sinfo", "--version"))

	// Busy: jobs on gpu02 (3 GPUs) and gpu03+gpu04 (8 each), two pending with
	// site factors; gpu01 drained idle, gpu02 draining with someone else's
	// reason, gpu03 reboot requested while busy.
	j1 := c.Submit(t, "sleep 600", "--gres=gpu:3", "-w", "gpu02", "-A", "team-a")
	j2 := c.Submit(t, "sleep 600", "-N", "2", "--gres=gpu:8", "-w", "gpu03,gpu04", "-A", "team-b")
	j3 := c.Submit(t, "sleep 600", "-N", "4", "--gres=gpu:8", "-A", "team-c")
	j4 := c.Submit(t, "sleep 600", "--gres=gpu:1", "-A", "team-c")
	c.WaitJobState(t, j1, "RUNNING", 15*time.Second)
	c.WaitJobState(t, j2, "RUNNING", 15*time.Second)
	c.Run(t, "scontrol", "update", "jobid="+j3, "sitefactor=500")
	c.Run(t, "scontrol", "update", "jobid="+j4, "sitefactor=-20")
	c.Run(t, "scontrol", "update", "nodename=gpu01", "state=drain", "reason=gpuwatch: xid79 gpu=GPU-1b8b action=RESTART_BM")
	c.Run(t, "scontrol", "update", "nodename=gpu02", "state=drain", "reason=ops: replacing PSU")
	c.Run(t, "scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=gpuwatch: xid154 action=REBOOT", "gpu03")
	save("sinfo-busy.json", c.Run(t, "sinfo", "--json"))
	save("squeue-busy.json", c.Run(t, "squeue", "--json"))
	save("scontrol-show-node-busy.txt", c.Run(t, "scontrol", "show", "node"))
	save("sprio-busy.txt", c.Run(t, "sprio", "--noheader", "--format=%i %S"))
	save("sinfo-busy.txt", c.Run(t, "sinfo", "-N", "-O", "NodeList:8,StateLong:12,StateComplete:36,Gres:14,GresUsed:24,Reason:50"))

	// Reboot issued: gpu03's job ends, so its reboot runs (30 s); gpu04 set down.
	c.Run(t, "scancel", j2)
	c.WaitNodeState(t, "gpu03", "reboot^", 15*time.Second)
	c.Run(t, "scontrol", "update", "nodename=gpu04", "state=down", "reason=ops: cable")
	save("sinfo-reboot.json", c.Run(t, "sinfo", "--json"))
	save("scontrol-show-node-reboot.txt", c.Run(t, "scontrol", "show", "node", "--oneliner"))
	save("sinfo-reboot.txt", c.Run(t, "sinfo", "-N", "-O", "NodeList:8,StateLong:12,StateComplete:36,Gres:14,GresUsed:24,Reason:50"))

	// Controller down: the JSON commands exit 0 with an error inside; the
	// others fail saying why.
	c.StopController(t)
	save("sinfo-ctld-down.json", c.Run(t, "sinfo", "--json"))
	save("squeue-ctld-down.json", c.Run(t, "squeue", "--json"))
	var msgs strings.Builder
	for _, args := range [][]string{
		{"scontrol", "show", "node", "gpu01", "--oneliner"},
		{"scontrol", "update", "nodename=gpu01", "state=resume"},
		{"scontrol", "update", "jobid=" + j1, "sitefactor=3"},
		{"scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=gpuwatch: x", "gpu01"},
		{"sprio", "--noheader", "--format=%i %S"},
		{"scontrol", "ping"},
	} {
		_, err := c.Output(args[0], args[1:]...)
		msgs.WriteString("$ " + strings.Join(args, " ") + "\n" + errString(err) + "\n\n")
	}
	save("ctld-down.txt", msgs.String())
	c.StartController(t)
	var rejected strings.Builder
	for _, args := range [][]string{
		{"scontrol", "update", "nodename=gpu99", "state=drain", "reason=gpuwatch: x"},
		{"scontrol", "update", "jobid=999999", "sitefactor=3"},
		{"scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=gpuwatch: x", "gpu99"},
	} {
		_, err := c.Output(args[0], args[1:]...)
		rejected.WriteString("$ " + strings.Join(args, " ") + "\n" + errString(err) + "\n\n")
	}
	save("rejected.txt", rejected.String())
	t.Logf("captured %s into %s", version, dir)
}

func errString(err error) string {
	if err == nil {
		return "(no error)"
	}
	return err.Error()
}
