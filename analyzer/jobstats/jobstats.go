package jobstats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// The API's query parameters (GET /api/gpuwatch/v1/jobs/{id}), besides
// report.ParamFrom, report.ParamTo and report.ParamLast: the window searched
// for the job (default the last 7 days).
const (
	ParamIdleBelow = report.ParamIdleBelow // "5%" or 0.05
	ParamIdleFor   = report.ParamIdleFor   // a Go duration
)

// MaxSteps bounds the steps of the search window (Prometheus answers at
// most 11,000 points a series); a longer window gets a larger step. Seven
// days at the default 60 s are 10,080.
const MaxSteps = 11_000

// DefaultSearch is how far back the job is looked for when no window is given.
const DefaultSearch = 7 * 24 * time.Hour

// ErrNoJob is returned (wrapped) when the store has no allocation of the job
// in the window.
var ErrNoJob = errors.New("no such job")

// Options say which job and how.
type Options struct {
	// Job is a job_id label's value, or namespace/pod for a pod without one.
	Job string
	// From and To bound the search for the job.
	From, To time.Time
	// Step is the resolution (default 60 s, more on windows longer than
	// MaxSteps). From is rounded down and To up to whole steps.
	Step time.Duration
	// IdleBelow (0–1, default 0.05) and IdleFor (default 30 minutes): a GPU
	// measured below IdleBelow for at least IdleFor is idle for that stretch.
	IdleBelow float64
	IdleFor   time.Duration
	Now       func() time.Time
}

func (o *Options) defaults() error {
	if o.Step <= 0 {
		o.Step = time.Minute
	}
	if o.Step%time.Second != 0 {
		return fmt.Errorf("step %s: want whole seconds", o.Step)
	}
	if o.IdleBelow == 0 {
		o.IdleBelow = 0.05
	}
	if o.IdleFor == 0 {
		o.IdleFor = 30 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case strings.TrimSpace(o.Job) == "":
		return fmt.Errorf("which job? give its id (job_id, or namespace/pod)")
	case o.IdleBelow < 0 || o.IdleBelow > 1:
		return fmt.Errorf("idle threshold %g: want a fraction between 0 and 1 (5%% is 0.05)", o.IdleBelow)
	case o.IdleFor < 0:
		return fmt.Errorf("idle duration %s: want a positive duration such as 30m", o.IdleFor)
	case o.From.IsZero() || o.To.IsZero():
		return fmt.Errorf("the window needs a start and an end")
	case !o.To.After(o.From):
		return fmt.Errorf("the window %s to %s is empty or reversed: the end must be after the start",
			o.From.UTC().Format(time.RFC3339), o.To.UTC().Format(time.RFC3339))
	}
	if n := o.To.Sub(o.From) / o.Step; n > MaxSteps {
		o.Step = (o.To.Sub(o.From)/MaxSteps + time.Second - 1).Truncate(time.Second)
	}
	o.From, o.To = alignDown(o.From, o.Step), alignDown(o.To.Add(o.Step-1), o.Step)
	return nil
}

func alignDown(t time.Time, s time.Duration) time.Time {
	return time.Unix(0, t.UnixNano()-((t.UnixNano()%int64(s))+int64(s))%int64(s)).UTC()
}

// ParseQuery turns the API's query parameters into Options for job, errors
// naming each parameter as name says (a command names its flags).
func ParseQuery(job string, v url.Values, now time.Time, name func(param string) string) (Options, error) {
	o := Options{Job: job}
	var err error
	if o.From, o.To, err = report.ParseWindow(v, now, DefaultSearch, name); err != nil {
		return o, err
	}
	if s := v.Get(ParamIdleBelow); s != "" {
		p, err := report.ParsePercent(s)
		if err != nil {
			return o, fmt.Errorf("%s %w", name(ParamIdleBelow), err)
		}
		if p == 0 {
			p = 1e-12 // "0%": nothing is below it; 0 would mean the default
		}
		o.IdleBelow = p
	}
	if s := v.Get(ParamIdleFor); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s %q: want a positive duration such as 30m", name(ParamIdleFor), s)
		}
		o.IdleFor = d
	}
	c := o
	return o, c.defaults()
}

// Result is one job's efficiency.
type Result struct {
	Job string `json:"job"`
	// Start and End are the job's span as the store saw it: from the start
	// of the first step with an allocation sample to the end of the last.
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	StepSeconds float64   `json:"step_seconds"`
	// Account, User and Namespace are the allocation's labels, where set.
	Account   string `json:"account,omitempty"`
	User      string `json:"user,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	GPUs      []GPU  `json:"gpus"`
	// Idle counts the GPUs that did nothing: every measured step of their
	// allocation was below IdleBelow.
	Idle       int     `json:"gpus_idle"`
	IdleBelow  float64 `json:"idle_below"`
	IdleForSec float64 `json:"idle_for_seconds"`
	// Stragglers are the job's GPUs that lagged its other GPUs over its span,
	// by analyzer/stragglers' rule at its defaults (docs/reports.md,
	// "Stragglers"): signal, how far behind, for how long, throttle reasons.
	// Empty for a healthy job and for a job of one GPU. A GPU that did nothing
	// is counted as such, not again as a straggler.
	Stragglers   []Straggler `json:"stragglers"`
	Verdict      string      `json:"verdict"`
	GeneratedAt  time.Time   `json:"generated_at"`
	AllocatedGPU float64     `json:"allocated_gpu_hours"`
}

// Straggler is one of the job's GPUs behind the others: analyzer/stragglers'
// answer with the GPU's index on its node.
type Straggler struct {
	Node            string                `json:"node"`
	Index           string                `json:"gpu_index"`
	UUID            string                `json:"gpu_uuid"`
	Evidence        []stragglers.Evidence `json:"evidence"`
	ThrottleReasons []string              `json:"throttle_reasons,omitempty"`
}

// Worst returns the evidence of the signal the GPU lags most on.
func (s Straggler) Worst() stragglers.Evidence {
	var w stragglers.Evidence
	for _, e := range s.Evidence {
		if e.Lag > w.Lag {
			w = e
		}
	}
	return w
}

// GPU is one of the job's GPUs.
type GPU struct {
	Node  string `json:"node"`
	Index string `json:"gpu_index"`
	UUID  string `json:"gpu_uuid"`
	Model string `json:"model,omitempty"`
	// AllocatedHours is the time the job held the GPU (steps with an
	// allocation sample).
	AllocatedHours float64 `json:"allocated_hours"`
	// SMActive is the mean of DCGM_FI_PROF_SM_ACTIVE (0–1) and Utilization
	// of DCGM_FI_DEV_GPU_UTIL (percent) over the allocated steps that have
	// them; nil without any.
	SMActive    *float64 `json:"sm_active"`
	Utilization *float64 `json:"utilization_percent"`
	// Activity is what idleness is judged on: SM activity where the step has
	// it, else utilization / 100 (ActivitySource says which, "mixed" for both).
	Activity       *float64 `json:"activity"`
	ActivitySource string   `json:"activity_source,omitempty"`
	// Memory: the peak of DCGM_FI_DEV_FB_USED against the framebuffer's size
	// (DCGM_FI_DEV_FB_TOTAL, else used + free + reserved), MiB.
	MemPeakMiB  *float64 `json:"memory_peak_mib"`
	MemTotalMiB *float64 `json:"memory_total_mib"`
	// PowerW is the mean of DCGM_FI_DEV_POWER_USAGE. EnergyJ is the growth of
	// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (EnergySource "counter"), else
	// the mean power of each step times its length ("power").
	PowerW       *float64 `json:"power_watts"`
	EnergyJ      *float64 `json:"energy_joules"`
	EnergySource string   `json:"energy_source,omitempty"`
	// IdleSeconds sums the IdleStretches.
	IdleSeconds   float64   `json:"idle_seconds"`
	IdleStretches []Stretch `json:"idle_stretches"`
	DidNothing    bool      `json:"did_nothing"`
	Xids          []Xid     `json:"xids"`
	Conditions    []Cond    `json:"conditions"`
}

// Stretch is an idle stretch of a GPU.
type Stretch struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Seconds float64   `json:"seconds"`
}

// Xid is the Xids of one code a GPU counted during the job.
type Xid struct {
	Xid    string    `json:"xid"`
	Action string    `json:"action,omitempty"`
	Count  float64   `json:"count"`
	First  time.Time `json:"first"`
}

// Cond is a health condition active during the job on the GPU (Scope "gpu")
// or on its node (Scope "node": it has no GPU index, e.g. an InfiniBand port).
type Cond struct {
	Condition string    `json:"condition"`
	Severity  string    `json:"severity,omitempty"`
	Scope     string    `json:"scope"`
	Target    string    `json:"target,omitempty"`
	First     time.Time `json:"first"`
}

func label(ls telemetry.Labels, names ...string) string {
	for _, n := range names {
		if v := ls.Get(n); v != "" {
			return v
		}
	}
	return ""
}

func secs(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) + "s" }

// cutPod splits "namespace/pod".
func cutPod(job string) (ns, pod string, ok bool) { return strings.Cut(job, "/") }

// Selector is the allocation series' label matcher for a job: job_id, or
// namespace and pod for "namespace/pod".
func Selector(job string) string { return report.JobSelector(job) }

// Compute finds opts.Job in the store between opts.From and opts.To and
// answers its efficiency; an error wrapping ErrNoJob when the store has no
// allocation of it there.
//
// The window is cut into steps of opts.Step, step k covering
// (From+(k−1)·Step, From+k·Step]; the job holds a GPU in the steps with one
// of its allocation samples on that GPU. Each per-GPU number is over those
// steps only: means of the step means, the memory peak the largest sample.
func Compute(ctx context.Context, q store.Querier, opts Options) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	s := opts.Step
	// A step's window is its length less a millisecond: (t−s, t] on
	// Prometheus 3 and VictoriaMetrics and [t−s, t] on Prometheus 2 read the
	// same samples, so each sample falls in exactly one step.
	w := "[" + strconv.FormatInt(s.Milliseconds()-1, 10) + "ms]"
	rangeQ := func(expr string, from, to time.Time) (store.Matrix, error) {
		m, err := q.Range(ctx, expr, store.Range{Start: from, End: to, Step: s})
		if err != nil {
			return nil, fmt.Errorf("reading %s from the store: %w", expr, err)
		}
		return m, nil
	}
	alloc := telemetry.MetricGPUAllocationInfo + Selector(opts.Job)
	found, err := rangeQ("count_over_time("+alloc+w+")", opts.From.Add(s), opts.To)
	if err != nil {
		return nil, err
	}
	var first, last time.Time
	for _, ser := range found {
		for _, p := range ser.Points {
			if p.V > 0 && (first.IsZero() || p.T.Before(first)) {
				first = p.T
			}
			if p.V > 0 && p.T.After(last) {
				last = p.T
			}
		}
	}
	if first.IsZero() {
		return nil, fmt.Errorf("job %q: %w: the store has no %s for it from %s to %s (widen the window with --last or --from/--to)",
			opts.Job, ErrNoJob, telemetry.MetricGPUAllocationInfo, opts.From.Format(time.RFC3339), opts.To.Format(time.RFC3339))
	}
	// The job's grid: steps 0..n-1 end at start+(k+1)·s.
	start, end := first.Add(-s).UTC(), last.UTC()
	n := int(end.Sub(start) / s)
	r := &Result{Job: opts.Job, Start: start, End: end, StepSeconds: s.Seconds(), IdleBelow: opts.IdleBelow,
		IdleForSec: opts.IdleFor.Seconds(), GeneratedAt: opts.Now().UTC(), GPUs: []GPU{}}
	idx := func(t time.Time) int { return int((t.Sub(start)+s/2)/s) - 1 } // rounded: a remote store answers float seconds
	perStep := func(m store.Matrix, byUUID func(telemetry.Labels) string, keep func(old, v float64) bool) map[string][]float64 {
		out := map[string][]float64{}
		for _, ser := range m {
			u := byUUID(ser.Labels)
			if u == "" {
				continue
			}
			vals := out[u]
			if vals == nil {
				vals = make([]float64, n)
				for i := range vals {
					vals[i] = math.NaN()
				}
				out[u] = vals
			}
			for _, p := range ser.Points {
				if i := idx(p.T); i >= 0 && i < n && !math.IsNaN(p.V) && (math.IsNaN(vals[i]) || keep(vals[i], p.V)) {
					vals[i] = p.V
				}
			}
		}
		return out
	}
	larger := func(old, v float64) bool { return v > old }
	gpuUUID := func(ls telemetry.Labels) string { return label(ls, telemetry.LabelGPUUUID, telemetry.DCGMLabelUUID) }
	dcgmUUID := func(ls telemetry.Labels) string { return label(ls, telemetry.DCGMLabelUUID, telemetry.LabelGPUUUID) }

	allocM, err := rangeQ("count_over_time("+alloc+w+")", start.Add(s), end)
	if err != nil {
		return nil, err
	}
	held := perStep(allocM, gpuUUID, larger)
	gpus := map[string]*GPU{}
	var uuids []string
	for _, ser := range allocM {
		u := gpuUUID(ser.Labels)
		if u == "" || gpus[u] != nil {
			continue
		}
		gpus[u] = &GPU{UUID: u, Node: label(ser.Labels, telemetry.LabelNode, telemetry.DCGMLabelHostname),
			Index: label(ser.Labels, telemetry.LabelGPUIndex, telemetry.DCGMLabelGPU), Xids: []Xid{}, Conditions: []Cond{}, IdleStretches: []Stretch{}}
		uuids = append(uuids, u)
		for dst, name := range map[*string]string{&r.Account: telemetry.LabelAccount, &r.User: telemetry.LabelUser, &r.Namespace: telemetry.LabelNamespace} {
			if *dst == "" {
				*dst = ser.Labels.Get(name)
			}
		}
	}
	if len(uuids) == 0 {
		return nil, fmt.Errorf("job %q: %w: its allocation series name no GPU (%s)", opts.Job, ErrNoJob, telemetry.LabelGPUUUID)
	}
	sort.Strings(uuids)
	re := report.GPUMatcher(uuids)
	dcgmSel := "{" + telemetry.DCGMLabelUUID + "=~" + re + "}"
	ownSel := "{" + telemetry.LabelGPUUUID + "=~" + re + "}"

	read := func(fn, metric string) (map[string][]float64, error) {
		m, err := rangeQ(report.OverGPUs(fn, metric, re, w), start.Add(s), end)
		if err != nil {
			return nil, err
		}
		return perStep(m, dcgmUUID, larger), nil
	}
	series := map[string]map[string][]float64{}
	for _, x := range []struct{ fn, metric string }{
		{"avg_over_time", telemetry.DCGMProfSMActive}, {"avg_over_time", telemetry.DCGMGPUUtil},
		{"max_over_time", telemetry.DCGMFBUsed}, {"max_over_time", telemetry.DCGMFBTotal},
		{"last_over_time", telemetry.DCGMFBFree}, {"last_over_time", telemetry.DCGMFBReserved},
		{"avg_over_time", telemetry.DCGMPowerUsage}, {"last_over_time", telemetry.DCGMTotalEnergyConsumption},
	} {
		if series[x.metric], err = read(x.fn, x.metric); err != nil {
			return nil, err
		}
	}
	// Models: gpuwatch_gpu_info, else DCGM's modelName.
	span := "[" + secs(end.Sub(start)+s) + "]"
	for _, e := range []string{"last_over_time(" + telemetry.MetricGPUInfo + ownSel + span + ")", "last_over_time(" + telemetry.DCGMFBUsed + dcgmSel + span + ")"} {
		v, err := q.Instant(ctx, e, end)
		if err != nil {
			return nil, fmt.Errorf("reading %s from the store: %w", e, err)
		}
		for _, smp := range v {
			if g := gpus[gpuUUID(smp.Labels)]; g != nil && g.Model == "" {
				g.Model = label(smp.Labels, telemetry.LabelModel, telemetry.DCGMLabelModelName)
			}
		}
	}

	sec := s.Seconds()
	for _, u := range uuids {
		g := gpus[u]
		h := held[u]
		get := func(metric string) []float64 {
			if v := series[metric][u]; v != nil {
				return v
			}
			return make([]float64, n) // zeros are never read: see has
		}
		has := func(metric string, i int) bool { v := series[metric][u]; return v != nil && !math.IsNaN(v[i]) }
		sm, util, used, total, free, resv, power, energy := get(telemetry.DCGMProfSMActive), get(telemetry.DCGMGPUUtil),
			get(telemetry.DCGMFBUsed), get(telemetry.DCGMFBTotal), get(telemetry.DCGMFBFree), get(telemetry.DCGMFBReserved),
			get(telemetry.DCGMPowerUsage), get(telemetry.DCGMTotalEnergyConsumption)
		var nHeld, nSM, nUtil, nAct, nPow, nIdle int
		var sumSM, sumUtil, sumAct, sumPow, powJ, cntJ float64
		var srcSM, srcUtil, anyE bool
		peak, size, prevE := math.NaN(), math.NaN(), math.NaN()
		runFrom, run := -1, 0
		closeRun := func(i int) {
			if run > 0 && time.Duration(run)*s >= opts.IdleFor {
				g.IdleStretches = append(g.IdleStretches, Stretch{From: start.Add(time.Duration(runFrom) * s), To: start.Add(time.Duration(i) * s), Seconds: float64(run) * sec})
				g.IdleSeconds += float64(run) * sec
			}
			runFrom, run = -1, 0
		}
		for i := range n {
			if h == nil || math.IsNaN(h[i]) || h[i] <= 0 {
				closeRun(i)
				continue
			}
			nHeld++
			act := math.NaN()
			if has(telemetry.DCGMProfSMActive, i) {
				nSM++
				sumSM += sm[i]
				act, srcSM = sm[i], true
			}
			if has(telemetry.DCGMGPUUtil, i) {
				nUtil++
				sumUtil += util[i]
				if math.IsNaN(act) {
					act, srcUtil = util[i]/100, true
				}
			}
			switch {
			case math.IsNaN(act):
				closeRun(i)
			case act < opts.IdleBelow:
				nAct++
				nIdle++
				sumAct += act
				if run == 0 {
					runFrom = i
				}
				run++
			default:
				nAct++
				sumAct += act
				closeRun(i)
			}
			if has(telemetry.DCGMFBUsed, i) && (math.IsNaN(peak) || used[i] > peak) {
				peak = used[i]
			}
			t := math.NaN()
			switch {
			case has(telemetry.DCGMFBTotal, i):
				t = total[i]
			case has(telemetry.DCGMFBUsed, i) && has(telemetry.DCGMFBFree, i):
				t = used[i] + free[i]
				if has(telemetry.DCGMFBReserved, i) {
					t += resv[i]
				}
			}
			if !math.IsNaN(t) && (math.IsNaN(size) || t > size) {
				size = t
			}
			if has(telemetry.DCGMPowerUsage, i) {
				nPow++
				sumPow += power[i]
				powJ += power[i] * sec
			}
			if has(telemetry.DCGMTotalEnergyConsumption, i) {
				e := energy[i]
				switch {
				case math.IsNaN(prevE):
				case e >= prevE:
					cntJ += (e - prevE) / 1000 // mJ
				default:
					cntJ += e / 1000 // a reset (driver reload): the new value is growth
				}
				prevE, anyE = e, true
			}
		}
		closeRun(n)
		g.AllocatedHours = float64(nHeld) * sec / 3600
		r.AllocatedGPU += g.AllocatedHours
		mean := func(sum float64, k int) *float64 {
			if k == 0 {
				return nil
			}
			v := sum / float64(k)
			return &v
		}
		ptr := func(v float64) *float64 {
			if math.IsNaN(v) {
				return nil
			}
			return &v
		}
		g.SMActive, g.Utilization, g.Activity, g.PowerW = mean(sumSM, nSM), mean(sumUtil, nUtil), mean(sumAct, nAct), mean(sumPow, nPow)
		switch {
		case srcSM && srcUtil:
			g.ActivitySource = "mixed"
		case srcSM:
			g.ActivitySource = report.SourceSMActive
		case srcUtil:
			g.ActivitySource = report.SourceGPUUtil
		}
		g.MemPeakMiB, g.MemTotalMiB = ptr(peak), ptr(size)
		switch {
		case anyE:
			g.EnergyJ, g.EnergySource = &cntJ, "counter"
		case nPow > 0:
			g.EnergyJ, g.EnergySource = &powJ, "power"
		}
		g.DidNothing = nAct > 0 && nIdle == nAct
		if g.DidNothing {
			r.Idle++
		}
	}

	// Xids: the counter's growth over the job; the value a lookback before
	// the first step is the base, and a series born during the job (its
	// first sample after start) counts its first value.
	lb := "[" + secs(s+10*time.Minute) + "]"
	xm, err := rangeQ("last_over_time("+telemetry.MetricXidErrorsTotal+ownSel+lb+")", start, end)
	if err != nil {
		return nil, err
	}
	for _, ser := range xm {
		g := gpus[gpuUUID(ser.Labels)]
		if g == nil || len(ser.Points) == 0 {
			continue
		}
		var total float64
		var firstAt time.Time
		for i, p := range ser.Points {
			var d float64
			switch {
			case i == 0:
				if p.T.After(start) {
					d = p.V
				}
			case p.V >= ser.Points[i-1].V:
				d = p.V - ser.Points[i-1].V
			default:
				d = p.V
			}
			if d > 0 {
				if total == 0 {
					firstAt = p.T.UTC()
				}
				total += d
			}
		}
		if total > 0 {
			g.Xids = append(g.Xids, Xid{Xid: ser.Labels.Get(telemetry.LabelXid), Action: ser.Labels.Get(telemetry.LabelAction), Count: total, First: firstAt})
		}
	}

	// Conditions active during the job on the job's nodes.
	nodes := map[string]bool{}
	var nodeRe []string
	for _, g := range gpus {
		if !nodes[g.Node] {
			nodes[g.Node] = true
			nodeRe = append(nodeRe, regexp.QuoteMeta(g.Node))
		}
	}
	sort.Strings(nodeRe)
	cm, err := rangeQ("last_over_time("+telemetry.MetricHealthCondition+"{"+telemetry.LabelNode+"=~"+strconv.Quote(strings.Join(nodeRe, "|"))+"}"+w+")", start.Add(s), end)
	if err != nil {
		return nil, err
	}
	for _, ser := range cm {
		var at time.Time
		for _, p := range ser.Points {
			if p.V > 0 {
				at = p.T.UTC()
				break
			}
		}
		if at.IsZero() {
			continue
		}
		node, gi := ser.Labels.Get(telemetry.LabelNode), ser.Labels.Get(telemetry.LabelGPUIndex)
		c := Cond{Condition: ser.Labels.Get(telemetry.LabelCondition), Severity: ser.Labels.Get(telemetry.LabelSeverity),
			Target: ser.Labels.Get(telemetry.LabelTarget), First: at, Scope: "gpu"}
		if gi == "" {
			c.Scope = "node"
		}
		for _, u := range uuids {
			if g := gpus[u]; g.Node == node && (gi == "" || gi == g.Index) {
				g.Conditions = append(g.Conditions, c)
			}
		}
	}

	for _, u := range uuids {
		g := gpus[u]
		sort.Slice(g.Xids, func(i, j int) bool { return g.Xids[i].First.Before(g.Xids[j].First) })
		sort.Slice(g.Conditions, func(i, j int) bool { return g.Conditions[i].First.Before(g.Conditions[j].First) })
		r.GPUs = append(r.GPUs, *g)
	}
	sort.Slice(r.GPUs, func(i, j int) bool {
		a, b := r.GPUs[i], r.GPUs[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		ai, ei := strconv.Atoi(a.Index)
		bi, fi := strconv.Atoi(b.Index)
		if ei == nil && fi == nil && ai != bi {
			return ai < bi
		}
		return a.UUID < b.UUID
	})
	if r.Stragglers, err = jobStragglers(ctx, q, opts, r); err != nil {
		return nil, err
	}
	r.Verdict = verdict(r)
	return r, nil
}

// jobStragglers runs analyzer/stragglers over the job's span for the job.
func jobStragglers(ctx context.Context, q store.Querier, opts Options, r *Result) ([]Straggler, error) {
	out := []Straggler{}
	if len(r.GPUs) < 2 {
		return out, nil
	}
	rep, err := stragglers.Compute(ctx, q, stragglers.Options{From: r.Start, To: r.End, Job: opts.Job, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("job %q: stragglers: %w", opts.Job, err)
	}
	index := map[string]string{}
	idle := map[string]bool{}
	for _, g := range r.GPUs {
		index[g.UUID], idle[g.UUID] = g.Index, g.DidNothing
	}
	for _, j := range rep.Jobs {
		if j.JobID != opts.Job {
			continue
		}
		for _, st := range j.Stragglers {
			if idle[st.GPU] {
				continue // "did nothing" says more than "behind"
			}
			out = append(out, Straggler{Node: st.Node, Index: index[st.GPU], UUID: st.GPU, Evidence: st.Evidence, ThrottleReasons: st.ThrottleReasons})
		}
	}
	return out, nil
}

func verdict(r *Result) string {
	plural := func(k int, one string) string {
		if k == 1 {
			return "1 " + one
		}
		return strconv.Itoa(k) + " " + one + "s"
	}
	var act float64
	var nAct, xids, idleStretched int
	for _, g := range r.GPUs {
		if g.Activity != nil {
			act += *g.Activity
			nAct++
		}
		for _, x := range g.Xids {
			xids += int(x.Count)
		}
		if len(g.IdleStretches) > 0 && !g.DidNothing {
			idleStretched++
		}
	}
	v := plural(len(r.GPUs), "GPU") + " allocated"
	switch {
	case nAct == 0:
		v += ", none measured"
	case r.Idle == len(r.GPUs):
		v += ", all did nothing"
	case r.Idle > 0:
		v += ", " + strconv.Itoa(r.Idle) + " did nothing"
	}
	if idleStretched > 0 {
		v += ", " + strconv.Itoa(idleStretched) + " idle for " + time.Duration(r.IdleForSec*float64(time.Second)).String() + " or more"
	}
	if nAct > 0 {
		v += fmt.Sprintf("; mean activity %.0f%%", 100*act/float64(nAct))
	}
	if xids > 0 {
		v += "; " + plural(xids, "Xid")
	}
	if len(r.Stragglers) > 0 {
		v += "; " + plural(len(r.Stragglers), "straggler") + " (" + describeStragglers(r) + ")"
	}
	return v
}

// signalNames are the stragglers' signals as the verdict says them.
var signalNames = map[string]string{
	stragglers.SignalSMClock:  "SM clock",
	stragglers.SignalSMActive: "SM activity",
	stragglers.SignalGPUUtil:  "utilization",
	stragglers.SignalPower:    "power",
}

// describeStragglers names the stragglers for the verdict, at most two, each by
// its worst signal: "GPU 3: SM clock 22% behind, hw_thermal_slowdown"; the node
// is named when the job spans several. Eight of one node are "node-3 GPUs
// 0-7: …" when they lag alike.
func describeStragglers(r *Result) string {
	nodes := map[string]bool{}
	for _, g := range r.GPUs {
		nodes[g.Node] = true
	}
	one := func(s Straggler, who string) string {
		w := s.Worst()
		d := fmt.Sprintf("%s: %s %.0f%% behind", who, signalNames[w.Signal], 100*w.Lag)
		if len(s.ThrottleReasons) > 0 {
			d += ", " + strings.Join(s.ThrottleReasons, ",")
		}
		return d
	}
	name := func(s Straggler) string {
		if len(nodes) > 1 {
			return s.Node + " GPU " + s.Index
		}
		return "GPU " + s.Index
	}
	st := r.Stragglers
	// A whole node's GPUs behind on the same signal (a power-capped node): one entry.
	if len(st) > 2 && len(nodes) > 1 {
		sameNode := true
		for _, s := range st[1:] {
			if s.Node != st[0].Node || s.Worst().Signal != st[0].Worst().Signal {
				sameNode = false
			}
		}
		if sameNode {
			return one(st[0], fmt.Sprintf("%s, %d GPUs", st[0].Node, len(st)))
		}
	}
	var parts []string
	for i, s := range st {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("and %d more", len(st)-2))
			break
		}
		parts = append(parts, one(s, name(s)))
	}
	return strings.Join(parts, "; ")
}
