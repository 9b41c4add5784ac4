package main

import (
	"context"
	"fmt"
	"time"
)

// dashQuery is one panel of a dashboard: a PromQL query, instant or over a
// range, and the bound its p99 must stay within.
type dashQuery struct {
	name  string
	expr  string
	rng   time.Duration // 0: an instant query
	step  time.Duration
	bound time.Duration
	lat   histogram
	errs  int
	err   string // the first error
	lastN int    // series in the last answer
}

// dashboard is the fixed set of queries the soak runs every QueryEvery, as a
// Grafana dashboard left open on the fleet would: the panels of
// docs/BENCHMARKS.md's query benchmark, over the last hour. node names one
// node for the per-node panels.
//
// The bounds: that benchmark (1,000 nodes × 24 h, a loaded machine) put every
// per-node and last-hour panel under 0.65 s at p95, so those get 1 s; its
// fleet-wide ranges took seconds over 24 h and the soak's cover an hour
// (1/24 of the samples), so they get 2 s.
func dashboard(node string) []*dashQuery {
	const interactive, fleetRange = time.Second, 2 * time.Second
	return []*dashQuery{
		{name: "fleet utilisation per node, 1 h", expr: `avg by (node) (DCGM_FI_DEV_GPU_UTIL)`, rng: time.Hour, step: time.Minute, bound: fleetRange},
		{name: "fleet power, 1 h", expr: `sum(DCGM_FI_DEV_POWER_USAGE)`, rng: time.Hour, step: time.Minute, bound: fleetRange},
		{name: "hottest GPUs, last hour", expr: `topk(10, max_over_time(DCGM_FI_DEV_GPU_TEMP[1h]))`, bound: interactive},
		{name: "Xid rate now", expr: `sum(rate(gpuwatch_xid_errors_total[1h]))`, bound: interactive},
		{name: "one node's GPUs, 1 h", expr: fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{node=%q}`, node), rng: time.Hour, step: 15 * time.Second, bound: interactive},
		{name: "one node's power, 1 h", expr: fmt.Sprintf(`DCGM_FI_DEV_POWER_USAGE{node=%q}`, node), rng: time.Hour, step: 15 * time.Second, bound: interactive},
	}
}

// runDashboard runs every query once, one after another, at now.
func runDashboard(ctx context.Context, srv *server, qs []*dashQuery, now time.Time) {
	for _, q := range qs {
		t0 := time.Now()
		r, err := srv.query(ctx, q.expr, now.Add(-q.rng), now, q.step)
		d := time.Since(t0)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			q.errs++
			if q.err == "" {
				q.err = err.Error()
			}
			continue
		}
		q.lat.add(d)
		q.lastN = len(r.Data.Result)
	}
}
