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
// leaves). It reports the p99 of the two calls together. pooled=false is the
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
			var lat []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				for _, hd := range []http.Handler{filter, prioritize} {
					w := httptest.NewRecorder()
					hd.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
					if w.Code != http.StatusOK {
						b.Fatalf("status %d: %s", w.Code, w.Body.String())
					}
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}
