package demo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
)

// DefaultStory is the fault scenario the demo plays when none is given.
//
//go:embed story.yaml
var DefaultStory []byte

// Options configure a demo run. The zero value of each field takes the default
// named in its comment.
type Options struct {
	// Nodes is the number of simulated HGX H100 nodes (16).
	Nodes int
	// NodesPerLeaf is how many nodes share a leaf switch (8: 16 nodes under 2 leaves).
	NodesPerLeaf int
	// Duration is how much simulated time to run; 0 runs until ctx is done.
	Duration time.Duration
	// Speed is simulated seconds per wall-clock second (1); a negative speed runs
	// as fast as the machine can (tests).
	Speed float64
	// Interval is the simulated time between fleet summaries (1m).
	Interval time.Duration
	// Tick is the simulated step of the hardware model and the agents' health
	// interval (5s): after every step each agent runs one health cycle.
	Tick time.Duration
	// FullEvery is how many ticks make one full collection of every field (2: 10 s
	// of simulated time at the default tick, a real agent's full interval; the
	// server's fair share counts each allocation sample as that long).
	FullEvery int
	// Faults is the YAML fault scenario; nil plays DefaultStory.
	Faults []byte
	// FaultsName names Faults in error messages (a file path).
	FaultsName string
	// Seed makes the fleet and its workload reproducible (1).
	Seed int64
	// Dir holds each node's simulated files (sysfs tree, kernel log) and its agent's
	// health state; "" uses a temporary directory removed at the end.
	Dir string
	// ListenBase, when positive, serves node i's agent (0-based) on
	// 127.0.0.1:ListenBase+i; 0 picks free ports.
	ListenBase int
	// ShowMetrics names a node whose whole /metrics text is printed at the end;
	// "" prints an excerpt (health and Xid series) of the worst node's.
	ShowMetrics string
	// Start is the simulated time the fleet starts at; zero starts it Duration
	// before the wall clock's now, so that the run's data lies in the recent past
	// where Grafana looks (now, when Duration is 0). The story's times are offsets
	// from it.
	Start time.Time
	// ServerListen is the address of the in-process gpuwatch server the agents
	// remote-write to and Grafana queries; "" uses DefaultServerListen, or a free
	// loopback port when that is taken.
	ServerListen string
	// KeepServing keeps the server (and the agents' endpoints) up after the final
	// summary of a run with a Duration, until ctx is done.
	KeepServing bool
	// DrainPolicy is the policy of the server's drain controller (YAML, as
	// `gpuwatch server --drain.policy` reads it); nil is DefaultDrainPolicy.
	// DrainPolicyName names it in errors (a file path).
	DrainPolicy     []byte
	DrainPolicyName string
	// FairShare is the server's fair-share configuration (YAML, as
	// `gpuwatch server --fairshare.config` reads it); nil is DefaultFairShare.
	FairShare     []byte
	FairShareName string
	// FairShareEvery is the simulated time between the fair-share standings the
	// output shows (3m); the server recomputes them every simulated minute.
	FairShareEvery time.Duration
	// Slurm drains through a real Slurm cluster started on this host for the
	// run (internal/localslurm: one slurmctld and one slurmd per node, gpu01… for
	// node-01…; needs root, slurm-wlm and munge) instead of the log actuator.
	Slurm bool
	// RefuseReboot names nodes whose reboot the log actuator refuses for good,
	// with why: the stand-in for a cluster without a RebootProgram, so that the
	// drain controller contains them another way (a fallback). Nil with the
	// built-in story refuses node-15's.
	RefuseReboot map[string]string
	// Rules are rule files the server evaluates besides its built-in ones
	// (`gpuwatch server --rules`: a group named like a built-in one replaces it).
	Rules []string
	// Serving, when set, is called when the server starts serving, before the
	// story starts (Serving.Done nil), and, with KeepServing, once more when the
	// run is over and the server is kept up (Done set): for tests that act as the
	// server's other clients and read what it stored.
	Serving func(Serving)
	// Version is reported by the agents' gpuwatch_build_info.
	Version string
	// Out receives the live summary.
	Out io.Writer

	builtin  bool // Faults is DefaultStory
	nowStart bool // Start was zero: the run ends at the wall clock's now
}

func (o *Options) fill() error {
	if o.Nodes == 0 {
		o.Nodes = 16
	}
	if o.NodesPerLeaf == 0 {
		o.NodesPerLeaf = 8
	}
	if o.Speed == 0 {
		o.Speed = 1
	}
	if o.Interval == 0 {
		o.Interval = time.Minute
	}
	if o.Tick == 0 {
		o.Tick = 5 * time.Second
	}
	if o.FullEvery == 0 {
		o.FullEvery = 2
	}
	if o.FairShareEvery == 0 {
		o.FairShareEvery = 3 * time.Minute
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Faults == nil {
		o.Faults, o.FaultsName, o.builtin = DefaultStory, "the default demo story", true
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	switch {
	case o.Nodes < 1:
		return fmt.Errorf("nodes must be at least 1, got %d", o.Nodes)
	case o.Duration < 0:
		return fmt.Errorf("duration must not be negative, got %s", o.Duration)
	case o.Interval < 0 || o.Tick < 0 || o.FairShareEvery < 0:
		return fmt.Errorf("interval, tick and fair-share interval must be positive, got %s, %s and %s", o.Interval, o.Tick, o.FairShareEvery)
	case o.Tick > o.Interval:
		return fmt.Errorf("tick %s must not exceed the summary interval %s", o.Tick, o.Interval)
	case o.FullEvery < 1:
		return fmt.Errorf("full collection every %d ticks: must be at least 1", o.FullEvery)
	case o.ListenBase < 0 || o.ListenBase > 0 && o.ListenBase+o.Nodes-1 > 65535:
		return fmt.Errorf("listen base port %d: the %d nodes need ports %d-%d, within 1-65535", o.ListenBase, o.Nodes, o.ListenBase, o.ListenBase+o.Nodes-1)
	}
	if o.Start.IsZero() {
		o.Start, o.nowStart = time.Now().Add(-o.Duration).Truncate(time.Second), true
	}
	return nil
}

// Result is what a finished demo run observed through the agents, for tests and
// the final summary.
type Result struct {
	Simulated time.Duration
	// Events are what the agents reported changing, in order: Xids counted, health
	// conditions raised, changed and cleared, node states.
	Events []Event
	// Nodes are the agents as they were at the end.
	Nodes []NodeView
	// Metrics is the /metrics text of Options.ShowMetrics (or of the worst node)
	// as served over HTTP at the end.
	Metrics     string
	MetricsNode string
	// Store is what the demo's gpuwatch server stored, read back from it.
	Store StoreResult
	// Drain is what the server's drain controller decided and did.
	Drain DrainResult
	// FairShare is the server's fair-share standing at the end.
	FairShare FairShareResult
	// Placement is what the server's placement engine decided for every job
	// the simulated workload started.
	Placement PlacementResult
	// Cycles counts the agents' collection cycles: health-only and full.
	HealthCycles, FullCycles int
	// AgentCPU is the CPU time the process used while the agents ran their
	// cycles (the simulator waits meanwhile), for the cost line.
	AgentCPU time.Duration

	acct accounting
	ran  []ranJob // every job part the fleet started
}

// Run builds the fleet and one gpuwatch agent per node, plays the story, drives
// the agents' collection cycles in step with simulated time and prints what the
// agents report, until the simulated Duration has passed or ctx is done.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	r := &run{ctx: ctx, o: o}
	defer r.close()
	for _, step := range []func() error{
		r.buildFleet,    // the scenario, the simulated fleet, the story scheduled on it
		r.startActuator, // the drain policy and the scheduler's hand: log, or a local Slurm
		r.startServer,   // the gpuwatch server: store, drain controller, fair share, placement
		r.startAgents,   // one real agent per node, remote-writing to the server
		r.startWorkload, // jobs placed by the server's placement engine
		r.firstCycle,    // the agents see the idle fleet; the header; the workload starts
		r.play,          // simulated time runs: faults, cycles, drains, reboots, summaries
		r.collectResult, // what the agents, the store and the controllers ended with
		r.printFinal,    // the final summary
		r.keepServing,   // with KeepServing, the server stays up until ctx is done
	} {
		if err := step(); err != nil {
			return r.res, err
		}
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return r.res, err
	}
	return r.res, nil
}

// run is one demo run's parts, built by Run's steps in order.
type run struct {
	ctx     context.Context
	o       Options
	cleanup []func() // undone in reverse by close

	dir     string
	sc      *simhw.Scenario
	skipped int // faults of the built-in story beyond the fleet
	fleet   *simhw.Fleet
	names   []string // the fleet's node names
	jobs    *jobDetails
	pol     *drain.Policy
	fsCfg   *fairshare.Config
	act     *actuator
	ds      *demoServer
	agents  *fleetAgents
	pl      *placer
	gen     *simhw.WorkloadGenerator
	cp      *controlPrinter
	p       *printer
	res     *Result // nil until the first cycle
}

func (r *run) onClose(f func()) { r.cleanup = append(r.cleanup, f) }

func (r *run) close() {
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		r.cleanup[i]()
	}
}

// buildFleet reads the scenario, builds the simulated fleet in its working
// directory and schedules the story's faults on it.
func (r *run) buildFleet() error {
	o := &r.o
	sc, err := simhw.ParseScenario(o.Faults)
	if err != nil {
		return fmt.Errorf("cannot read fault scenario from %s: %w", o.FaultsName, err)
	}
	r.dir = o.Dir
	if r.dir == "" {
		// Each tick rewrites a few thousand sysfs counter files atomically; on tmpfs
		// that costs microseconds per file instead of a millisecond on disk.
		base := ""
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			base = "/dev/shm"
		}
		if r.dir, err = os.MkdirTemp(base, "gpuwatch-demo-"); err != nil {
			return fmt.Errorf("cannot create the demo's working directory: %w", err)
		}
		dir := r.dir
		r.onClose(func() { os.RemoveAll(dir) })
	}
	fleet, err := simhw.NewFleet(simhw.FleetSpec{
		Nodes:        o.Nodes,
		NodesPerLeaf: o.NodesPerLeaf,
		Seed:         o.Seed,
		Root:         r.dir,
		Start:        o.Start,
	})
	if err != nil {
		return fmt.Errorf("cannot build the simulated fleet: %w", err)
	}
	if o.ShowMetrics != "" && fleet.Node(o.ShowMetrics) == nil {
		return fmt.Errorf("--show-metrics %q: no such node (the fleet has %s … %s)", o.ShowMetrics,
			fleet.Nodes()[0].Name(), fleet.Nodes()[o.Nodes-1].Name())
	}
	if o.builtin {
		// The built-in story is written for 16 nodes; on a smaller fleet, play the
		// part of it that fits. A user's own scenario is never trimmed.
		sc, r.skipped = sc.Only(func(f simhw.Fault) bool { return f.Node == "" || fleet.Node(f.Node) != nil })
	}
	if err := fleet.Schedule(sc); err != nil {
		return fmt.Errorf("cannot schedule the faults from %s: %w", o.FaultsName, err)
	}
	r.jobs = newJobDetails()
	if err := fleet.Advance(0); err != nil {
		return fmt.Errorf("cannot materialize the simulated fleet: %w", err)
	}
	r.sc, r.fleet = sc, fleet
	for _, n := range fleet.Nodes() {
		r.names = append(r.names, n.Name())
	}
	return nil
}

// startActuator reads the drain policy and the fair-share configuration and
// starts the drain controller's actuator: the log actuator, or a local real
// Slurm cluster with --slurm.
func (r *run) startActuator() error {
	var err error
	if r.pol, r.fsCfg, err = loadControl(&r.o); err != nil {
		return err
	}
	if r.o.Slurm {
		act, cluster, err := startSlurm(r.names, r.fleet.Now)
		if err != nil {
			return err
		}
		r.onClose(func() { cluster.Close() })
		r.act = act
		return nil
	}
	r.act = newLogActuator(r.fleet.Now)
	r.act.refuseReboot = r.o.RefuseReboot
	if r.o.builtin && r.act.refuseReboot == nil {
		// The story's node-15 cannot be rebooted: gpuwatch drains it instead.
		r.act.refuseReboot = map[string]string{"node-15": "no RebootProgram for this node's rack (its BMC does not answer)"}
	}
	return nil
}

// startServer starts the in-process gpuwatch server the agents report to.
func (r *run) startServer() error {
	ds, err := startServer(r.o, r.dir, r.names, control{now: r.fleet.Now, policy: r.pol, act: r.act, fairShare: r.fsCfg,
		fairShareEvery: wallEvery(time.Minute, r.o.Speed),
		workloads:      func(node string, gpus []string) []string { return r.agents.workloads(node, gpus) }})
	if err != nil {
		return err
	}
	r.ds = ds
	r.onClose(ds.stop)
	fmt.Fprintf(r.o.Out, "web UI: %s/ (log in with the operator token in %s)\n\n", ds.url, ds.tokens.path(tokenOperator))
	return nil
}

// startAgents starts one agent per node and the server's loops, and tells
// Options.Serving where the server is.
func (r *run) startAgents() error {
	agents, err := startAgents(r.fleet, r.o, r.dir, r.ds.writeURL(), r.ds.url, r.ds.tokens)
	if err != nil {
		return err
	}
	r.agents = agents
	r.onClose(agents.stop)
	r.ds.run()
	if r.o.Serving != nil {
		r.o.Serving(Serving{URL: r.ds.url, GrafanaTokenFile: r.ds.tokens.path(tokenGrafana), Start: r.fleet.Start()})
	}
	return nil
}

// startWorkload sets up the workload: each job the generator draws is
// reserved by the server's placement engine on a snapshot of what the agents
// reported, and started where the engine put it.
func (r *run) startWorkload() error {
	r.pl = newPlacer(r.ctx, r.ds, r.fleet)
	r.pl.agents = r.agents
	r.gen = simhw.NewWorkloadGenerator(r.fleet, simhw.WorkloadOptions{Seed: r.o.Seed, DurationScale: jobDurationScale,
		Place: r.pl.place, Refused: r.pl.refused})
	r.cp = newControlPrinter(r.ds, r.act, r.pol, r.sc, r.fleet.Start())
	r.p = newPrinter(r.o.Out, r.fleet.Start())
	return nil
}

// firstCycle runs the agents' first (full) cycle on the idle fleet, prints the
// header and what the agents first saw, and starts the workload.
func (r *run) firstCycle() error {
	o, fleet, agents, p := r.o, r.fleet, r.agents, r.p
	evs, d := agents.collect(r.ctx, true)
	r.res = &Result{Events: evs, AgentCPU: d, FullCycles: len(agents.nodes)}
	r.res.acct.add(agents.views(), fleet.Now())
	p.header(fleet, r.sc, o, r.ds, r.act, r.pol)
	if r.skipped > 0 {
		fmt.Fprintf(o.Out, "(%d faults of the built-in story are on nodes beyond --nodes %d and are skipped)\n\n", r.skipped, o.Nodes)
	}
	p.first(agents.views())
	fmt.Fprintln(o.Out)
	p.events(evs)
	if err := r.sync(); err != nil {
		return err
	}
	// The agents have seen the idle fleet: the workload starts.
	if err := r.gen.Step(); err != nil {
		return fmt.Errorf("cannot start the simulated workload: %w", err)
	}
	if err := r.jobs.write(fleet); err != nil {
		return err
	}
	p.control(r.pl.take())
	return nil
}

// play runs simulated time, tick by tick, until Duration or ctx is done:
// summaries and standings on their schedules, the hardware and the workload
// advanced, rebooted nodes brought back, one agent cycle per tick and the
// controllers' news.
func (r *run) play() error {
	o, fleet, agents, p := r.o, r.fleet, r.agents, r.p
	nextSummary, nextStanding := time.Duration(0), o.FairShareEvery
	wallStart := time.Now()
	for elapsed, tick := time.Duration(0), 0; ; {
		if elapsed >= nextSummary {
			p.summary(fleet.Now(), agents.views())
			nextSummary += o.Interval
		}
		if elapsed >= nextStanding {
			if st, _ := r.ds.srv.FairShare(); st != nil {
				p.standing(fleet.Now(), st, byAllocation(r.fsCfg, st), false)
			}
			nextStanding += o.FairShareEvery
		}
		if o.Duration > 0 && elapsed >= o.Duration {
			return nil
		}
		step := o.Tick
		if o.Duration > 0 && elapsed+step > o.Duration {
			step = o.Duration - elapsed
		}
		if o.Speed > 0 {
			// Keep simulated time in step with the wall clock at the chosen speed.
			due := wallStart.Add(time.Duration(float64(elapsed+step) / o.Speed))
			select {
			case <-r.ctx.Done():
			case <-time.After(time.Until(due)):
			}
		}
		if r.ctx.Err() != nil {
			return nil
		}
		if err := fleet.Advance(step); err != nil {
			return fmt.Errorf("simulated hardware failed to advance: %w", err)
		}
		if err := r.gen.Step(); err != nil {
			return fmt.Errorf("simulated workload failed: %w", err)
		}
		if err := r.jobs.write(fleet); err != nil {
			return err
		}
		p.control(r.pl.take())
		elapsed += step
		tick++
		if err := r.bootRebooted(); err != nil {
			return err
		}
		// A full cycle every FullEvery ticks, and at the very end so that the final
		// summary has every field fresh.
		r.cycle(tick%o.FullEvery == 0 || (o.Duration > 0 && elapsed >= o.Duration))
		if err := r.sync(); err != nil {
			return err
		}
	}
}

// cycle runs one agent cycle on every node that is up and prints what changed.
func (r *run) cycle(full bool) {
	evs, d := r.agents.collect(r.ctx, full)
	r.res.Events = append(r.res.Events, evs...)
	r.res.AgentCPU += d
	if full {
		r.res.FullCycles += len(r.agents.up())
		r.res.acct.add(r.agents.views(), r.fleet.Now())
	} else {
		r.res.HealthCycles += len(r.agents.up())
	}
	r.p.events(evs)
}

// sync prints what the server's controllers did since the last call, and
// reboots the simulated nodes whose reboot the actuator accepted.
func (r *run) sync() error {
	now := r.fleet.Now()
	lines, reboots, err := r.cp.sync(r.ctx, r.agents, now)
	r.p.control(lines)
	for _, node := range reboots {
		if na := r.agents.byName[node]; na != nil && na.a != nil {
			r.agents.reboot(na, now)
			r.res.Drain.Reboots = append(r.res.Drain.Reboots, Reboot{Node: node, Down: now})
			r.p.control([]ctlLine{{at: now, node: node,
				text: fmt.Sprintf("the simulated node reboots: its agent stops; back at %s", r.p.offset(na.downUntil))}})
		}
	}
	return err
}

// bootRebooted starts a new agent on every rebooted node whose downtime is
// over.
func (r *run) bootRebooted() error {
	now := r.fleet.Now()
	for _, na := range r.agents.nodes {
		if na.downUntil.IsZero() || now.Before(na.downUntil) {
			continue
		}
		if err := r.agents.boot(na, now); err != nil {
			return err
		}
		for i := range r.res.Drain.Reboots {
			if rb := &r.res.Drain.Reboots[i]; rb.Node == na.node.Name() && rb.Up.IsZero() {
				rb.Up = now
			}
		}
		r.p.control([]ctlLine{{at: now, node: na.node.Name(),
			text: "the simulated node is back: every GPU reset, a new agent on a new boot"}})
	}
	return nil
}

// collectResult fills the Result: the agents at the end, the /metrics text
// shown, and, once the agents have shipped everything, what the store, the
// drain controller, fair share and placement hold.
func (r *run) collectResult() error {
	res, agents := r.res, r.agents
	res.Simulated = r.fleet.Now().Sub(r.fleet.Start())
	res.Nodes = agents.views()
	res.MetricsNode = r.o.ShowMetrics
	if res.MetricsNode == "" {
		// The worst node whose agent serves: a node rebooting at the end has none.
		var up []NodeView
		for _, n := range res.Nodes {
			if na := agents.byName[n.Name]; na != nil && na.a != nil {
				up = append(up, n)
			}
		}
		res.MetricsNode = worstNode(up)
	}
	var err error
	if res.Metrics, err = agents.fetch(res.MetricsNode, "/metrics"); err != nil {
		return err
	}
	// Read back what the store holds once the agents have shipped everything, with
	// a context of its own: ctx may be done (Ctrl-C).
	r.ds.halt()
	if err := agents.drain(30 * time.Second); err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	res.Store, err = r.ds.summary(qctx, r.fleet.Now(), res.Simulated, agents)
	cancel()
	if err != nil {
		return err
	}
	if res.Drain, err = r.cp.result(r.names, res.Drain.Reboots); err != nil {
		return err
	}
	res.FairShare = finalStanding(r.ds, r.fsCfg)
	res.Placement, res.ran = r.pl.res, r.jobs.ran
	return nil
}

// printFinal prints the final summary.
func (r *run) printFinal() error {
	r.p.final(r.res, r.o)
	utilizationReport(r.o, r.ds, r.fleet.Start(), r.fleet.Now()) // report.go
	faultSummary(r.o, r.ds, r.fleet.Start(), r.fleet.Now())      // report.go
	return nil
}

// keepServing, with KeepServing, restarts the server's loops and serves until
// ctx is done.
func (r *run) keepServing() error {
	if !r.o.KeepServing || r.ctx.Err() != nil {
		return nil
	}
	r.ds.run()
	fmt.Fprintf(r.o.Out, "\nserving the store at %s and the agents' endpoints until interrupted (Ctrl-C)\n", r.ds.url)
	if r.o.Serving != nil {
		r.o.Serving(Serving{URL: r.ds.url, GrafanaTokenFile: r.ds.tokens.path(tokenGrafana), Start: r.fleet.Start(), Done: r.res})
	}
	<-r.ctx.Done()
	return nil
}
