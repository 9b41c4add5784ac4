package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/procstat"
)

// Options configure a soak. Zero values take the defaults in fill.
type Options struct {
	Bin   string // the gpuwatch binary (bin/gpuwatch)
	Nodes int    // simulated HGX H100 nodes, one agent each (1000)
	// Duration is the measured soak after Warmup (30m).
	Duration time.Duration
	// Warmup lets every agent start (they start spread over one Interval) and
	// the server create every series before anything is measured (3 Intervals).
	Warmup time.Duration
	// Interval and HealthInterval are every agent's full and health-critical
	// collection intervals (60s, 10s; production: 10s, 1s).
	Interval, HealthInterval time.Duration
	// SimTick is how often the simulated fleet is moved to the wall clock's
	// now (HealthInterval/2); SysfsEvery how often the simulated InfiniBand
	// counter files are rewritten (Interval).
	SimTick, SysfsEvery time.Duration
	// FleetDir is where the simulated nodes' files go ("": /dev/shm, else
	// the system's temporary directory).
	FleetDir string
	// KmsgPoll is how often each agent polls its kernel log (1s; production
	// 250ms).
	KmsgPoll time.Duration
	// SampleEvery is how often memory, goroutines and counts are read (1m);
	// QueryEvery how often the dashboard queries run (1m).
	SampleEvery, QueryEvery time.Duration
	// FaultEvery heats one random GPU for 3 minutes (1m; negative: never).
	FaultEvery time.Duration
	// PushBound is the bound on a health push's p99, from the agent's POST to
	// the server's 202 (1s).
	PushBound time.Duration
	// QueryBoundScale multiplies every dashboard query's bound (1).
	QueryBoundScale float64
	// MemTolerance and GoroutineTolerance bound how far the last third's mean
	// may be from the first third's (0.10, 0.05); GoroutineSlack is added to
	// the goroutine bound in goroutines (20).
	MemTolerance, GoroutineTolerance float64
	GoroutineSlack                   float64
	Seed                             int64
	// MinMemAvailable stops the soak with an error when the machine's
	// MemAvailable falls under it (1 GiB): others share the machine.
	MinMemAvailable uint64
	// HeapProfile, when set, is where a heap profile of this process (the
	// agents and the simulator) is written at the end of the measured window.
	HeapProfile string
	Out         io.Writer
}

func (o *Options) fill() error {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.Bin == "" {
		o.Bin = "bin/gpuwatch"
	}
	if o.Nodes == 0 {
		o.Nodes = 1000
	}
	def(&o.Duration, 30*time.Minute)
	def(&o.Interval, time.Minute)
	def(&o.HealthInterval, 10*time.Second)
	def(&o.Warmup, 3*o.Interval)
	def(&o.SimTick, o.HealthInterval/2)
	def(&o.SysfsEvery, o.Interval)
	def(&o.KmsgPoll, time.Second)
	def(&o.SampleEvery, time.Minute)
	def(&o.QueryEvery, time.Minute)
	def(&o.FaultEvery, time.Minute)
	def(&o.PushBound, time.Second)
	if o.MinMemAvailable == 0 {
		o.MinMemAvailable = 1 << 30
	}
	if o.QueryBoundScale == 0 {
		o.QueryBoundScale = 1
	}
	if o.MemTolerance == 0 {
		o.MemTolerance = 0.10
	}
	if o.GoroutineTolerance == 0 {
		o.GoroutineTolerance = 0.05
	}
	if o.GoroutineSlack == 0 {
		o.GoroutineSlack = 20
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	switch {
	case o.Nodes < 1:
		return fmt.Errorf("nodes: want at least 1, got %d", o.Nodes)
	case o.Duration <= 0 || o.Warmup < 0 || o.SampleEvery <= 0 || o.QueryEvery <= 0:
		return errors.New("duration, sample and query intervals must be positive, warm-up not negative")
	case o.HealthInterval <= 0 || o.Interval < o.HealthInterval:
		return fmt.Errorf("intervals: health %s, full %s: want 0 < health ≤ full", o.HealthInterval, o.Interval)
	case o.SimTick <= 0 || o.SimTick > o.HealthInterval/2:
		// An agent's two cycles must never read the same simulated instant:
		// their samples would carry one timestamp.
		return fmt.Errorf("sim tick %s: want at most half the health interval %s", o.SimTick, o.HealthInterval)
	case o.Duration < 3*o.SampleEvery:
		return fmt.Errorf("duration %s: want at least three samples (every %s) to compare thirds", o.Duration, o.SampleEvery)
	}
	return nil
}

// reading is one sample of the processes' state.
type reading struct {
	at                 time.Duration // since the agents started
	warm               bool          // during the warm-up
	serverRSS          uint64
	serverHeap         float64 // go_memstats_next_gc_bytes: the heap goal the last GC set from the live heap
	serverGoroutines   float64
	serverCPU          time.Duration // cumulative
	serverWait         time.Duration // cumulative time its threads waited for a CPU
	agentsHeap         uint64        // live heap after the last GC
	agentsRSS          uint64
	agentsGoroutines   int
	agentsCPU          time.Duration // cumulative
	agentsWait         time.Duration
	sent, accepted     float64
	headSeries         float64 // the store's head: prometheus_tsdb_head_series
	headChunks         float64 // and prometheus_tsdb_head_chunks
	pushes, writes     summary // the agents' requests since the previous reading
	pending            int64
	load               string
	serverMetricsError string
}

// check is one verdict of the soak.
type check struct {
	name, detail string
	ok           bool
}

// Result is what a soak measured.
type Result struct {
	Options  Options
	Readings []reading
	Flat     []flatRow
	Queries  []*dashQuery
	Pushes   summary
	Writes   summary
	// PushCodes and WriteCodes count the answers by status (0: no answer).
	PushCodes, WriteCodes map[int]uint64
	PushErrors            []string
	WriteErrors           []string
	PushersSent           uint64
	PushersFailed         uint64
	NodesReported         int
	StaleNodes            []string

	Sent, Accepted, Stored float64
	Dropped                map[string]uint64 // by reason, every agent
	Rejected               map[string]float64
	Refused                map[string]float64 // gpuwatch_http_refused_total by reason: load the listener shed
	Lost                   []string           // per-node differences between sent and stored
	StoreCountErr          string
	StoreQueries           int           // queries the count took
	StoreCount             time.Duration // and their time
	Drain                  time.Duration // from the last cycle to every shipper empty
	MaxPending             int64
	Faults                 int
	SimWall                time.Duration
	ServerLogLines         []string
	Load                   [2]string // load average at the start and the end
	Wall                   time.Duration
	Checks                 []check
}

// flatRow is one line of the flatness table.
type flatRow struct {
	name string
	unit string // "MiB" or ""
	f    flatness
	info bool // shown to explain the others, not judged
}

// Pass reports whether every check held.
func (r *Result) Pass() bool {
	for _, c := range r.Checks {
		if !c.ok {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Run starts the server and the fleet's agents, soaks for Warmup+Duration,
// stops collection, lets the shippers deliver, and counts.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	res := &Result{Options: o}
	out := o.Out
	res.Load[0] = loadavg()
	// The fleet's files (about 4 MiB per node, mostly static sysfs) go to
	// tmpfs, as the demo keeps them: the simulator replaces a file by writing
	// it elsewhere and renaming it over the old one, and on a disk file system
	// a thousand nodes' renames queue on its one cross-directory rename lock
	// (hundreds of threads waiting, everyone's renames on that disk slowed).
	// The store's data directory is on disk, as a server's is.
	if o.FleetDir == "" {
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			o.FleetDir = "/dev/shm"
		}
	}
	fleetDir, err := os.MkdirTemp(o.FleetDir, "gpuwatch-soak-fleet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(fleetDir)
	srvDir, err := os.MkdirTemp("", "gpuwatch-soak-server-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(srvDir)

	t0 := time.Now()
	fr, err := newFleetRun(o, fleetDir)
	if err != nil {
		return nil, err
	}
	tok, err := makeTokens(srvDir, fr.names())
	if err != nil {
		return nil, err
	}
	srv, err := startServer(o.Bin, srvDir, tok)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	fmt.Fprintf(out, "soak: %d simulated HGX H100 nodes (fleet built in %s), one gpuwatch agent each in this process (pid %d); gpuwatch server pid %d on %s with %d tokens; %s, %d CPUs, load %s\n",
		o.Nodes, time.Since(t0).Round(time.Millisecond), os.Getpid(), srv.pid, srv.url, tok.entries, runtime.Version(), runtime.NumCPU(), res.Load[0])
	fmt.Fprintf(out, "agents: full cycle every %s, health cycle every %s (production 10s, 1s), kernel log polled every %s; simulator step every %s, sysfs rewritten every %s; a thermal fault every %s\n",
		o.Interval, o.HealthInterval, o.KmsgPoll, o.SimTick, o.SysfsEvery, o.FaultEvery)
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(gogc)
	fmt.Fprintf(out, "warm-up %s, then %s measured; readings every %s, dashboard queries every %s; this process runs at GOGC=%d\n\n",
		o.Warmup, o.Duration, o.SampleEvery, o.QueryEvery, gogc[0].Value.Uint64())

	if err := fr.startAgents(fleetDir, srv, tok); err != nil {
		fr.stop()
		return nil, err
	}
	agentsStarted := time.Now()
	stopped := false
	stopFleet := func() error {
		if stopped {
			return nil
		}
		stopped = true
		return fr.stop()
	}
	defer stopFleet()

	var node string
	if names := fr.names(); len(names) >= 42 {
		node = names[41]
	} else {
		node = names[len(names)-1]
	}
	res.Queries = dashboard(node)
	for _, q := range res.Queries {
		q.bound = time.Duration(float64(q.bound) * o.QueryBoundScale)
	}
	warmEnd := time.Now().Add(o.Warmup)
	end := warmEnd.Add(o.Duration)

	runCtx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	// The simulator: the fleet follows the wall clock until the agents have
	// stopped collecting (a cycle after it stopped would read a frozen clock).
	simCtx, simCancel := context.WithCancel(context.Background())
	simDone := make(chan struct{})
	stopSim := sync.OnceFunc(func() { simCancel(); <-simDone })
	defer stopSim()
	go func() {
		defer close(simDone)
		tick := time.NewTicker(o.SimTick)
		defer tick.Stop()
		lastFault := fr.fleet.Now()
		for {
			select {
			case <-simCtx.Done():
				return
			case <-tick.C:
			}
			if err := fr.advance(&lastFault); err != nil {
				errc <- err
				cancel()
				return
			}
			// The machine is shared: stop before it runs out of memory.
			if avail, ok := memAvailable(); ok && avail < o.MinMemAvailable {
				errc <- fmt.Errorf("the machine has %.0f MiB of memory available, under -min-mem-available %.0f MiB: stopped",
					mib(float64(avail)), mib(float64(o.MinMemAvailable)))
				cancel()
				return
			}
		}
	}()
	// The dashboard, once the warm-up is over.
	wg.Go(func() {
		if !sleepUntil(runCtx, warmEnd) {
			return
		}
		for {
			next := time.Now().Add(o.QueryEvery)
			runDashboard(runCtx, srv, res.Queries, fr.fleet.Now())
			if !sleepUntil(runCtx, next) {
				return
			}
		}
	})
	// Readings from the start; those after the warm-up are compared.
	var rmu sync.Mutex
	takeReading := func() {
		r := fr.read(ctx, srv, agentsStarted, time.Now().Before(warmEnd))
		rmu.Lock()
		res.Readings = append(res.Readings, r)
		res.MaxPending = max(res.MaxPending, r.pending)
		rmu.Unlock()
		printReading(out, r)
	}
	fmt.Fprintln(out, readingHeader)
	wg.Go(func() {
		next := time.Now()
		for {
			if !sleepUntil(runCtx, next) {
				return
			}
			if srv.exited() {
				errc <- fmt.Errorf("the gpuwatch server exited: %s", srv.logTail(20))
				cancel()
				return
			}
			takeReading()
			next = next.Add(o.SampleEvery)
			if next.After(warmEnd) && next.Before(warmEnd.Add(o.SampleEvery)) {
				next = warmEnd // the measured window starts with a reading
			}
		}
	})
	wg.Wait()
	interrupted := ctx.Err() != nil
	select {
	case err := <-errc:
		stopSim()
		return res, err
	default:
	}
	if !interrupted {
		takeReading() // the end of the measured window
		if o.HeapProfile != "" {
			if err := writeHeapProfile(o.HeapProfile); err != nil {
				return res, err
			}
		}
	}

	// Stop collecting, let every shipper deliver, and count.
	fr.stopCollecting()
	stopSim()
	t1 := time.Now()
	if err := fr.drain(5 * time.Minute); err != nil {
		return res, err
	}
	res.Drain = time.Since(t1)
	res.Wall = time.Since(agentsStarted)
	res.Faults, res.SimWall = fr.faults, fr.simWall
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer ccancel()
	t2 := time.Now()
	res.count(cctx, fr, srv)
	res.StoreCount = time.Since(t2)
	res.PushersSent, res.PushersFailed = fr.pushes()
	res.Pushes, res.Writes = fr.meter.kind(kindPush).lat.summary(), fr.meter.kind(kindWrite).lat.summary()
	res.PushCodes, res.WriteCodes = fr.meter.codes(kindPush), fr.meter.codes(kindWrite)
	res.PushErrors, res.WriteErrors = fr.meter.errors(kindPush), fr.meter.errors(kindWrite)
	if err := res.nodesReported(cctx, fr, srv); err != nil {
		return res, err
	}
	if err := stopFleet(); err != nil {
		return res, fmt.Errorf("stopping the agents: %w", err)
	}
	res.Load[1] = loadavg()
	res.ServerLogLines = srv.logLines()
	res.judge()
	if interrupted {
		return res, ctx.Err()
	}
	return res, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// read takes one reading of the server process and of this one (the agents,
// the simulator and the soak's own bookkeeping).
func (fr *fleetRun) read(ctx context.Context, srv *server, t0 time.Time, warm bool) reading {
	r := reading{at: time.Since(t0).Round(time.Second), warm: warm, load: loadavg()}
	pid := strconv.Itoa(srv.pid)
	r.serverRSS, _, _ = procstat.Mem(pid)
	r.serverCPU, _ = procstat.CPU(srv.pid)
	r.serverWait = runDelay(srv.pid)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	m, err := srv.scrape(sctx)
	cancel()
	if err != nil {
		r.serverMetricsError = err.Error()
	} else {
		r.serverGoroutines = m.sum("go_goroutines")
		r.serverHeap = m.sum("go_memstats_next_gc_bytes")
		r.accepted = m.sum("gpuwatch_ingest_samples_accepted_total", `endpoint="remote_write"`)
		r.headSeries = m.sum("prometheus_tsdb_head_series")
		r.headChunks = m.sum("prometheus_tsdb_head_chunks")
	}
	r.pushes, r.writes = fr.meter.window(kindPush), fr.meter.window(kindWrite)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		r.agentsHeap = s[0].Value.Uint64()
	}
	r.agentsRSS, _, _ = procstat.Mem("self")
	r.agentsCPU, _ = procstat.CPU(os.Getpid())
	r.agentsWait = runDelay(os.Getpid())
	r.agentsGoroutines = runtime.NumGoroutine()
	for _, st := range fr.shipped() {
		r.sent += float64(st.sent)
	}
	r.pending = fr.pending()
	return r
}

const readingHeader = "" +
	"    time | server RSS   heap  goroutines   CPU  wait  head series | agents heap    RSS  goroutines    CPU  wait |  samples sent   accepted  pending | push p99 write p99 | load"

func printReading(w io.Writer, r reading) {
	tag := ""
	if r.warm {
		tag = "  (warm-up)"
	}
	if r.serverMetricsError != "" {
		tag += "  server /metrics: " + r.serverMetricsError
	}
	fmt.Fprintf(w, "%8s | %6.0f MiB %6.0f %11.0f %5.0fs %4.0fs %12.0f | %7.0f MiB %6.0f %11d %6.0fs %4.0fs | %13.0f %10.0f %8d | %8s %9s | %s%s\n",
		r.at, mib(float64(r.serverRSS)), mib(r.serverHeap), r.serverGoroutines, r.serverCPU.Seconds(), r.serverWait.Seconds(), r.headSeries,
		mib(float64(r.agentsHeap)), mib(float64(r.agentsRSS)), r.agentsGoroutines, r.agentsCPU.Seconds(), r.agentsWait.Seconds(),
		r.sent, r.accepted, r.pending, short(r.pushes.P99), short(r.writes.P99), r.load, tag)
}

// short prints a duration for a narrow column.
func short(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	default:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
}

func mib(b float64) float64 { return b / (1 << 20) }

// count compares, once every shipper is empty, what the agents sent with what
// the server accepted and what its store holds, node by node.
func (res *Result) count(ctx context.Context, fr *fleetRun, srv *server) {
	sh := fr.shipped()
	res.Dropped = map[string]uint64{}
	for _, st := range sh {
		res.Sent += float64(st.sent)
		for k, v := range st.dropped {
			res.Dropped[k] += v
		}
	}
	m, err := srv.scrape(ctx)
	if err != nil {
		res.StoreCountErr = "server /metrics: " + err.Error()
		return
	}
	res.Accepted = m.sum("gpuwatch_ingest_samples_accepted_total", `endpoint="remote_write"`)
	res.Rejected = m.byLabel("gpuwatch_ingest_samples_rejected_total", "reason")
	res.Refused = m.byLabel("gpuwatch_http_refused_total", "reason")
	for k, v := range res.Refused {
		if v == 0 {
			delete(res.Refused, k)
		}
	}
	for k, v := range res.Rejected {
		if v == 0 {
			delete(res.Rejected, k)
		}
	}
	// The store: every sample of every node's series since the fleet started,
	// node by node (every series an agent ships carries node=<node>). One
	// metric name per query (count_over_time drops the name, and series of
	// two metrics may then have the same labels), nodes in groups so that no
	// query loads too many samples at once.
	at := fr.fleet.Now().Add(time.Second)
	window := at.Sub(fr.fleet.Start()) + 2*time.Minute
	var metricNames []string
	if err := srv.getJSON(ctx, "/api/v1/label/__name__/values", &struct {
		Data *[]string `json:"data"`
	}{&metricNames}); err != nil {
		res.StoreCountErr = err.Error()
		return
	}
	stored := map[string]float64{}
	names := fr.names()
	const group = 100
	for _, metric := range metricNames {
		if strings.Contains(metric, ":") || metric == "ALERTS" || metric == "ALERTS_FOR_STATE" {
			// What the server's own rules recorded from the agents' series (a
			// recording rule's name has a colon; alerts carry the node too):
			// not shipped by any agent.
			continue
		}
		for i := 0; i < len(names); i += group {
			part := names[i:min(i+group, len(names))]
			quoted := make([]string, len(part))
			for j, n := range part {
				quoted[j] = regexp.QuoteMeta(n)
			}
			q := fmt.Sprintf(`sum by (node) (count_over_time({__name__=%q, node=~"%s"}[%ds]))`,
				metric, strings.Join(quoted, "|"), int(window.Seconds()))
			r, err := srv.query(ctx, q, time.Time{}, at, 0)
			if err != nil {
				res.StoreCountErr = err.Error()
				return
			}
			for _, s := range r.Data.Result {
				v, err := sampleValue(s.Value)
				if err != nil {
					res.StoreCountErr = err.Error()
					return
				}
				stored[s.Metric["node"]] += v
			}
		}
	}
	res.StoreQueries = len(metricNames) * ((len(names) + group - 1) / group)
	for _, n := range names {
		res.Stored += stored[n]
		if sent := float64(sh[n].sent); stored[n] != sent {
			res.Lost = append(res.Lost, fmt.Sprintf("%s: sent %.0f, stored %.0f", n, sent, stored[n]))
		}
	}
}

// nodesReported checks the drain controller's view: every node has reported,
// and recently (within a heartbeat and a margin of the end).
func (res *Result) nodesReported(ctx context.Context, fr *fleetRun, srv *server) error {
	ns, err := srv.nodes(ctx)
	if err != nil {
		return err
	}
	seen := map[string]time.Time{}
	for _, n := range ns {
		seen[n.Node] = n.LastReport
	}
	limit := 45 * time.Second // the pusher's 30 s heartbeat, and a margin
	for _, n := range fr.names() {
		last, ok := seen[n]
		switch {
		case !ok:
			res.StaleNodes = append(res.StaleNodes, n+": never reported")
		case time.Since(last) > limit && fr.fleet.Now().Sub(last) > limit:
			res.StaleNodes = append(res.StaleNodes, fmt.Sprintf("%s: last report %s ago", n, time.Since(last).Round(time.Second)))
		default:
			res.NodesReported++
		}
	}
	return nil
}

// judge turns the measurements into checks.
func (res *Result) judge() {
	o := res.Options
	add := func(name string, ok bool, format string, args ...any) {
		res.Checks = append(res.Checks, check{name: name, ok: ok, detail: fmt.Sprintf(format, args...)})
	}
	var measured []reading
	for _, r := range res.Readings {
		if !r.warm {
			measured = append(measured, r)
		}
	}
	series := func(f func(reading) float64) []float64 {
		out := make([]float64, len(measured))
		for i, r := range measured {
			out[i] = f(r)
		}
		return out
	}
	res.Flat = []flatRow{
		{"server resident memory", "MiB", flat(series(func(r reading) float64 { return mib(float64(r.serverRSS)) }), o.MemTolerance, 0), false},
		{"server Go heap goal (next GC)", "MiB", flat(series(func(r reading) float64 { return mib(r.serverHeap) }), o.MemTolerance, 0), false},
		{"server goroutines", "", flat(series(func(r reading) float64 { return r.serverGoroutines }), o.GoroutineTolerance, o.GoroutineSlack), false},
		{"agents' process live heap", "MiB", flat(series(func(r reading) float64 { return mib(float64(r.agentsHeap)) }), o.MemTolerance, 0), false},
		{"agents' process resident memory", "MiB", flat(series(func(r reading) float64 { return mib(float64(r.agentsRSS)) }), o.MemTolerance, 0), false},
		{"agents' process goroutines", "", flat(series(func(r reading) float64 { return float64(r.agentsGoroutines) }), o.GoroutineTolerance, o.GoroutineSlack), false},
	}
	res.Flat = append(res.Flat, flatRow{"store head series (not judged)", "", flat(series(func(r reading) float64 { return r.headSeries }), 0, 0), true},
		flatRow{"store head chunks (not judged)", "", flat(series(func(r reading) float64 { return r.headChunks }), 0, 0), true})
	for _, f := range res.Flat {
		if f.info {
			continue
		}
		add(f.name+" flat", f.f.OK, "first third %.0f, last third %.0f (%+.1f %%, allowed +%.0f %%%s)",
			f.f.First, f.f.Last, 100*f.f.Change, 100*f.f.Tolerance, slackText(f.f.Slack))
	}

	dropped := uint64(0)
	for _, v := range res.Dropped {
		dropped += v
	}
	rejected := 0.0
	for _, v := range res.Rejected {
		rejected += v
	}
	add("no sample dropped by a shipper", dropped == 0, "%d dropped %v", dropped, res.Dropped)
	// A request the server stored but whose answer the agent never got (a
	// timeout, a closed connection) is sent again: accepted twice, stored once.
	add("server accepted every sample sent", res.Accepted >= res.Sent && rejected == 0,
		"sent %.0f, accepted %.0f (%.0f again after a lost answer), rejected %.0f %v", res.Sent, res.Accepted, res.Accepted-res.Sent, rejected, res.Rejected)
	switch {
	case res.StoreCountErr != "":
		add("store holds every sample sent", false, "counting failed: %s", res.StoreCountErr)
	default:
		detail := fmt.Sprintf("sent %.0f, stored %.0f, %d nodes differ", res.Sent, res.Stored, len(res.Lost))
		if len(res.Lost) > 0 {
			detail += ": " + strings.Join(res.Lost[:min(5, len(res.Lost))], "; ")
		}
		add("store holds every sample sent", res.Stored == res.Sent && len(res.Lost) == 0, "%s", detail)
	}
	add("remote writes all answered 2xx", onlySuccess(res.WriteCodes), "%s %s", codesText(res.WriteCodes), strings.Join(res.WriteErrors, "; "))

	pushOK := res.PushCodes[202]
	add("health pushes all answered 202", onlySuccess(res.PushCodes) && res.PushCodes[202] > 0 && res.PushersFailed == 0,
		"%s; the pushers counted %d sent, %d failed %s", codesText(res.PushCodes), res.PushersSent, res.PushersFailed, strings.Join(res.PushErrors, "; "))
	add(fmt.Sprintf("health push p99 < %s", o.PushBound), res.Pushes.N > 0 && res.Pushes.P99 < o.PushBound, "%d answered: %s", pushOK, res.Pushes)
	add("every node's health reached the server", len(res.StaleNodes) == 0, "%d of %d nodes reported within the last heartbeat %s",
		res.NodesReported, o.Nodes, strings.Join(res.StaleNodes[:min(5, len(res.StaleNodes))], "; "))

	for _, q := range res.Queries {
		s := q.lat.summary()
		add(fmt.Sprintf("query %q p99 < %s", q.name, q.bound), q.errs == 0 && s.N > 0 && s.P99 < q.bound,
			"%s; %d errors %s", s, q.errs, q.err)
	}
}

func slackText(s float64) string {
	if s == 0 {
		return ""
	}
	return fmt.Sprintf(" + %.0f", s)
}

func onlySuccess(codes map[int]uint64) bool {
	for c, n := range codes {
		if n > 0 && c/100 != 2 {
			return false
		}
	}
	return true
}

func codesText(codes map[int]uint64) string {
	keys := make([]int, 0, len(codes))
	for c := range codes {
		keys = append(keys, c)
	}
	slices.Sort(keys)
	var parts []string
	for _, c := range keys {
		name := strconv.Itoa(c)
		if c == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, codes[c]))
	}
	return strings.Join(parts, ", ")
}

// runDelay is the time a process's threads have spent runnable but waiting
// for a CPU (the second field of /proc/PID/task/TID/schedstat, summed over its
// threads alive now): on a shared machine, how much the others held it up.
func runDelay(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total
}

// memAvailable is /proc/meminfo's MemAvailable in bytes.
func memAvailable() (uint64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n * 1024, err == nil
		}
	}
	return 0, false
}

// loadavg is the machine's 1-, 5- and 15-minute load.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
