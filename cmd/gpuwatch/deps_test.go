package main

import (
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
