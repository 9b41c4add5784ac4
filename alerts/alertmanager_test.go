package alerts

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// alertmanagerConfig is the example routing and inhibition configuration.
const alertmanagerConfig = "../deploy/alertmanager/alertmanager.yml"

// TestAlertmanagerConfig checks the example Alertmanager configuration with
// Debian's amtool: it loads (`amtool check-config`), each severity reaches its
// receiver and the watchdog the dead-man's switch (`amtool config routes
// test`), and every alert name it matches is one of ours.
func TestAlertmanagerConfig(t *testing.T) {
	b, err := os.ReadFile(alertmanagerConfig)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range ruleFiles(t) {
		for _, g := range parse(t, f).Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					names[r.Alert] = true
				}
			}
		}
	}
	for _, m := range regexp.MustCompile(`Gpuwatch[A-Za-z]+`).FindAllString(string(b), -1) {
		if !names[m] {
			t.Errorf("%s names %s, which is no alert", alertmanagerConfig, m)
		}
	}

	amtool, err := exec.LookPath("amtool")
	if err != nil {
		if os.Getenv("GPUWATCH_REQUIRE_REALSTORE") == "1" {
			t.Fatal("amtool is not installed; `sudo make test-deps` installs Debian's prometheus-alertmanager")
		}
		t.Skip("amtool is not installed (Debian prometheus-alertmanager); make test-deps installs it")
	}
	if out, err := exec.Command(amtool, "check-config", alertmanagerConfig).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	for _, c := range []struct {
		labels   []string
		receiver string
	}{
		{[]string{"alertname=GpuwatchGPULost", "severity=critical", "node=gpu01", "gpu_index=3"}, "gpuwatch-pager"},
		{[]string{"alertname=GpuwatchNodeOutOfService", "severity=critical", "node=gpu01"}, "gpuwatch-pager"},
		{[]string{"alertname=GpuwatchNVLinkErrors", "severity=warning", "node=gpu01"}, "gpuwatch-tickets"},
		{[]string{"alertname=GpuwatchIdleAllocation", "severity=info", "node=gpu01"}, "gpuwatch-quiet"},
		{[]string{"alertname=GpuwatchWatchdog", "severity=info"}, "gpuwatch-deadman"},
		{[]string{"alertname=SomethingElse"}, "gpuwatch-tickets"},
	} {
		args := append([]string{"config", "routes", "test", "--config.file=" + alertmanagerConfig}, c.labels...)
		out, err := exec.Command(amtool, args...).Output() // stderr may warn about an amtool config file
		if got := strings.TrimSpace(string(out)); err != nil || got != c.receiver {
			t.Errorf("amtool config routes test %v: %q (%v), want %s", c.labels, got, err, c.receiver)
		}
	}
}
