package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBin writes shell scripts standing in for Slurm's commands into a
// directory and returns an Scontrol using them. Each script is the body run by
// /bin/sh; it sees the environment Scontrol gives it.
func fakeBin(t *testing.T, scripts map[string]string) Scontrol {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Scontrol{Path: filepath.Join(dir, "scontrol"), Timeout: 5 * time.Second}
}

func TestRunnerEnvAndSiblings(t *testing.T) {
	sc := fakeBin(t, map[string]string{
		"scontrol": `echo "NodeName=$1$2$3 State=IDLE Reason=conf=$SLURM_CONF"`,
		"sinfo":    `echo '{"errors":[],"nodes":[{"name":"n1","state":"idle","reason":"'"$SLURM_CONF"'"}]}'`,
	})
	sc.Env = []string{"SLURM_CONF=/tmp/other.conf"}
	st, err := sc.ShowNode(context.Background(), "gpu02")
	if err != nil || st.Reason != "conf=/tmp/other.conf" || st.Name != "shownodegpu02" {
		t.Errorf("ShowNode: %+v %v", st, err)
	}
	// sinfo comes from the directory of Path.
	nodes, err := sc.Nodes(context.Background())
	if err != nil || len(nodes) != 1 || nodes[0].Reason != "/tmp/other.conf" {
		t.Errorf("Nodes: %+v %v", nodes, err)
	}
}

func TestRunnerClassifies(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		scontrol    string
		unreachable bool
		message     string
	}{
		{"says unreachable", `echo "slurm_update error: Unable to contact slurm controller (connect failure)" >&2; exit 1`, true, "Unable to contact"},
		{"rejected, ping up", `if [ "$1" = ping ]; then echo "Slurmctld(primary) at h is UP"; exit 0; fi
echo "slurm_update error: Invalid node name specified" >&2; exit 1`, false, "Invalid node name"},
		// What 22.05 prints for a job update with the controller down.
		{"odd message, ping down", `if [ "$1" = ping ]; then echo "Slurmctld(primary) at h is DOWN"; exit 1; fi
echo "Unexpected message received for job 3" >&2; exit 1`, true, "Unexpected message"},
	} {
		sc := fakeBin(t, map[string]string{"scontrol": tc.scontrol})
		err := sc.Drain(ctx, "gpu01", "gpuwatch: test")
		var ce *CommandError
		if !errors.As(err, &ce) || ce.Unreachable != tc.unreachable || errors.Is(err, ErrUnreachable) != tc.unreachable ||
			errors.Is(err, ErrRejected) == tc.unreachable || !strings.Contains(err.Error(), tc.message) ||
			!strings.HasPrefix(err.Error(), "scontrol update NodeName=gpu01 State=DRAIN Reason=gpuwatch: test: ") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestRunnerTimeoutAndCancel(t *testing.T) {
	sc := fakeBin(t, map[string]string{"scontrol": `exec sleep 10`})
	sc.Timeout = 200 * time.Millisecond
	begin := time.Now()
	err := sc.Resume(context.Background(), "gpu01")
	if !errors.Is(err, ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 3*time.Second {
		t.Errorf("timeout: %v after %s", err, time.Since(begin))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sc.Timeout = 5 * time.Second
	err = sc.Resume(ctx, "gpu01")
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrRejected) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestRunnerMissingBinary(t *testing.T) {
	sc := Scontrol{Path: filepath.Join(t.TempDir(), "scontrol")}
	_, err := sc.Nodes(context.Background())
	var ce *CommandError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "sinfo") {
		t.Errorf("missing sinfo: %v", err)
	}
}

func TestInputChecks(t *testing.T) {
	var sc Scontrol // never runs: every call here is refused first
	ctx := context.Background()
	for name, err := range map[string]error{
		"reboot without prefix": sc.Reboot(ctx, "gpu01", "maintenance"),
		"reboot ALL":            sc.Reboot(ctx, "ALL", "gpuwatch: x"),
		"drain list":            sc.Drain(ctx, "gpu[01-02]", "gpuwatch: x"),
		"drain option":          sc.Drain(ctx, "--all", "gpuwatch: x"),
		"resume empty":          sc.Resume(ctx, ""),
		"cancel reboot key=val": sc.CancelReboot(ctx, "a=b"),
		"site factor job 0":     sc.SetSiteFactor(ctx, 0, 1),
		"site factor too big":   sc.SetSiteFactor(ctx, 5, MaxSiteFactor+1),
		"site factor too small": sc.SetSiteFactor(ctx, 5, -MaxSiteFactor-1),
	} {
		var ce *CommandError
		if err == nil || errors.As(err, &ce) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
