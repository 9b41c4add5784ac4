package extender

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// BenchmarkFilterPrioritize5000 is what kube-scheduler asks for one pod on a
// 5,000-node cluster with nodeCacheCapable: a filter call, then a prioritize
// call, each with 5,000 node names in JSON, through the HTTP handlers onto the
// placement engine (4,096-node-style synthetic fleet, 8 GPUs per node, 64
// leaves). It reports the p99 of the two calls together (p99-ms) and of each
// call (filter-p99-ms, prioritize-p99-ms): kube-scheduler makes them as two
// HTTP calls, each under its own extender timeout. pooled=false is the
// engine's Evaluate; pooled=true its EvaluateAppend with a pooled answer.
func BenchmarkFilterPrioritize5000(b *testing.B) {
	snap, err := snapshot.Synthetic(snapshot.SyntheticSpec{Nodes: 5000, GPUsPerNode: 8, Leaves: 64, Spines: 8, Now: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	e, err := placement.New(snap, placement.Options{})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, snap.Len())
	for i := range names {
		names[i] = snap.Node(i).Name
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train-0", Namespace: "ml"}, Spec: v1.PodSpec{Containers: []v1.Container{{
		Name: "c", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}}}}
	body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
	if err != nil {
		b.Fatal(err)
	}
	for _, pooled := range []bool{false, true} {
		name := "Evaluate"
		o := Options{Evaluate: e.Evaluate}
		if pooled {
			name, o.EvaluateAppend = "EvaluateAppend", e.EvaluateAppend
		}
		b.Run(name, func(b *testing.B) {
			h, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			filter, prioritize := h.FilterHandler(), h.PrioritizeHandler()
			w := &countingWriter{h: http.Header{}}
			var lat, per [2][]time.Duration // [0] pair, [1] unused; per[0] filter, per[1] prioritize
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				for i, hd := range []http.Handler{filter, prioritize} {
					t := time.Now()
					w.reset()
					hd.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
					if w.code != http.StatusOK || w.n == 0 {
						b.Fatalf("status %d, %d bytes", w.code, w.n)
					}
					per[i] = append(per[i], time.Since(t))
				}
				lat[0] = append(lat[0], time.Since(start))
			}
			p99 := func(l []time.Duration) float64 {
				slices.Sort(l)
				return float64(l[min(len(l)-1, len(l)*99/100)].Microseconds()) / 1000
			}
			b.ReportMetric(p99(lat[0]), "p99-ms")
			b.ReportMetric(p99(per[0]), "filter-p99-ms")
			b.ReportMetric(p99(per[1]), "prioritize-p99-ms")
		})
	}
}

// countingWriter is the response side of a connection as net/http gives a
// handler: the answer goes out (here: is counted), not into a growing buffer
// as httptest's recorder keeps it, which would dominate the allocations
// measured.
type countingWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *countingWriter) reset() {
	clear(w.h)
	w.code, w.n = 0, 0
}
func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}
