package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/shipper"
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
	a    *agent.Agent // nil while the node reboots
	stop func()       // ends a's background readers and closes it
	srv  *http.Server
	h    atomic.Pointer[http.Handler] // the agent's handler; a new agent after a reboot
	url  string                       // http://127.0.0.1:PORT

	boots     int       // agents started on this node: 1, then one more per reboot
	bootTime  time.Time // when the node last booted
	downUntil time.Time // while the node reboots, when it is back

	view  NodeView
	conds map[string]telemetry.Condition // active conditions by Key
	xids  map[xidKey]float64             // gpuwatch_xid_errors_total as last counted
	state telemetry.State

	mu     sync.Mutex
	allocs map[string][]string // GPU UUID → job ids on it, from the last full cycle
}

// fleetAgents are the agents of every node.
type fleetAgents struct {
	nodes  []*nodeAgent
	byName map[string]*nodeAgent
	ctx    context.Context
	cancel context.CancelFunc
	client *http.Client

	o                      Options
	fleet                  *simhw.Fleet
	dir                    string
	remoteWrite, serverURL string
	tokens                 *demoTokens
	// retiredSent and retiredDropped are the samples the agents stopped by a
	// reboot shipped and dropped.
	retiredSent, retiredDropped int
}

// startAgents builds one agent per node with the options `gpuwatch agent
// --simulate` gives its node, serves each on loopback and starts its background
// readers (kernel log, NVML events, attribution), its shipper, which
// remote-writes every sample to remoteWrite through a queue in memory, and its
// health pusher, which sends its health report to the server at serverURL. The
// demo loop drives their collection cycles.
func startAgents(fleet *simhw.Fleet, o Options, dir, remoteWrite, serverURL string, tokens *demoTokens) (*fleetAgents, error) {
	ctx, cancel := context.WithCancel(context.Background())
	fa := &fleetAgents{ctx: ctx, cancel: cancel, byName: map[string]*nodeAgent{},
		// Generous: a loaded test machine renders a node's /metrics slowly.
		client: &http.Client{Timeout: time.Minute},
		o:      o, fleet: fleet, dir: dir, remoteWrite: remoteWrite, serverURL: serverURL, tokens: tokens}
	for i, n := range fleet.Nodes() {
		// Each run is a fresh fleet: its agents start without the health state
		// a previous run left in the same --dir.
		stateDir := filepath.Join(dir, n.Name(), "gpuwatch-state")
		if err := os.RemoveAll(stateDir); err != nil {
			fa.stop()
			return nil, fmt.Errorf("node %s: cannot clear the agent's state directory: %w", n.Name(), err)
		}
		addr := "127.0.0.1:0"
		if o.ListenBase > 0 {
			addr = "127.0.0.1:" + strconv.Itoa(o.ListenBase+i)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fa.stop()
			return nil, fmt.Errorf("node %s: cannot serve its agent: %w", n.Name(), err)
		}
		na := &nodeAgent{node: n, url: "http://" + ln.Addr().String(), bootTime: n.Boot(),
			conds: map[string]telemetry.Condition{}, xids: map[xidKey]float64{}}
		na.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := na.h.Load()
			if h == nil {
				http.Error(w, na.node.Name()+" is rebooting", http.StatusServiceUnavailable)
				return
			}
			(*h).ServeHTTP(w, r)
		})}
		if err := fa.startAgent(na, true); err != nil {
			ln.Close()
			fa.stop()
			return nil, err
		}
		go na.srv.Serve(ln)
		fa.nodes = append(fa.nodes, na)
		fa.byName[n.Name()] = na
	}
	return fa, nil
}

// startAgent starts the node's agent. fresh is false after a reboot: the agent
// keeps its health state, sees a new boot id, and reads the kernel log from its
// end (the old boot's Xids are not new).
func (fa *fleetAgents) startAgent(na *nodeAgent, fresh bool) error {
	n, o := na.node, fa.o
	na.boots++
	boot := na.bootTime
	a, err := agent.New(agent.Options{
		Node:          n.Name(),
		NVML:          n.NVML(),
		SysfsRoot:     n.SysRoot(),
		ProcRoot:      n.ProcRoot(),
		KmsgPath:      n.KmsgPath(),
		KmsgFromStart: fresh,
		KmsgPoll:      kmsgPoll,
		BootTime:      func() (time.Time, error) { return boot, nil },
		BootID:        fmt.Sprintf("simulated-%s-%d-%d", n.Name(), boot.Unix(), na.boots),
		StateDir:      filepath.Join(fa.dir, n.Name(), "gpuwatch-state"),
		// In simulated time: a health cycle every tick, a full one every
		// FullEvery ticks. The demo loop calls Collect on that schedule.
		Interval:       time.Duration(o.FullEvery) * o.Tick,
		HealthInterval: o.Tick,
		DCGM:           n.DCGM(),                              // the simulated node's host engine
		Instance:       strings.TrimPrefix(na.url, "http://"), // as a scrape of it would see it
		KubeletSocket:  "-",
		NVLinkDomain:   n.NVLinkDomain(),
		Leaf:           n.Leaf(),
		Spine:          n.Spine(),
		Block:          n.Block(),
		Version:        o.Version,
		Now:            fa.fleet.Now,
		RemoteWriteURL: fa.remoteWrite,
		ServerURL:      fa.serverURL,
		Transport:      fa.tokens.transport(agentToken(n.Name())),
	})
	if err != nil {
		return fmt.Errorf("node %s: cannot start its agent: %w", n.Name(), err)
	}
	ctx, cancel := context.WithCancel(fa.ctx)
	wait := a.Start(ctx)
	na.a = a
	na.stop = func() { cancel(); wait(); a.Close() }
	h := a.Handler()
	na.h.Store(&h)
	return nil
}

// reboot takes the node down as `scontrol reboot` would: the agent ships what it
// has and stops, and the node reports nothing until back (see boot).
func (fa *fleetAgents) reboot(na *nodeAgent, now time.Time) {
	if na.a == nil {
		return
	}
	if sh := na.a.Shipper; sh != nil {
		// A clean shutdown: what the agent collected reaches the store first.
		waitShipped(sh, 10*time.Second)
		st := sh.Stats()
		fa.retiredSent += int(st.SamplesSent)
		for _, n := range st.Dropped {
			fa.retiredDropped += int(n)
		}
	}
	na.h.Store(nil)
	na.stop()
	na.a, na.stop = nil, nil
	na.downUntil = now.Add(rebootTime)
}

// boot brings a rebooted node back: every GPU reset (a lost one answers again),
// and a new agent on a new boot.
func (fa *fleetAgents) boot(na *nodeAgent, now time.Time) error {
	if err := na.node.Inject(simhw.Fault{Kind: simhw.FaultRecover, GPU: simhw.AllGPUs}); err != nil {
		return fmt.Errorf("node %s: cannot reset its GPUs on reboot: %w", na.node.Name(), err)
	}
	// Write out the old boot's kernel log (the node materializes it on Advance):
	// the new agent reads from its end, as after a real reboot.
	if err := fa.fleet.Advance(0); err != nil {
		return fmt.Errorf("node %s: reboot: %w", na.node.Name(), err)
	}
	na.downUntil, na.bootTime = time.Time{}, now
	return fa.startAgent(na, false)
}

// up returns the agents of the nodes that are not rebooting.
func (fa *fleetAgents) up() []*nodeAgent {
	out := make([]*nodeAgent, 0, len(fa.nodes))
	for _, na := range fa.nodes {
		if na.a != nil {
			out = append(out, na)
		}
	}
	return out
}

// stop ends the background readers, the servers and the agents (which save their
// health state).
func (fa *fleetAgents) stop() {
	fa.cancel()
	for _, na := range fa.nodes {
		if na.stop != nil {
			na.stop()
		}
		na.srv.Close()
	}
	fa.nodes = nil
}

// workloads names the jobs on the given GPUs (UUIDs) of a node, or on the whole
// node when gpus is nil, as its agent's attribution last saw them: what the drain
// controller evacuates.
func (fa *fleetAgents) workloads(node string, gpus []string) []string {
	na := fa.byName[node]
	if na == nil {
		return nil
	}
	na.mu.Lock()
	defer na.mu.Unlock()
	var out []string
	for uuid, jobs := range na.allocs {
		if gpus == nil || slices.Contains(gpus, uuid) {
			out = append(out, jobs...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// collect runs one cycle on every agent at once (each waits for its kernel-log
// reader to catch up first) and returns what changed, in node order, and the CPU
// time the process spent meanwhile: the agents' cost, as the simulator is idle.
func (fa *fleetAgents) collect(ctx context.Context, full bool) ([]Event, time.Duration) {
	cpu0 := cpuTime()
	up := fa.up()
	evs := make([][]Event, len(up))
	var wg sync.WaitGroup
	for i, na := range up {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap := na.a.Collect(ctx, full)
			evs[i] = na.update(snap, na.a.Health.Report())
		}()
	}
	wg.Wait()
	var out []Event
	for i := range up {
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
func (na *nodeAgent) update(snap *collector.Snapshot, r healthreport.Report) []Event {
	name := na.node.Name()
	na.view = viewOf(name, na.node.Leaf(), na.url, snap, r)
	at := snap.Time
	var evs []Event

	// The attribution source labels an allocation with the GPU's index; the
	// drain controller names faulty GPUs by UUID.
	uuids := map[string]string{}
	if snap.Inventory != nil {
		for _, g := range snap.Inventory.GPUs {
			uuids[strconv.Itoa(g.Index)] = g.UUID
		}
	}
	allocs := map[string][]string{}
	for _, s := range snap.Samples {
		if s.Name == telemetry.MetricGPUAllocationInfo {
			if uuid, job := uuids[s.Labels.Get(telemetry.LabelGPUIndex)], s.Labels.Get(telemetry.LabelJobID); uuid != "" && job != "" {
				allocs[uuid] = append(allocs[uuid], job)
			}
		}
	}
	na.mu.Lock()
	na.allocs = allocs
	na.mu.Unlock()

	counts := map[xidKey]float64{}
	for _, s := range snap.Samples {
		if s.Name != telemetry.MetricXidErrorsTotal {
			continue
		}
		x, err := strconv.Atoi(s.Labels.Get(telemetry.LabelXid))
		if err != nil {
			continue
		}
		// One series per action the catalog resolved (Xid 154 announcing
		// different actions): the Xid's count is their sum.
		counts[xidKey{s.Labels.Get(telemetry.LabelGPUIndex), x}] += s.Value
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
func stateReason(r healthreport.Report) string {
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
		for _, na := range fa.up() {
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

// waitShipped waits until one shipper has delivered what it was given, or
// timeout passes.
func waitShipped(sh *shipper.Shipper, timeout time.Duration) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if st := sh.Stats(); st.PendingSamples == 0 && st.QueueSamples == 0 {
			return
		}
	}
}
