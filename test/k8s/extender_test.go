package k8s

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/kube/extender"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// excludePolicy keeps gpuwatch's placement off a GPU with a critical or fatal
// condition and leaves the node in service (no cordon): only gpuwatch's
// extender keeps pods off it.
func excludePolicy() *drain.Policy {
	p := drain.DefaultPolicy()
	p.Hysteresis.Observations, p.Hysteresis.For = 1, 0
	p.Rules = []drain.Rule{{Name: "exclude-critical", Severities: []telemetry.Severity{telemetry.SeverityCritical, telemetry.SeverityFatal}, Mode: drain.ModeExcludeGPU}}
	return p
}

// TestSchedulerFollowsExtender: the real kube-scheduler, configured with the
// extender as docs/kubernetes.md says, binds every GPU pod on a node gpuwatch
// ranks best among those with room; a node whose GPUs gpuwatch excludes for
// health (Xid 79 on each of its GPUs, an exclude-only policy: no cordon, no taint)
// never gets a pod although Kubernetes sees its 8 GPUs free; with gpuwatch
// stopped the scheduler still schedules (fail open) and puts the next pod
// there; and a gpuwatch that cannot judge (restarted with an empty store)
// lets it through and counts it in gpuwatch_extender_fail_open_total.
func TestSchedulerFollowsExtender(t *testing.T) {
	const suite, ns, prefix = "ext", "ext", "ext-"
	createNamespace(t, ns)
	g := startGpuwatch(t, server.Options{StateDir: t.TempDir(),
		Drain: &server.DrainOptions{Policy: excludePolicy(), Actuator: drain.NewLogActuator(io.Discard), PollInterval: 200 * time.Millisecond}})
	fl := startFleet(t, prefix, 4)
	createNodes(t, suite, fl.names, 8)
	bad := fl.names[2]

	g.waitSnapshot("4 nodes, 32 schedulable GPUs", func(s service.SnapshotSummary) bool {
		return s.Nodes == 4 && s.SchedulableGPUs == 32
	})
	for gpu := range 8 {
		fl.inject(2, simhw.Fault{Kind: simhw.FaultXid, Xid: 79, GPU: gpu})
	}
	g.waitSnapshot(bad+" excluded", func(s service.SnapshotSummary) bool {
		for _, n := range s.NodeList {
			if n.Name == bad {
				return n.SchedulableGPUs == 0
			}
		}
		return false
	})

	// 2-GPU pods near node-02: each is bound where gpuwatch's prioritize
	// ranks best among the nodes that pass its filter and have room.
	free := map[string]int{}
	for _, n := range fl.names {
		free[n] = 8
	}
	near := fl.names[1]
	strict := 0
	for i := range 12 {
		name := fmt.Sprintf("train-%02d", i)
		pod := gpuPod(ns, name, suite, 2, map[string]string{extender.AnnotationNear: near})
		var room []string
		for _, n := range fl.names {
			if free[n] >= 2 {
				room = append(room, n)
			}
		}
		var fr extenderv1.ExtenderFilterResult
		if err := g.post("/api/gpuwatch/v1/extender/filter", extenderv1.ExtenderArgs{Pod: pod, NodeNames: &room}, &fr); err != nil {
			t.Fatal(err)
		}
		if fr.NodeNames == nil || slices.Contains(*fr.NodeNames, bad) {
			t.Fatalf("pod %s: gpuwatch's filter passes %v, want %s (excluded) out", name, fr.NodeNames, bad)
		}
		// gpuwatch's ranking as the scheduler gets it, asked just before and
		// just after the scheduler's own call (the snapshot is rebuilt every
		// 2 s): the pod must land on a node ranked best by one of them.
		rank := func() (best []string, scores map[string]int64) {
			var pr extenderv1.HostPriorityList
			if err := g.post("/api/gpuwatch/v1/extender/prioritize", extenderv1.ExtenderArgs{Pod: pod, NodeNames: fr.NodeNames}, &pr); err != nil {
				t.Fatal(err)
			}
			top := int64(-1)
			scores = map[string]int64{}
			for _, h := range pr {
				scores[h.Host] = h.Score
				top = max(top, h.Score)
			}
			for h, s := range scores {
				if s == top {
					best = append(best, h)
				}
			}
			return best, scores
		}
		best, scores := rank()
		if len(best) < len(scores) {
			strict++
		}
		if _, err := cp.client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitBound(t, cp.client, ns, name)
		t.Logf("pod %s: gpuwatch scores %v, kube-scheduler bound it on %s", name, scores, got)
		if !slices.Contains(best, got) {
			after, scoresAfter := rank()
			if !slices.Contains(after, got) {
				t.Errorf("pod %s bound on %s; gpuwatch ranks best %v (scores %v before, %v after)", name, got, best, scores, scoresAfter)
			}
		}
		free[got] -= 2
	}
	if strict == 0 {
		t.Errorf("gpuwatch ranked every candidate equal for all 12 pods: the test shows nothing about ranking")
	}
	if free[bad] != 8 {
		t.Errorf("%s, excluded by gpuwatch, got %d GPUs of pods", bad, 8-free[bad])
	}

	// The 13th pod fits only on the excluded node: it stays pending, and the
	// scheduler says gpuwatch is why.
	pending := gpuPod(ns, "train-pending", suite, 2, nil)
	if _, err := cp.client.CoreV1().Pods(ns).Create(context.Background(), pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "pod train-pending marked unschedulable naming gpuwatch", func() (bool, error) {
		p, err := cp.client.CoreV1().Pods(ns).Get(context.Background(), "train-pending", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("pod train-pending bound on %s: only the excluded %s had room", p.Spec.NodeName, bad)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "gpuwatch") {
				t.Logf("train-pending: %s", c.Message)
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	if err := cp.client.CoreV1().Pods(ns).Delete(context.Background(), "train-pending", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// gpuwatch down: the scheduler goes on without it.
	g.stop()
	down := gpuPod(ns, "train-gpuwatch-down", suite, 2, nil)
	if _, err := cp.client.CoreV1().Pods(ns).Create(context.Background(), down, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, cp.client, ns, down.Name); got != bad {
		t.Errorf("with gpuwatch stopped, pod %s bound on %s, want %s (the only node with room)", down.Name, got, bad)
	}

	// gpuwatch back with an empty store (its data lost): it knows no node,
	// lets every node through and counts it.
	fl.stop()
	g2 := startGpuwatch(t, server.Options{})
	g2.waitSnapshot("a snapshot (of no node)", func(s service.SnapshotSummary) bool { return s.Nodes == 0 })
	before := g2.metric("gpuwatch_extender_fail_open_total", `reason="unknown_node"`)
	blind := gpuPod(ns, "train-gpuwatch-blind", suite, 2, nil)
	if _, err := cp.client.CoreV1().Pods(ns).Create(context.Background(), blind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, cp.client, ns, blind.Name); got != bad {
		t.Errorf("with gpuwatch knowing no node, pod %s bound on %s, want %s", blind.Name, got, bad)
	}
	if after := g2.metric("gpuwatch_extender_fail_open_total", `reason="unknown_node"`); after <= before {
		t.Errorf("gpuwatch_extender_fail_open_total{reason=unknown_node} went from %v to %v: the fail-open call was not counted", before, after)
	}
}
