package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startServerCommand runs `gpuwatch server` with args on a free loopback port
// and returns its base URL and its stdout.
func startServerCommand(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int)
	// The data directory is made before the cleanup that stops the server is
	// registered, so the server stops before its directory is removed.
	dataDir := t.TempDir()
	go func() {
		done <- run(ctx, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", dataDir}, args...), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("server exited %d: %s", code, stderr.String())
		}
	})
	re := regexp.MustCompile(`gpuwatch server on (https?://[0-9.:]+)`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], &stdout
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("server did not start: %s %s", stdout.String(), stderr.String())
	return "", nil
}

func gw(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestManualDrainAndResume: gpuwatch drain and resume go through the server's
// drain controller (log actuator here) and land in its audit log.
func TestManualDrainAndResume(t *testing.T) {
	url, serverOut := startServerCommand(t, "--actuator", "log")
	code, out, errOut := gw(t, "drain", "--server", url, "gpu07", "--reason", "replacing the fan tray", "--user", "alice")
	if code != 0 || !strings.Contains(out, "gpu07: drain requested by alice") {
		t.Fatalf("drain: exit %d, %q %q", code, out, errOut)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(serverOut.String(), "gpu07") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s := serverOut.String(); !strings.Contains(s, "gpu07") || !strings.Contains(s, "replacing the fan tray") {
		t.Errorf("the log actuator printed no drain of gpu07:\n%s", s)
	}
	if code, _, errOut := gw(t, "resume", "--server", url, "gpu07", "--user", "alice"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	code, out, _ = gw(t, "drain", "--server", url, "gpu07")
	if code != 2 || out != "" {
		t.Errorf("drain without --reason: exit %d, want 2 (usage)", code)
	}
	if code, _, errOut := gw(t, "drain", "--server", url, "--reason", "x"); code != 2 || !strings.Contains(errOut, "which node") {
		t.Errorf("drain without a node: exit %d, %q", code, errOut)
	}
}

// TestFairShareCommand: a server with a fair-share configuration answers
// gpuwatch fairshare with its accounts, as a table and as JSON; one without
// says how to turn it on.
func TestFairShareCommand(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "fairshare.yaml")
	if err := os.WriteFile(cfg, []byte("accounts:\n  - {name: physics, shares: 2, users: [{name: alice}]}\n  - {name: bio, shares: 1, users: [{name: bob}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url, _ := startServerCommand(t, "--actuator", "none", "--fairshare.config", cfg)
	code, out, errOut := gw(t, "fairshare", "--server", url)
	if code != 0 || !strings.Contains(out, "physics") || !strings.Contains(out, "alice") || !strings.Contains(out, "bob") {
		t.Fatalf("fairshare: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = gw(t, "fairshare", "--server", url, "--output", "json")
	var resp struct {
		Standing struct {
			Associations []struct{ Account, User string } `json:"associations"`
		} `json:"standing"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &resp) != nil || len(resp.Standing.Associations) < 4 {
		t.Errorf("fairshare --output json: exit %d: %s", code, out)
	}

	plain, _ := startServerCommand(t, "--actuator", "none")
	if code, _, errOut := gw(t, "fairshare", "--server", plain); code != 1 || !strings.Contains(errOut, "--fairshare.config") {
		t.Errorf("fairshare on a server without it: exit %d: %s", code, errOut)
	}
	if code, _, errOut := gw(t, "server", "--fairshare.slurm"); code != 2 || !strings.Contains(errOut, "--fairshare.config") {
		t.Errorf("--fairshare.slurm alone: exit %d: %s", code, errOut)
	}
}
