package demo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"

	"github.com/gpuwatch/gpuwatch/collector/healthpush"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// DefaultDrainPolicy is the drain policy of the demo's server when none is given:
// gpuwatch's default policy with windows short enough for ten simulated minutes.
//
//go:embed drain-policy.yaml
var DefaultDrainPolicy []byte

// DefaultFairShare is the fair-share configuration of the demo's server when none
// is given: the simulated workload's accounts and users, equal shares.
//
//go:embed fairshare.yaml
var DefaultFairShare []byte

// heartbeat is how often, in simulated time, the demo re-sends a node's unchanged
// health report to the server. The agents' pushers send a changed verdict at once
// but their heartbeat runs on the wall clock (healthpush.DefaultHeartbeat, 30 s),
// which at 20x is ten simulated minutes; a pusher on the simulated clock would
// send one every 30 simulated seconds, and so does the demo on its behalf.
const heartbeat = healthpush.DefaultHeartbeat

// rebootTime is how long a simulated node takes to reboot: its agent is down and
// the node reports nothing meanwhile.
const rebootTime = 90 * time.Second

// loadControl reads the drain policy and the fair-share configuration of a run.
func loadControl(o *Options) (*drain.Policy, *fairshare.Config, error) {
	polData, polName := o.DrainPolicy, o.DrainPolicyName
	if polData == nil {
		polData, polName = DefaultDrainPolicy, "the demo's drain policy"
	}
	pol, err := drain.ParsePolicy(polName, polData)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the drain policy: %w", err)
	}
	fsData, fsName := o.FairShare, o.FairShareName
	if fsData == nil {
		fsData, fsName = DefaultFairShare, "the demo's fair-share configuration"
	}
	cfg, err := fairshare.ParseConfig(fsName, fsData)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the fair-share configuration: %w", err)
	}
	return pol, cfg, nil
}

// actuator is the demo server's hand on the scheduler: gpuwatch's log actuator,
// which only says what it would do, or Slurm's through scontrol on a local
// cluster, with the demo's node names mapped to the cluster's. It notes every
// call for the live output, and hands each accepted reboot to the demo loop,
// which reboots the simulated node as the site's reboot would.
type actuator struct {
	inner drain.Actuator
	slurm bool
	// started is how long the Slurm cluster took to start.
	started time.Duration
	names   map[string]string // demo node → scheduler node
	now     func() time.Time

	// refuseReboot names nodes whose reboot the log actuator refuses for good,
	// with why: the demo's stand-in for a cluster without a RebootProgram.
	refuseReboot map[string]string

	mu      sync.Mutex
	notes   []ctlLine
	reboots []string
}

var (
	_ drain.Actuator  = (*actuator)(nil)
	_ drain.Evacuator = (*actuator)(nil)
)

// newLogActuator wraps drain.LogActuator, whose calls become "would …" notes.
func newLogActuator(now func() time.Time) *actuator {
	a := &actuator{now: now, names: map[string]string{}}
	la := drain.NewLogActuator(io.Discard)
	la.OnCall(func(c drain.LogCall) { a.note(c.Node, "would "+c.String()) })
	a.inner = la
	return a
}

func (a *actuator) note(node, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notes = append(a.notes, ctlLine{at: a.now(), node: node, text: text})
}

// name is the scheduler's name of a demo node.
func (a *actuator) name(node string) string {
	if n, ok := a.names[node]; ok {
		return n
	}
	return node
}

// kind names the actuator: "slurm" or "log".
func (a *actuator) kind() string {
	if a.slurm {
		return "slurm"
	}
	return "log"
}

// take returns the notes and reboots since the last call.
func (a *actuator) take() ([]ctlLine, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, r := a.notes, a.reboots
	a.notes, a.reboots = nil, nil
	return n, r
}

// slurmNote notes the scontrol command a Slurm actuation ran ("%s" is the node).
func (a *actuator) slurmNote(node, command string, err error) {
	if !a.slurm {
		return
	}
	text := "slurm: scontrol " + fmt.Sprintf(command, a.name(node))
	if err != nil {
		text += " failed: " + err.Error()
	}
	a.note(node, text)
}

func (a *actuator) Drain(ctx context.Context, node, reason string) error {
	err := a.inner.Drain(ctx, a.name(node), reason)
	a.slurmNote(node, "update NodeName=%s State=DRAIN Reason="+strconv.Quote(reason), err)
	return err
}

func (a *actuator) Resume(ctx context.Context, node string) error {
	err := a.inner.Resume(ctx, a.name(node))
	a.slurmNote(node, "update NodeName=%s State=RESUME", err)
	return err
}

func (a *actuator) Reboot(ctx context.Context, node, reason string) error {
	if why, ok := a.refuseReboot[node]; ok {
		err := drain.Permanent(fmt.Errorf("reboot %s refused: %s", node, why))
		a.note(node, "the scheduler refuses to reboot "+node+": "+why)
		return err
	}
	err := a.inner.Reboot(ctx, a.name(node), reason)
	a.slurmNote(node, "reboot ASAP nextstate=DOWN Reason="+strconv.Quote(reason)+" %s", err)
	if err == nil {
		a.mu.Lock()
		a.reboots = append(a.reboots, node)
		a.mu.Unlock()
	}
	return err
}

func (a *actuator) State(ctx context.Context, node string) (bool, string, error) {
	return a.inner.State(ctx, a.name(node))
}

// Evacuate stops the work on a drained node's faulty GPUs. The log actuator says
// it would; the simulated jobs are not Slurm's, so on a real cluster the demo
// only says which it would requeue.
func (a *actuator) Evacuate(ctx context.Context, node string, work []string) error {
	if a.slurm {
		a.note(node, fmt.Sprintf("slurm: would requeue %s on %s (simulated jobs, unknown to this Slurm)", strings.Join(work, ","), a.name(node)))
		return nil
	}
	if ev, ok := a.inner.(drain.Evacuator); ok {
		return ev.Evacuate(ctx, a.name(node), work)
	}
	return nil
}

// pushed is the last health report the server accepted from a node.
type pushed struct {
	verdict string
	at      time.Time // simulated time it was accepted
}

// pushRecorder sits in front of the demo's server and notes every health report
// the server accepted, so that the demo loop can wait until each agent's latest
// verdict reached the drain controller before simulated time moves on.
type pushRecorder struct {
	next http.Handler
	now  func() time.Time

	mu   sync.Mutex
	last map[string]pushed
}

func newPushRecorder(next http.Handler, now func() time.Time) *pushRecorder {
	return &pushRecorder{next: next, now: now, last: map[string]pushed{}}
}

// statusWriter remembers the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (p *pushRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != healthpush.Path {
		p.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, "reading the health report: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	p.next.ServeHTTP(sw, r)
	var rep healthreport.Report
	if sw.code/100 != 2 || json.Unmarshal(body, &rep) != nil {
		return
	}
	p.mu.Lock()
	p.last[rep.Node] = pushed{verdict: healthpush.Verdict(rep), at: p.now()}
	p.mu.Unlock()
}

// get returns what the server last accepted from node.
func (p *pushRecorder) get(node string) (pushed, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.last[node]
	return v, ok
}

// wireVerdict is the verdict of a report as the server decodes it.
func wireVerdict(r healthreport.Report) (string, []byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", nil, fmt.Errorf("cannot encode %s's health report: %w", r.Node, err)
	}
	var back healthreport.Report
	if err := json.Unmarshal(b, &back); err != nil {
		return "", nil, fmt.Errorf("cannot decode %s's health report: %w", r.Node, err)
	}
	return healthpush.Verdict(back), b, nil
}

// DrainResult is what the demo server's drain controller did, read back from it.
type DrainResult struct {
	// Actuator is "log" or "slurm".
	Actuator string
	// Policy is the policy in force.
	Policy *drain.Policy
	// Audit is the controller's whole audit log.
	Audit []drain.AuditRecord
	// Nodes are the controller's view of every node at the end.
	Nodes []drain.NodeStatus
	// Budget is the circuit breaker at the end.
	Budget drain.BudgetStatus
	// Drains are the automatic drains the actuator accepted, each with the
	// scripted fault that led to it.
	Drains []DrainLatency
	// Resumes counts the nodes automation returned to service.
	Resumes int
	// Reboots are the simulated reboots the demo performed for the actuator.
	Reboots []Reboot
	// Held are the nodes the scheduler holds out of service at the end, by the
	// scheduler's name, with their reason, as the actuator reads them (Slurm:
	// scontrol show node).
	Held map[string]string
}

// Reboot is one simulated reboot: the node's agent stopped at Down and a new one
// started at Up (zero when the run ended first).
type Reboot struct {
	Node     string
	Down, Up time.Time
}

// DrainLatency is one accepted automatic drain (or reboot) and how long after
// its node's scripted fault it took effect, in simulated time.
type DrainLatency struct {
	Node    string
	Action  string // drain, cordon, requeue, reboot
	Fault   time.Time
	Decided time.Time
	Done    time.Time
}

// Latency is the time from the fault to the actuator accepting the drain.
func (d DrainLatency) Latency() time.Duration { return d.Done.Sub(d.Fault) }

// nodeLevel reports whether an audit action takes a node out of service.
func nodeLevel(action string) bool {
	return drain.Mode(action).NodeLevel()
}

// drainLatencies pairs each accepted automatic drain in the audit with the first
// scripted fault on its node since the node last returned to service (or the
// start), and with the decision that led to it. Re-assertions of a drain
// (relapse, verify) are not new drains and are left out.
func drainLatencies(recs []drain.AuditRecord, faults map[string][]time.Time) []DrainLatency {
	var out []DrainLatency
	decided := map[string]time.Time{} // node → the initial decision awaiting its actuation
	since := map[string]time.Time{}   // node → when it last returned to service
	for _, r := range recs {
		switch {
		case r.Event == "decision" && r.Outcome == drain.OutcomePending && nodeLevel(r.Action) && r.Note == "":
			decided[r.Node] = r.Time
		case r.Event == "actuation" && r.Outcome == drain.OutcomeAccepted && nodeLevel(r.Action):
			at, ok := decided[r.Node]
			if !ok {
				continue
			}
			delete(decided, r.Node)
			d := DrainLatency{Node: r.Node, Action: r.Action, Decided: at, Done: r.Time}
			for _, f := range faults[r.Node] {
				if !f.After(at) && (since[r.Node].IsZero() || f.After(since[r.Node])) {
					d.Fault = f
					break
				}
			}
			if !d.Fault.IsZero() {
				out = append(out, d)
			}
		case r.Event == "actuation" && r.Outcome == drain.OutcomeAccepted && r.Action == "resume":
			since[r.Node] = r.Time
		}
	}
	return out
}

// percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// FairShareResult is the demo server's fair-share standing at the end.
type FairShareResult struct {
	// Standing is the server's, charged by measured use.
	Standing *fairshare.Standing
	// ByAllocation are the factors of the same usage charged by allocation (one
	// per allocated GPU-second, as Slurm charges), for comparison.
	ByAllocation *fairshare.Factors
	// Err is the feeder's last read error, if any.
	Err error
}

// byAllocation computes the standing's factors with every user charged its
// allocated GPU-seconds instead.
func byAllocation(cfg *fairshare.Config, st *fairshare.Standing) *fairshare.Factors {
	u := map[fairshare.Assoc]float64{}
	for _, r := range st.Associations {
		if r.User != "" {
			u[fairshare.Assoc{Account: r.Account, User: r.User}] = r.UsageAllocated
		}
	}
	return fairshare.ComputeFactors(cfg.Tree, u, fairshare.FactorOptions{Dampening: cfg.Dampening})
}

// wallEvery is the wall-clock interval that is d of simulated time at speed (a
// negative speed runs as fast as it can: a tenth of a second).
func wallEvery(d time.Duration, speed float64) time.Duration {
	if speed <= 0 {
		return 100 * time.Millisecond
	}
	return max(time.Duration(float64(d)/speed), 20*time.Millisecond)
}

// ctlLine is one line of the control plane's story: a drain decision, an
// actuation, a reboot.
type ctlLine struct {
	at   time.Time
	node string
	text string
}

// controlPrinter follows the drain controller: it keeps the agents' reports and
// the controller in step with simulated time and turns the audit log and the
// actuator's calls into lines.
type controlPrinter struct {
	ds     *demoServer
	ctrl   *drain.Controller
	act    *actuator
	pol    *drain.Policy
	faults map[string][]time.Time // node → its scripted faults' times, in order

	since   time.Time // audit records before this were printed
	atSince int       // and this many at since
	client  *http.Client
}

func newControlPrinter(ds *demoServer, act *actuator, pol *drain.Policy, sc *simhw.Scenario, start time.Time) *controlPrinter {
	cp := &controlPrinter{ds: ds, ctrl: ds.srv.Drain(), act: act, pol: pol, faults: map[string][]time.Time{},
		client: &http.Client{Timeout: 10 * time.Second, Transport: ds.tokens.transport(tokenAdmin)}}
	for _, f := range sc.Faults {
		if f.Kind != simhw.FaultRecover {
			cp.faults[f.Node] = append(cp.faults[f.Node], start.Add(f.At))
		}
	}
	for _, ts := range cp.faults {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return cp
}

// waitFor is how long, on the wall clock, the demo waits for a push to arrive or
// the controller's worker to act before simulated time moves on regardless.
const waitFor = 3 * time.Second

// sync runs after every agent cycle, before simulated time moves on: it waits
// until the server has every agent's latest verdict (the agents push a changed
// one at once) and sends the simulated-time heartbeat of unchanged ones, then
// waits for the controller's worker to perform what is due, and returns what the
// controller and the actuator did since the last call, and the nodes whose reboot
// the actuator accepted.
func (cp *controlPrinter) sync(ctx context.Context, fa *fleetAgents, now time.Time) ([]ctlLine, []string, error) {
	deadline := time.Now().Add(waitFor)
	for _, na := range fa.up() {
		if len(na.a.Pushers) == 0 {
			continue
		}
		name := na.node.Name()
		rep := na.a.Health.Report()
		want, body, err := wireVerdict(rep)
		if err != nil {
			return nil, nil, err
		}
		for {
			last, ok := cp.ds.push.get(name)
			if ok && last.verdict == want {
				if now.Sub(last.at) >= heartbeat {
					if err := cp.post(ctx, body); err != nil {
						return nil, nil, err
					}
				}
				break
			}
			if time.Now().After(deadline) {
				break // the pusher retries; the next cycle looks again
			}
			time.Sleep(500 * time.Microsecond)
		}
	}
	for time.Now().Before(deadline) && cp.busy(now) {
		time.Sleep(500 * time.Microsecond)
	}
	return cp.lines()
}

// post sends a heartbeat: a node's unchanged report, as its pusher would.
func (cp *controlPrinter) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cp.ds.url+healthpush.Path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := cp.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("the demo's server refused a health report: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the demo's server refused a health report: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// busy reports whether the controller's worker has work due at now: an action
// to perform, or a probation that has ended and waits for the worker's sweep.
func (cp *controlPrinter) busy(now time.Time) bool {
	for _, n := range cp.ctrl.Nodes() {
		if n.Pending != nil && !n.Pending.NextAttempt.After(now) {
			return true
		}
		if n.State == telemetry.StateProbation && n.Pending == nil && n.ProbationNote == "" &&
			!n.ProbationEnds.After(now) && now.Sub(n.LastReport) <= cp.pol.Probation.MaxReportGap {
			return true
		}
	}
	return false
}

// lines reads the audit records and actuator notes since the last call.
func (cp *controlPrinter) lines() ([]ctlLine, []string, error) {
	notes, reboots := cp.act.take()
	recs, err := cp.ctrl.Audit(cp.since, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the drain controller's audit log: %w", err)
	}
	var out []ctlLine
	skip := cp.atSince
	for _, r := range recs {
		if r.Time.Equal(cp.since) && skip > 0 {
			skip--
			continue
		}
		if r.Time.Equal(cp.since) {
			cp.atSince++
		} else {
			cp.since, cp.atSince = r.Time, 1
		}
		if text := cp.describe(r); text != "" {
			out = append(out, ctlLine{at: r.Time, node: r.Node, text: text})
		}
	}
	// At one time, the decision before the actuator's call.
	out = append(out, notes...)
	out = append(out, cp.ds.alerts.take()...)
	slices.SortStableFunc(out, func(a, b ctlLine) int { return a.at.Compare(b.at) })
	return out, reboots, nil
}

// describe is an audit record as one line of the live output, "" for records
// another line already tells (an accepted actuation is the actuator's own line;
// the states a drain passes through follow from its decision and actuation).
func (cp *controlPrinter) describe(r drain.AuditRecord) string {
	const who = "drain controller: "
	cause := ""
	if len(r.Evidence) > 0 {
		c := r.Evidence[0]
		cause = string(c.Kind)
		if x := c.Evidence["xid"]; x != "" && c.Kind == telemetry.ConditionXid {
			cause = "xid" + x
		}
		if t := shortTarget(c.Target); t != "" {
			cause += " on " + t
		}
		cause += " [" + c.Severity.String() + "]"
		if n := len(r.Evidence) - 1; n > 0 {
			cause += fmt.Sprintf(" +%d more", n)
		}
	}
	switch r.Event {
	case "decision":
		switch {
		case r.Outcome == drain.OutcomeSkippedBudget:
			return who + "would " + r.Action + ", budget exhausted (" + strings.TrimPrefix(r.Note, "would drain, budget exhausted: ") + "): " + cause
		case r.Action == "resume":
			return who + "resume: " + r.Note
		case r.Action == string(drain.ModeExcludeGPU):
			return who + "keeps gpuwatch's placement off the GPU (rule " + r.Rule + "): " + cause
		case r.Action == "include-gpu":
			return who + "GPU in use again: " + r.Note
		case r.Action == "probation":
			return who + r.Note
		case nodeLevel(r.Action):
			text := who + r.Action + " (rule " + r.Rule + "): " + cause
			if r.Note != "" {
				text += "; " + r.Note
			}
			return text
		}
	case "actuation":
		if r.Outcome == drain.OutcomeAccepted {
			return ""
		}
		text := fmt.Sprintf("%s%s %s (attempt %d)", who, r.Action, r.Outcome, r.Attempt)
		if r.Error != "" {
			text += ": " + r.Error
		}
		return text
	case "transition":
		if r.To == telemetry.StateProbation.String() {
			return fmt.Sprintf("%sprobation: %s; back in service after %s without one", who, r.Note, cp.pol.Probation.Duration)
		}
	case "budget":
		return who + "budget " + r.Action + ": " + r.Note
	}
	return ""
}

// result reads what the controller did over the run, and what the scheduler
// holds at the end.
// nodes are the fleet's, whose scheduler state it reads at the end.
func (cp *controlPrinter) result(nodes []string, reboots []Reboot) (DrainResult, error) {
	recs, err := cp.ctrl.Audit(time.Time{}, 0)
	if err != nil {
		return DrainResult{}, fmt.Errorf("cannot read the drain controller's audit log: %w", err)
	}
	r := DrainResult{Actuator: cp.act.kind(), Policy: cp.pol, Audit: recs, Nodes: cp.ctrl.Nodes(),
		Budget: cp.ctrl.Budget(), Drains: drainLatencies(recs, cp.faults), Reboots: reboots}
	for _, rec := range recs {
		if rec.Event == "actuation" && rec.Action == "resume" && rec.Outcome == drain.OutcomeAccepted {
			r.Resumes++
		}
	}
	r.Held = map[string]string{}
	for _, n := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		held, reason, err := cp.act.State(ctx, n)
		cancel()
		if err != nil {
			return r, fmt.Errorf("cannot read %s's state from the scheduler: %w", cp.act.name(n), err)
		}
		if held {
			r.Held[cp.act.name(n)] = reason
		}
	}
	return r, nil
}

// finalStanding has the server's fair-share feeder read the store once more,
// now that the agents shipped everything, and returns the standing. The feeder
// reads at once when its loop starts, so the control loops run once more until
// a new standing is published.
func finalStanding(ds *demoServer, cfg *fairshare.Config) FairShareResult {
	before, _ := ds.srv.FairShare()
	ds.run()
	deadline := time.Now().Add(10 * time.Second)
	st, err := ds.srv.FairShare()
	for st == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		st, err = ds.srv.FairShare()
	}
	ds.halt()
	r := FairShareResult{Standing: st, Err: err}
	if st != nil {
		r.ByAllocation = byAllocation(cfg, st)
	}
	return r
}
