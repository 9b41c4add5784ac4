package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/auth"
)

// fleetRun is the simulated fleet and one real gpuwatch agent per node, all in
// this process.
type fleetRun struct {
	o      Options
	fleet  *simhw.Fleet
	gen    *simhw.WorkloadGenerator
	nodes  []*nodeAgent
	meter  *requestMeter
	rng    *rand.Rand
	faults int

	wallStart time.Time
	simWall   time.Duration // wall time spent advancing the simulator

	bg, collect             context.Context
	bgCancel, collectCancel context.CancelFunc
	runners                 sync.WaitGroup
}

// nodeAgent is one node's agent.
type nodeAgent struct {
	name string
	a    *agent.Agent
	wait func() // waits for the background readers after bg is done
}

// newFleetRun builds the simulated fleet and starts its workload.
func newFleetRun(o Options, dir string) (*fleetRun, error) {
	start := time.Now().Truncate(time.Second)
	fleet, err := simhw.NewFleet(simhw.FleetSpec{
		Nodes:      o.Nodes,
		Shape:      simhw.ShapeHGXH100,
		Seed:       o.Seed,
		Root:       filepath.Join(dir, "fleet"),
		Start:      start,
		SysfsEvery: o.SysfsEvery,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot build the simulated fleet: %w", err)
	}
	fr := &fleetRun{o: o, fleet: fleet, meter: newRequestMeter(), wallStart: start,
		rng: rand.New(rand.NewPCG(uint64(o.Seed), 0x736f616b))}
	fr.gen = simhw.NewWorkloadGenerator(fleet, simhw.WorkloadOptions{Seed: o.Seed})
	if err := fr.gen.Step(); err != nil {
		return nil, fmt.Errorf("cannot start the simulated workload: %w", err)
	}
	fr.bg, fr.bgCancel = context.WithCancel(context.Background())
	fr.collect, fr.collectCancel = context.WithCancel(fr.bg)
	return fr, nil
}

// names are the fleet's node names.
func (fr *fleetRun) names() []string {
	var out []string
	for _, n := range fr.fleet.Nodes() {
		out = append(out, n.Name())
	}
	return out
}

// startAgents starts one agent per node: each remote-writes to the server and
// pushes its health report there with its own node-bound token, over its own
// HTTP transport (its own connections, as a separate agent process would
// have), and runs the agent's real run loop (collector.Runner on wall-clock
// tickers) with sample timestamps from the simulated clock, which the soak
// keeps in step with the wall clock.
func (fr *fleetRun) startAgents(dir string, srv *server, tok *tokens) error {
	o := fr.o
	base := http.DefaultTransport.(*http.Transport)
	for _, n := range fr.fleet.Nodes() {
		boot := n.Boot()
		a, err := agent.New(agent.Options{
			Node:                n.Name(),
			NVML:                n.NVML(),
			SysfsRoot:           n.SysRoot(),
			ProcRoot:            n.ProcRoot(),
			KmsgPath:            n.KmsgPath(),
			KmsgFromStart:       true,
			KmsgPoll:            o.KmsgPoll,
			BootTime:            func() (time.Time, error) { return boot, nil },
			BootID:              "soak-" + n.Name(),
			StateDir:            filepath.Join(dir, "state", n.Name()),
			Interval:            o.Interval,
			HealthInterval:      o.HealthInterval,
			AttributionInterval: o.Interval,
			DCGM:                n.DCGM(), // the simulated node's host engine
			KubeletSocket:       "-",
			NVLinkDomain:        n.NVLinkDomain(),
			Leaf:                n.Leaf(),
			Spine:               n.Spine(),
			Block:               n.Block(),
			Version:             "soak",
			Now:                 fr.fleet.Now,
			RemoteWriteURL:      srv.url + "/api/v1/write",
			ServerURL:           srv.url,
			Transport: &meteredTransport{meter: fr.meter, next: &auth.Transport{
				Base: base.Clone(), Secret: auth.StaticSecret(tok.agents[n.Name()])}},
		})
		if err != nil {
			return fmt.Errorf("node %s: cannot start its agent: %w", n.Name(), err)
		}
		fr.nodes = append(fr.nodes, &nodeAgent{name: n.Name(), a: a, wait: a.Start(fr.bg)})
	}
	// Real agents start at different moments: node i starts its run loop
	// i/N of a full interval in, so full cycles (and their remote writes)
	// spread evenly over the interval instead of arriving together.
	for i, na := range fr.nodes {
		fr.runners.Add(1)
		go func() {
			defer fr.runners.Done()
			phase := time.Duration(i) * o.Interval / time.Duration(len(fr.nodes))
			select {
			case <-fr.collect.Done():
				return
			case <-time.After(phase):
			}
			na.a.Runner.Run(fr.collect)
		}()
	}
	return nil
}

// advance moves the simulated fleet to the wall clock's now, steps the
// workload and, every FaultEvery, heats a random GPU of a random node for
// three minutes (a thermal-throttle warning the node's agent raises, pushes
// to the server, and clears: verdict changes that the health push sends at
// once, besides its heartbeats).
func (fr *fleetRun) advance(lastFault *time.Time) error {
	t0 := time.Now()
	defer func() { fr.simWall += time.Since(t0) }()
	target := fr.wallStart.Add(time.Since(fr.wallStart).Truncate(time.Millisecond))
	if dt := target.Sub(fr.fleet.Now()); dt > 0 {
		if err := fr.fleet.Advance(dt); err != nil {
			return fmt.Errorf("simulated hardware failed to advance: %w", err)
		}
	}
	if err := fr.gen.Step(); err != nil {
		return fmt.Errorf("simulated workload failed: %w", err)
	}
	if fr.o.FaultEvery > 0 && fr.fleet.Now().Sub(*lastFault) >= fr.o.FaultEvery {
		*lastFault = fr.fleet.Now()
		nodes := fr.fleet.Nodes()
		n := nodes[fr.rng.IntN(len(nodes))]
		f := simhw.Fault{Kind: simhw.FaultThermal, GPU: fr.rng.IntN(len(n.GPUs())), Duration: 3 * time.Minute}
		if err := n.Inject(f); err != nil {
			return err
		}
		fr.faults++
	}
	return nil
}

// stopCollecting ends every agent's run loop; the shippers and health pushers
// keep running.
func (fr *fleetRun) stopCollecting() {
	fr.collectCancel()
	fr.runners.Wait()
}

// pending is what the agents' shippers have not delivered yet: samples
// waiting to be encoded and samples queued.
func (fr *fleetRun) pending() int64 {
	var n int64
	for _, na := range fr.nodes {
		if sh := na.a.Shipper; sh != nil {
			st := sh.Stats()
			n += int64(st.PendingSamples) + st.QueueSamples
		}
	}
	return n
}

// drain waits until every shipper has delivered what it was given.
func (fr *fleetRun) drain(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p := fr.pending()
		if p == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the agents' shippers still hold %d samples after %s", p, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the agents' background readers, shippers and pushers and closes
// the agents.
func (fr *fleetRun) stop() error {
	fr.meter.stopped.Store(true)
	fr.collectCancel()
	fr.runners.Wait()
	fr.bgCancel()
	var errs []error
	for _, na := range fr.nodes {
		na.wait()
		if err := na.a.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", na.name, err))
		}
	}
	return errors.Join(errs...)
}

// shipped is what one node's shipper counted.
type shipped struct {
	sent     uint64
	dropped  map[string]uint64
	requests uint64
	errors   uint64
}

func (fr *fleetRun) shipped() map[string]shipped {
	out := make(map[string]shipped, len(fr.nodes))
	for _, na := range fr.nodes {
		st := na.a.Shipper.Stats()
		out[na.name] = shipped{sent: st.SamplesSent, dropped: st.Dropped, requests: st.RequestsSent, errors: st.SendErrors}
	}
	return out
}

// pushes counts the health pushes the agents' pushers made and failed.
func (fr *fleetRun) pushes() (sent, failed uint64) {
	for _, na := range fr.nodes {
		for _, p := range na.a.Pushers {
			st := p.Stats()
			sent += st.Sent
			failed += st.Errors
		}
	}
	return sent, failed
}
