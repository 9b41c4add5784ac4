package grafana

import (
	"strings"
	"testing"
	"time"
)

// TestInterpolate pins the Grafana behaviours the dashboards' tests rely on.
func TestInterpolate(t *testing.T) {
	vars := []Variable{
		{Name: "node", Type: "query"},
		{Name: "gpu", Type: "query", Multi: true, IncludeAll: true},
		{Name: "instance", Type: "query", Multi: true, IncludeAll: true},
		{Name: "any", Type: "query", IncludeAll: true, AllValue: ".*"},
	}
	s := NewScope(vars, 10*time.Minute, 1000, 10*time.Second)
	s.Selected = map[string]Selection{
		"node":     {Values: []string{"node-01"}},
		"gpu":      {Values: []string{"0", "1"}, All: true},
		"instance": {Values: []string{"10.0.0.1:9400"}},
		"any":      {Values: []string{"a", "b"}, All: true},
	}
	for _, c := range []struct{ in, want string }{
		// A single-value variable goes in as it is.
		{`x{node="$node"}`, `x{node="node-01"}`},
		// All is an alternation of every value; a regex metacharacter is
		// escaped for the regex and the backslash for the PromQL string.
		{`x{gpu=~"$gpu"}`, `x{gpu=~"(0|1)"}`},
		{`x{instance=~"${instance}"}`, `x{instance=~"10\\.0\\.0\\.1:9400"}`},
		// A custom all value goes in unformatted.
		{`x{a=~"[[any]]"}`, `x{a=~".*"}`},
		// Built-ins: a 10-minute range at 1000 points is a 1 s interval,
		// raised to the 10 s scrape interval; $__rate_interval is
		// max(interval + scrape, 4 × scrape).
		{`rate(x[$__rate_interval])`, `rate(x[40s])`},
		{`increase(x[$__range])`, `increase(x[600s])`},
		{`$__interval`, `10s`},
		// label_replace's group references are not variables.
		{`label_replace(x, "a", "$1", "b", "(.*)")`, `label_replace(x, "a", "$1", "b", "(.*)")`},
	} {
		got, err := s.Interpolate(c.in)
		if err != nil || got != c.want {
			t.Errorf("Interpolate(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	// "All" over no values is the empty alternation.
	s.Selected["gpu"] = Selection{All: true}
	if got, _ := s.Interpolate(`$gpu`); got != "()" {
		t.Errorf("All over nothing: %q, want ()", got)
	}
	if _, err := s.Interpolate(`x{node="$nodes"}`); err == nil || !strings.Contains(err.Error(), "nodes") {
		t.Errorf("an unknown variable: %v, want an error naming it", err)
	}
}

func TestOptions(t *testing.T) {
	v := Variable{Name: "gpu", Sort: 3}
	got, err := v.Options([]string{"10", "2", "1", "2"})
	if err != nil || strings.Join(got, ",") != "1,2,10" {
		t.Errorf("numerical sort: %v %v", got, err)
	}
	v = Variable{Name: "node", Sort: 7, Regex: "/node-(.*)/"}
	if got, _ = v.Options([]string{"node-10", "node-2", "other"}); strings.Join(got, ",") != "2,10" {
		t.Errorf("regex and natural sort: %v", got)
	}
	for _, c := range []struct{ q, label, match string }{
		{"label_values(node)", "node", ""},
		{`label_values(gpuwatch_gpu_info{node=~"$node"}, gpu_index)`, "gpu_index", `gpuwatch_gpu_info{node=~"$node"}`},
	} {
		lv, err := ParseLabelValues(c.q)
		if err != nil || lv.Label != c.label || lv.Match != c.match {
			t.Errorf("ParseLabelValues(%s) = %+v, %v", c.q, lv, err)
		}
	}
}
