package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// engine is a placement engine over three 8-GPU nodes: node-00000 free,
// node-00001 with 6 GPUs allocated, node-00002 excluded by the drain controller.
func engine(t *testing.T) *placement.Engine {
	t.Helper()
	b, err := snapshot.SyntheticBuilder(snapshot.SyntheticSpec{Nodes: 3, GPUsPerNode: 8, Leaves: 1, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	b.AddAllocation(snapshot.Allocation{JobID: "j1", Node: "node-00001", GPUs: []int{0, 1, 2, 3, 4, 5}})
	b.Exclude(snapshot.Exclusion{Node: "node-00002", GPU: -1, Reason: "xid 79"})
	snap, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e, err := placement.New(snap, placement.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func pod(gpus int64, ann map[string]string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trainer-0", Namespace: "ml", Annotations: ann},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main"}}}}
	if gpus > 0 {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return p
}

func names(n ...string) *[]string { return &n }

// post sends args to verb over real HTTP and decodes the answer into out.
func post(t *testing.T, ts *httptest.Server, verb string, args any, out any) int {
	t.Helper()
	var body io.Reader
	if s, ok := args.(string); ok {
		body = strings.NewReader(s)
	} else {
		data, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	resp, err := ts.Client().Post(ts.URL+"/"+verb, "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s answer: %v", verb, err)
	}
	return resp.StatusCode
}

func server(t *testing.T, h *Handler) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("POST /filter", h.FilterHandler())
	mux.Handle("POST /prioritize", h.PrioritizeHandler())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// TestFilterAndPrioritize: a 4-GPU pod, nodeCacheCapable. node-00000 fits;
// node-00001 has 2 free GPUs (capacity: preemption may help, FailedNodes);
// node-00002 is excluded (unresolvable); ghost is unknown to gpuwatch and passes
// unjudged. Priorities are the engine's scores × 10, rounded.
func TestFilterAndPrioritize(t *testing.T) {
	e := engine(t)
	h, err := New(Options{Evaluate: e.Evaluate})
	if err != nil {
		t.Fatal(err)
	}
	ts := server(t, h)
	args := extenderv1.ExtenderArgs{Pod: pod(4, nil), NodeNames: names("node-00000", "node-00001", "node-00002", "ghost")}
	var fr extenderv1.ExtenderFilterResult
	if code := post(t, ts, "filter", args, &fr); code != 200 {
		t.Fatalf("filter: %d", code)
	}
	if fr.NodeNames == nil || !slices.Equal(*fr.NodeNames, []string{"node-00000", "ghost"}) || fr.Nodes != nil || fr.Error != "" {
		t.Errorf("passed %v (nodes %v, error %q); want node-00000 and ghost", fr.NodeNames, fr.Nodes, fr.Error)
	}
	if m := fr.FailedNodes["node-00001"]; !strings.HasPrefix(m, "gpuwatch capacity: ") || len(fr.FailedNodes) != 1 {
		t.Errorf("failed nodes %v; want node-00001 for capacity", fr.FailedNodes)
	}
	if m := fr.FailedAndUnresolvableNodes["node-00002"]; !strings.HasPrefix(m, "gpuwatch ") || len(fr.FailedAndUnresolvableNodes) != 1 {
		t.Errorf("unresolvable nodes %v; want node-00002", fr.FailedAndUnresolvableNodes)
	}

	var pl extenderv1.HostPriorityList
	if code := post(t, ts, "prioritize", args, &pl); code != 200 || len(pl) != 4 {
		t.Fatalf("prioritize: %d %v", code, pl)
	}
	want, err := e.Evaluate(context.Background(), framework.Request{GPUs: 4}, []string{"node-00000"})
	if err != nil {
		t.Fatal(err)
	}
	if pl[0].Host != "node-00000" || pl[0].Score != Scale(want[0].Score) || pl[0].Score < 1 {
		t.Errorf("node-00000 priority %+v; want Scale(%v) ≥ 1", pl[0], want[0].Score)
	}
	for _, p := range pl[1:] {
		if p.Score != 0 {
			t.Errorf("%s priority %d; want 0 (infeasible or unknown)", p.Host, p.Score)
		}
	}
	if got := testutil.ToFloat64(h.requests.WithLabelValues("filter", "ok")); got != 1 {
		t.Errorf("filter ok count %v", got)
	}
	if got := testutil.ToFloat64(h.failOpen.WithLabelValues("filter", ReasonUnknownNode)); got != 1 {
		t.Errorf("unknown-node count %v", got)
	}
}

// TestNodesForm: a scheduler without nodeCacheCapable sends Node objects and
// gets Node objects back.
func TestNodesForm(t *testing.T) {
	h, _ := New(Options{Evaluate: engine(t).Evaluate})
	ts := server(t, h)
	nl := &v1.NodeList{}
	for _, n := range []string{"node-00000", "node-00001"} {
		nl.Items = append(nl.Items, v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"zone": "a"}}})
	}
	var fr extenderv1.ExtenderFilterResult
	post(t, ts, "filter", extenderv1.ExtenderArgs{Pod: pod(4, nil), Nodes: nl}, &fr)
	if fr.Nodes == nil || len(fr.Nodes.Items) != 1 || fr.Nodes.Items[0].Name != "node-00000" || fr.Nodes.Items[0].Labels["zone"] != "a" || fr.NodeNames != nil {
		t.Errorf("filter with Node objects: %+v", fr)
	}
}

// TestFailOpen: whatever goes wrong inside gpuwatch, every node passes with
// score 0, and the reason is counted.
func TestFailOpen(t *testing.T) {
	e := engine(t)
	for _, tc := range []struct {
		name    string
		opts    Options
		pod     *v1.Pod
		reason  string
		result  string
		counted bool
		quick   bool // answered well before the 300 ms the evaluation takes
	}{
		{name: "stale snapshot", opts: Options{Evaluate: e.Evaluate, Fresh: func() error { return errors.New("placement snapshot is stale: 95s old") }},
			pod: pod(4, nil), reason: ReasonStale, result: "fail_open", counted: true},
		{name: "evaluate error", opts: Options{Evaluate: func(context.Context, framework.Request, []string) ([]placement.NodeScore, error) {
			return nil, errors.New("boom")
		}}, pod: pod(4, nil), reason: ReasonEvaluate, result: "fail_open", counted: true},
		{name: "evaluate panic", opts: Options{Evaluate: func(context.Context, framework.Request, []string) ([]placement.NodeScore, error) {
			panic("index out of range")
		}}, pod: pod(4, nil), reason: ReasonEvaluate, result: "fail_open", counted: true},
		{name: "short answer", opts: Options{Evaluate: func(context.Context, framework.Request, []string) ([]placement.NodeScore, error) {
			return []placement.NodeScore{{Node: "node-00000"}}, nil
		}}, pod: pod(4, nil), reason: ReasonEvaluate, result: "fail_open", counted: true},
		{name: "too slow", opts: Options{Timeout: 10 * time.Millisecond, Evaluate: func(ctx context.Context, _ framework.Request, _ []string) ([]placement.NodeScore, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}, pod: pod(4, nil), reason: ReasonEvaluate, result: "fail_open", counted: true},
		{name: "deaf to its context", opts: Options{Timeout: 10 * time.Millisecond, Evaluate: func(context.Context, framework.Request, []string) ([]placement.NodeScore, error) {
			time.Sleep(300 * time.Millisecond)
			return nil, nil
		}}, pod: pod(4, nil), reason: ReasonEvaluate, result: "fail_open", counted: true, quick: true},
		{name: "bad annotation", opts: Options{Evaluate: e.Evaluate}, pod: pod(4, map[string]string{AnnotationMilli: "half"}),
			reason: ReasonBadAnnotation, result: "fail_open", counted: true},
		{name: "no pod", opts: Options{Evaluate: e.Evaluate}, reason: ReasonNoPod, result: "fail_open", counted: true},
		{name: "pod without GPUs", opts: Options{Evaluate: e.Evaluate}, pod: pod(0, nil), result: "not_gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			ts := server(t, h)
			args := extenderv1.ExtenderArgs{Pod: tc.pod, NodeNames: names("node-00000", "node-00001", "node-00002")}
			var fr extenderv1.ExtenderFilterResult
			start := time.Now()
			if code := post(t, ts, "filter", args, &fr); code != 200 {
				t.Fatalf("filter: %d", code)
			}
			if took := time.Since(start); tc.quick && took > 200*time.Millisecond {
				t.Errorf("filter took %v; want the 10 ms timeout to answer", took)
			}
			if fr.NodeNames == nil || len(*fr.NodeNames) != 3 || len(fr.FailedNodes)+len(fr.FailedAndUnresolvableNodes) != 0 || fr.Error != "" {
				t.Errorf("filter: %+v; want every node to pass", fr)
			}
			var pl extenderv1.HostPriorityList
			post(t, ts, "prioritize", args, &pl)
			if len(pl) != 3 || pl[0].Score != 0 || pl[1].Score != 0 || pl[2].Score != 0 {
				t.Errorf("prioritize: %+v; want three zeros", pl)
			}
			if got := testutil.ToFloat64(h.requests.WithLabelValues("filter", tc.result)); got != 1 {
				t.Errorf("requests{result=%s} = %v", tc.result, got)
			}
			if tc.counted {
				if got := testutil.ToFloat64(h.failOpen.WithLabelValues("prioritize", tc.reason)); got != 1 {
					t.Errorf("fail_open{reason=%s} = %v", tc.reason, got)
				}
			}
		})
	}
}

// TestBadBody: a body that is not ExtenderArgs is the one case answered with an
// error (400), which an ignorable extender's scheduler skips.
func TestBadBody(t *testing.T) {
	h, _ := New(Options{Evaluate: engine(t).Evaluate})
	ts := server(t, h)
	var fr extenderv1.ExtenderFilterResult
	if code := post(t, ts, "filter", `{"Pod": 7}`, &fr); code != 400 || !strings.Contains(fr.Error, "not ExtenderArgs") {
		t.Errorf("filter: %d %+v", code, fr)
	}
	var e map[string]string
	if code := post(t, ts, "prioritize", `nope`, &e); code != 400 || !strings.Contains(e["error"], "not ExtenderArgs") {
		t.Errorf("prioritize: %d %v", code, e)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without Evaluate succeeded")
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(h.Collector()); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %v", problems, err)
	}
}

func TestPodRequest(t *testing.T) {
	gpu := func(n int64) v1.ResourceList {
		return v1.ResourceList{ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	withInit := pod(2, nil)
	withInit.Spec.Containers = append(withInit.Spec.Containers, v1.Container{Name: "side", Resources: v1.ResourceRequirements{Requests: gpu(1)}})
	withInit.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Limits: gpu(4)}}}
	fractional := pod(0, map[string]string{AnnotationMilli: "250", AnnotationModel: " h100 ", AnnotationMinMemory: "40000",
		AnnotationTier: "leaf", AnnotationNear: "a, b,", AnnotationRequireFresh: "true"})
	milliGPU := pod(0, nil)
	milliGPU.Spec.Containers[0].Resources.Limits = v1.ResourceList{ResourceGPU: resource.MustParse("500m")}
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		want  framework.Request
		wants bool
		err   string
	}{
		{name: "limits", pod: pod(8, nil), want: framework.Request{JobID: "ml/trainer-0", GPUs: 8}, wants: true},
		// containers 2 + 1 = 3; the init container's 4 is larger: 4.
		{name: "init container", pod: withInit, want: framework.Request{JobID: "ml/trainer-0", GPUs: 4}, wants: true},
		{name: "annotations", pod: fractional, wants: true, want: framework.Request{JobID: "ml/trainer-0", GPUs: 1, Milli: 250,
			Model: "h100", MinMemoryMiB: 40000, Preferred: 3, Near: []string{"a", "b"}, RequireFresh: true}},
		{name: "no GPU", pod: pod(0, map[string]string{AnnotationModel: "h100"}), want: framework.Request{JobID: "ml/trainer-0"}},
		{name: "milli GPU resource", pod: milliGPU, err: "want a whole number of GPUs"},
		{name: "too many", pod: pod(65, nil), err: "at most 64"},
		{name: "milli zero", pod: pod(1, map[string]string{AnnotationMilli: "0"}), err: AnnotationMilli + `="0"`},
		{name: "bad memory", pod: pod(1, map[string]string{AnnotationMinMemory: "80Gi"}), err: AnnotationMinMemory},
		{name: "bad tier", pod: pod(1, map[string]string{AnnotationTier: "rack"}), err: `invalid tier "rack"`},
		{name: "bad fresh", pod: pod(1, map[string]string{AnnotationRequireFresh: "yes please"}), err: AnnotationRequireFresh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, wants, err := PodRequest(tc.pod)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil || wants != tc.wants {
				t.Fatalf("wants %v err %v", wants, err)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tc.want)
			if !bytes.Equal(gj, wj) {
				t.Errorf("request %s; want %s", gj, wj)
			}
		})
	}
}

func TestScale(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want int64
	}{{0, 0}, {-1, 0}, {math.NaN(), 0}, {0.04, 0}, {0.05, 1}, {0.449, 4}, {0.45, 5}, {0.96, 10}, {1, 10}, {7, 10}} {
		if got := Scale(tc.in); got != tc.want {
			t.Errorf("Scale(%v) = %d; want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzPodRequest: any annotations and GPU count give either an error or a
// request the engine's validation accepts for one node.
func FuzzPodRequest(f *testing.F) {
	f.Add(int64(8), "250", "h100", "40000", "leaf", "a,b", "true")
	f.Add(int64(0), "", "", "", "", "", "")
	f.Add(int64(-1), "1001", "x", "-5", "rack", ",,,", "maybe")
	f.Fuzz(func(t *testing.T, gpus int64, milli, model, mem, tier, near, fresh string) {
		ann := map[string]string{}
		for k, v := range map[string]string{AnnotationMilli: milli, AnnotationModel: model, AnnotationMinMemory: mem,
			AnnotationTier: tier, AnnotationNear: near, AnnotationRequireFresh: fresh} {
			if v != "" {
				ann[k] = v
			}
		}
		p := pod(0, ann)
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
		req, wants, err := PodRequest(p)
		if err != nil || !wants {
			return
		}
		req.Nodes = 1
		if err := req.Normalize(); err != nil {
			t.Fatalf("PodRequest accepted %+v but Normalize refuses it: %v", req, err)
		}
	})
}
