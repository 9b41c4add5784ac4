package k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/kube"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// boundPod creates a Running, Ready pod on node (as if scheduled and started
// there), labelled app=name.
func boundPod(t *testing.T, ns, name, node string) {
	t.Helper()
	p := gpuPod(ns, name, "none", 1, nil)
	p.Spec.NodeName = node
	p.Spec.NodeSelector = nil
	if _, err := cp.client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setRunning(t, ns, name)
}

// blockingPDB creates a PodDisruptionBudget that allows no disruption of the
// pod labelled app=name, and waits until the disruption controller says so.
func blockingPDB(t *testing.T, ns, name string) {
	t.Helper()
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
	if _, err := cp.client.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "PodDisruptionBudget "+name+" observed with 1 healthy, 0 disruptions allowed", func() (bool, error) {
		p, err := cp.client.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 1 && p.Status.DisruptionsAllowed == 0,
			fmt.Errorf("status %+v", p.Status)
	})
}

// gone reports whether the pod is deleted or being deleted.
func gone(ns, name string) (bool, error) {
	p, err := cp.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return p.DeletionTimestamp != nil, fmt.Errorf("pod %s/%s still there", ns, name)
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := cp.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

func condition(n *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// TestActuatorOnRealNodes drives the Kubernetes actuator, with the chart's
// ServiceAccount and RBAC, against the real API server: Drain cordons, taints
// and sets the condition on a real Node (keeping the kubelet's Ready condition
// and an administrator's taint); Evacuate evicts only the named pods through
// the Eviction API, a PodDisruptionBudget that allows no disruption answers
// 429 and the pod stays until the budget allows it; Resume removes exactly what
// gpuwatch set; a node an administrator cordoned stays cordoned after Resume.
func TestActuatorOnRealNodes(t *testing.T) {
	const ns, suite = "act", "act"
	ctx := context.Background()
	createNamespace(t, ns)
	node, adminNode := "act-node-01", "act-node-02"
	createNodes(t, suite, []string{node, adminNode}, 8)
	a := kube.New(serverClient(t), kube.Options{})

	// An administrator's taint on node and cordon of adminNode, which gpuwatch
	// must leave alone.
	admin := corev1.Taint{Key: "example.com/maintenance", Value: "rack-7", Effect: corev1.TaintEffectPreferNoSchedule}
	n := getNode(t, node)
	n.Spec.Taints = append(n.Spec.Taints, admin)
	if _, err := cp.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	an := getNode(t, adminNode)
	an.Spec.Unschedulable = true
	if _, err := cp.client.CoreV1().Nodes().Update(ctx, an, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{"on-bad-gpu", "on-good-gpu", "guarded"} {
		boundPod(t, ns, p, node)
	}
	blockingPDB(t, ns, "guarded")

	reason := drain.ReasonPrefix + "xid79 gpu=3 action=drain"
	if err := a.Drain(ctx, node, reason); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	n = getNode(t, node)
	if !n.Spec.Unschedulable || !hasTaint(n, kube.TaintKey) || !hasTaint(n, admin.Key) ||
		n.Annotations[kube.AnnotationReason] != reason || n.Annotations[kube.AnnotationCordoned] != "true" {
		t.Errorf("after Drain: unschedulable %v, taints %+v, annotations %v", n.Spec.Unschedulable, n.Spec.Taints, n.Annotations)
	}
	if c := condition(n, kube.ConditionType); c == nil || c.Status != corev1.ConditionFalse || c.Message != reason {
		t.Errorf("after Drain: condition %s = %+v", kube.ConditionType, c)
	}
	if c := condition(n, corev1.NodeReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("after Drain: the kubelet's Ready condition became %+v", c)
	}
	if err := a.Drain(ctx, node, reason); err != nil {
		t.Fatalf("Drain again: %v", err)
	}
	if n2 := getNode(t, node); len(n2.Spec.Taints) != 2 {
		t.Errorf("Drain twice: taints %+v, want gpuwatch's and the administrator's", n2.Spec.Taints)
	}
	if drained, r, err := a.State(ctx, node); err != nil || !drained || r != reason {
		t.Errorf("State = %v, %q, %v; want drained with the reason", drained, r, err)
	}

	// Evacuate the pods on the bad GPU: one goes, the guarded one is refused.
	err := a.Evacuate(ctx, node, []string{ns + "/on-bad-gpu", ns + "/guarded"})
	if err == nil || !strings.Contains(err.Error(), "PodDisruptionBudget") || !strings.Contains(err.Error(), ns+"/guarded") {
		t.Fatalf("Evacuate with a blocking PodDisruptionBudget: err = %v; want the 429 named", err)
	}
	poll(t, 30*time.Second, "on-bad-gpu evicted", func() (bool, error) { return gone(ns, "on-bad-gpu") })
	for _, p := range []string{"on-good-gpu", "guarded"} {
		if g, _ := gone(ns, p); g {
			t.Errorf("pod %s was evicted; only on-bad-gpu was asked and allowed", p)
		}
	}
	// The budget allows it once there is a spare: the retry succeeds.
	if err := cp.client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "guarded", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "Evacuate of guarded after its budget went", func() (bool, error) {
		if err := a.Evacuate(ctx, node, []string{ns + "/guarded"}); err != nil {
			return false, err
		}
		return gone(ns, "guarded")
	})
	if g, _ := gone(ns, "on-good-gpu"); g {
		t.Error("pod on-good-gpu was evicted")
	}

	if err := a.Resume(ctx, node); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	n = getNode(t, node)
	if n.Spec.Unschedulable || hasTaint(n, kube.TaintKey) || !hasTaint(n, admin.Key) {
		t.Errorf("after Resume: unschedulable %v, taints %+v; want schedulable with the administrator's taint only", n.Spec.Unschedulable, n.Spec.Taints)
	}
	for _, k := range []string{kube.AnnotationReason, kube.AnnotationCordoned, kube.AnnotationReboot} {
		if _, ok := n.Annotations[k]; ok {
			t.Errorf("after Resume: annotation %s left", k)
		}
	}
	if c := condition(n, kube.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("after Resume: condition %+v", c)
	}

	// The administrator's cordon outlives gpuwatch's drain and resume.
	if err := a.Reboot(ctx, adminNode, reason); err != nil {
		t.Fatal(err)
	}
	an = getNode(t, adminNode)
	if an.Annotations[kube.AnnotationReboot] != reason || an.Annotations[kube.AnnotationCordoned] != "" {
		t.Errorf("Reboot of an administrator's cordoned node: annotations %v", an.Annotations)
	}
	if err := a.Resume(ctx, adminNode); err != nil {
		t.Fatal(err)
	}
	an = getNode(t, adminNode)
	if !an.Spec.Unschedulable || hasTaint(an, kube.TaintKey) {
		t.Errorf("after Resume of the administrator's cordoned node: unschedulable %v, taints %+v; want still cordoned, gpuwatch's taint gone", an.Spec.Unschedulable, an.Spec.Taints)
	}
	if drained, r, err := a.State(ctx, adminNode); err != nil || !drained || r != "cordoned outside gpuwatch" {
		t.Errorf("State of the administrator's node = %v, %q, %v", drained, r, err)
	}
	// A node that is gone is a permanent error, not a retry forever.
	if err := a.Drain(ctx, "act-node-absent", reason); !errors.Is(err, drain.ErrPermanent) {
		t.Errorf("Drain of a missing node: %v, want a permanent error", err)
	}
}

// drainPolicy drains a node on a critical or fatal condition at once and
// retries a failed actuation every 200 ms to 1 s.
func drainPolicy() *drain.Policy {
	p := drain.DefaultPolicy()
	p.Hysteresis.Observations, p.Hysteresis.For = 1, 0
	p.Budget.Count, p.Budget.Min = 10, 0
	p.Retry.Initial, p.Retry.Max = 200*time.Millisecond, time.Second
	p.Rules = []drain.Rule{{Name: "drain-critical", Severities: []telemetry.Severity{telemetry.SeverityCritical, telemetry.SeverityFatal}, Mode: drain.ModeDrain}}
	return p
}

// gpuUUID is the UUID of GPU index i of the fleet's node n.
func (f *fleet) gpuUUID(n, i int) string {
	f.t.Helper()
	dev, ret := f.sim.Nodes()[n].NVML().DeviceGetHandleByIndex(i)
	if ret != 0 {
		f.t.Fatalf("GPU %d of %s: NVML %v", i, f.names[n], ret)
	}
	uuid, ret := dev.GetUUID()
	if ret != 0 {
		f.t.Fatalf("GPU %d of %s: NVML %v", i, f.names[n], ret)
	}
	return uuid
}

// audit returns gpuwatch's audit log.
func (g *gpuwatch) audit() []drain.AuditRecord {
	g.t.Helper()
	var a struct {
		Audit []drain.AuditRecord `json:"audit"`
	}
	if err := g.get("/api/gpuwatch/v1/audit?limit=10000", &a); err != nil {
		g.t.Fatal(err)
	}
	return a.Audit
}

// TestDrainControllerEvictsThroughPDB runs gpuwatch's drain controller in a
// real gpuwatch server with the Kubernetes actuator (the chart's RBAC): an Xid
// 79 on GPU 3 of a node drains it, the pod on GPU 3 is evicted and the pod on
// GPU 1 is not, a PodDisruptionBudget holding the pod answers 429, which the
// controller retries and audits until the budget goes, and then the eviction
// goes through.
func TestDrainControllerEvictsThroughPDB(t *testing.T) {
	const ns, suite, prefix = "drn", "drn", "drn-"
	ctx := context.Background()
	createNamespace(t, ns)
	fl := startFleet(t, prefix, 2)
	createNodes(t, suite, fl.names, 8)
	node := fl.names[0]
	badGPU := fl.gpuUUID(0, 3)
	boundPod(t, ns, "on-gpu-3", node)
	boundPod(t, ns, "on-gpu-1", node)
	blockingPDB(t, ns, "on-gpu-3")
	// Which pod is on which GPU: the kubelet's pod-resources API tells the
	// agent on a real node; here the test knows.
	work := map[string][]string{badGPU: {ns + "/on-gpu-3"}, fl.gpuUUID(0, 1): {ns + "/on-gpu-1"}}
	g := startGpuwatch(t, server.Options{StateDir: t.TempDir(), Drain: &server.DrainOptions{
		Policy: drainPolicy(), Actuator: kube.New(serverClient(t), kube.Options{}), ActuatorName: "kubernetes",
		PollInterval: 100 * time.Millisecond, CallTimeout: 10 * time.Second,
		Workloads: func(_ string, gpus []string) []string {
			var out []string
			for _, u := range gpus {
				out = append(out, work[u]...)
			}
			return out
		}}})

	fl.inject(0, simhw.Fault{Kind: simhw.FaultXid, Xid: 79, GPU: 3})
	poll(t, 60*time.Second, node+" cordoned and tainted by gpuwatch", func() (bool, error) {
		n := getNode(t, node)
		return n.Spec.Unschedulable && hasTaint(n, kube.TaintKey), fmt.Errorf("taints %+v", n.Spec.Taints)
	})
	var blocked []drain.AuditRecord
	poll(t, 60*time.Second, "two failed evacuations audited", func() (bool, error) {
		blocked = blocked[:0]
		for _, r := range g.audit() {
			if r.Node == node && r.Action == "evacuate" && r.Outcome == drain.OutcomeRetrying && strings.Contains(r.Error, "PodDisruptionBudget") {
				blocked = append(blocked, r)
			}
		}
		return len(blocked) >= 2, fmt.Errorf("%d", len(blocked))
	})
	t.Logf("audited: %+v", blocked[len(blocked)-1])
	if g, _ := gone(ns, "on-gpu-3"); g {
		t.Fatal("on-gpu-3 evicted despite its PodDisruptionBudget")
	}
	if err := cp.client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "on-gpu-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "on-gpu-3 evicted by the retry", func() (bool, error) { return gone(ns, "on-gpu-3") })
	poll(t, 30*time.Second, "the successful evacuation audited", func() (bool, error) {
		for _, r := range g.audit() {
			if r.Node == node && r.Action == "evacuate" && r.Outcome == drain.OutcomeAccepted {
				return true, nil
			}
		}
		return false, nil
	})
	if g, _ := gone(ns, "on-gpu-1"); g {
		t.Error("on-gpu-1, on a healthy GPU, was evicted")
	}
}
