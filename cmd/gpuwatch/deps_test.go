package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode: no package of gpuwatch's that the shipped binary
// links imports the testing package (test helpers such as test/realslurm wrap
// internal launchers instead). Third-party packages are out of our hands:
// Prometheus's tsdb and go-dcgm import testing themselves, so the check is on
// our own packages, by what each imports directly.
func TestBinaryLinksNoTestCode(t *testing.T) {
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
