package main

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/gpuwatch/gpuwatch/alerts"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// fleetRules is the built-in rule file whose recording rules serve the fleet
// dashboards.
const fleetRules = "fleet.rules.yml"

// recorder evaluates the recording rules of fleetRules the way the server's
// rules manager does, but in the dataset's simulated time: every group
// interval, each rule in order as an instant query at that time through the
// server's engine, the answer appended to the store under the rule's name. It
// measures what one evaluation of the group costs.
type recorder struct {
	srv      *server.Server
	group    string
	interval time.Duration
	rules    []rulefmt.Rule
	next     time.Time
	evals    []time.Duration
	samples  int
}

func newRecorder(srv *server.Server) (*recorder, error) {
	b, ok := alerts.Builtin()[fleetRules]
	if !ok {
		return nil, fmt.Errorf("no built-in %s", fleetRules)
	}
	rgs, errs := rulefmt.Parse(b, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %v", fleetRules, errs)
	}
	r := &recorder{srv: srv}
	for _, g := range rgs.Groups {
		for _, rl := range g.Rules {
			if rl.Record != "" {
				r.rules = append(r.rules, rl)
			}
		}
		if r.group == "" {
			r.group, r.interval = g.Name, time.Duration(g.Interval)
		}
	}
	if r.interval <= 0 {
		r.interval = time.Minute
	}
	if len(r.rules) == 0 {
		return nil, fmt.Errorf("%s has no recording rules", fleetRules)
	}
	return r, nil
}

// evaluate runs the group at every interval boundary up to at.
func (r *recorder) evaluate(ctx context.Context, at time.Time) error {
	if r.next.IsZero() {
		r.next = at.Truncate(r.interval)
		if r.next.Before(at) {
			r.next = r.next.Add(r.interval)
		}
	}
	for !r.next.After(at) {
		t0 := time.Now()
		for _, rl := range r.rules {
			v, err := r.srv.Querier().Instant(ctx, rl.Expr, r.next)
			if err != nil {
				return fmt.Errorf("recording rule %s: %w", rl.Record, err)
			}
			batch := make([]telemetry.Sample, 0, len(v))
			for _, sm := range v {
				kv := make([]string, 0, 2*len(sm.Labels)+2*len(rl.Labels))
				for _, l := range sm.Labels {
					if l.Name != model.MetricNameLabel {
						kv = append(kv, l.Name, l.Value)
					}
				}
				for k, val := range rl.Labels {
					kv = append(kv, k, val)
				}
				batch = append(batch, telemetry.Sample{Name: rl.Record, Labels: telemetry.NewLabels(kv...), Value: sm.Value, Time: r.next})
			}
			if err := r.srv.Appender().Append(ctx, batch); err != nil {
				return fmt.Errorf("recording rule %s: %w", rl.Record, err)
			}
			r.samples += len(batch)
		}
		r.evals = append(r.evals, time.Since(t0))
		r.next = r.next.Add(r.interval)
	}
	return nil
}

func (r *recorder) print() {
	if len(r.evals) == 0 {
		return
	}
	ds := append([]time.Duration(nil), r.evals...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	fmt.Printf("recording rules: %d evaluations of %d rules wrote %d samples; one evaluation of the group (what the server pays every %s): p50 %s, p95 %s, max %s, total %s\n",
		len(ds), len(r.rules), r.samples, r.interval, quantile(ds, 0.5).Round(time.Millisecond/10), quantile(ds, 0.95).Round(time.Millisecond/10),
		ds[len(ds)-1].Round(time.Millisecond/10), total.Round(time.Second))
}
