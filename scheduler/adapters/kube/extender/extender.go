package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// ResourceGPU is the extended resource the NVIDIA device plugin advertises.
const ResourceGPU v1.ResourceName = "nvidia.com/gpu"

// Pod annotations gpuwatch reads.
const (
	AnnotationMilli        = "gpuwatch.io/milli-gpu"
	AnnotationModel        = "gpuwatch.io/gpu-model"
	AnnotationMinMemory    = "gpuwatch.io/min-gpu-memory-mib"
	AnnotationTier         = "gpuwatch.io/topology-tier"
	AnnotationNear         = "gpuwatch.io/near"
	AnnotationRequireFresh = "gpuwatch.io/require-fresh"
)

// Fail-open reasons (the reason label of gpuwatch_extender_fail_open_total).
const (
	ReasonStale         = "stale_snapshot"
	ReasonEvaluate      = "evaluate_error"
	ReasonBadAnnotation = "bad_annotation"
	ReasonNoPod         = "no_pod"
	ReasonUnknownNode   = "unknown_node"
)

// maxArgs bounds an ExtenderArgs body (Node objects of a large cluster are big).
const maxArgs = 64 << 20

// maxPooledBytes bounds the body and answer buffers kept for reuse, so one
// Node-object request does not pin megabytes.
const maxPooledBytes = 4 << 20

// maxPooledNames bounds the node-name buffers kept for reuse.
const maxPooledNames = 1 << 16

// Options configure a Handler.
type Options struct {
	// Evaluate judges nodes for a one-node request (placement.Engine.Evaluate).
	// Required.
	Evaluate func(ctx context.Context, req framework.Request, nodes []string) ([]placement.NodeScore, error)
	// EvaluateAppend, when set, is used instead of Evaluate with a pooled
	// answer buffer (placement.Engine.EvaluateAppend): 5,000 candidates make a
	// 320 KB answer per call, and allocating it every call puts garbage
	// collection into the scheduler's tail latency.
	EvaluateAppend func(ctx context.Context, dst []placement.NodeScore, req framework.Request, nodes []string) ([]placement.NodeScore, error)
	// Fresh returns an error when the snapshot behind Evaluate is too old to
	// trust; nil Fresh is always fresh.
	Fresh func() error
	// Timeout bounds one evaluation (default 2 s, under kube-scheduler's 5 s
	// extender timeout); past it the call fails open.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Handler serves the extender's filter and prioritize verbs.
type Handler struct {
	opts     Options
	buffers  sync.Pool // *[]placement.NodeScore for EvaluateAppend
	bytes    sync.Pool // *[]byte: request bodies, then answers
	names    sync.Pool // *[]string: decoded node names
	requests *prometheus.CounterVec
	failOpen *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New returns a handler.
func New(opts Options) (*Handler, error) {
	if opts.Evaluate == nil && opts.EvaluateAppend == nil {
		return nil, errors.New("extender: no Evaluate function: pass the placement engine's Evaluate")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{opts: opts,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuwatch_extender_requests_total",
			Help: "Number of kube-scheduler extender calls, by verb (filter, prioritize) and result: ok, not_gpu (the pod asks no GPU), fail_open, bad_request."},
			[]string{"verb", "result"}),
		failOpen: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuwatch_extender_fail_open_total",
			Help: "Number of times the extender let nodes pass unjudged, by verb and reason: stale_snapshot, evaluate_error, bad_annotation, no_pod, unknown_node (counted per call)."},
			[]string{"verb", telemetry.LabelReason}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gpuwatch_extender_duration_seconds",
			Help:    "Time to answer a kube-scheduler extender call, by verb.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}, []string{"verb"}),
	}
	h.bytes.New = func() any { return new([]byte) }
	h.names.New = func() any { return new([]string) }
	return h, nil
}

// Collector returns the extender's metrics.
func (h *Handler) Collector() prometheus.Collector {
	return collectors{h.requests, h.failOpen, h.duration}
}

type collectors []prometheus.Collector

func (c collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range c {
		x.Describe(ch)
	}
}

func (c collectors) Collect(ch chan<- prometheus.Metric) {
	for _, x := range c {
		x.Collect(ch)
	}
}

// PodRequest reads a pod's GPU request: the GPU count from nvidia.com/gpu limits
// (requests when no limit), the share and constraints from the gpuwatch.io/
// annotations. wants is false for a pod that asks no GPU. The error names the bad
// annotation or resource.
func PodRequest(pod *v1.Pod) (req framework.Request, wants bool, err error) {
	if pod == nil {
		return req, false, errors.New("no pod")
	}
	gpus := func(c v1.Container) (int64, error) {
		q, ok := c.Resources.Limits[ResourceGPU]
		if !ok {
			q, ok = c.Resources.Requests[ResourceGPU]
		}
		if !ok {
			return 0, nil
		}
		v, exact := q.AsInt64()
		if !exact || v < 0 {
			return 0, fmt.Errorf("container %s: %s %s: want a whole number of GPUs (use the %s annotation for a share)", c.Name, ResourceGPU, q.String(), AnnotationMilli)
		}
		return v, nil
	}
	var sum, initMax int64
	for _, c := range pod.Spec.Containers {
		n, err := gpus(c)
		if err != nil {
			return req, false, err
		}
		sum += n
	}
	for _, c := range pod.Spec.InitContainers {
		n, err := gpus(c)
		if err != nil {
			return req, false, err
		}
		initMax = max(initMax, n)
	}
	count := max(sum, initMax)
	if count > snapshot.MaxGPUsPerNode {
		return req, false, fmt.Errorf("%s %d: a pod fits on one node: at most %d", ResourceGPU, count, snapshot.MaxGPUsPerNode)
	}
	ann := pod.Annotations
	req.JobID = pod.Namespace + "/" + pod.Name
	if v, ok := ann[AnnotationMilli]; ok {
		m, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || m < 1 || m > snapshot.FullMilli {
			return req, false, fmt.Errorf("annotation %s=%q: want milli-GPU 1 to %d", AnnotationMilli, v, snapshot.FullMilli)
		}
		req.Milli = m
		if count == 0 {
			count = 1
		}
	}
	if count == 0 {
		return req, false, nil
	}
	req.GPUs = int(count)
	req.Model = strings.TrimSpace(ann[AnnotationModel])
	if v, ok := ann[AnnotationMinMemory]; ok {
		m, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || m < 0 {
			return req, false, fmt.Errorf("annotation %s=%q: want MiB ≥ 0", AnnotationMinMemory, v)
		}
		req.MinMemoryMiB = m
	}
	if v, ok := ann[AnnotationTier]; ok {
		t, err := telemetry.ParseTier(strings.TrimSpace(v))
		if err != nil {
			return req, false, fmt.Errorf("annotation %s: %w", AnnotationTier, err)
		}
		req.Preferred = t
	}
	if v, ok := ann[AnnotationNear]; ok {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				req.Near = append(req.Near, n)
			}
		}
	}
	if v, ok := ann[AnnotationRequireFresh]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return req, false, fmt.Errorf("annotation %s=%q: want true or false", AnnotationRequireFresh, v)
		}
		req.RequireFresh = b
	}
	return req, true, nil
}

// nodeNames returns the candidate names of args: NodeNames (nodeCacheCapable), or
// the names of Nodes.
func nodeNames(args *extenderv1.ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	if args.Nodes != nil {
		out := make([]string, len(args.Nodes.Items))
		for i := range args.Nodes.Items {
			out[i] = args.Nodes.Items[i].Name
		}
		return out
	}
	return nil
}

// verdict is the evaluation of one call, or why it fails open.
type verdict struct {
	names []string
	// scores are the engine's judgements in the order of names; nil: every
	// node passes with score 0.
	scores  []placement.NodeScore
	release func() // gives scores back once the answer is written
	result  string // ok, not_gpu, fail_open
	// abandoned: an evaluation that outran its timeout may still read names.
	abandoned bool
}

// passes reports whether names[i] passes the filter: feasible, or not judged
// (a node the snapshot does not know passes unjudged).
func (v *verdict) passes(i int) bool {
	if v.scores == nil {
		return true
	}
	s := &v.scores[i]
	return s.Feasible || s.Plugin == "snapshot"
}

// priority is names[i]'s score, 0..MaxExtenderPriority; infeasible and
// unjudged nodes score 0.
func (v *verdict) priority(i int) int64 {
	if v.scores == nil || !v.scores[i].Feasible {
		return 0
	}
	return Scale(v.scores[i].Score)
}

func (h *Handler) judge(ctx context.Context, verb string, args *extenderv1.ExtenderArgs) verdict {
	v := verdict{names: nodeNames(args), result: "fail_open", release: func() {}}
	open := func(reason string, err error) verdict {
		h.failOpen.WithLabelValues(verb, reason).Inc()
		h.opts.Logger.Warn("extender fails open: every node passes with score 0", "verb", verb, "pod", podName(args.Pod), "reason", reason, "err", err)
		v.scores = nil
		return v
	}
	if args.Pod == nil {
		return open(ReasonNoPod, errors.New("the ExtenderArgs carry no pod"))
	}
	req, wants, err := PodRequest(args.Pod)
	if err != nil {
		return open(ReasonBadAnnotation, err)
	}
	if !wants || len(v.names) == 0 {
		v.result = "not_gpu"
		return v
	}
	if h.opts.Fresh != nil {
		if err := h.opts.Fresh(); err != nil {
			return open(ReasonStale, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
	defer cancel()
	scores, release, err := h.evaluate(ctx, req, v.names)
	if err != nil {
		v.abandoned = ctx.Err() != nil
		release()
		return open(ReasonEvaluate, err)
	}
	if len(scores) != len(v.names) {
		release()
		return open(ReasonEvaluate, fmt.Errorf("evaluate answered %d nodes for %d asked", len(scores), len(v.names)))
	}
	unknown := 0
	for i := range scores {
		s := &scores[i]
		if s.Node != v.names[i] {
			release()
			return open(ReasonEvaluate, fmt.Errorf("evaluate answered node %q at position %d, where %q was asked", s.Node, i, v.names[i]))
		}
		if !s.Feasible && s.Plugin == "snapshot" {
			unknown++ // gpuwatch cannot judge a node it does not know: it passes
		}
	}
	if unknown > 0 {
		h.failOpen.WithLabelValues(verb, ReasonUnknownNode).Inc()
		h.opts.Logger.Debug("nodes not in the placement snapshot pass unjudged", "verb", verb, "pod", podName(args.Pod), "nodes", unknown)
	}
	v.scores, v.release, v.result = scores, release, "ok"
	return v
}

func podName(pod *v1.Pod) string {
	if pod == nil {
		return "?"
	}
	return pod.Namespace + "/" + pod.Name
}

// evaluate calls Evaluate on its own goroutine and waits at most until ctx is
// done, so an engine that ignores its context cannot hold the scheduler; a panic
// becomes an error, so a bug fails open.
func (h *Handler) evaluate(ctx context.Context, req framework.Request, names []string) (_ []placement.NodeScore, release func(), _ error) {
	type result struct {
		out []placement.NodeScore
		err error
	}
	var buf *[]placement.NodeScore
	if h.opts.EvaluateAppend != nil {
		buf, _ = h.buffers.Get().(*[]placement.NodeScore)
		if buf == nil {
			buf = new([]placement.NodeScore)
		}
	}
	// The buffer goes back to the pool once both the evaluation and the caller
	// are done with it: whichever finishes last returns it.
	var pending atomic.Int32
	pending.Store(2)
	done := func(out []placement.NodeScore) {
		if buf != nil && pending.Add(-1) == 0 {
			if out != nil {
				*buf = out[:0]
			}
			h.buffers.Put(buf)
		}
	}
	ch := make(chan result, 1)
	go func() {
		var out []placement.NodeScore
		defer func() {
			if r := recover(); r != nil {
				ch <- result{err: fmt.Errorf("evaluate panicked: %v", r)}
			}
			done(out)
		}()
		var err error
		if buf != nil {
			out, err = h.opts.EvaluateAppend(ctx, (*buf)[:0], req, names)
		} else {
			out, err = h.opts.Evaluate(ctx, req, names)
		}
		ch <- result{out, err}
	}()
	select {
	case r := <-ch:
		return r.out, func() { done(r.out) }, r.err
	case <-ctx.Done():
		done(nil)
		return nil, func() {}, fmt.Errorf("evaluate did not answer within %v: %w", h.opts.Timeout, ctx.Err())
	}
}

// Filter answers the filter verb: feasible nodes pass; the others fail with the
// plugin and reason (a capacity shortfall in FailedNodes, which preemption may
// resolve; anything else in FailedAndUnresolvableNodes).
func (h *Handler) Filter(ctx context.Context, args *extenderv1.ExtenderArgs) (*extenderv1.ExtenderFilterResult, string) {
	v := h.judge(ctx, "filter", args)
	defer v.release()
	return filterResult(&v, args), v.result
}

func filterResult(v *verdict, args *extenderv1.ExtenderArgs) *extenderv1.ExtenderFilterResult {
	res := &extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}, FailedAndUnresolvableNodes: extenderv1.FailedNodesMap{}}
	pass := make([]string, 0, len(v.names))
	passSet := make(map[string]bool)
	namesForm := args.NodeNames != nil || args.Nodes == nil
	for i, name := range v.names {
		if v.passes(i) {
			pass = append(pass, name)
			if !namesForm {
				passSet[name] = true
			}
			continue
		}
		s := &v.scores[i]
		msg := failureMessage(s.Plugin, s.Reason)
		if s.Plugin == "capacity" {
			res.FailedNodes[name] = msg
		} else {
			res.FailedAndUnresolvableNodes[name] = msg
		}
	}
	if namesForm {
		res.NodeNames = &pass
	} else {
		nl := &v1.NodeList{}
		for i := range args.Nodes.Items {
			if passSet[args.Nodes.Items[i].Name] {
				nl.Items = append(nl.Items, args.Nodes.Items[i])
			}
		}
		res.Nodes = nl
	}
	return res
}

// Prioritize answers the prioritize verb: each node's score in [0,1] scaled to
// 0..MaxExtenderPriority; infeasible and unjudged nodes score 0.
func (h *Handler) Prioritize(ctx context.Context, args *extenderv1.ExtenderArgs) (extenderv1.HostPriorityList, string) {
	v := h.judge(ctx, "prioritize", args)
	defer v.release()
	return priorities(&v), v.result
}

func priorities(v *verdict) extenderv1.HostPriorityList {
	out := make(extenderv1.HostPriorityList, 0, len(v.names))
	for i, name := range v.names {
		out = append(out, extenderv1.HostPriority{Host: name, Score: v.priority(i)})
	}
	return out
}

// Scale maps a score in [0,1] to 0..MaxExtenderPriority, rounding to nearest;
// values outside [0,1] (and NaN) are clamped.
func Scale(score float64) int64 {
	if math.IsNaN(score) || score <= 0 {
		return 0
	}
	if score >= 1 {
		return extenderv1.MaxExtenderPriority
	}
	return int64(math.Round(score * float64(extenderv1.MaxExtenderPriority)))
}

// FilterHandler serves POST filter.
func (h *Handler) FilterHandler() http.Handler {
	return h.serve("filter", func(dst []byte, v *verdict, args *extenderv1.ExtenderArgs) []byte {
		if args.NodeNames != nil || args.Nodes == nil {
			return appendFilterResult(dst, v)
		}
		return appendJSON(dst, filterResult(v, args)) // Node objects: rare and large
	})
}

// PrioritizeHandler serves POST prioritize.
func (h *Handler) PrioritizeHandler() http.Handler {
	return h.serve("prioritize", func(dst []byte, v *verdict, _ *extenderv1.ExtenderArgs) []byte {
		return appendPriorities(dst, v)
	})
}

// appendJSON appends x as encoding/json's Encoder writes it.
func appendJSON(dst []byte, x any) []byte {
	b, err := json.Marshal(x)
	if err != nil { // the extender's own types always marshal
		panic(fmt.Sprintf("extender: marshal %T: %v", x, err))
	}
	dst = append(dst, b...)
	return append(dst, '\n')
}

// serve reads ExtenderArgs (the plain nodeCacheCapable form without
// encoding/json's reflection, anything else through it), judges them and writes
// the answer that encode appends, from pooled buffers.
func (h *Handler) serve(verb string, encode func(dst []byte, v *verdict, args *extenderv1.ExtenderArgs) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() { h.duration.WithLabelValues(verb).Observe(time.Since(start).Seconds()) }()
		buf := h.bytes.Get().(*[]byte)
		defer func() {
			if cap(*buf) <= maxPooledBytes {
				h.bytes.Put(buf)
			}
		}()
		var args extenderv1.ExtenderArgs
		data, err := readAll((*buf)[:0], http.MaxBytesReader(w, r.Body, maxArgs))
		*buf = data[:0]
		names := h.names.Get().(*[]string)
		namesInUse := false // by an evaluation that ignores its context
		defer func() {
			if !namesInUse && cap(*names) <= maxPooledNames {
				clear(*names) // drop the references to the body
				*names = (*names)[:0]
				h.names.Put(names)
			}
		}()
		fast := false
		if err == nil {
			if args, fast = decodeArgsFast(data, *names); !fast {
				args = extenderv1.ExtenderArgs{}
				err = json.Unmarshal(data, &args)
			}
		}
		if fast && args.NodeNames != nil {
			*names = *args.NodeNames // the pooled buffer, perhaps grown
		}
		if err != nil {
			h.requests.WithLabelValues(verb, "bad_request").Inc()
			msg := fmt.Sprintf("gpuwatch extender %s: the body is not ExtenderArgs JSON: %v", verb, err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			if verb == "filter" {
				_ = json.NewEncoder(w).Encode(extenderv1.ExtenderFilterResult{Error: msg})
			} else {
				_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
			}
			return
		}
		v := h.judge(r.Context(), verb, &args)
		namesInUse = v.abandoned
		out := encode(data[:0], &v, &args)
		v.release()
		*buf = out[:0]
		h.requests.WithLabelValues(verb, v.result).Inc()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}
