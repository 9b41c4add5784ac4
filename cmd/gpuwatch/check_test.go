package main

import (
	"bytes"
	"context"
	"github.com/gpuwatch/gpuwatch/test/syncbuf"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lostScenario is the README's example: GPU 3 falls off the bus.
const lostScenario = "../../docs/examples/gpu-lost.yaml"

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCheckHealthyAndLost(t *testing.T) {
	code, out, errOut := runCmd(t, "check", "--simulate", "hgx-h100", "--state-dir", t.TempDir())
	if code != 0 || strings.TrimSpace(out) != "gpuwatch: healthy (8 GPUs)" {
		t.Errorf("healthy node: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	faults := lostScenario
	code, out, errOut = runCmd(t, "check", "--simulate", "hgx-h100", "--faults", faults, "--state-dir", t.TempDir())
	if code != 1 || !strings.HasPrefix(out, "gpuwatch: ") || !strings.Contains(out, "gpu=3") ||
		!strings.Contains(out, "RESTART_BM") || strings.Count(out, "\n") != 1 || len(out) > 201 {
		t.Errorf("lost GPU: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "check", "--faults", faults); code != 2 || !strings.Contains(errOut, "--faults needs --simulate") {
		t.Errorf("--faults without --simulate: exit %d, %s", code, errOut)
	}
}

// fakeScontrol puts an scontrol on PATH that prints the node record in
// $FAKE_SHOW and appends its arguments to $FAKE_LOG: the process boundary
// gpuwatch check drives. The real-Slurm test of the same calls is the drain
// issue's single-host cluster.
func fakeScontrol(t *testing.T, show string) (logPath string) {
	t.Helper()
	dir := t.TempDir()
	logPath = filepath.Join(dir, "calls")
	showPath := filepath.Join(dir, "show")
	if err := os.WriteFile(showPath, []byte(show), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$*\" >> " + logPath + "\nif [ \"$1\" = show ]; then cat " + showPath + "; fi\n"
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return logPath
}

func calls(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestCheckSlurmOwnsItsDrains(t *testing.T) {
	faults := lostScenario
	t.Run("unhealthy idle node is drained", func(t *testing.T) {
		log := fakeScontrol(t, "NodeName=gpu01 State=IDLE ThreadsPerCore=1 Reason=none\n")
		code, out, errOut := runCmd(t, "check", "--simulate", "hgx-h100", "--faults", faults, "--state-dir", t.TempDir(), "--slurm", "--slurm.node", "gpu01")
		c := calls(t, log)
		if code != 1 || len(c) != 2 || c[0] != "show node gpu01 --oneliner" ||
			c[1] != "update NodeName=gpu01 State=DRAIN Reason="+strings.TrimSpace(out) {
			t.Errorf("exit %d, calls %q, stdout %q, stderr %s", code, c, out, errOut)
		}
	})
	t.Run("healthy node drained by gpuwatch is resumed", func(t *testing.T) {
		log := fakeScontrol(t, "NodeName=gpu01 State=IDLE+DRAIN Reason=gpuwatch: xid79 gpu=3 action=RESTART_BM [root@2026-11-22T07:00:00]\n")
		code, _, errOut := runCmd(t, "check", "--simulate", "hgx-h100", "--state-dir", t.TempDir(), "--slurm", "--slurm.node", "gpu01")
		if c := calls(t, log); code != 0 || len(c) != 2 || c[1] != "update NodeName=gpu01 State=RESUME" {
			t.Errorf("exit %d, calls %q, stderr %s", code, c, errOut)
		}
	})
	t.Run("healthy node drained by someone else stays drained", func(t *testing.T) {
		log := fakeScontrol(t, "NodeName=gpu01 State=IDLE+DRAIN Reason=bad DIMM, ticket 4711 [alice@2026-11-22T07:00:00]\n")
		code, _, errOut := runCmd(t, "check", "--simulate", "hgx-h100", "--state-dir", t.TempDir(), "--slurm", "--slurm.node", "gpu01")
		if c := calls(t, log); code != 0 || len(c) != 1 {
			t.Errorf("exit %d, calls %q, stderr %s", code, c, errOut)
		}
	})
	t.Run("unreachable controller fails the check", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte("#!/bin/sh\necho 'slurm_load_node error: Unable to contact slurm controller (connect failure)' >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		code, _, errOut := runCmd(t, "check", "--simulate", "hgx-h100", "--state-dir", t.TempDir(), "--slurm", "--slurm.node", "gpu01")
		if code != 3 || !strings.Contains(errOut, "Unable to contact slurm controller") {
			t.Errorf("exit %d, stderr %s", code, errOut)
		}
	})
}

// syncBuffer is a buffer safe for a writer and a reader at once.
type syncBuffer = syncbuf.Buffer

// TestAgentCommandServes starts `gpuwatch agent --simulate` as a user would and
// scrapes it over real HTTP.
func TestAgentCommandServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"agent", "--simulate", "dgx-a100", "--listen", "127.0.0.1:0", "--state-dir", t.TempDir(),
			"--labels", "snake", "--collect.interval", "1s"}, &stdout, &stderr)
	}()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; {
		if i := strings.Index(stdout.String(), "http://"); i >= 0 {
			url = strings.Fields(stdout.String()[i:])[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not start: %s %s", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var body string
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(body, "DCGM_FI_DEV_GPU_TEMP{"); {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no GPU series at %s: %s", url, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(body, `model="NVIDIA A100-SXM4-80GB"`) || strings.Contains(body, "modelName=") {
		t.Errorf("--labels snake not applied:\n%.2000s", body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}

func TestAgentCommandBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"agent", "--labels", "camel"}, `invalid label mode "camel"`},
		{[]string{"agent", "--simulate", "hgx-b200"}, `--simulate "hgx-b200"`},
		{[]string{"agent", "--simulate", "hgx-h100", "--speed", "0"}, "--speed must be positive"},
		{[]string{"agent", "--log.level", "loud"}, "--log.level"},
	} {
		if code, _, errOut := runCmd(t, tc.args...); code != 2 || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.msg)
		}
	}
}

func TestSimulateRejectsRealPaths(t *testing.T) {
	code, _, errOut := runCmd(t, "agent", "--simulate", "hgx-h100", "--path.sysfs", "/sys")
	if code != 2 || !strings.Contains(errOut, "--path.sysfs cannot be used with --simulate") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
