package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// Resolutions are the intervals the Downsampler stores summaries at, the
// coarsest first: an hour of five-minute summaries is added up into one.
var Resolutions = []time.Duration{time.Hour, 5 * time.Minute}

// The series that store summaries (the Downsampler writes them, the report
// reads them): one sample per allocation (or GPU) and interval, at the
// interval's end, labelled with the allocation's labels (or the GPU's), its
// GPU's model and the resolution. Only the measured seconds are always
// written; every other series is left out where its value is the common
// one, so that an allocation held all through an interval costs one
// sample: allocated seconds where not every step from the first held to the
// last but the gaps (a GPU shared by several jobs at once), SM-activity
// seconds where not allocated − unmeasured − utilization seconds, the held
// timestamps where not the interval's first and last step, the peak
// framebuffer use where not the GPU's in the interval, the rest where not 0.
const (
	// MetricSummaries marks an interval as summarized: its value is the
	// number of allocations summarized, its labels the resolution and the
	// parameters the summaries were computed with (sample_interval,
	// idle_below, idle_for). The report reads summaries only where it finds
	// one with its own parameters.
	MetricSummaries = "gpuwatch_report_summaries"

	MetricSummaryMeasured   = "gpuwatch_report_measured_seconds"
	MetricSummaryAllocated  = "gpuwatch_report_allocated_seconds"
	MetricSummaryUnmeasured = "gpuwatch_report_unmeasured_seconds"
	MetricSummarySMActive   = "gpuwatch_report_sm_active_seconds"
	MetricSummaryGPUUtil    = "gpuwatch_report_gpu_util_seconds"
	MetricSummaryGaps       = "gpuwatch_report_gap_seconds"
	MetricSummaryFirst      = "gpuwatch_report_first_held_timestamp_seconds"
	MetricSummaryLast       = "gpuwatch_report_last_held_timestamp_seconds"
	MetricSummaryHead       = "gpuwatch_report_idle_head_seconds"
	MetricSummaryHeadWall   = "gpuwatch_report_idle_head_wall_seconds"
	MetricSummaryTail       = "gpuwatch_report_idle_tail_seconds"
	MetricSummaryTailWall   = "gpuwatch_report_idle_tail_wall_seconds"
	MetricSummaryInnerIdle  = "gpuwatch_report_idle_inner_seconds"
	MetricSummaryFBPeakMiB  = "gpuwatch_report_fb_used_peak_mib"
	// Per GPU (gpu_uuid, node, model, resolution): the highest framebuffer
	// use in a step held by any of its allocations, and its size.
	MetricSummaryGPUFBPeakMiB  = "gpuwatch_report_gpu_fb_used_peak_mib"
	MetricSummaryGPUFBTotalMiB = "gpuwatch_report_gpu_fb_total_mib"

	LabelResolution     = "resolution"
	LabelSampleInterval = "sample_interval"
	LabelIdleBelow      = "idle_below"
	LabelIdleFor        = "idle_for"
)

// summaryFields are the summary series in the order readSummaries reads
// them: the allocations' (measured first: every stored summary has it),
// then the GPUs' (gpuFields of them).
var summaryFields = []string{MetricSummaryMeasured, MetricSummaryAllocated, MetricSummaryUnmeasured,
	MetricSummarySMActive, MetricSummaryGPUUtil, MetricSummaryGaps, MetricSummaryFirst, MetricSummaryLast,
	MetricSummaryHead, MetricSummaryHeadWall, MetricSummaryTail, MetricSummaryTailWall, MetricSummaryInnerIdle,
	MetricSummaryFBPeakMiB, MetricSummaryGPUFBPeakMiB, MetricSummaryGPUFBTotalMiB}

// totalsField marks the fields allocated, measured and unmeasured seconds
// need (allocated defaults to the held span: first, last, gaps), and the
// GPU's series that says its node and model (a report by node or model).
var totalsField = map[int]bool{fieldMeasured: true, fieldAllocated: true, fieldUnmeasured: true,
	fieldFirst: true, fieldLast: true, fieldGaps: true, fieldGPUFBTotal: true}

const (
	fieldMeasured = iota
	fieldAllocated
	fieldUnmeasured
	fieldSMActive
	fieldGPUUtil
	fieldGaps
	fieldFirst
	fieldLast
	fieldHead
	fieldHeadWall
	fieldTail
	fieldTailWall
	fieldInnerIdle
	fieldFBPeak
	fieldGPUFBPeak
	fieldGPUFBTotal
	gpuFields = 2
)

// summaryLabels are the allocation labels a summary keeps; its GPU's node
// and model are on the GPU's series.
var summaryLabels = []string{telemetry.LabelGPUUUID, telemetry.LabelJobID, telemetry.LabelPod, telemetry.LabelNamespace,
	telemetry.LabelAccount, telemetry.LabelUser}

// formatDuration writes a duration as PromQL and label values do: 10s, 5m, 1h.
func formatDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// formatFraction writes a threshold as a label value: 0.05.
func formatFraction(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// SummaryLabels are the labels of an allocation's summary series: the
// allocation's own (its GPU, its job or pod and their owners) and the
// resolution.
func SummaryLabels(alloc telemetry.Labels, res time.Duration) telemetry.Labels {
	kv := make([]string, 0, 2*len(summaryLabels)+2)
	for _, n := range summaryLabels {
		v := alloc.Get(n)
		if n == telemetry.LabelGPUUUID {
			v = label(alloc, telemetry.LabelGPUUUID, telemetry.DCGMLabelUUID)
		}
		if v != "" {
			kv = append(kv, n, v)
		}
	}
	return telemetry.NewLabels(append(kv, LabelResolution, formatDuration(res))...)
}

// AllocSummary is one allocation's Summary over an interval: the labels of
// its summary series (SummaryLabels), its GPU's node and model.
type AllocSummary struct {
	Labels      telemetry.Labels
	Node, Model string
	Summary
}

// AppendSummaries appends the samples that store the summaries of one
// interval (end−res, end] cut into steps of step: each allocation's, and
// each GPU's framebuffer peak and size (the size always, 0 when unknown: the
// GPU's series says its node and model).
func AppendSummaries(dst []telemetry.Sample, allocs []AllocSummary, res, step time.Duration, end time.Time) []telemetry.Sample {
	type gpu struct {
		ls          telemetry.Labels
		peak, total float64
	}
	gpus := map[string]*gpu{}
	var order []string
	for i := range allocs {
		a := &allocs[i]
		uuid := a.Labels.Get(telemetry.LabelGPUUUID)
		g := gpus[uuid]
		if g == nil {
			kv := []string{telemetry.LabelGPUUUID, uuid, LabelResolution, formatDuration(res)}
			if a.Node != "" {
				kv = append(kv, telemetry.LabelNode, a.Node)
			}
			if a.Model != "" {
				kv = append(kv, telemetry.LabelModel, a.Model)
			}
			g = &gpu{ls: telemetry.NewLabels(kv...)}
			gpus[uuid] = g
			order = append(order, uuid)
		}
		g.peak, g.total = max(g.peak, a.FBPeakMiB), max(g.total, a.FBTotalMiB)
	}
	for i := range allocs {
		a := &allocs[i]
		dst = appendSummary(dst, a.Labels, &a.Summary, gpus[a.Labels.Get(telemetry.LabelGPUUUID)].peak, res, step, end)
	}
	for _, uuid := range order {
		g := gpus[uuid]
		if g.peak > 0 {
			dst = append(dst, telemetry.Sample{Name: MetricSummaryGPUFBPeakMiB, Labels: g.ls, Value: g.peak, Time: end})
		}
		dst = append(dst, telemetry.Sample{Name: MetricSummaryGPUFBTotalMiB, Labels: g.ls, Value: g.total, Time: end})
	}
	return dst
}

// heldSpan is the allocated seconds of a summary held by one job alone in
// every step from First to Last but its gaps: what an allocated-seconds
// series may leave out.
func heldSpan(s *Summary, step time.Duration) float64 {
	return (s.Last.Sub(s.First) + step).Seconds() - s.Gaps
}

// appendSummary appends an allocation's series: those whose value is not
// the common one (see the constants).
func appendSummary(dst []telemetry.Sample, ls telemetry.Labels, s *Summary, gpuPeak float64, res, step time.Duration, end time.Time) []telemetry.Sample {
	add := func(name string, v float64) {
		dst = append(dst, telemetry.Sample{Name: name, Labels: ls, Value: v, Time: end})
	}
	add(MetricSummaryMeasured, s.Measured)
	if s.Allocated != heldSpan(s, step) {
		add(MetricSummaryAllocated, s.Allocated)
	}
	if s.SMActive != s.Allocated-s.Unmeasured-s.GPUUtil {
		add(MetricSummarySMActive, s.SMActive)
	}
	if s.FBPeakMiB != gpuPeak {
		add(MetricSummaryFBPeakMiB, s.FBPeakMiB)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{MetricSummaryUnmeasured, s.Unmeasured}, {MetricSummaryGPUUtil, s.GPUUtil}, {MetricSummaryGaps, s.Gaps}, {MetricSummaryInnerIdle, s.InnerIdle}} {
		if f.v != 0 {
			add(f.name, f.v)
		}
	}
	if first := end.Add(step - res); !s.First.Equal(first) {
		add(MetricSummaryFirst, float64(s.First.UnixMilli())/1000)
	}
	if !s.Last.Equal(end) {
		add(MetricSummaryLast, float64(s.Last.UnixMilli())/1000)
	}
	if s.Head.Wall > 0 {
		add(MetricSummaryHead, s.Head.Held)
		add(MetricSummaryHeadWall, s.Head.Wall.Seconds())
	}
	// An unbroken run is its own tail; the reader knows it by a head as
	// long as the held steps.
	if !s.Unbroken && s.Tail.Wall > 0 {
		add(MetricSummaryTail, s.Tail.Held)
		add(MetricSummaryTailWall, s.Tail.Wall.Seconds())
	}
	return dst
}

// SummariesMarker is the sample that marks the interval (end−res, end] as
// summarized, n allocations, with the parameters the summaries were
// computed with.
func SummariesMarker(res, sampleInterval time.Duration, idleBelow float64, idleFor time.Duration, end time.Time, n int) telemetry.Sample {
	return telemetry.Sample{Name: MetricSummaries, Value: float64(n), Time: end, Labels: telemetry.NewLabels(
		LabelResolution, formatDuration(res), LabelSampleInterval, formatDuration(sampleInterval),
		LabelIdleBelow, formatFraction(idleBelow), LabelIdleFor, formatDuration(idleFor))}
}

// segment is a part of a report's window read one way: stored summaries of
// resolution res, or raw samples (res 0).
type segment struct {
	from, to time.Time
	res      time.Duration
}

// plan is how a window is read: its segments in time order, and the units
// of progress they make.
type plan struct {
	segments []segment
	units    int
}

// usable says whether summaries of resolution res answer opts exactly: they
// were computed at the report's step, and an idle run inside one (shorter
// than res) cannot count unless it was held against the same idle duration.
func usable(res time.Duration, opts Options) bool {
	return !opts.RawOnly && opts.Step == opts.SampleInterval && (opts.maxResolution == 0 || res <= opts.maxResolution)
}

// planWindow finds the intervals of [from, to) that the store holds
// summaries for, with opts' parameters, and cuts the window into segments:
// whole hours of hourly summaries, whole five minutes of five-minute ones,
// raw samples for the rest.
func planWindow(ctx context.Context, q store.Querier, from, to time.Time, opts Options) (plan, error) {
	covered := map[time.Duration]map[int64]bool{}
	for _, res := range Resolutions {
		if !usable(res, opts) {
			continue
		}
		first, last := alignUp(from, res).Add(res), alignDown(to, res)
		if first.After(last) {
			continue
		}
		sel := fmt.Sprintf(`%s{%s=%q,%s=%q,%s=%q}`, MetricSummaries, LabelResolution, formatDuration(res),
			LabelSampleInterval, formatDuration(opts.SampleInterval), LabelIdleBelow, formatFraction(opts.IdleBelow))
		// Idle runs inside a summary (shorter than res) were held against
		// the Downsampler's idle duration: they count the same for the
		// report's only when it is the same, or when neither lets a run
		// shorter than res count.
		set, err := markedEnds(ctx, q, sel, res, first, last, func(ls telemetry.Labels) bool {
			idleFor, err := time.ParseDuration(ls.Get(LabelIdleFor))
			return err == nil && (idleFor == opts.IdleFor || (idleFor >= res && opts.IdleFor >= res))
		})
		if err != nil {
			return plan{}, err
		}
		covered[res] = set
	}
	var pl plan
	addSeg := func(sg segment) {
		if n := len(pl.segments); n > 0 && pl.segments[n-1].res == sg.res && pl.segments[n-1].to.Equal(sg.from) {
			pl.segments[n-1].to = sg.to
			return
		}
		pl.segments = append(pl.segments, sg)
	}
	finest := Resolutions[len(Resolutions)-1]
	for t := from; t.Before(to); {
		took := false
		for _, res := range Resolutions {
			end := t.Add(res)
			if covered[res][end.UnixMilli()] && alignDown(t, res).Equal(t) && !end.After(to) {
				addSeg(segment{t, end, res})
				t, took = end, true
				break
			}
		}
		if took {
			continue
		}
		end := alignDown(t, finest).Add(finest)
		if end.After(to) {
			end = to
		}
		addSeg(segment{t, end, 0})
		t = end
	}
	_, direct := q.(store.SampleReader)
	for _, sg := range pl.segments {
		switch {
		case sg.res > 0 && direct:
			pl.units++
		case sg.res > 0:
			steps := int(sg.to.Sub(sg.from) / sg.res)
			pl.units += (steps + opts.ChunkSteps - 1) / opts.ChunkSteps
		default:
			pl.units += chunkCount(sg.to.Sub(sg.from), opts)
		}
	}
	return pl, nil
}

// markedEnds is the ends of the intervals of resolution res, from first to
// last, that the store holds a gpuwatch_report_summaries marker for: of the
// marker series sel matches, those keep takes (nil: all).
func markedEnds(ctx context.Context, q store.Querier, sel string, res time.Duration, first, last time.Time, keep func(telemetry.Labels) bool) (map[int64]bool, error) {
	expr := "last_over_time(" + sel + "[" + formatDuration(res-time.Millisecond) + "])"
	m, err := q.Range(ctx, expr, store.Range{Start: first, End: last, Step: res})
	if err != nil {
		return nil, fmt.Errorf("reading %s from the store: %w", MetricSummaries, err)
	}
	set := map[int64]bool{}
	for _, ser := range m {
		if keep != nil && !keep(ser.Labels) {
			continue
		}
		for _, pt := range ser.Points {
			set[alignDown(pt.T.Add(res/2), res).UnixMilli()] = true // rounded: a remote store answers float seconds
		}
	}
	return set, nil
}

// readSummaries adds the stored summaries of sg to p: all at once where the
// store reads stored samples (store.SampleReader), else by range queries
// chunk by chunk.
func readSummaries(ctx context.Context, q store.Querier, p *period, sg segment, opts Options, progress func()) error {
	res := sg.res
	steps := int(sg.to.Sub(sg.from) / res)
	sel := fmt.Sprintf(`{%s=%q}`, LabelResolution, formatDuration(res))
	sr, direct := q.(store.SampleReader)
	chunk := opts.ChunkSteps
	if direct {
		chunk = steps
	}
	for first := 0; first < steps; first += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(chunk, steps-first)
		start := sg.from.Add(time.Duration(first+1) * res)
		end := start.Add(time.Duration(n-1) * res)
		ms := make([]store.Matrix, len(summaryFields))
		errs := make([]error, len(summaryFields))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for i, f := range summaryFields {
			if opts.totalsOnly && !totalsField[i] {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if direct {
					ms[i], errs[i] = sr.Samples(ctx, f+sel, start.Add(-res), end)
				} else {
					expr := "last_over_time(" + f + sel + "[" + formatDuration(res-time.Millisecond) + "])"
					ms[i], errs[i] = q.Range(ctx, expr, store.Range{Start: start, End: end, Step: res})
				}
				if errs[i] != nil {
					errs[i] = fmt.Errorf("reading %s from the store: %w", f, errs[i])
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		addSummaries(p, ms, start, res, n, opts)
		progress()
	}
	return nil
}

// addSummaries joins the fields' answers by series and adds each
// allocation's summaries in time order.
func addSummaries(p *period, ms []store.Matrix, start time.Time, res time.Duration, n int, opts Options) {
	index := func(t time.Time) int { return int((t.Sub(start) + res/2) / res) }
	// The GPUs' framebuffer peaks and sizes, by GPU, in step order.
	nAlloc := len(summaryFields) - gpuFields
	type stepValue struct {
		i int
		v float64
	}
	gpuVals := make([]map[string][]stepValue, gpuFields)
	for f := range gpuFields {
		gpuVals[f] = map[string][]stepValue{}
		for _, ser := range ms[nAlloc+f] {
			uuid := ser.Labels.Get(telemetry.LabelGPUUUID)
			vs := gpuVals[f][uuid]
			for _, pt := range ser.Points {
				if !math.IsNaN(pt.V) {
					vs = append(vs, stepValue{index(pt.T), pt.V})
				}
			}
			gpuVals[f][uuid] = vs
		}
		for _, vs := range gpuVals[f] {
			sort.SliceStable(vs, func(a, b int) bool { return vs[a].i < vs[b].i })
		}
	}
	gpuValue := func(vs []stepValue, i int) float64 {
		k := sort.Search(len(vs), func(k int) bool { return vs[k].i >= i })
		v := 0.0
		for ; k < len(vs) && vs[k].i == i; k++ {
			v = max(v, vs[k].v) // two series of one GPU (its model label changed): the larger
		}
		return v
	}
	gpuInfo := map[string]telemetry.Labels{} // node and model
	for _, ser := range ms[len(ms)-1] {
		gpuInfo[ser.Labels.Get(telemetry.LabelGPUUUID)] = ser.Labels
	}
	type rec struct {
		ls     telemetry.Labels
		fields [][]store.Point // by field, in time order
	}
	recs := map[string]*rec{}
	var order []string
	for f, m := range ms[:nAlloc] {
		for _, ser := range m {
			k := labelKey(ser.Labels)
			r := recs[k]
			if r == nil {
				if f != fieldMeasured {
					continue // no measured seconds: not a summary
				}
				r = &rec{ls: ser.Labels, fields: make([][]store.Point, nAlloc)}
				recs[k] = r
				order = append(order, k)
			}
			r.fields[f] = append(r.fields[f], ser.Points...)
		}
	}
	step := opts.Step
	type item struct {
		i int
		s Summary
	}
	// An allocation has one series but where its GPU's labels changed: its
	// summaries are added as they come (in time order), else gathered and
	// sorted first.
	allocOf := make([]*alloc, len(order))
	series := map[*alloc]int{}
	for j, k := range order {
		if a := p.consumer(recs[k].ls); a != nil {
			allocOf[j] = a
			series[a]++
		}
	}
	byAlloc := map[*alloc][]item{}
	var allocs []*alloc
	for j, k := range order {
		r := recs[k]
		a := allocOf[j]
		if a == nil {
			continue
		}
		gpu := r.ls.Get(telemetry.LabelGPUUUID)
		gpuPeaks, gpuTotals := gpuVals[0][gpu], gpuVals[1][gpu]
		if info := gpuInfo[gpu]; info != nil {
			if a.model == "" {
				a.model = info.Get(telemetry.LabelModel)
			}
			if a.node == "" {
				a.node = info.Get(telemetry.LabelNode)
			}
		}
		// Each field's points are in time order: one cursor per field.
		cursor := make([]int, nAlloc)
		value := func(f, i int) (float64, bool) {
			pts := r.fields[f]
			for cursor[f] < len(pts) && index(pts[cursor[f]].T) < i {
				cursor[f]++
			}
			if c := cursor[f]; c < len(pts) && index(pts[c].T) == i && !math.IsNaN(pts[c].V) {
				return pts[c].V, true
			}
			return 0, false
		}
		or := func(f, i int, def float64) float64 {
			if v, ok := value(f, i); ok {
				return v
			}
			return def
		}
		direct := series[a] == 1
		if !direct && byAlloc[a] == nil {
			allocs = append(allocs, a)
		}
		for _, pt := range r.fields[fieldMeasured] {
			i := index(pt.T)
			if i < 0 || i >= n || math.IsNaN(pt.V) {
				continue
			}
			end := start.Add(time.Duration(i) * res)
			s := Summary{First: end.Add(step - res), Last: end, Measured: pt.V,
				Unmeasured: or(fieldUnmeasured, i, 0), GPUUtil: or(fieldGPUUtil, i, 0), Gaps: or(fieldGaps, i, 0),
				InnerIdle: or(fieldInnerIdle, i, 0), FBTotalMiB: gpuValue(gpuTotals, i)}
			if v, ok := value(fieldFirst, i); ok {
				s.First = time.UnixMilli(int64(math.Round(v * 1000))).UTC()
			}
			if v, ok := value(fieldLast, i); ok {
				s.Last = time.UnixMilli(int64(math.Round(v * 1000))).UTC()
			}
			s.Allocated = or(fieldAllocated, i, heldSpan(&s, step))
			s.SMActive = or(fieldSMActive, i, s.Allocated-s.Unmeasured-s.GPUUtil)
			s.FBPeakMiB = or(fieldFBPeak, i, gpuValue(gpuPeaks, i))
			s.Head = IdleRun{Held: or(fieldHead, i, 0), Wall: time.Duration(math.Round(or(fieldHeadWall, i, 0)*1000)) * time.Millisecond}
			if s.Head.Wall > 0 && s.Head.Wall == s.Last.Sub(s.First)+step {
				s.Unbroken, s.Tail = true, s.Head
			} else {
				s.Tail = IdleRun{Held: or(fieldTail, i, 0), Wall: time.Duration(math.Round(or(fieldTailWall, i, 0)*1000)) * time.Millisecond}
			}
			if direct {
				a.sum.Add(s, step, opts.IdleFor)
			} else {
				byAlloc[a] = append(byAlloc[a], item{i, s})
			}
		}
	}
	// Summaries are added in time order (an allocation whose GPU's model
	// label changed has two series).
	for _, a := range allocs {
		items := byAlloc[a]
		sort.Slice(items, func(x, y int) bool { return items[x].i < items[y].i })
		for _, it := range items {
			a.sum.Add(it.s, step, opts.IdleFor)
		}
	}
}

// labelKey identifies a series by its labels less __name__ (stores differ
// on whether a function's answer keeps it).
func labelKey(ls telemetry.Labels) string {
	n := 0
	for _, l := range ls {
		n += len(l.Name) + len(l.Value) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for _, l := range ls {
		if l.Name == "__name__" {
			continue
		}
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}
