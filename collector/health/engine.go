package health

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// bootIDPath is where Linux publishes the id of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// maxQueuedXids bounds the Xid events held between two Derive calls; beyond it the
// oldest are dropped (and counted in Report.Warnings). The xid source deduplicates
// floods, so reaching it means Derive is not being called.
const maxQueuedXids = 4096

// maxGPUIndex bounds the gpu_index values the engine tracks; a sample with a larger
// index is ignored (an HGX board has 8, an NVL72 tray 4).
const maxGPUIndex = 255

// Options configure an Engine.
type Options struct {
	// Node is the node's name as the scheduler knows it; it names the targets of
	// conditions and the Report.
	Node string
	// ExpectedGPUs is how many GPUs the node should have; 0 means the most NVML
	// discovery, NVML's count or the PCI bus has shown (remembered in the state
	// file).
	ExpectedGPUs int
	// RequirePersistenceMode raises persistence-mode (warning) on a GPU whose
	// persistence mode is off.
	RequirePersistenceMode bool
	// StateFile persists baselines, active conditions, states and Xid history;
	// "" keeps them in memory only.
	StateFile string
	// SaveInterval is how often the state file is rewritten when only counter
	// values changed; a changed condition or state is written at once. Default 1
	// minute.
	SaveInterval time.Duration
	// Rules are the thresholds; zero fields take DefaultRules' values.
	Rules Rules
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// BootID identifies the current boot; when it differs from the state file's,
	// every GPU counts as reset. "" reads /proc/sys/kernel/random/boot_id (and
	// ignores a failure).
	BootID string
	// Logger receives state-file problems and condition changes; nil discards.
	Logger *slog.Logger
	// Incidents, when set, returns conditions other components detected, such as
	// failed DCGM health watches; each cycle's answer is observed like the
	// engine's own findings and clears once it has not been reported for
	// ClearAfter, or when its GPU is reset after it was last reported (a
	// condition's Observed is when it was reported). It must not block.
	Incidents func() []telemetry.Condition
}

// Engine is the node health engine. It is a collector.XidSink, a
// collector.SXidSink and a collector.Deriver; Report may be called from any goroutine.
type Engine struct {
	opts  Options
	rules Rules
	node  telemetry.NodeID
	log   *slog.Logger
	now   func() time.Time

	qmu     sync.Mutex
	queue   []collector.XidEvent
	sxQueue []collector.SXidEvent
	dropped uint64

	mu       sync.Mutex
	cycle    uint64
	counters map[seriesKey]*counter
	gauges   map[seriesKey]float64 // baselines of gauges: link up, port up, port rate
	conds    map[condKey]*active
	gpus     map[int]*gpuState // -1 holds Xids no GPU could be matched to
	nodeSt   stateTrack
	flaps    map[portKey][]time.Time
	sources  map[string]*sourceTrack
	raised   map[raisedKey]uint64
	expected int // most GPUs discovery, NVML or the PCI bus has shown
	// sxidClearedAt is when nvswitch-fatal last cleared: SXids logged before it
	// are history.
	sxidClearedAt time.Time
	bootID        string
	warnings      []string
	dirty         bool
	lastSave      time.Time
	report        healthreport.Report
	reportAll     []telemetry.Condition // every active condition of report, worst first

	// Per-cycle scratch, reused.
	obs     map[condKey]*observation
	checked map[condKey]struct{}
	gcyc    []gpuCycle
	pcyc    map[portKey]*portCycle
	driver  string
}

type condKey struct {
	kind   telemetry.ConditionKind
	target telemetry.Target
}

type portKey struct {
	dev  string
	port int
}

type raisedKey struct {
	kind telemetry.ConditionKind
	sev  telemetry.Severity
}

// policy says how a condition clears.
type policy uint8

const (
	policyQuiet policy = iota // counter rules: ClearAfter without a new observation
	policyState               // state rules: ClearCycles good readings in a row
	policyOwned               // the rule decides: gone as soon as it is not observed
)

var policyNames = [...]string{"quiet", "state", "owned"}

func (p policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return "policy?"
}

func parsePolicy(s string) (policy, error) {
	for i, n := range policyNames {
		if n == s {
			return policy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown clearing policy %q", s)
}

// active is a raised condition with its clearing bookkeeping.
type active struct {
	c       telemetry.Condition
	policy  policy
	lastBad time.Time
	good    int
}

// observation is a rule's verdict for one cycle.
type observation struct {
	c      telemetry.Condition
	policy policy
}

// stateTrack is a GPU's or the node's place in the state machine.
type stateTrack struct {
	state          telemetry.State
	probationSince time.Time
	since          time.Time
}

// gpuState is what the engine remembers about one GPU.
type gpuState struct {
	stateTrack
	xids       []incident
	override   telemetry.Action // the driver's recovery action from Xid 154
	overrideAt time.Time
	overrideTx string
	xidMax     telemetry.Action // strongest per-Xid action while the condition lasts
	xidSevMax  telemetry.Severity
	resetAt    time.Time
	lastKmsg   time.Time // newest kernel-log Xid ingested: older ones are replays
	dbe        *dbeEvent // a double-bit error waiting for a reset
	gone       bool      // lost or missing: its return is a reset
	known      bool      // seen in the inventory or in samples
}

type dbeEvent struct {
	At      time.Time `json:"at"`
	Counter string    `json:"counter"`
	Delta   float64   `json:"delta"`
}

type sourceTrack struct {
	everUp    bool
	downSince time.Time
}

// New builds an Engine, loading the state file when there is one. A state file that
// cannot be read is no error: it is moved aside, reported in Report.Warnings and
// replaced. New fails only on invalid options.
func New(opts Options) (*Engine, error) {
	node, err := telemetry.ParseNodeID(opts.Node)
	if err != nil {
		return nil, fmt.Errorf("health engine: %w", err)
	}
	if opts.ExpectedGPUs < 0 {
		return nil, fmt.Errorf("health engine: expected GPUs %d is negative", opts.ExpectedGPUs)
	}
	rules := opts.Rules.withDefaults()
	if err := rules.validate(); err != nil {
		return nil, fmt.Errorf("health engine: %w", err)
	}
	if opts.SaveInterval <= 0 {
		opts.SaveInterval = time.Minute
	}
	e := &Engine{
		opts:     opts,
		rules:    rules,
		node:     node,
		log:      opts.Logger,
		now:      opts.Now,
		counters: map[seriesKey]*counter{},
		gauges:   map[seriesKey]float64{},
		conds:    map[condKey]*active{},
		gpus:     map[int]*gpuState{},
		flaps:    map[portKey][]time.Time{},
		sources:  map[string]*sourceTrack{},
		raised:   map[raisedKey]uint64{},
		obs:      map[condKey]*observation{},
		checked:  map[condKey]struct{}{},
		pcyc:     map[portKey]*portCycle{},
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.bootID = opts.BootID
	if e.bootID == "" {
		if b, err := os.ReadFile(bootIDPath); err == nil {
			e.bootID = strings.TrimSpace(string(b))
		}
	}
	now := e.now()
	e.nodeSt.since = now
	if opts.StateFile != "" {
		e.loadStateFile(now)
	}
	// Before the first cycle the report shows what the state file restored.
	e.buildReport(nil, now, 0)
	return e, nil
}

// Name implements collector.Deriver.
func (e *Engine) Name() string { return string(telemetry.SourceHealth) }

// ObserveXid implements collector.XidSink: it queues the event for the next Derive
// and never blocks on anything but a short mutex.
func (e *Engine) ObserveXid(ev collector.XidEvent) {
	e.qmu.Lock()
	if len(e.queue) >= maxQueuedXids {
		copy(e.queue, e.queue[1:])
		e.queue = e.queue[:len(e.queue)-1]
		e.dropped++
	}
	e.queue = append(e.queue, ev)
	e.qmu.Unlock()
}

// Derive implements collector.Deriver: it judges the snapshot and the Xids received
// since the last call, updates conditions and states, emits the health series and
// refreshes the Report.
func (e *Engine) Derive(ctx context.Context, snap *collector.Snapshot, emit func(telemetry.Sample)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if snap == nil {
		snap = &collector.Snapshot{}
	}
	e.qmu.Lock()
	events := e.queue
	e.queue = nil
	sxids := e.sxQueue
	e.sxQueue = nil
	dropped := e.dropped
	e.qmu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	e.cycle++
	clear(e.obs)
	clear(e.checked)
	if snap.Inventory != nil {
		e.driver = snap.Inventory.DriverVersion
		for _, g := range snap.Inventory.GPUs {
			e.gpu(g.Index).known = true
		}
		if n := len(snap.Inventory.GPUs); n > e.expected {
			e.expected = n
			e.dirty = true
		}
	}

	e.scan(snap, now)
	e.judgeGPUs(now)
	e.judgeGPUCount(snap)
	e.judgeFabric()
	e.judgePersistence()
	e.judgePorts(now)
	e.judgeSources(snap, now)
	e.judgeIncidents()
	e.ingestXids(events, snap.Inventory, now)
	e.judgeXids(now)
	e.ingestSXids(sxids)
	e.judgeNVSwitches()
	e.apply(snap.Inventory, now)
	e.updateStates(now)
	e.buildReport(snap.Inventory, now, dropped)
	e.emit(now, emit)
	if e.opts.StateFile != "" && (e.dirty || now.Sub(e.lastSave) >= e.opts.SaveInterval) {
		if err := e.saveLocked(now); err != nil {
			e.log.Warn("health: cannot write state file", "path", e.opts.StateFile, "err", err)
		}
	}
	return nil
}

// Save writes the state file now (the agent calls it on shutdown). Without a state
// file it does nothing.
func (e *Engine) Save() error {
	if e.opts.StateFile == "" {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.saveLocked(e.now())
}

// gpu returns the state of GPU i, creating it.
func (e *Engine) gpu(i int) *gpuState {
	g := e.gpus[i]
	if g == nil {
		g = &gpuState{}
		g.since = e.now()
		e.gpus[i] = g
	}
	return g
}

// gpuTarget is GPU i's target; -1 is the node.
func (e *Engine) gpuTarget(i int) telemetry.Target {
	if i < 0 {
		return telemetry.NodeTarget(e.node)
	}
	return telemetry.GPUTarget(telemetry.GPUID{Node: e.node, Index: i})
}

// observe records a bad verdict; two verdicts on one key merge into the worse.
func (e *Engine) observe(c telemetry.Condition, p policy) {
	k := condKey{c.Kind, c.Target}
	if o := e.obs[k]; o != nil {
		if c.Severity > o.c.Severity || (c.Severity == o.c.Severity && c.Action.Rank() > o.c.Action.Rank()) {
			for key, v := range o.c.Evidence {
				if _, ok := c.Evidence[key]; !ok && c.Evidence != nil {
					c.Evidence[key] = v
				}
			}
			o.c, o.policy = c, p
		} else {
			for key, v := range c.Evidence {
				if _, ok := o.c.Evidence[key]; !ok && o.c.Evidence != nil {
					o.c.Evidence[key] = v
				}
			}
		}
		return
	}
	e.obs[k] = &observation{c: c, policy: p}
}

// judgeIncidents observes the conditions other components report. A condition
// for another node, or one that does not validate, is dropped. One on a GPU that
// was reset after it was reported (its Observed time) is over: DCGM's watches
// read a reset GPU afresh, so what they said before the reset no longer holds,
// and a condition they raised clears at the reset instead of a quiet period
// later.
func (e *Engine) judgeIncidents() {
	if e.opts.Incidents == nil {
		return
	}
	resetSince := func(t telemetry.Target, at time.Time) bool {
		g, ok := t.GPUID()
		if !ok {
			return false
		}
		gs := e.gpus[g.Index]
		return gs != nil && gs.resetAt.After(at)
	}
	for _, c := range e.opts.Incidents() {
		if c.Target.Node != e.node || c.Validate() != nil || resetSince(c.Target, c.Observed) {
			continue
		}
		if c.Action.Rank() > 0 || c.Severity > telemetry.SeverityOK {
			e.observe(c, policyQuiet)
		}
	}
	for k, a := range e.conds {
		if _, again := e.obs[k]; again || k.kind != telemetry.ConditionDCGMHealth || !resetSince(k.target, a.lastBad) {
			continue
		}
		delete(e.conds, k)
		e.dirty = true
		e.log.Info("health: condition cleared by a GPU reset", "condition", a.c.Kind, "target", a.c.Target.String())
	}
}

// good records that the input behind a state-based condition was read and is good.
// Only keys with an active condition are recorded.
func (e *Engine) good(kind telemetry.ConditionKind, t telemetry.Target) {
	k := condKey{kind, t}
	if _, ok := e.conds[k]; ok {
		e.checked[k] = struct{}{}
	}
}

// apply folds the cycle's observations into the active conditions and clears those
// whose policy says so.
func (e *Engine) apply(inv *collector.Inventory, now time.Time) {
	for k, o := range e.obs {
		c := o.c
		if g, ok := c.Target.GPUID(); ok {
			if info, ok := inv.ByIndex(g.Index); ok {
				c.GPUUUID = info.UUID
			}
		}
		a := e.conds[k]
		if a == nil {
			c.Since, c.Observed = now, now
			e.conds[k] = &active{c: c, policy: o.policy, lastBad: now}
			e.raised[raisedKey{c.Kind, c.Severity}]++
			e.dirty = true
			e.log.Info("health: condition raised", "condition", c.Kind, "target", c.Target.String(),
				"severity", c.Severity.String(), "action", string(c.Action), "message", c.Message)
			continue
		}
		prevSev, prevAct := a.c.Severity, a.c.Action
		if o.policy != policyOwned {
			// While a condition lasts it keeps the worst it has been: a counter
			// that dips under the threshold for a cycle does not change it.
			c.Severity = max(c.Severity, a.c.Severity)
			c.Action = c.Action.Max(a.c.Action)
		}
		c.Since, c.Observed = a.c.Since, now
		if c.Severity != prevSev || c.Action != prevAct {
			if c.Severity > prevSev {
				e.raised[raisedKey{c.Kind, c.Severity}]++
			}
			e.dirty = true
		}
		a.c, a.policy, a.lastBad, a.good = c, o.policy, now, 0
	}
	for k, a := range e.conds {
		if _, ok := e.obs[k]; ok {
			continue
		}
		clearIt := false
		switch a.policy {
		case policyOwned:
			clearIt = true
		case policyQuiet:
			clearIt = now.Sub(a.lastBad) >= e.rules.ClearAfter
		case policyState:
			if _, ok := e.checked[k]; ok {
				a.good++
				clearIt = a.good >= e.rules.ClearCycles
			}
		}
		if clearIt {
			delete(e.conds, k)
			e.dirty = true
			e.log.Info("health: condition cleared", "condition", a.c.Kind, "target", a.c.Target.String())
		}
	}
}

// worst returns the worst severity among the active conditions on GPU i (i >= 0) or
// on the whole node (i == -1).
func (e *Engine) worst(i int) telemetry.Severity {
	w := telemetry.SeverityOK
	for _, a := range e.conds {
		if i >= 0 {
			g, ok := a.c.Target.GPUID()
			if !ok || g.Index != i {
				continue
			}
		}
		w = max(w, a.c.Severity)
	}
	return w
}

// step moves a state track one step toward what the worst severity asks for, along
// the transitions telemetry.State allows. emptied says a draining target runs nothing
// any more.
func (e *Engine) step(t *stateTrack, worst telemetry.Severity, emptied bool, now time.Time) {
	cur := t.state
	next := cur
	switch cur {
	case telemetry.StateHealthy, telemetry.StateSuspect:
		switch {
		case worst >= telemetry.SeverityCritical:
			next = telemetry.StateDraining
		case worst == telemetry.SeverityWarning:
			next = telemetry.StateSuspect
		default:
			next = telemetry.StateHealthy
		}
	case telemetry.StateDraining:
		switch {
		case worst < telemetry.SeverityCritical:
			next = telemetry.StateHealthy // cleared before the drain took effect
		case emptied || worst == telemetry.SeverityFatal:
			next = telemetry.StateDrained
		}
	case telemetry.StateDrained:
		if worst < telemetry.SeverityCritical {
			next = telemetry.StateProbation
			t.probationSince = now
		}
	case telemetry.StateProbation:
		switch {
		case worst >= telemetry.SeverityCritical:
			next = telemetry.StateDraining
		case worst == telemetry.SeverityWarning:
			next = telemetry.StateSuspect
		case now.Sub(t.probationSince) >= e.rules.Probation:
			next = telemetry.StateHealthy
		}
	default:
		next = telemetry.StateHealthy
	}
	if next != cur && cur.CanTransition(next) {
		t.state, t.since = next, now
		e.dirty = true
	}
}

// updateStates steps every GPU and the node.
func (e *Engine) updateStates(now time.Time) {
	allEmpty, anyProcs := true, false
	for i, g := range e.gpus {
		if i < 0 || !g.known {
			continue
		}
		procs := -1.0
		if i < len(e.gcyc) {
			procs = e.gcyc[i].procs
		}
		if procs == procs { // not NaN: attribution answered
			anyProcs = true
			if procs > 0 {
				allEmpty = false
			}
		} else {
			allEmpty = false
		}
		e.step(&g.stateTrack, e.worst(i), procs == 0, now)
	}
	e.step(&e.nodeSt, e.worst(-1), anyProcs && allEmpty, now)
}

// emit writes the health series.
func (e *Engine) emit(now time.Time, emit func(telemetry.Sample)) {
	if emit == nil {
		return
	}
	for _, g := range e.report.GPUs {
		emit(telemetry.Sample{Name: telemetry.MetricGPUHealthState,
			Labels: telemetry.Labels{{Name: telemetry.LabelGPUIndex, Value: itoa(g.Index)}},
			Value:  float64(g.State), Time: now})
	}
	emit(telemetry.Sample{Name: telemetry.MetricNodeHealthState, Value: float64(e.nodeSt.state), Time: now})
	if want := e.wantGPUs(); want > 0 {
		emit(telemetry.Sample{Name: telemetry.MetricNodeGPUs, Labels: expectedLabels, Value: float64(want), Time: now})
	}
	for _, c := range e.reportAll {
		emit(telemetry.Sample{Name: telemetry.MetricHealthCondition, Labels: conditionLabels(c), Value: 1, Time: now})
	}
	for k, n := range e.raised {
		emit(telemetry.Sample{Name: telemetry.MetricHealthConditionsTotal,
			Labels: telemetry.NewLabels(telemetry.LabelCondition, string(k.kind), telemetry.LabelSeverity, k.sev.String()),
			Value:  float64(n), Time: now})
	}
}

// expectedLabels label the GPU count the engine expects; shared, read-only.
var expectedLabels = telemetry.NewLabels(telemetry.LabelSource, "expected")

// conditionLabels are the labels of a gpuwatch_health_condition sample: every key of
// the catalog but node (the exporter adds it), empty where the target's scope has
// none.
func conditionLabels(c telemetry.Condition) telemetry.Labels {
	t := c.Target
	var gpu, link, sw, dev, port string
	switch t.Scope {
	case telemetry.ScopeGPU:
		gpu = itoa(t.GPU)
	case telemetry.ScopeNVLink:
		gpu, link = itoa(t.GPU), itoa(t.Link)
	case telemetry.ScopeNVSwitch:
		sw = itoa(t.NVSwitch)
	case telemetry.ScopeIBPort:
		dev, port = t.IBDevice, itoa(t.IBPort)
	}
	return telemetry.NewLabels(
		telemetry.LabelGPUIndex, gpu,
		telemetry.LabelLink, link,
		telemetry.LabelNVSwitch, sw,
		telemetry.LabelIBDevice, dev,
		telemetry.LabelIBPort, port,
		telemetry.LabelTarget, t.String(),
		telemetry.LabelCondition, string(c.Kind),
		telemetry.LabelSeverity, c.Severity.String(),
		telemetry.LabelAction, string(c.Action),
	)
}
