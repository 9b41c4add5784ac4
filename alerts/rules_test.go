package alerts

import (
	"os"
	"os/exec"
	"testing"
)

// TestRules runs Prometheus's own promtool on the rules: syntax, and the unit
// tests in gpuwatch.rules.test.yml (the budget alert fires, the KAI and Slurm
// recording rules give the worked example's numbers).
func TestRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("GPUWATCH_REQUIRE_REALSTORE") == "1" {
			t.Fatal("promtool is not installed; `sudo make test-deps` installs Debian's prometheus")
		}
		t.Skip("promtool is not installed (Debian prometheus); make test-deps installs it")
	}
	for _, args := range [][]string{{"check", "rules", "gpuwatch.rules.yml"}, {"test", "rules", "gpuwatch.rules.test.yml"}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
