package stragglers

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// madScale turns a median absolute deviation into a standard deviation's
// estimate for normal noise.
const madScale = 1.4826

// signal is one series compared across a job's GPUs.
type signal struct {
	name, metric string
	// floor: a job whose reference is at or under it is not compared on the
	// signal (an idle job's activity is all noise).
	floor float64
}

var (
	sigClock  = signal{SignalSMClock, telemetry.DCGMSMClock, 0}
	sigActive = signal{SignalSMActive, telemetry.DCGMProfSMActive, 0.05}
	sigUtil   = signal{SignalGPUUtil, telemetry.DCGMGPUUtil, 5}
	sigPower  = signal{SignalPower, telemetry.DCGMPowerUsage, 1}
)

// gpuKey is one GPU's part in one job.
type gpuKey struct{ job, gpu string }

type member struct {
	node  string
	index int // the GPU's index on its node, for the order of the answer
	// in[i]: the GPU was allocated to the job at step i.
	in []bool
}

// Compute reads [opts.From, opts.To] from q and names each multi-GPU job's
// stragglers.
func Compute(ctx context.Context, q store.Querier, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	s := opts.Step
	n := int(opts.To.Sub(opts.From) / s) // 1 or more: defaults checks
	// Step i covers (start + (i-1)s, start + is], evaluated at its end.
	r := store.Range{Start: opts.From.Add(s), End: opts.From.Add(time.Duration(n) * s), Step: s}
	look := "[" + promDuration(max(s, time.Minute)) + "]"
	rangeQ := func(expr string) (store.Matrix, error) {
		m, err := q.Range(ctx, expr, r)
		if err != nil {
			return nil, fmt.Errorf("reading %s from the store: %w", expr, err)
		}
		return m, nil
	}
	index := func(t time.Time) int { return int((t.Sub(r.Start) + s/2) / s) }

	// One job's report reads that job's allocations and GPUs only.
	allocSel := ""
	if opts.Job != "" {
		allocSel = report.JobSelector(opts.Job)
	}
	allocM, err := rangeQ("count_over_time(" + telemetry.MetricGPUAllocationInfo + allocSel + "[" + promDuration(s) + "])")
	if err != nil {
		return nil, err
	}
	members := map[gpuKey]*member{}
	jobGPUs := map[string][]string{}
	for _, ser := range allocM {
		ls := ser.Labels
		uuid := label(ls, telemetry.LabelGPUUUID, telemetry.DCGMLabelUUID)
		job := ls.Get(telemetry.LabelJobID)
		if pod := ls.Get(telemetry.LabelPod); job == "" && pod != "" {
			job = ls.Get(telemetry.LabelNamespace) + "/" + pod
		}
		if uuid == "" || job == "" || (opts.Job != "" && job != opts.Job) {
			continue
		}
		k := gpuKey{job, uuid}
		m := members[k]
		if m == nil {
			idx, err := strconv.Atoi(label(ls, telemetry.LabelGPUIndex, telemetry.DCGMLabelGPU))
			if err != nil {
				idx = -1
			}
			m = &member{node: label(ls, telemetry.LabelNode, telemetry.DCGMLabelHostname), index: idx, in: make([]bool, n)}
			members[k] = m
			jobGPUs[job] = append(jobGPUs[job], uuid)
		}
		for _, p := range ser.Points {
			if i := index(p.T); i >= 0 && i < n && p.V > 0 {
				m.in[i] = true
			}
		}
	}

	// over reads fn over a metric: every GPU's, or with opts.Job the job's GPUs
	// only, named by gpuwatch's gpu_uuid or dcgm-exporter's UUID.
	over := func(fn, metric string) string { return fn + "(" + metric + look + ")" }
	if opts.Job != "" {
		var uuids []string
		for k := range members {
			uuids = append(uuids, k.gpu)
		}
		re := report.GPUMatcher(uuids)
		over = func(fn, metric string) string { return report.OverGPUs(fn, metric, re, look) }
	}
	values := map[string]map[string][]float64{} // metric → GPU → per step
	var thrM store.Matrix
	if len(members) > 0 {
		for _, sig := range []signal{sigClock, sigActive, sigUtil, sigPower} {
			m, err := rangeQ(over("avg_over_time", sig.metric))
			if err != nil {
				return nil, err
			}
			values[sig.metric] = perStep(m, n, index)
		}
		if thrM, err = rangeQ(over("max_over_time", telemetry.DCGMClockThrottleReasons)); err != nil {
			return nil, err
		}
	}
	throttle := perStep(thrM, n, index)

	rep := &Report{From: opts.From, To: opts.To, StepSeconds: s.Seconds(), GeneratedAt: opts.Now().UTC(),
		MinGap: opts.MinGap, MinDurationSec: opts.MinDuration.Seconds(), Jobs: []Job{}}
	jobs := make([]string, 0, len(jobGPUs))
	for j, gs := range jobGPUs {
		if len(gs) >= 2 {
			jobs = append(jobs, j)
		}
	}
	sort.Strings(jobs)
	for _, j := range jobs {
		gpus := jobGPUs[j]
		sort.Slice(gpus, func(a, b int) bool {
			ma, mb := members[gpuKey{j, gpus[a]}], members[gpuKey{j, gpus[b]}]
			if ma.node != mb.node {
				return ma.node < mb.node
			}
			if ma.index != mb.index {
				return ma.index < mb.index
			}
			return gpus[a] < gpus[b]
		})
		job := Job{JobID: j, GPUs: len(gpus), Stragglers: []Straggler{}}
		nodes := map[string]bool{}
		// The job's values of a metric, each GPU's limited to its steps in
		// the job.
		jobValues := func(metric string) [][]float64 {
			out := make([][]float64, len(gpus))
			for g, uuid := range gpus {
				v := values[metric][uuid]
				in := members[gpuKey{j, uuid}].in
				out[g] = make([]float64, n)
				for i := range n {
					out[g][i] = math.NaN()
					if v != nil && in[i] {
						out[g][i] = v[i]
					}
				}
			}
			return out
		}
		// Activity: SM_ACTIVE where every GPU of the job has it, else
		// GPU_UTIL.
		act := sigActive
		av := jobValues(sigActive.metric)
		for _, v := range av {
			if !hasData(v) {
				act, av = sigUtil, nil
				break
			}
		}
		evidence := make([][]Evidence, len(gpus))
		for _, sig := range []signal{sigClock, act, sigPower} {
			v := av
			if sig != act || v == nil {
				v = jobValues(sig.metric)
			}
			for g, e := range compare(sig, v, opts) {
				if e != nil {
					evidence[g] = append(evidence[g], *e)
				}
			}
		}
		for g, uuid := range gpus {
			m := members[gpuKey{j, uuid}]
			nodes[m.node] = true
			if len(evidence[g]) == 0 {
				continue
			}
			var mask uint64
			if t := throttle[uuid]; t != nil {
				for i, x := range t {
					if m.in[i] && !math.IsNaN(x) && x > 0 {
						mask |= uint64(x)
					}
				}
			}
			job.Stragglers = append(job.Stragglers, Straggler{Node: m.node, GPU: uuid, Evidence: evidence[g], ThrottleReasons: ThrottleReasons(mask)})
		}
		job.Nodes = len(nodes)
		rep.Jobs = append(rep.Jobs, job)
	}
	return rep, nil
}

// compare finds the GPUs (rows of v, one value per step) that lag the
// others on sig: nil for a GPU that does not.
func compare(sig signal, v [][]float64, opts Options) []*Evidence {
	out := make([]*Evidence, len(v))
	meds := make([]float64, len(v))
	var have []float64
	for g, row := range v {
		meds[g] = median(row)
		if !math.IsNaN(meds[g]) {
			have = append(have, meds[g])
		}
	}
	if len(have) < 2 {
		return out
	}
	ref, mad := upperHalf(have)
	if !(ref > sig.floor) {
		return out
	}
	n := len(v[0])
	// Each step's own reference, for how long a GPU lagged.
	stepRef := make([]float64, n)
	col := make([]float64, 0, len(v))
	for i := range n {
		col = col[:0]
		for _, row := range v {
			if !math.IsNaN(row[i]) {
				col = append(col, row[i])
			}
		}
		stepRef[i] = math.NaN()
		if len(col) >= 2 {
			stepRef[i], _ = upperHalf(col)
		}
	}
	for g, row := range v {
		med := meds[g]
		if math.IsNaN(med) {
			continue
		}
		gap := ref - med
		lag := gap / ref
		if lag < opts.MinGap || gap <= opts.MADs*madScale*mad {
			continue
		}
		behind := 0
		for i, x := range row {
			if !math.IsNaN(x) && stepRef[i] > 0 && (stepRef[i]-x)/stepRef[i] >= opts.MinGap {
				behind++
			}
		}
		d := time.Duration(behind) * opts.Step
		if d < opts.MinDuration {
			continue
		}
		out[g] = &Evidence{Signal: sig.name, Median: med, Reference: ref, Lag: lag, BehindSeconds: d.Seconds()}
	}
	return out
}

// upperHalf is the median of the upper half of xs (the reference a healthy
// majority, or a healthy half, sets) and the median absolute deviation from
// it within that half.
func upperHalf(xs []float64) (ref, mad float64) {
	s := append([]float64(nil), xs...)
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	top := s[:(len(s)+1)/2]
	ref = median(top)
	dev := make([]float64, len(top))
	for i, x := range top {
		dev[i] = math.Abs(x - ref)
	}
	return ref, median(dev)
}

// median of the values that are not NaN; NaN when there are none.
func median(xs []float64) float64 {
	s := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	sort.Float64s(s)
	if k := len(s); k%2 == 1 {
		return s[k/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func hasData(v []float64) bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return true
		}
	}
	return false
}

// perStep turns a matrix into each GPU's value per step (NaN where none).
func perStep(m store.Matrix, n int, index func(time.Time) int) map[string][]float64 {
	out := map[string][]float64{}
	for _, ser := range m {
		uuid := label(ser.Labels, telemetry.LabelGPUUUID, telemetry.DCGMLabelUUID)
		if uuid == "" {
			continue
		}
		v := out[uuid]
		if v == nil {
			v = make([]float64, n)
			for i := range v {
				v[i] = math.NaN()
			}
			out[uuid] = v
		}
		for _, p := range ser.Points {
			if i := index(p.T); i >= 0 && i < n && !math.IsNaN(p.V) {
				v[i] = p.V
			}
		}
	}
	return out
}

func label(ls telemetry.Labels, names ...string) string {
	for _, n := range names {
		if v := ls.Get(n); v != "" {
			return v
		}
	}
	return ""
}

func promDuration(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(d/time.Second))
}
