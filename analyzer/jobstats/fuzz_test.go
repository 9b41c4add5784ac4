package jobstats

import (
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// FuzzParseQuery: any job id and query string either is refused with an error
// or gives options Compute accepts, at a step of a minute or more and no more
// than MaxSteps (+1 for rounding) steps; and the job's selector is PromQL
// that matches exactly that id (no injection through the id).
func FuzzParseQuery(f *testing.F) {
	for _, s := range [][2]string{{"4242", ""}, {"ml/trainer-0", "last=24h"}, {`a"b`, "idle_below=10%&idle_for=1h"},
		{"x", "from=2026-11-08T00:00:00Z&to=2026-11-01T00:00:00Z"}, {"x", "last=9999999h"}, {"x\\\"}", "idle_below=0.5"}, {"", ""}} {
		f.Add(s[0], s[1])
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	name := func(p string) string { return p }
	f.Fuzz(func(t *testing.T, job, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, err := ParseQuery(job, v, now, name)
		if err != nil {
			return
		}
		c := o
		if err := c.defaults(); err != nil {
			t.Fatalf("%q %q parsed but Compute refuses it: %v", job, raw, err)
		}
		if c.Step < time.Minute || c.To.Sub(c.From)/c.Step > MaxSteps+1 || !c.To.After(c.From) {
			t.Fatalf("%q: step %s over %s", raw, c.Step, c.To.Sub(c.From))
		}
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector("m" + Selector(job))
		if err != nil {
			t.Fatalf("job %q: selector %s: %v", job, Selector(job), err)
		}
		got := map[string]string{}
		for _, m := range ms {
			got[m.Name] = m.Value
		}
		if ns, pod, ok := cutPod(job); ok {
			if got["namespace"] != ns || got["pod"] != pod || len(ms) != 3 {
				t.Fatalf("job %q: matchers %v", job, ms)
			}
		} else if got["job_id"] != job || len(ms) != 2 {
			t.Fatalf("job %q: matchers %v", job, ms)
		}
	})
}
