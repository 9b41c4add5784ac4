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
	"github.com/gpuwatch/gpuwatch/internal/localslurm"
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
	sc, err := simhw.ParseScenario(o.Faults)
	if err != nil {
		return nil, fmt.Errorf("cannot read fault scenario from %s: %w", o.FaultsName, err)
	}
	dir := o.Dir
	if dir == "" {
		// Each tick rewrites a few thousand sysfs counter files atomically; on tmpfs
		// that costs microseconds per file instead of a millisecond on disk.
		base := ""
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			base = "/dev/shm"
		}
		if dir, err = os.MkdirTemp(base, "gpuwatch-demo-"); err != nil {
			return nil, fmt.Errorf("cannot create the demo's working directory: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	fleet, err := simhw.NewFleet(simhw.FleetSpec{
		Nodes:        o.Nodes,
		NodesPerLeaf: o.NodesPerLeaf,
		Seed:         o.Seed,
		Root:         dir,
		Start:        o.Start,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot build the simulated fleet: %w", err)
	}
	if o.ShowMetrics != "" && fleet.Node(o.ShowMetrics) == nil {
		return nil, fmt.Errorf("--show-metrics %q: no such node (the fleet has %s … %s)", o.ShowMetrics,
			fleet.Nodes()[0].Name(), fleet.Nodes()[o.Nodes-1].Name())
	}
	skipped := 0
	if o.builtin {
		// The built-in story is written for 16 nodes; on a smaller fleet, play the
		// part of it that fits. A user's own scenario is never trimmed.
		sc, skipped = sc.Only(func(f simhw.Fault) bool { return f.Node == "" || fleet.Node(f.Node) != nil })
	}
	if err := fleet.Schedule(sc); err != nil {
		return nil, fmt.Errorf("cannot schedule the faults from %s: %w", o.FaultsName, err)
	}
	jobs := newJobDetails()
	if err := fleet.Advance(0); err != nil {
		return nil, fmt.Errorf("cannot materialize the simulated fleet: %w", err)
	}

	pol, fsCfg, err := loadControl(&o)
	if err != nil {
		return nil, err
	}
	var act *actuator
	if o.Slurm {
		var names []string
		for _, n := range fleet.Nodes() {
			names = append(names, n.Name())
		}
		var cluster *localslurm.Cluster
		if act, cluster, err = startSlurm(names, fleet.Now); err != nil {
			return nil, err
		}
		defer cluster.Close()
	} else {
		act = newLogActuator(fleet.Now)
		act.refuseReboot = o.RefuseReboot
		if o.builtin && act.refuseReboot == nil {
			// The story's node-15 cannot be rebooted: gpuwatch drains it instead.
			act.refuseReboot = map[string]string{"node-15": "no RebootProgram for this node's rack (its BMC does not answer)"}
		}
	}
	var agents *fleetAgents
	names := make([]string, 0, len(fleet.Nodes()))
	for _, n := range fleet.Nodes() {
		names = append(names, n.Name())
	}
	ds, err := startServer(o, dir, names, control{now: fleet.Now, policy: pol, act: act, fairShare: fsCfg,
		fairShareEvery: wallEvery(time.Minute, o.Speed),
		workloads:      func(node string, gpus []string) []string { return agents.workloads(node, gpus) }})
	if err != nil {
		return nil, err
	}
	defer ds.stop()
	fmt.Fprintf(o.Out, "web UI: %s/ (log in with the operator token in %s)\n\n", ds.url, ds.tokens.path(tokenOperator))
	agents, err = startAgents(fleet, o, dir, ds.writeURL(), ds.url, ds.tokens)
	if err != nil {
		return nil, err
	}
	defer agents.stop()
	ds.run()
	if o.Serving != nil {
		o.Serving(Serving{URL: ds.url, GrafanaTokenFile: ds.tokens.path(tokenGrafana), Start: fleet.Start()})
	}
	// The workload goes through the server's placement engine: each job the
	// generator draws is reserved by the engine on a snapshot of what the agents
	// reported, and started where the engine put it.
	pl := newPlacer(ctx, ds, fleet)
	pl.agents = agents
	gen := simhw.NewWorkloadGenerator(fleet, simhw.WorkloadOptions{Seed: o.Seed, DurationScale: jobDurationScale,
		Place: pl.place, Refused: pl.refused})
	cp := newControlPrinter(ds, act, pol, sc, fleet.Start())

	res := &Result{}
	p := newPrinter(o.Out, fleet.Start())
	sync := func() error {
		lines, reboots, err := cp.sync(ctx, agents, fleet.Now())
		p.control(lines)
		for _, node := range reboots {
			if na := agents.byName[node]; na != nil && na.a != nil {
				agents.reboot(na, fleet.Now())
				res.Drain.Reboots = append(res.Drain.Reboots, Reboot{Node: node, Down: fleet.Now()})
				p.control([]ctlLine{{at: fleet.Now(), node: node,
					text: fmt.Sprintf("the simulated node reboots: its agent stops; back at %s", p.offset(na.downUntil))}})
			}
		}
		return err
	}
	cycle := func(full bool) {
		evs, d := agents.collect(ctx, full)
		res.Events = append(res.Events, evs...)
		res.AgentCPU += d
		if full {
			res.FullCycles += len(agents.up())
			res.acct.add(agents.views(), fleet.Now())
		} else {
			res.HealthCycles += len(agents.up())
		}
		p.events(evs)
	}
	// The first cycle is a full one, as when an agent starts.
	evs, d := agents.collect(ctx, true)
	res.Events, res.AgentCPU, res.FullCycles = evs, d, len(agents.nodes)
	res.acct.add(agents.views(), fleet.Now())
	p.header(fleet, sc, o, ds, act, pol)
	if skipped > 0 {
		fmt.Fprintf(o.Out, "(%d faults of the built-in story are on nodes beyond --nodes %d and are skipped)\n\n", skipped, o.Nodes)
	}
	p.first(agents.views())
	fmt.Fprintln(o.Out)
	p.events(evs)
	if err := sync(); err != nil {
		return res, err
	}
	// The agents have seen the idle fleet: the workload starts.
	if err := gen.Step(); err != nil {
		return res, fmt.Errorf("cannot start the simulated workload: %w", err)
	}
	if err := jobs.write(fleet); err != nil {
		return res, err
	}
	p.control(pl.take())

	nextSummary, nextStanding := time.Duration(0), o.FairShareEvery
	wallStart := time.Now()
	for elapsed, tick := time.Duration(0), 0; ; {
		if elapsed >= nextSummary {
			p.summary(fleet.Now(), agents.views())
			nextSummary += o.Interval
		}
		if elapsed >= nextStanding {
			if st, _ := ds.srv.FairShare(); st != nil {
				p.standing(fleet.Now(), st, byAllocation(fsCfg, st), false)
			}
			nextStanding += o.FairShareEvery
		}
		if o.Duration > 0 && elapsed >= o.Duration {
			break
		}
		step := o.Tick
		if o.Duration > 0 && elapsed+step > o.Duration {
			step = o.Duration - elapsed
		}
		if o.Speed > 0 {
			// Keep simulated time in step with the wall clock at the chosen speed.
			due := wallStart.Add(time.Duration(float64(elapsed+step) / o.Speed))
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(due)):
			}
		}
		if ctx.Err() != nil {
			break
		}
		if err := fleet.Advance(step); err != nil {
			return res, fmt.Errorf("simulated hardware failed to advance: %w", err)
		}
		if err := gen.Step(); err != nil {
			return res, fmt.Errorf("simulated workload failed: %w", err)
		}
		if err := jobs.write(fleet); err != nil {
			return res, err
		}
		p.control(pl.take())
		elapsed += step
		tick++
		for _, na := range agents.nodes {
			if !na.downUntil.IsZero() && !fleet.Now().Before(na.downUntil) {
				if err := agents.boot(na, fleet.Now()); err != nil {
					return res, err
				}
				for i := range res.Drain.Reboots {
					if r := &res.Drain.Reboots[i]; r.Node == na.node.Name() && r.Up.IsZero() {
						r.Up = fleet.Now()
					}
				}
				p.control([]ctlLine{{at: fleet.Now(), node: na.node.Name(),
					text: "the simulated node is back: every GPU reset, a new agent on a new boot"}})
			}
		}
		// A full cycle every FullEvery ticks, and at the very end so that the final
		// summary has every field fresh.
		cycle(tick%o.FullEvery == 0 || (o.Duration > 0 && elapsed >= o.Duration))
		if err := sync(); err != nil {
			return res, err
		}
	}
	res.Simulated = fleet.Now().Sub(fleet.Start())
	res.Nodes = agents.views()
	res.MetricsNode = o.ShowMetrics
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
	if res.Metrics, err = agents.fetch(res.MetricsNode, "/metrics"); err != nil {
		return res, err
	}
	// Read back what the store holds once the agents have shipped everything, with
	// a context of its own: ctx may be done (Ctrl-C).
	ds.halt()
	if err := agents.drain(30 * time.Second); err != nil {
		return res, err
	}
	qctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	res.Store, err = ds.summary(qctx, fleet.Now(), res.Simulated, agents)
	cancel()
	if err != nil {
		return res, err
	}
	if res.Drain, err = cp.result(names, res.Drain.Reboots); err != nil {
		return res, err
	}
	res.FairShare = finalStanding(ds, fsCfg)
	res.Placement, res.ran = pl.res, jobs.ran
	p.final(res, o)
	if o.KeepServing && ctx.Err() == nil {
		ds.run()
		fmt.Fprintf(o.Out, "\nserving the store at %s and the agents' endpoints until interrupted (Ctrl-C)\n", ds.url)
		if o.Serving != nil {
			o.Serving(Serving{URL: ds.url, GrafanaTokenFile: ds.tokens.path(tokenGrafana), Start: fleet.Start(), Done: res})
		}
		<-ctx.Done()
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	return res, nil
}
