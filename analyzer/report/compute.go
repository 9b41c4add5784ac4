package report

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// Options say what to report.
type Options struct {
	From, To time.Time
	By       By
	// Step is the resolution (default SampleInterval). From is rounded down
	// and To up to whole steps of Unix time.
	Step time.Duration
	// SampleInterval is the time one allocation sample stands for: the
	// agents' full collection interval (default 10 s).
	SampleInterval time.Duration
	// IdleBelow (0–1, default 0.05) and IdleFor (default 30 minutes): an
	// allocation measured below IdleBelow for at least IdleFor is idle.
	IdleBelow float64
	IdleFor   time.Duration
	// Filter limits the report, and its previous period, to some
	// allocations (empty: all of them).
	Filter Filter
	// NoPrevious skips the previous period.
	NoPrevious bool
	// ChunkSteps bounds the steps one range query asks for (default 720),
	// which bounds memory: GPUs × ChunkSteps values per series read.
	ChunkSteps int
	// Progress, when set, is called after each chunk read with the chunks
	// done and the chunks in all.
	Progress func(done, total int)
	Now      func() time.Time
	// RawOnly reads the raw samples alone, never the summaries the server's
	// Downsampler stores (which give the same numbers: docs/reports.md).
	RawOnly bool
	// maxResolution, when set, bounds the summaries read (the Downsampler
	// adds up five-minute summaries into an hour).
	maxResolution time.Duration
	// totalsOnly reads of the summaries only what allocated, measured and
	// unmeasured need (the previous period).
	totalsOnly bool
}

// The series a report reads.
const (
	metricAllocation = telemetry.MetricGPUAllocationInfo
	metricSMActive   = telemetry.DCGMProfSMActive
	metricGPUUtil    = telemetry.DCGMGPUUtil
	metricFBUsed     = telemetry.DCGMFBUsed
	metricFBTotal    = telemetry.DCGMFBTotal
	metricFBFree     = telemetry.DCGMFBFree
	metricFBReserved = telemetry.DCGMFBReserved
)

// MaxSteps bounds how many steps a report's window may be cut into, per
// period: a week at 10 s is 60,480.
const MaxSteps = 200_000

func (o *Options) defaults() error {
	if o.SampleInterval <= 0 {
		o.SampleInterval = 10 * time.Second
	}
	if o.Step <= 0 {
		o.Step = o.SampleInterval
	}
	if o.Step%time.Second != 0 {
		return fmt.Errorf("step %s: want whole seconds", o.Step)
	}
	if o.IdleBelow == 0 {
		o.IdleBelow = 0.05
	}
	if o.IdleBelow < 0 || o.IdleBelow > 1 {
		return fmt.Errorf("idle threshold %g: want a fraction between 0 and 1 (5%% is 0.05)", o.IdleBelow)
	}
	if o.IdleFor == 0 {
		o.IdleFor = 30 * time.Minute
	}
	if o.IdleFor < o.Step {
		return fmt.Errorf("idle duration %s is shorter than the step %s: raise the idle duration or lower the step", o.IdleFor, o.Step)
	}
	if o.By == "" {
		o.By = ByAccount
	}
	if _, err := ParseBy(string(o.By)); err != nil {
		return err
	}
	if err := o.Filter.check(); err != nil {
		return err
	}
	if o.ChunkSteps <= 0 {
		o.ChunkSteps = 720
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.From.IsZero() || o.To.IsZero():
		return fmt.Errorf("the window needs a start and an end")
	case !o.To.After(o.From):
		return fmt.Errorf("the window %s to %s is empty or reversed: the end must be after the start",
			o.From.UTC().Format(time.RFC3339), o.To.UTC().Format(time.RFC3339))
	}
	o.From, o.To = alignDown(o.From, o.Step), alignUp(o.To, o.Step)
	if n := o.To.Sub(o.From) / o.Step; n > MaxSteps {
		return fmt.Errorf("the window %s is %d steps of %s, more than %d: use a larger step", o.To.Sub(o.From), n, o.Step, MaxSteps)
	}
	return nil
}

func alignDown(t time.Time, s time.Duration) time.Time {
	ms := t.UnixMilli()
	sm := s.Milliseconds()
	q := ms / sm
	if ms < 0 && ms%sm != 0 {
		q--
	}
	return time.UnixMilli(q * sm).UTC()
}

func alignUp(t time.Time, s time.Duration) time.Time {
	d := alignDown(t, s)
	if d.Before(t) {
		d = d.Add(s)
	}
	return d
}

// Compute reads the store and builds the report of opts.From to opts.To.
//
// The window is cut into steps of opts.Step, step i covering
// (From+i·Step, From+(i+1)·Step]. In a step, a job holds a GPU for the
// fraction min(1, n·SampleInterval/Step), n being the number of allocation
// samples the GPU's agent shipped for the job in it; k jobs seen on one GPU
// in a step share it equally. The GPU's activity in the step is the mean of
// its SM activity samples (DCGM profiling) or, without any, of its
// utilization samples divided by 100; a step with neither is unmeasured.
// Steps in which an allocation had no sample, between its first and last
// sample in the window, are gaps. docs/reports.md says the same at length.
func Compute(ctx context.Context, q store.Querier, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	span := opts.To.Sub(opts.From)
	pf := opts.From.Add(-span)
	curPlan, err := planWindow(ctx, q, opts.From, opts.To, opts)
	if err != nil {
		return nil, err
	}
	var prevPlan plan
	if !opts.NoPrevious {
		if prevPlan, err = planWindow(ctx, q, pf, opts.From, opts); err != nil {
			return nil, fmt.Errorf("previous period: %w", err)
		}
	}
	total := curPlan.units + prevPlan.units
	done := 0
	var mu sync.Mutex
	progress := func() {
		mu.Lock()
		defer mu.Unlock()
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	// The two periods are read side by side. The previous period shows
	// allocated, measured and efficiency only.
	var prev *period
	var prevErr error
	var wg sync.WaitGroup
	if !opts.NoPrevious {
		popts := opts
		popts.totalsOnly = true
		wg.Go(func() { prev, prevErr = read(ctx, q, prevPlan, popts, progress) })
	}
	cur, err := read(ctx, q, curPlan, opts, progress)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if len(cur.order) == 0 {
		if !opts.Filter.IsZero() {
			return nil, fmt.Errorf("%w (%s to %s) to %s: widen or move the window, or check the filter's values (they are the report's row keys)",
				ErrNoData, opts.From.UTC().Format(time.RFC3339), opts.To.UTC().Format(time.RFC3339), opts.Filter)
		}
		return nil, fmt.Errorf("%w (%s to %s): widen or move the window, or check that the agents ship %s to this store",
			ErrNoData, opts.From.UTC().Format(time.RFC3339), opts.To.UTC().Format(time.RFC3339), metricAllocation)
	}
	r := &Report{
		From: opts.From, To: opts.To, By: opts.By, StepSeconds: opts.Step.Seconds(),
		SampleIntervalSeconds: opts.SampleInterval.Seconds(), IdleBelow: opts.IdleBelow,
		IdleForSeconds: opts.IdleFor.Seconds(), GeneratedAt: opts.Now().UTC(), Filter: opts.Filter,
	}
	r.Groups, r.Total = group(cur.list(), opts.By)
	r.TopIdleJobs = topIdle(cur.list(), 10)
	if !opts.NoPrevious {
		if prevErr != nil {
			return nil, fmt.Errorf("previous period: %w", prevErr)
		}
		r.PreviousFrom, r.PreviousTo = pf, opts.From
		pg, pt := group(prev.list(), opts.By)
		byKey := make(map[string]Group, len(pg))
		for _, g := range pg {
			byKey[g.Key] = g
		}
		for i := range r.Groups {
			if g, ok := byKey[r.Groups[i].Key]; ok {
				r.Groups[i].Previous = &Previous{Allocated: g.Allocated, Measured: g.Measured, Efficiency: g.Efficiency}
			}
		}
		if pt.Allocated > 0 {
			r.Total.Previous = &Previous{Allocated: pt.Allocated, Measured: pt.Measured, Efficiency: pt.Efficiency}
		}
	}
	return r, nil
}

func chunkCount(span time.Duration, opts Options) int {
	steps := int(span / opts.Step)
	return (steps + opts.ChunkSteps - 1) / opts.ChunkSteps
}

// alloc is one GPU held by one consumer (job or pod) in the window: its
// Summary, added up step by step or interval by interval in time order, and
// at the end what the groups read from it.
type alloc struct {
	labels                          telemetry.Labels // the first series' (what the Downsampler stores it under)
	gpu, node, model                string
	job, account, user, namespace   string
	sum                             Summary
	allocated, measured, unmeasured float64 // seconds
	idle, gaps                      float64 // seconds
	smSeconds, utilSeconds          float64 // measured-by seconds, per source
	peakMiB, totalMiB               float64
}

// finish copies the summary into the numbers the groups read.
func (a *alloc) finish(idleFor time.Duration) {
	s := &a.sum
	a.allocated, a.measured, a.unmeasured = s.Allocated, s.Measured, s.Unmeasured
	a.idle, a.gaps = s.Idle(idleFor), s.Gaps
	a.smSeconds, a.utilSeconds = s.SMActive, s.GPUUtil
	a.peakMiB, a.totalMiB = s.FBPeakMiB, s.FBTotalMiB
}

type period struct {
	allocs map[string]*alloc // by GPU UUID + consumer
	order  []string
}

func (p *period) list() []*alloc {
	out := make([]*alloc, 0, len(p.order))
	for _, k := range p.order {
		out = append(out, p.allocs[k])
	}
	return out
}

// consumer is the allocation an allocation series (or a stored summary)
// belongs to, from its labels: nil when it names no GPU or no job or pod.
func (p *period) consumer(ls telemetry.Labels) *alloc {
	uuid := label(ls, telemetry.LabelGPUUUID, telemetry.DCGMLabelUUID)
	job := ls.Get(telemetry.LabelJobID)
	account, user, ns := ls.Get(telemetry.LabelAccount), ls.Get(telemetry.LabelUser), ls.Get(telemetry.LabelNamespace)
	if pod := ls.Get(telemetry.LabelPod); job == "" && pod != "" {
		job = ns + "/" + pod
		if account == "" {
			account = ns
		}
	}
	if uuid == "" || job == "" {
		return nil // not attributable to a GPU or a consumer
	}
	if account == "" {
		account = None
	}
	if user == "" {
		user = account
	}
	key := uuid + "\x00" + job + "\x00" + account + "\x00" + user + "\x00" + ns
	a := p.allocs[key]
	if a == nil {
		a = &alloc{labels: ls, gpu: uuid, node: label(ls, telemetry.LabelNode, telemetry.DCGMLabelHostname), job: job,
			account: account, user: user, namespace: ns}
		p.allocs[key] = a
		p.order = append(p.order, key)
	}
	return a
}

// read walks [from, to) in time order: stored summaries where the
// Downsampler wrote them and opts allow them, raw samples chunk by chunk
// elsewhere.
func read(ctx context.Context, q store.Querier, pl plan, opts Options, progress func()) (*period, error) {
	p := &period{allocs: map[string]*alloc{}}
	models := map[string]string{}
	for _, sg := range pl.segments {
		if sg.res > 0 {
			if err := readSummaries(ctx, q, p, sg, opts, progress); err != nil {
				return nil, err
			}
			continue
		}
		steps := int(sg.to.Sub(sg.from) / opts.Step)
		for first := 0; first < steps; first += opts.ChunkSteps {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n := min(opts.ChunkSteps, steps-first)
			if err := readChunk(ctx, q, p, sg.from, first, n, opts, models); err != nil {
				return nil, err
			}
			progress()
		}
	}
	// The filter applies to the allocations found: a GPU's share among the
	// allocations holding it in a step counts them all (a stored summary
	// holds its share already).
	keep := opts.Filter.matcher()
	kept := p.order[:0]
	for _, k := range p.order {
		a := p.allocs[k]
		if !keep.keeps(a) {
			delete(p.allocs, k)
			continue
		}
		kept = append(kept, k)
		a.finish(opts.IdleFor)
		if a.model == "" {
			a.model = models[a.gpu]
		}
	}
	p.order = kept
	return p, nil
}

func promDuration(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

func label(ls telemetry.Labels, names ...string) string {
	for _, n := range names {
		if v := ls.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// perStep turns a range answer into one slice of n values per GPU UUID
// (NaN where the step has none), and notes each GPU's model and node.
func perStep(m store.Matrix, start time.Time, s time.Duration, n int, models map[string]string) map[string][]float64 {
	out := make(map[string][]float64, len(m))
	for _, ser := range m {
		uuid := label(ser.Labels, telemetry.DCGMLabelUUID, telemetry.LabelGPUUUID)
		if uuid == "" {
			continue
		}
		if mod := label(ser.Labels, telemetry.DCGMLabelModelName, telemetry.LabelModel); mod != "" && models != nil {
			models[uuid] = mod
		}
		vals := out[uuid]
		if vals == nil {
			vals = make([]float64, n)
			for i := range vals {
				vals[i] = math.NaN()
			}
			out[uuid] = vals
		}
		for _, pt := range ser.Points {
			i := int((pt.T.Sub(start) + s/2) / s) // rounded: a remote store answers float seconds
			if i < 0 || i >= n || math.IsNaN(pt.V) {
				continue
			}
			// Two series of one GPU (a relabelled duplicate): keep the larger.
			if math.IsNaN(vals[i]) || pt.V > vals[i] {
				vals[i] = pt.V
			}
		}
	}
	return out
}

func readChunk(ctx context.Context, q store.Querier, p *period, from time.Time, first, n int, opts Options, models map[string]string) error {
	s := opts.Step
	w := "[" + promDuration(s) + "]"
	// Step i of the chunk is evaluated at its end.
	start := from.Add(time.Duration(first+1) * s)
	r := store.Range{Start: start, End: start.Add(time.Duration(n-1) * s), Step: s}
	rangeQ := func(expr string) (store.Matrix, error) {
		m, err := q.Range(ctx, expr, r)
		if err != nil {
			return nil, fmt.Errorf("reading %s from the store: %w", expr, err)
		}
		return m, nil
	}
	allocM, err := rangeQ("count_over_time(" + metricAllocation + w + ")")
	if err != nil {
		return err
	}
	if len(allocM) == 0 {
		return nil
	}
	// The GPU series are read side by side (the store answers each on its
	// own core), then turned into per-step values here.
	exprs := []string{"avg_over_time(" + metricSMActive + w + ")", "avg_over_time(" + metricGPUUtil + w + ")", "max_over_time(" + metricFBUsed + w + ")"}
	ms := make([]store.Matrix, len(exprs))
	errs := make([]error, len(exprs)+1)
	var totals map[string]float64
	chunkModels := map[string]string{}
	var wg sync.WaitGroup
	for i, e := range exprs {
		wg.Go(func() { ms[i], errs[i] = rangeQ(e) })
	}
	// The framebuffer's size: a GPU allocated in the chunk without
	// FB_TOTAL needs its used + free + reserved.
	need := func(totals map[string]float64) bool {
		for _, ser := range allocM {
			if uuid := label(ser.Labels, telemetry.LabelGPUUUID, telemetry.DCGMLabelUUID); uuid != "" {
				if _, ok := totals[uuid]; !ok {
					return true
				}
			}
		}
		return false
	}
	wg.Go(func() { totals, errs[len(exprs)] = memTotals(ctx, q, r.End, time.Duration(n)*s, chunkModels, need) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	maps.Copy(models, chunkModels)
	sm := perStep(ms[0], start, s, n, models)
	util := perStep(ms[1], start, s, n, models)
	mem := perStep(ms[2], start, s, n, models)

	// Allocation series by GPU, each with its per-step sample counts.
	type series struct {
		a      *alloc
		counts []float64
	}
	byGPU := map[string][]series{}
	var gpus []string
	for _, ser := range allocM {
		a := p.consumer(ser.Labels)
		if a == nil {
			continue
		}
		counts := make([]float64, n)
		for _, pt := range ser.Points {
			if i := int((pt.T.Sub(start) + s/2) / s); i >= 0 && i < n {
				counts[i] += pt.V
			}
		}
		if byGPU[a.gpu] == nil {
			gpus = append(gpus, a.gpu)
		}
		byGPU[a.gpu] = append(byGPU[a.gpu], series{a, counts})
	}
	sort.Strings(gpus)
	sec := s.Seconds()
	ratio := opts.SampleInterval.Seconds() / sec
	for _, uuid := range gpus {
		ss := byGPU[uuid]
		smv, utilv, memv := sm[uuid], util[uuid], mem[uuid]
		total := totals[uuid]
		for i := range n {
			k := 0
			for _, x := range ss {
				if x.counts[i] > 0 {
					k++
				}
			}
			act, src := math.NaN(), ""
			if smv != nil && !math.IsNaN(smv[i]) {
				act, src = clamp(smv[i], 0, 1), SourceSMActive
			} else if utilv != nil && !math.IsNaN(utilv[i]) {
				act, src = clamp(utilv[i]/100, 0, 1), SourceGPUUtil
			}
			used := math.NaN()
			if memv != nil {
				used = memv[i]
			}
			end := start.Add(time.Duration(i) * s)
			for _, x := range ss {
				if x.counts[i] <= 0 {
					continue
				}
				held := sec * math.Min(1, x.counts[i]*ratio) / float64(k)
				x.a.sum.Add(stepSummary(end, s, held, act, src, opts.IdleBelow, used, total), s, opts.IdleFor)
			}
		}
	}
	return nil
}

// memTotals is each GPU's framebuffer size in MiB at the end of a chunk:
// DCGM_FI_DEV_FB_TOTAL where the store has it for the GPU, else (need says
// which GPUs lack it) the last used + free + reserved.
func memTotals(ctx context.Context, q store.Querier, at time.Time, span time.Duration, models map[string]string, need func(map[string]float64) bool) (map[string]float64, error) {
	w := "[" + promDuration(span) + "]"
	get := func(fn, metric string) (map[string]float64, error) {
		v, err := q.Instant(ctx, fn+"("+metric+w+")", at)
		if err != nil {
			return nil, fmt.Errorf("reading %s from the store: %w", metric, err)
		}
		m := make(map[string]float64, len(v))
		for _, sm := range v {
			uuid := label(sm.Labels, telemetry.DCGMLabelUUID, telemetry.LabelGPUUUID)
			if uuid == "" || math.IsNaN(sm.Value) {
				continue
			}
			m[uuid] = math.Max(m[uuid], sm.Value)
			if mod := label(sm.Labels, telemetry.DCGMLabelModelName, telemetry.LabelModel); mod != "" {
				models[uuid] = mod
			}
		}
		return m, nil
	}
	totals, err := get("max_over_time", metricFBTotal)
	if err != nil || !need(totals) {
		return totals, err
	}
	// A GPU without FB_TOTAL (dcgm-exporter's default set has none): its
	// last used + free + reserved.
	sum := map[string]float64{}
	for _, metric := range []string{metricFBUsed, metricFBFree, metricFBReserved} {
		part, err := get("last_over_time", metric)
		if err != nil {
			return nil, err
		}
		for uuid, v := range part {
			sum[uuid] += v
		}
	}
	for uuid, v := range sum {
		if _, ok := totals[uuid]; !ok {
			totals[uuid] = v
		}
	}
	return totals, nil
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
