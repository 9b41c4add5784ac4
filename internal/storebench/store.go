package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// dataset is what gets written into an embedded store in simulated time.
type dataset struct {
	t       *template
	nodes   int
	step    time.Duration
	hours   float64
	metrics map[string]bool // the template's metric names kept; nil: all
	xid     bool            // add gpuwatch_xid_errors_total{xid="13",action=<catalog>} per GPU
	// after, when set, runs after each cycle is written, with its time (the
	// recording rules evaluated as the server would, in simulated time).
	after func(at time.Time) error
}

// seriesSpec is one series of the dataset on one node.
type seriesSpec struct {
	name   string
	labels telemetry.Labels
	tmpl   int // template series index; -1 for the synthetic xid counter
	node   int
}

func (d *dataset) specs() []seriesSpec {
	var out []seriesSpec
	for n := range d.nodes {
		for i, s := range d.t.series {
			name := seriesName(s.labels)
			keep := d.metrics == nil || d.metrics[name]
			xid := d.xid && name == "DCGM_FI_DEV_XID_ERRORS"
			if !keep && !xid {
				continue
			}
			var kv []string
			for _, l := range d.t.replicaLabels(i, n) {
				if l.Name != "__name__" {
					kv = append(kv, l.Name, l.Value)
				}
			}
			if keep {
				out = append(out, seriesSpec{name: name, labels: telemetry.NewLabels(kv...), tmpl: i, node: n})
			}
			if xid {
				out = append(out, seriesSpec{name: telemetry.MetricXidErrorsTotal, labels: telemetry.NewLabels(append(kv, "xid", "13", telemetry.LabelAction, xidAction(13))...), tmpl: -1, node: n})
			}
		}
	}
	return out
}

// xidAction is the catalog's action class of an Xid, the action label the
// agent puts on gpuwatch_xid_errors_total.
func xidAction(code int) string {
	x, _ := telemetry.LookupXid(code)
	return string(x.Action)
}

// xidValue is a synthetic Xid counter: it steps up on about one sample in
// 20,000, a few events per node and day.
func xidValue(spec int, c int) float64 {
	v := 0
	for k := 0; k <= c; k += 997 {
		h := uint32(spec*2654435761) ^ uint32(k*40503)
		if h%20 == 0 {
			v++
		}
	}
	return float64(v)
}

// write appends the dataset through st in cycle order, every node's samples
// of one cycle in a few large batches, on every core; it returns the samples
// written.
func (d *dataset) write(ctx context.Context, app interface {
	Append(context.Context, []telemetry.Sample) error
}, end time.Time, progress func(c, cycles int)) (int, error) {
	specs := d.specs()
	cycles := int(time.Duration(d.hours*float64(time.Hour)) / d.step)
	start := end.Add(-time.Duration(cycles-1) * d.step)
	tmplPer := int(d.step / (10 * time.Second)) // template cycles per step
	if tmplPer < 1 {
		tmplPer = 1
	}
	workers := runtime.GOMAXPROCS(0)
	parts := make([][]seriesSpec, workers)
	for w := range parts {
		lo, hi := len(specs)*w/workers, len(specs)*(w+1)/workers
		parts[w] = specs[lo:hi]
	}
	bufs := make([][]telemetry.Sample, workers)
	for w := range bufs {
		bufs[w] = make([]telemetry.Sample, len(parts[w]))
		for k, s := range parts[w] {
			bufs[w][k] = telemetry.Sample{Name: s.name, Labels: s.labels}
		}
	}
	const batch = 20000
	for c := range cycles {
		at := start.Add(time.Duration(c) * d.step)
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := bufs[w]
				for k, s := range parts[w] {
					buf[k].Time = at
					if s.tmpl < 0 {
						buf[k].Value = xidValue(s.node*64+k, c)
					} else {
						buf[k].Value = d.t.value(s.tmpl, s.node, c*tmplPer)
					}
				}
				for lo := 0; lo < len(buf); lo += batch {
					if err := app.Append(ctx, buf[lo:min(lo+batch, len(buf))]); err != nil {
						errs[w] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return 0, fmt.Errorf("cycle %d at %s: %w", c, at.Format(time.RFC3339), err)
			}
		}
		if d.after != nil {
			if err := d.after(at); err != nil {
				return 0, fmt.Errorf("cycle %d at %s: %w", c, at.Format(time.RFC3339), err)
			}
		}
		if progress != nil {
			progress(c, cycles)
		}
	}
	return cycles * len(specs), nil
}

// blockStats sums the TSDB's persisted blocks in dir.
type blockStats struct {
	blocks          int
	samples, series uint64
	bytes, index    int64
	wal, headChunks int64
	ranges          []string
}

func readBlocks(dir string) (blockStats, error) {
	var bs blockStats
	ents, err := os.ReadDir(dir)
	if err != nil {
		return bs, err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		switch e.Name() {
		case "wal":
			bs.wal = dirSize(p)
			continue
		case "chunks_head":
			bs.headChunks = dirSize(p)
			continue
		}
		b, err := os.ReadFile(filepath.Join(p, "meta.json"))
		if err != nil {
			continue
		}
		var meta struct {
			MinTime, MaxTime int64
			Stats            struct {
				NumSamples, NumSeries uint64
			}
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			return bs, fmt.Errorf("%s: %w", filepath.Join(p, "meta.json"), err)
		}
		bs.blocks++
		bs.samples += meta.Stats.NumSamples
		bs.series += meta.Stats.NumSeries
		bs.bytes += dirSize(p)
		if st, err := os.Stat(filepath.Join(p, "index")); err == nil {
			bs.index += st.Size()
		}
		bs.ranges = append(bs.ranges, shortDur((time.Duration(meta.MaxTime-meta.MinTime) * time.Millisecond).Round(time.Minute)))
	}
	return bs, nil
}

func dirSize(p string) int64 {
	var n int64
	filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// waitCompaction waits until the data directory has no temporary block
// directories and its blocks have not changed for quiet.
func waitCompaction(dir string, quiet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last, since := "", time.Now()
	for time.Now().Before(deadline) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		var names []string
		busy := false
		for _, e := range ents {
			names = append(names, e.Name())
			busy = busy || strings.Contains(e.Name(), ".tmp")
		}
		cur := strings.Join(names, ",")
		if cur != last || busy {
			last, since = cur, time.Now()
		} else if time.Since(since) >= quiet {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("the TSDB in %s was still compacting after %s", dir, timeout)
}

// openServer opens a gpuwatch server (embedded store) in a new directory and
// serves its handler on loopback.
func openServer(retention time.Duration) (*server.Server, *httptest.Server, string, error) {
	dir, err := os.MkdirTemp("", "gpuwatch-storebench-data-")
	if err != nil {
		return nil, nil, "", err
	}
	srv, err := server.New(server.Options{DataDir: dir, Retention: retention, OutOfOrderWindow: 2 * time.Hour, Version: "storebench"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, "", err
	}
	return srv, httptest.NewServer(srv.Handler()), dir, nil
}

func fill(ctx context.Context, d *dataset, srv *server.Server, dir string, end time.Time) (int, time.Duration, blockStats, error) {
	t0 := time.Now()
	cpu0 := selfCPU()
	lastPct := -1
	n, err := d.write(ctx, srv.Appender(), end, func(c, cycles int) {
		if pct := 100 * (c + 1) / cycles; pct/10 != lastPct/10 {
			lastPct = pct
			fmt.Printf("  written %3d%% (%d of %d cycles) in %s\n", pct, c+1, cycles, time.Since(t0).Round(time.Second))
		}
	})
	if err != nil {
		return 0, 0, blockStats{}, err
	}
	wall := time.Since(t0)
	fmt.Printf("wrote %d samples in %s = %.0f samples/s through embedded.Store.Append (process CPU %s), load %s\n",
		n, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), (selfCPU() - cpu0).Round(time.Millisecond), loadavg())
	t1 := time.Now()
	if err := waitCompaction(dir, 10*time.Second, 20*time.Minute); err != nil {
		return 0, 0, blockStats{}, err
	}
	bs, err := readBlocks(dir)
	if err != nil {
		return 0, 0, blockStats{}, err
	}
	fmt.Printf("compaction settled %s after the last append\n", time.Since(t1).Round(time.Second))
	return n, wall, bs, nil
}

func printBlocks(bs blockStats, seriesPerNode int, step time.Duration) {
	if bs.samples == 0 {
		fmt.Println("no persisted blocks yet: write more hours (the head is compacted once it spans 3 h)")
		return
	}
	bps := float64(bs.bytes) / float64(bs.samples)
	fmt.Printf("blocks: %d (spans %s), %d samples, %d series-blocks, %.1f MiB on disk (index %.1f MiB, %.0f%%): %.3f bytes per sample\n",
		bs.blocks, strings.Join(bs.ranges, " "), bs.samples, bs.series, float64(bs.bytes)/mib, float64(bs.index)/mib, 100*float64(bs.index)/float64(bs.bytes), bps)
	fmt.Printf("head (not yet in blocks): WAL %.1f MiB, head chunks %.1f MiB\n", float64(bs.wal)/mib, float64(bs.headChunks)/mib)
	perDay := float64(seriesPerNode) * 1000 * float64(24*time.Hour/step)
	fmt.Printf("per 1,000 nodes and day at %s: %d series × 1,000 × %d samples = %.3g samples × %.3f B = %.1f GiB\n",
		step, seriesPerNode, int(24*time.Hour/step), perDay, bps, perDay*bps/(1<<30))
}

// runDisk writes N nodes' full shipped series in simulated time and measures
// bytes per sample in the compacted blocks.
func runDisk(args []string) error {
	fs := flag.NewFlagSet("storebench disk", flag.ContinueOnError)
	nodes := fs.Int("nodes", 20, "simulated nodes")
	hours := fs.Float64("hours", 8, "simulated hours written (the last 3 h stay in the head)")
	step := fs.Duration("step", 10*time.Second, "sample interval")
	keep := fs.Bool("keep", false, "keep the data directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := simulateTemplate(90, 1)
	if err != nil {
		return err
	}
	d := &dataset{t: t, nodes: *nodes, step: *step, hours: *hours}
	fmt.Printf("storebench disk: %d nodes × %d series (every shipped series of one real agent) every %s for %g simulated hours into the embedded store; values replayed from %d full cycles of the simulated node; %s %d CPUs, load %s\n",
		*nodes, len(t.series), *step, *hours, len(t.values), runtime.Version(), runtime.NumCPU(), loadavg())
	srv, hs, dir, err := openServer(0)
	if err != nil {
		return err
	}
	defer func() {
		hs.Close()
		srv.Close(context.Background())
		if !*keep {
			os.RemoveAll(dir)
		} else {
			fmt.Println("data directory kept:", dir)
		}
	}()
	end := time.Now().Truncate(time.Minute)
	_, _, bs, err := fill(context.Background(), d, srv, dir, end)
	if err != nil {
		return err
	}
	printBlocks(bs, len(t.series), *step)
	return nil
}

// dashboardMetrics are the template metrics the query dataset keeps.
var dashboardMetrics = []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED",
	telemetry.MetricGPUHealthState, telemetry.MetricGPUAllocationInfo}

// runQuery fills an embedded store with the dashboards' series of many nodes
// over a day and times the dashboard queries through the HTTP API.
func runQuery(args []string) error {
	fs := flag.NewFlagSet("storebench query", flag.ContinueOnError)
	nodes := fs.Int("nodes", 1000, "simulated nodes")
	hours := fs.Float64("hours", 24, "simulated hours written")
	step := fs.Duration("step", 10*time.Second, "sample interval")
	runs := fs.Int("runs", 10, "timed runs of each query (after one untimed)")
	withRules := fs.Bool("rules", true, "evaluate the recording rules of alerts/"+fleetRules+" every interval of simulated time while writing, and time the dashboard panels on the recorded series beside the raw queries")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := simulateTemplate(90, 1)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, m := range dashboardMetrics {
		keep[m] = true
	}
	d := &dataset{t: t, nodes: *nodes, step: *step, hours: *hours, metrics: keep, xid: true}
	perNode := len(d.specs()) / *nodes
	fmt.Printf("storebench query: %d nodes × %d series (%s per GPU, plus %s{xid=\"13\"} per GPU) every %s for %g simulated hours; %s %d CPUs, load %s\n",
		*nodes, perNode, strings.Join(dashboardMetrics, ", "), telemetry.MetricXidErrorsTotal, *step, *hours, runtime.Version(), runtime.NumCPU(), loadavg())
	srv, hs, dir, err := openServer(0)
	if err != nil {
		return err
	}
	defer func() {
		hs.Close()
		srv.Close(context.Background())
		os.RemoveAll(dir)
	}()
	ctx := context.Background()
	end := time.Now().Truncate(time.Minute)
	var rec *recorder
	if *withRules {
		if rec, err = newRecorder(srv); err != nil {
			return err
		}
		d.after = func(at time.Time) error { return rec.evaluate(ctx, at) }
		fmt.Printf("recording rules: %d of group %s (alerts/%s) evaluated every %s of simulated time while writing\n",
			len(rec.rules), rec.group, fleetRules, rec.interval)
	}
	if _, _, bs, err := fill(ctx, d, srv, dir, end); err != nil {
		return err
	} else {
		printBlocks(bs, perNode, *step)
	}
	if rec != nil {
		rec.print()
	}
	span := time.Duration(*hours * float64(time.Hour))
	node := nodeName(min(42, *nodes-1))
	type query struct {
		what, q       string
		rangeOf, step time.Duration // 0: instant
		want          int
	}
	queries := []query{
		{"fleet utilisation per node, range", `avg by (node) (DCGM_FI_DEV_GPU_UTIL)`, span, 5 * time.Minute, *nodes},
		{"fleet power, range", `sum(DCGM_FI_DEV_POWER_USAGE)`, span, 5 * time.Minute, 1},
		{"hottest GPUs over the last hour, instant", `topk(10, max_over_time(DCGM_FI_DEV_GPU_TEMP[1h]))`, 0, 0, 10},
		{"Xid rate, instant", `sum(rate(gpuwatch_xid_errors_total[1h]))`, 0, 0, 1},
		{"Xid rate, range", `sum(rate(gpuwatch_xid_errors_total[1h]))`, span, 5 * time.Minute, 1},
		{"Xid rate by action class, range", `sum by (action) (rate(gpuwatch_xid_errors_total[1h]))`, span, 5 * time.Minute, 1},
		{"GPUs by health state, range", `count_values("state", gpuwatch_gpu_health_state)`, span, 5 * time.Minute, 1},
		{"GPUs allocated, range", `count(count by (node, gpu_uuid) (gpuwatch_gpu_allocation_info))`, span, 5 * time.Minute, 1},
		{"GPUs measured, range", `sum(DCGM_FI_DEV_GPU_UTIL) / 100`, span, 5 * time.Minute, 1},
		{"one node's GPUs, 6 h range", `DCGM_FI_DEV_GPU_UTIL{node="` + node + `"}`, min(6*time.Hour, span), 15 * time.Second, 8},
		{"one node's power, 6 h range", `DCGM_FI_DEV_POWER_USAGE{node="` + node + `"}`, min(6*time.Hour, span), 15 * time.Second, 8},
	}
	if rec != nil {
		// The same fleet panels on the recording rules' series.
		queries = append(queries,
			query{"recorded: fleet utilisation per node, range", `gpuwatch:node_gpu_utilization:avg`, span, 5 * time.Minute, *nodes},
			query{"recorded: fleet power, range", `gpuwatch:fleet_power_watts:sum`, span, 5 * time.Minute, 1},
			query{"recorded: Xid rate, range", `sum(avg_over_time(gpuwatch:fleet_xid_errors:rate5m[1h]))`, span, 5 * time.Minute, 1},
			query{"recorded: Xid rate by action class, range", `avg_over_time(gpuwatch:fleet_xid_errors:rate5m[1h])`, span, 5 * time.Minute, 1},
			query{"recorded: GPUs by health state, range", `gpuwatch:fleet_gpus:by_health_state`, span, 5 * time.Minute, 1},
			query{"recorded: GPUs allocated, range", `gpuwatch:fleet_gpus_allocated:count`, span, 5 * time.Minute, 1},
			query{"recorded: GPUs measured, range", `gpuwatch:fleet_gpus_measured:sum`, span, 5 * time.Minute, 1},
		)
	}
	unix := func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	fmt.Printf("\n%-46s %-60s %9s %9s %9s %7s %9s\n", "panel", "query", "p50", "p95", "max", "series", "body")
	for _, q := range queries {
		u := hs.URL + "/api/v1/query?query=" + url.QueryEscape(q.q) + "&time=" + unix(end)
		if q.rangeOf > 0 {
			u = hs.URL + "/api/v1/query_range?query=" + url.QueryEscape(q.q) + "&start=" + unix(end.Add(-q.rangeOf)) + "&end=" + unix(end) +
				"&step=" + strconv.Itoa(int(q.step.Seconds()))
		}
		var ds []time.Duration
		var n, size int
		for r := 0; r <= *runs; r++ {
			t0 := time.Now()
			m, sz, err := getAPI(ctx, u)
			if err != nil {
				return fmt.Errorf("%s: %w", q.what, err)
			}
			if r > 0 {
				ds = append(ds, time.Since(t0))
			}
			n, size = len(m.Data.Result), sz
		}
		if n != q.want {
			return fmt.Errorf("%s: %q answered %d series, want %d", q.what, q.q, n, q.want)
		}
		s := sortedDurations(ds)
		label := q.q
		if q.rangeOf > 0 {
			label += fmt.Sprintf(" [%s/%s]", shortDur(q.rangeOf), shortDur(q.step))
		}
		fmt.Printf("%-46s %-60s %9s %9s %9s %7d %8.0fK\n", q.what, label, quantile(s, 0.5).Round(time.Millisecond/10),
			quantile(s, 0.95).Round(time.Millisecond/10), s[len(s)-1].Round(time.Millisecond/10), n, float64(size)/1024)
	}
	fmt.Printf("(%d timed runs each through GET /api/v1/query{,_range} on loopback, answer read and decoded; load %s)\n", *runs, loadavg())
	return nil
}

func shortDur(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	s = strings.TrimSuffix(s, "0m")
	return s
}
