package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	return &Handler{opts: opts,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuwatch_extender_requests_total",
			Help: "Number of kube-scheduler extender calls, by verb (filter, prioritize) and result: ok, not_gpu (the pod asks no GPU), fail_open, bad_request."},
			[]string{"verb", "result"}),
		failOpen: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuwatch_extender_fail_open_total",
			Help: "Number of times the extender let nodes pass unjudged, by verb and reason: stale_snapshot, evaluate_error, bad_annotation, no_pod, unknown_node (counted per call)."},
			[]string{"verb", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gpuwatch_extender_duration_seconds",
			Help:    "Time to answer a kube-scheduler extender call, by verb.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}, []string{"verb"}),
	}, nil
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
	names  []string
	scores map[string]placement.NodeScore // nil: every node passes with score 0
	result string                         // ok, not_gpu, fail_open
}

func (h *Handler) judge(ctx context.Context, verb string, args *extenderv1.ExtenderArgs) verdict {
	v := verdict{names: nodeNames(args), result: "fail_open"}
	podName := "?"
	if args.Pod != nil {
		podName = args.Pod.Namespace + "/" + args.Pod.Name
	}
	open := func(reason string, err error) verdict {
		h.failOpen.WithLabelValues(verb, reason).Inc()
		h.opts.Logger.Warn("extender fails open: every node passes with score 0", "verb", verb, "pod", podName, "reason", reason, "err", err)
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
	defer release() // the scores are copied into v.scores below
	if err != nil {
		return open(ReasonEvaluate, err)
	}
	if len(scores) != len(v.names) {
		return open(ReasonEvaluate, fmt.Errorf("evaluate answered %d nodes for %d asked", len(scores), len(v.names)))
	}
	v.scores = make(map[string]placement.NodeScore, len(scores))
	unknown := 0
	for _, s := range scores {
		if !s.Feasible && s.Plugin == "snapshot" {
			unknown++
			continue // gpuwatch cannot judge a node it does not know: it passes
		}
		v.scores[s.Node] = s
	}
	if unknown > 0 {
		h.failOpen.WithLabelValues(verb, ReasonUnknownNode).Inc()
		h.opts.Logger.Debug("nodes not in the placement snapshot pass unjudged", "verb", verb, "pod", podName, "nodes", unknown)
	}
	v.result = "ok"
	return v
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
	res := &extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}, FailedAndUnresolvableNodes: extenderv1.FailedNodesMap{}}
	pass := make([]string, 0, len(v.names))
	passSet := make(map[string]bool, len(v.names))
	for _, name := range v.names {
		s, judged := v.scores[name]
		if v.scores == nil || !judged || s.Feasible {
			pass = append(pass, name)
			passSet[name] = true
			continue
		}
		msg := "gpuwatch " + s.Plugin + ": " + s.Reason
		if s.Plugin == "capacity" {
			res.FailedNodes[name] = msg
		} else {
			res.FailedAndUnresolvableNodes[name] = msg
		}
	}
	if args.NodeNames != nil || args.Nodes == nil {
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
	return res, v.result
}

// Prioritize answers the prioritize verb: each node's score in [0,1] scaled to
// 0..MaxExtenderPriority; infeasible and unjudged nodes score 0.
func (h *Handler) Prioritize(ctx context.Context, args *extenderv1.ExtenderArgs) (extenderv1.HostPriorityList, string) {
	v := h.judge(ctx, "prioritize", args)
	out := make(extenderv1.HostPriorityList, 0, len(v.names))
	for _, name := range v.names {
		var score int64
		if s, ok := v.scores[name]; ok && s.Feasible {
			score = Scale(s.Score)
		}
		out = append(out, extenderv1.HostPriority{Host: name, Score: score})
	}
	return out, v.result
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
	return h.serve("filter", func(ctx context.Context, args *extenderv1.ExtenderArgs) (any, string) {
		return h.Filter(ctx, args)
	})
}

// PrioritizeHandler serves POST prioritize.
func (h *Handler) PrioritizeHandler() http.Handler {
	return h.serve("prioritize", func(ctx context.Context, args *extenderv1.ExtenderArgs) (any, string) {
		return h.Prioritize(ctx, args)
	})
}

func (h *Handler) serve(verb string, answer func(context.Context, *extenderv1.ExtenderArgs) (any, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() { h.duration.WithLabelValues(verb).Observe(time.Since(start).Seconds()) }()
		var args extenderv1.ExtenderArgs
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxArgs))
		if err == nil {
			err = json.Unmarshal(data, &args)
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
		out, result := answer(r.Context(), &args)
		h.requests.WithLabelValues(verb, result).Inc()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}
