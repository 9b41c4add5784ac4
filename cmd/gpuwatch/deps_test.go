package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode: the shipped binary links no test code: `go list
// -deps` of it has no testing package, no package of ours imports it, and no
// test helper of ours (test/...) is linked. Test helpers such as
// test/realslurm wrap internal launchers instead; Prometheus's and go-dcgm's
// own test helpers are left out of their copies in third_party/.
func TestBinaryLinksNoTestCode(t *testing.T) {
	deps, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, deps)
	}
	for _, p := range strings.Fields(string(deps)) {
		if p == "testing" || strings.HasPrefix(p, "testing/") || strings.HasPrefix(p, "github.com/stretchr/testify") {
			t.Errorf("the binary links %s", p)
		}
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \",\"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	ours := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(pkg, "github.com/gpuwatch/gpuwatch") {
			continue
		}
		ours++
		if strings.HasPrefix(pkg, "github.com/gpuwatch/gpuwatch/test") {
			t.Errorf("the binary links %s, a test package", pkg)
		}
		for _, imp := range strings.Split(imports, ",") {
			if imp == "testing" || strings.HasPrefix(imp, "testing/") {
				t.Errorf("%s, linked into the binary, imports %s", pkg, imp)
			}
		}
	}
	if ours < 20 {
		t.Fatalf("go list found only %d of gpuwatch's packages in the binary", ours)
	}
}

// TestAgentOnlyBuild: `go build -tags agentonly` (bin/gpuwatch-agent) is the node
// agent alone: it links none of the control plane (placement, the server, the
// store's TSDB and PromQL, the rules engine, client-go) and no test code (the Slurm
// adapter stays: `check --slurm` drains its own node as a HealthCheckProgram), it answers version and a one-shot
// check of a simulated node, and it refuses the control plane's subcommands.
func TestAgentOnlyBuild(t *testing.T) {
	deps, err := exec.Command("go", "list", "-tags", "agentonly", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -tags agentonly -deps: %v\n%s", err, deps)
	}
	links := map[string]bool{}
	for _, p := range strings.Fields(string(deps)) {
		links[p] = true
		for _, banned := range []string{
			"testing",
			"github.com/gpuwatch/gpuwatch/scheduler/placement",
			"github.com/gpuwatch/gpuwatch/scheduler/snapshot",
			"github.com/gpuwatch/gpuwatch/internal/server",
			"github.com/gpuwatch/gpuwatch/internal/demo",
			"github.com/gpuwatch/gpuwatch/telemetry/store",
			"github.com/prometheus/prometheus/tsdb",
			"github.com/prometheus/prometheus/promql",
			"github.com/prometheus/prometheus/rules",
			"k8s.io/client-go",
		} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("the agent-only build links %s", p)
			}
		}
	}
	for _, must := range []string{"github.com/gpuwatch/gpuwatch/collector/agent", "github.com/gpuwatch/gpuwatch/collector/shipper", "github.com/gpuwatch/gpuwatch/collector/healthpush"} {
		if !links[must] {
			t.Errorf("the agent-only build does not link %s", must)
		}
	}

	bin := t.TempDir() + "/gpuwatch-agent"
	if out, err := exec.Command("go", "build", "-tags", "agentonly", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags agentonly: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.Contains(string(out), "gpuwatch") {
		t.Errorf("gpuwatch-agent version: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "check", "--simulate", "hgx-h100", "--state-dir", t.TempDir()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "healthy") {
		t.Errorf("gpuwatch-agent check --simulate hgx-h100: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "server").CombinedOutput()
	if code := exitCodeOf(err); code != 2 || !strings.Contains(string(out), `gpuwatch-agent: unknown command "server"`) {
		t.Errorf("gpuwatch-agent server: exit %d, want 2 and the unknown command named\n%s", code, out)
	}
}

func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
