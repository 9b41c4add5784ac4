package main

import (
	"os/exec"
	"strings"
	"testing"
)

// floors are gpuwatch's layers, bottom first. A package may import packages
// of its own floor or below, never above. The health report is vocabulary
// (telemetry/healthreport), so the control plane (scheduler/) and the
// analyzer never import the agent (collector/).
var floors = []struct {
	name     string
	prefixes []string
}{
	{"vocabulary and small utilities", []string{"telemetry", "alerts", "internal/auth", "internal/serve", "internal/tlsconf",
		"internal/httpjson", "internal/localslurm", "internal/procstat", "internal/atomicfile", "internal/yamlfile"}},
	{"agent", []string{"collector"}},
	{"control plane", []string{"scheduler"}},
	{"analyzer", []string{"analyzer"}},
	{"assembly", []string{"internal", "dashboards", "cmd", "test"}},
}

const module = "github.com/gpuwatch/gpuwatch/"

// floorOf is the floor index of pkg (a path inside the module), the most
// specific prefix deciding.
func floorOf(pkg string) (int, string) {
	best, at, name := -1, -1, ""
	for i, f := range floors {
		for _, p := range f.prefixes {
			if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > best {
				best, at, name = len(p), i, f.name
			}
		}
	}
	return at, name
}

// TestLayers: no package imports a floor above its own, and the agent and the
// control plane do not import each other (they are side by side: what they
// share is vocabulary). Only what ships is checked (the packages' own imports,
// not their tests'). What the binary links is checked apart, in
// TestBinaryLinksNoTestCode.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \",\"}}", module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		pkg = strings.TrimPrefix(pkg, module)
		from, fromName := floorOf(pkg)
		if from < 0 {
			t.Errorf("package %s is on no floor: add it to floors", pkg)
			continue
		}
		for _, imp := range strings.Split(imports, ",") {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			checked++
			to, toName := floorOf(imp)
			switch {
			case to > from:
				t.Errorf("%s (%s) imports %s (%s): upward", pkg, fromName, imp, toName)
			case (fromName == "control plane" || fromName == "analyzer") && toName == "agent":
				t.Errorf("%s (%s) imports %s: the control plane and the analyzer never import the agent", pkg, fromName, imp)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d imports between gpuwatch's packages checked", checked)
	}
}

// TestFloorOf pins the classification the layering test relies on.
func TestFloorOf(t *testing.T) {
	for pkg, want := range map[string]string{
		"telemetry/healthreport": "vocabulary and small utilities", "collector/health": "agent",
		"scheduler/drain": "control plane", "internal/auth": "vocabulary and small utilities",
		"internal/server": "assembly", "cmd/gpuwatch": "assembly",
	} {
		if _, got := floorOf(pkg); got != want {
			t.Errorf("%s: %q, want %q", pkg, got, want)
		}
	}
}
