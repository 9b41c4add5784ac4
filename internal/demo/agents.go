package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/health"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// kmsgPoll is how often each agent polls its node's kernel-log file. Collect waits
// for the reader to catch up, so it bounds the time one cycle waits for the log.
const kmsgPoll = 5 * time.Millisecond

// nodeAgent is the gpuwatch agent of one simulated node, with its HTTP server on
// a loopback port, and what the demo last learned from it.
type nodeAgent struct {
	node *simhw.Node
	a    *agent.Agent
	srv  *http.Server
	url  string // http://127.0.0.1:PORT

	view  NodeView
	conds map[string]telemetry.Condition // active conditions by Key
	xids  map[xidKey]float64             // gpuwatch_xid_errors_total as last counted
	state telemetry.State
}

// fleetAgents are the agents of every node.
type fleetAgents struct {
	nodes  []*nodeAgent
	byName map[string]*nodeAgent
	cancel context.CancelFunc
	waits  []func()
	client *http.Client
}

// startAgents builds one agent per node with the options `gpuwatch agent
// --simulate` gives its node, serves each on loopback and starts its background
// readers (kernel log, NVML events, attribution) and its shipper, which
// remote-writes every sample to remoteWrite through a queue in memory. The demo
// loop drives their collection cycles.
func startAgents(fleet *simhw.Fleet, o Options, dir, remoteWrite string) (*fleetAgents, error) {
	ctx, cancel := context.WithCancel(context.Background())
	fa := &fleetAgents{cancel: cancel, byName: map[string]*nodeAgent{},
		client: &http.Client{Timeout: 10 * time.Second}}
	for i, n := range fleet.Nodes() {
		// Each run is a fresh fleet: its agents start without the health state
		// a previous run left in the same --dir.
		stateDir := filepath.Join(dir, n.Name(), "gpuwatch-state")
		if err := os.RemoveAll(stateDir); err != nil {
			fa.stop()
			return nil, fmt.Errorf("node %s: cannot clear the agent's state directory: %w", n.Name(), err)
		}
		boot := n.Boot()
		a, err := agent.New(agent.Options{
			Node:          n.Name(),
			NVML:          n.NVML(),
			SysfsRoot:     n.SysRoot(),
			ProcRoot:      n.ProcRoot(),
			KmsgPath:      n.KmsgPath(),
			KmsgFromStart: true,
			KmsgPoll:      kmsgPoll,
			BootTime:      func() (time.Time, error) { return boot, nil },
			BootID:        fmt.Sprintf("simulated-%s-%d", n.Name(), boot.Unix()),
			StateDir:      stateDir,
			// In simulated time: a health cycle every tick, a full one every
			// FullEvery ticks. The demo loop calls Collect on that schedule.
			Interval:       time.Duration(o.FullEvery) * o.Tick,
			HealthInterval: o.Tick,
			DCGMDisable:    true, // no host engine serves a simulated node
			KubeletSocket:  "-",
			NVLinkDomain:   n.NVLinkDomain(),
			Leaf:           n.Leaf(),
			Spine:          n.Spine(),
			Block:          n.Block(),
			Version:        o.Version,
			Now:            fleet.Now,
			RemoteWriteURL: remoteWrite,
		})
		if err != nil {
			fa.stop()
			return nil, fmt.Errorf("node %s: cannot start its agent: %w", n.Name(), err)
		}
		addr := "127.0.0.1:0"
		if o.ListenBase > 0 {
			addr = "127.0.0.1:" + strconv.Itoa(o.ListenBase+i)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			a.Close()
			fa.stop()
			return nil, fmt.Errorf("node %s: cannot serve its agent: %w", n.Name(), err)
		}
		na := &nodeAgent{node: n, a: a, url: "http://" + ln.Addr().String(),
			srv:   &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second},
			conds: map[string]telemetry.Condition{}, xids: map[xidKey]float64{}}
		go na.srv.Serve(ln)
		fa.waits = append(fa.waits, a.Start(ctx))
		fa.nodes = append(fa.nodes, na)
		fa.byName[n.Name()] = na
	}
	return fa, nil
}

// stop ends the background readers, the servers and the agents (which save their
// health state).
func (fa *fleetAgents) stop() {
	fa.cancel()
	for _, w := range fa.waits {
		w()
	}
	for _, na := range fa.nodes {
		na.srv.Close()
		na.a.Close()
	}
	fa.nodes, fa.waits = nil, nil
}

// collect runs one cycle on every agent at once (each waits for its kernel-log
// reader to catch up first) and returns what changed, in node order, and the CPU
// time the process spent meanwhile: the agents' cost, as the simulator is idle.
func (fa *fleetAgents) collect(ctx context.Context, full bool) ([]Event, time.Duration) {
	cpu0 := cpuTime()
	evs := make([][]Event, len(fa.nodes))
	var wg sync.WaitGroup
	for i, na := range fa.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap := na.a.Collect(ctx, full)
			evs[i] = na.update(snap, na.a.Health.Report())
		}()
	}
	wg.Wait()
	var out []Event
	for i := range fa.nodes {
		out = append(out, evs[i]...)
	}
	return out, cpuTime() - cpu0
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// views returns every node as its agent last reported it.
func (fa *fleetAgents) views() []NodeView {
	out := make([]NodeView, len(fa.nodes))
	for i, na := range fa.nodes {
		out[i] = na.view
	}
	return out
}

// fetch gets one of a node's agent endpoints over HTTP, as a user's curl would.
func (fa *fleetAgents) fetch(node, path string) (string, error) {
	na := fa.byName[node]
	if na == nil {
		return "", fmt.Errorf("no agent for node %q", node)
	}
	resp, err := fa.client.Get(na.url + path)
	if err != nil {
		return "", fmt.Errorf("node %s: GET %s: %w", node, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	if err != nil {
		return "", fmt.Errorf("node %s: GET %s%s: %w", node, na.url, path, err)
	}
	return string(b), nil
}

// xidKey is one gpuwatch_xid_errors_total series: a GPU index ("" when the kernel
// log named a PCI address no GPU has) and an Xid.
type xidKey struct {
	gpu string
	xid int
}

// update records the agent's latest snapshot and health report and returns what
// changed since the previous cycle: Xids counted, conditions raised, changed or
// cleared, the node's state.
func (na *nodeAgent) update(snap *collector.Snapshot, r health.Report) []Event {
	name := na.node.Name()
	na.view = viewOf(name, na.node.Leaf(), na.url, snap, r)
	at := snap.Time
	var evs []Event

	counts := map[xidKey]float64{}
	for _, s := range snap.Samples {
		if s.Name != telemetry.MetricXidErrorsTotal {
			continue
		}
		x, err := strconv.Atoi(s.Labels.Get(telemetry.LabelXid))
		if err != nil {
			continue
		}
		counts[xidKey{s.Labels.Get(telemetry.LabelGPUIndex), x}] = s.Value
	}
	keys := make([]xidKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b xidKey) int { return cmp.Or(cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.xid, b.xid)) })
	for _, k := range keys {
		d := counts[k] - na.xids[k]
		if d <= 0 {
			continue
		}
		e := Event{At: at, Node: name, Kind: EventXid, GPU: -1, Xid: k.xid, Count: int(d), Total: int(counts[k])}
		if g, err := strconv.Atoi(k.gpu); err == nil {
			e.GPU, e.Target = g, "gpu"+k.gpu
		}
		if info, ok := telemetry.LookupXid(k.xid); ok {
			e.Action = info.Action
		}
		evs = append(evs, e)
	}
	// Keep the last count of a series a failed collection left out.
	for k, v := range counts {
		na.xids[k] = v
	}

	cur := map[string]telemetry.Condition{}
	for _, c := range r.AllConditions() {
		cur[c.Key()] = c
		prev, seen := na.conds[c.Key()]
		switch {
		case !seen:
			evs = append(evs, conditionEvent(at, name, EventRaised, c))
		case prev.Severity != c.Severity || prev.Action != c.Action:
			evs = append(evs, conditionEvent(at, name, EventChanged, c))
		}
	}
	var gone []telemetry.Condition
	for k, c := range na.conds {
		if _, ok := cur[k]; !ok {
			gone = append(gone, c)
		}
	}
	slices.SortFunc(gone, func(a, b telemetry.Condition) int { return cmp.Compare(a.Key(), b.Key()) })
	for _, c := range gone {
		evs = append(evs, conditionEvent(at, name, EventCleared, c))
	}
	na.conds = cur

	if r.State != na.state {
		evs = append(evs, Event{At: at, Node: name, Kind: EventState, GPU: -1, From: na.state, To: r.State,
			Action: r.Action, Text: stateReason(r)})
		na.state = r.State
	}
	return evs
}

func conditionEvent(at time.Time, node string, kind EventKind, c telemetry.Condition) Event {
	e := Event{At: at, Node: node, Kind: kind, GPU: -1, Condition: c.Kind, Severity: c.Severity,
		Action: c.Action, Target: shortTarget(c.Target), Text: c.Message}
	if g, ok := c.Target.GPUID(); ok {
		e.GPU = g.Index
	}
	if x, err := strconv.Atoi(c.Evidence["xid"]); err == nil && c.Kind == telemetry.ConditionXid {
		e.Xid = x
	}
	return e
}

// shortTarget is a target without its node: "gpu3", "gpu5/nvlink7", "mlx5_6/port1",
// "" for the node itself.
func shortTarget(t telemetry.Target) string {
	s := t.String()
	if _, rest, ok := strings.Cut(s, "/"); ok {
		return rest
	}
	return ""
}

// stateReason says why a node is in its state: its worst condition, where, and how
// many more there are, e.g. ": ecc-dbe on gpu3 → RESET_GPU, +3 more".
func stateReason(r health.Report) string {
	var worst []telemetry.Condition
	for _, c := range r.AllConditions() {
		if c.Severity >= telemetry.SeverityWarning {
			worst = append(worst, c)
		}
	}
	if len(worst) == 0 {
		return ""
	}
	c := worst[0]
	s := ": " + string(c.Kind)
	if t := shortTarget(c.Target); t != "" {
		s += " on " + t
	}
	if c.Action != telemetry.ActionNone {
		s += " → " + string(c.Action)
	}
	if n := len(worst) - 1; n > 0 {
		s += fmt.Sprintf(", +%d more", n)
	}
	return s
}

// drain waits until every agent's shipper has delivered what its agent published
// (nothing waiting to be encoded, nothing queued), or timeout passes.
func (fa *fleetAgents) drain(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		waiting := 0
		for _, na := range fa.nodes {
			if sh := na.a.Shipper; sh != nil {
				st := sh.Stats()
				waiting += st.PendingSamples + int(st.QueueSamples)
			}
		}
		if waiting == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the agents have not shipped %d samples to the demo's store after %s", waiting, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
