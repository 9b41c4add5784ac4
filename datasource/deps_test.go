package datasource_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBackendLinks: the plugin's backend reads the analyzer's answer types and
// nothing of the server (the store, PromQL, the Kubernetes client, the
// server's assembly) or of gpuwatch's tests. (It links the testing package
// anyway: hashicorp/go-plugin, the SDK's plugin host, has test helpers in a
// non-test file.)
func TestBackendLinks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./cmd/gpx_gpuwatch").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	links := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		links[p] = true
		for _, banned := range []string{
			"github.com/gpuwatch/gpuwatch/internal/server",
			"github.com/gpuwatch/gpuwatch/telemetry/store/embedded",
			"github.com/gpuwatch/gpuwatch/test",
			"github.com/prometheus/prometheus/tsdb",
			"github.com/prometheus/prometheus/promql",
			"k8s.io/client-go",
		} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("the plugin's backend links %s", p)
			}
		}
	}
	for _, must := range []string{"github.com/gpuwatch/gpuwatch/datasource", "github.com/gpuwatch/gpuwatch/analyzer/report",
		"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"} {
		if !links[must] {
			t.Errorf("the plugin's backend does not link %s", must)
		}
	}
}
