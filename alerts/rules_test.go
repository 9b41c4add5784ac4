package alerts

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

// runbookDir is where the runbook pages live, relative to this package.
const runbookDir = "../docs/runbooks"

// watchdog always fires, by design, and concerns no node.
const watchdog = "GpuwatchWatchdog"

// ruleFiles are the rule files of this directory (the ones Builtin embeds).
func ruleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.rules.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.rules.yml here: %v", err)
	}
	sort.Strings(files)
	return files
}

// parse reads a rule file with the Prometheus version the server runs.
func parse(t *testing.T, file string) *rulefmt.RuleGroups {
	t.Helper()
	rgs, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%v", err)
	}
	if rgs == nil {
		t.FailNow()
	}
	return rgs
}

// unitTests is the part of a promtool test file this test reads.
type unitTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestRuleFiles checks, without promtool, what promtool does not: one group
// per file and one test file per group, loading only that file; every alert
// with a severity (critical, warning or info), a summary, a description and
// a runbook_url; each built-in runbook link is RunbookBase + the alert's
// name + ".md" and that page exists in docs/runbooks; every page there
// belongs to an alert; every alert is tested both firing and not firing.
func TestRuleFiles(t *testing.T) {
	alerts := map[string]string{} // alert name → file
	for _, f := range ruleFiles(t) {
		rgs := parse(t, f)
		if len(rgs.Groups) != 1 {
			t.Errorf("%s has %d groups: want one group per file (and one test file per group)", f, len(rgs.Groups))
		}
		testFile := strings.TrimSuffix(f, ".yml") + ".test.yml"
		b, err := os.ReadFile(testFile)
		if err != nil {
			t.Errorf("%s has no test file: %v", f, err)
			continue
		}
		var ut unitTests
		if err := yaml.Unmarshal(b, &ut); err != nil {
			t.Errorf("%s: %v", testFile, err)
			continue
		}
		if !slices.Equal(ut.RuleFiles, []string{f}) {
			t.Errorf("%s loads %v: want only %s", testFile, ut.RuleFiles, f)
		}
		firing, quiet := map[string]bool{}, map[string]bool{}
		for _, tc := range ut.Tests {
			for _, at := range tc.AlertRuleTest {
				if len(at.ExpAlerts) > 0 {
					firing[at.Alertname] = true
				} else {
					quiet[at.Alertname] = true
				}
			}
		}
		for _, g := range rgs.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				if prev, ok := alerts[r.Alert]; ok {
					t.Errorf("alert %s is in %s and %s", r.Alert, prev, f)
				}
				alerts[r.Alert] = f
				if !strings.HasPrefix(r.Alert, "Gpuwatch") {
					t.Errorf("%s: alert %s: gpuwatch's alerts are named Gpuwatch…", f, r.Alert)
				}
				switch r.Labels["severity"] {
				case "critical", "warning", "info":
				default:
					t.Errorf("%s: alert %s: severity %q: want critical, warning or info", f, r.Alert, r.Labels["severity"])
				}
				for _, a := range []string{"summary", "description", "runbook_url"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						t.Errorf("%s: alert %s has no %s", f, r.Alert, a)
					}
				}
				if r.Alert != watchdog && !strings.Contains(r.Annotations["summary"], "{{") {
					t.Errorf("%s: alert %s: the summary names nothing (node, GPU, port, action, numbers): %q", f, r.Alert, r.Annotations["summary"])
				}
				if want := RunbookBase + r.Alert + ".md"; r.Annotations["runbook_url"] != want {
					t.Errorf("%s: alert %s: runbook_url %q, want %q", f, r.Alert, r.Annotations["runbook_url"], want)
				}
				if _, err := os.Stat(filepath.Join(runbookDir, r.Alert+".md")); err != nil {
					t.Errorf("%s: alert %s: no runbook page: %v", f, r.Alert, err)
				}
				if !firing[r.Alert] {
					t.Errorf("%s: alert %s is never tested firing", testFile, r.Alert)
				}
				if !quiet[r.Alert] && r.Alert != watchdog {
					t.Errorf("%s: alert %s is never tested not firing", testFile, r.Alert)
				}
			}
		}
	}
	pages, err := filepath.Glob(filepath.Join(runbookDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := strings.TrimSuffix(filepath.Base(p), ".md")
		if name == "README" {
			continue
		}
		if _, ok := alerts[name]; !ok {
			t.Errorf("%s belongs to no alert", p)
		}
	}
	if len(Builtin()) != len(ruleFiles(t)) {
		t.Errorf("Builtin embeds %d files, the directory has %d", len(Builtin()), len(ruleFiles(t)))
	}
	t.Logf("%d alerts in %d files, each with a runbook", len(alerts), len(ruleFiles(t)))
}

// TestRunbookIndex: docs/runbooks/README.md links every page.
func TestRunbookIndex(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(runbookDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(runbookDir, "Gpuwatch*.md"))
	for _, p := range pages {
		if !strings.Contains(string(b), "("+filepath.Base(p)+")") {
			t.Errorf("docs/runbooks/README.md does not link %s", filepath.Base(p))
		}
	}
}

// TestPromtool runs Prometheus's own promtool on the rules: `promtool check
// rules` on every rule file and `promtool test rules` on every test file.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("GPUWATCH_REQUIRE_REALSTORE") == "1" {
			t.Fatal("promtool is not installed; `sudo make test-deps` installs Debian's prometheus")
		}
		t.Skip("promtool is not installed (Debian prometheus); make test-deps installs it")
	}
	files := ruleFiles(t)
	out, err := exec.Command(promtool, append([]string{"check", "rules"}, files...)...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	tests, _ := filepath.Glob("*.rules.test.yml")
	if len(tests) != len(files) {
		t.Errorf("%d test files for %d rule files", len(tests), len(files))
	}
	for _, f := range tests {
		t.Run(f, func(t *testing.T) {
			out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput()
			if err != nil {
				t.Errorf("promtool test rules %s: %v\n%s", f, err, out)
			}
		})
	}
}

// TestVmalert checks the same files load in VictoriaMetrics's vmalert
// (`vmalert -dryRun`: expressions and templates), the evaluator docs/alerts.md
// gives for --store.url with VictoriaMetrics.
func TestVmalert(t *testing.T) {
	vmalert, err := exec.LookPath("vmalert")
	if err != nil {
		if os.Getenv("GPUWATCH_REQUIRE_REALSTORE") == "1" {
			t.Fatal("vmalert is not installed; `sudo make test-deps` installs Debian's victoria-metrics")
		}
		t.Skip("vmalert is not installed (Debian victoria-metrics); make test-deps installs it")
	}
	for _, f := range ruleFiles(t) {
		out, err := exec.Command(vmalert, "-dryRun", "-rule="+f).CombinedOutput()
		if err != nil {
			t.Errorf("vmalert -dryRun -rule=%s: %v\n%s", f, err, out)
		}
	}
}
