package dashboards_test

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/gpuwatch/gpuwatch/alerts"
	"github.com/gpuwatch/gpuwatch/dashboards/internal/grafana"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// dcgmDashboardFile is dcgm-exporter's own dashboard, vendored unchanged.
const dcgmDashboardFile = "testdata/dcgm-exporter/dcgm-exporter-dashboard.json"

// fleetRulesFile is the testdata copy of the fleet recording rules the
// dashboards read (see its header); the data test loads it into the server.
const fleetRulesFile = "testdata/fleet.rules.yml"

// board is a dashboard file, parsed.
type board struct {
	file string
	*grafana.Dashboard
	generated bool // gpuwatch's own (not dcgm-exporter's)
}

// loadBoards reads every dashboard the tests check: gpuwatch's generated
// JSON files and dcgm-exporter's.
func loadBoards(t testing.TB) []board {
	t.Helper()
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no dashboards/*.json: run go generate ./dashboards/")
	}
	var out []board
	for _, f := range append(files, dcgmDashboardFile) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := grafana.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, board{file: f, Dashboard: d, generated: f != dcgmDashboardFile})
	}
	return out
}

// catalog is every series name a dashboard may use, and where it comes from.
type catalog struct {
	agent     map[string]bool // telemetry.Metrics(): the agents' series
	server    map[string]bool // docs/metrics.md "The server's own series"
	recording map[string]bool // recording rules: alerts/*.rules.yml and the testdata copy
	alerting  bool            // some alerting rule exists: ALERTS and ALERTS_FOR_STATE are written
}

func loadCatalog(t testing.TB) *catalog {
	t.Helper()
	c := &catalog{agent: map[string]bool{}, server: map[string]bool{}, recording: map[string]bool{}}
	for _, m := range telemetry.Metrics() {
		c.agent[m.Name] = true
	}
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	c.server, err = serverSeries(doc)
	if err != nil {
		t.Fatalf("docs/metrics.md: %v", err)
	}
	files := alerts.Builtin()
	testdata, err := os.ReadFile(fleetRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	files[fleetRulesFile] = testdata
	p := parser.NewParser(parser.Options{})
	for name, data := range files {
		rgs, errs := rulefmt.Parse(data, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs)
		}
		for _, g := range rgs.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					c.recording[r.Record] = true
				}
				if r.Alert != "" {
					c.alerting = true
				}
			}
		}
	}
	return c
}

// serverSeries reads the series names of the table under "## The server's own
// series" in docs/metrics.md. A cell lists names in backquotes, labels in
// braces after them; a name starting with "_" continues the family of the
// first full name in its cell (`gpuwatch_placement_decisions_total`,
// `_latency_seconds` is gpuwatch_placement_latency_seconds).
func serverSeries(doc []byte) (map[string]bool, error) {
	out := map[string]bool{}
	in := false
	code := regexp.MustCompile("`([^`]+)`")
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## The server's own series")
			continue
		}
		if !in || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| family") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		family := ""
		for _, m := range code.FindAllStringSubmatch(cells[2], -1) {
			name, _, _ := strings.Cut(m[1], "{")
			if strings.HasPrefix(name, "_") {
				if family == "" {
					return nil, fmt.Errorf("%q continues no family", line)
				}
				name = family + name
			} else if parts := strings.SplitN(name, "_", 3); len(parts) == 3 && family == "" {
				family = parts[0] + "_" + parts[1]
			}
			out[name] = true
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf(`no series under "## The server's own series"`)
	}
	return out, nil
}

// origin says where a series a query names comes from, or "" when nowhere.
func (c *catalog) origin(name string) string {
	switch {
	case c.agent[name]:
		return "agent"
	case c.server[name]:
		return "server"
	case c.recording[name]:
		return "recording rule"
	case (name == "ALERTS" || name == "ALERTS_FOR_STATE") && c.alerting:
		return "alerting rules"
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && c.server[base] {
			return "server"
		}
	}
	return ""
}

// serverName is the documented server series a name belongs to (a
// histogram's series belong to the histogram), or "".
func (c *catalog) serverName(name string) string {
	if c.server[name] {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && c.server[base] {
			return base
		}
	}
	return ""
}

// metricNames are the series names an expression selects.
func metricNames(e parser.Expr) []string {
	seen := map[string]bool{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && name == "" {
					name = m.Value
				}
			}
			if name != "" {
				seen[name] = true
			}
		}
		return nil
	})
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
