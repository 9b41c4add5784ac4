package kube

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

var now = time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

// A node as the kubelet leaves it: a Ready condition, an operator's own taint.
func gpuNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"site/rack": "r12"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule},
		}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
		}},
	}
}

func getNode(t *testing.T, c *fake.Clientset, name string) *corev1.Node {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func condition(n *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

const reason = "gpuwatch: xid79 gpu=GPU-5c3f0000-1111-2222-3333-444444444444 action=RESTART_BM"

func TestDrainAndResume(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(gpuNode("gpu-1"))
	a := New(c, Options{Clock: clock})
	if err := a.Drain(ctx, "gpu-1", reason); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, c, "gpu-1")
	ts := metav1.NewTime(now)
	wantTaints := []corev1.Taint{
		{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule},
		{Key: "gpuwatch.io/gpu-unhealthy", Value: "xid79", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &ts},
	}
	if !n.Spec.Unschedulable || !apiequality.Semantic.DeepEqual(n.Spec.Taints, wantTaints) {
		t.Fatalf("spec %+v", n.Spec)
	}
	wantAnn := map[string]string{"site/rack": "r12", "gpuwatch.io/drain-reason": reason, "gpuwatch.io/cordoned": "true"}
	if !reflect.DeepEqual(n.Annotations, wantAnn) {
		t.Fatalf("annotations %v", n.Annotations)
	}
	cond := condition(n, "GpuwatchGPUHealthy")
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != "GpuwatchDrained" || cond.Message != reason ||
		!cond.LastTransitionTime.Time.Equal(now) {
		t.Fatalf("condition %+v", cond)
	}
	if r := condition(n, corev1.NodeReady); r == nil || r.Status != corev1.ConditionTrue {
		t.Fatalf("the status patch lost the Ready condition: %+v", n.Status.Conditions)
	}
	if d, r, err := a.State(ctx, "gpu-1"); err != nil || !d || r != reason || !drain.Owned(r) {
		t.Fatalf("state %v %q %v", d, r, err)
	}
	// Repeating the drain updates nothing (only the condition's heartbeat).
	c.ClearActions()
	if err := a.Drain(ctx, "gpu-1", reason); err != nil {
		t.Fatal(err)
	}
	for _, act := range c.Actions() {
		if act.GetVerb() == "update" {
			t.Fatalf("second drain updated the node: %v", act)
		}
	}
	if n2 := getNode(t, c, "gpu-1"); !apiequality.Semantic.DeepEqual(n2.Spec, n.Spec) {
		t.Fatalf("second drain changed the spec: %+v", n2.Spec)
	}

	if err := a.Resume(ctx, "gpu-1"); err != nil {
		t.Fatal(err)
	}
	n = getNode(t, c, "gpu-1")
	if n.Spec.Unschedulable || !apiequality.Semantic.DeepEqual(n.Spec.Taints, wantTaints[:1]) ||
		!reflect.DeepEqual(n.Annotations, map[string]string{"site/rack": "r12"}) {
		t.Fatalf("after resume: spec %+v annotations %v", n.Spec, n.Annotations)
	}
	if cond := condition(n, "GpuwatchGPUHealthy"); cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "GpuwatchResumed" {
		t.Fatalf("condition after resume %+v", cond)
	}
	if d, _, _ := a.State(ctx, "gpu-1"); d {
		t.Fatal("still drained after resume")
	}
}

// A node an admin cordoned is not gpuwatch's: State says so, and a Resume after a
// (manual) Drain through gpuwatch leaves the admin's cordon in place.
func TestAdminCordon(t *testing.T) {
	ctx := context.Background()
	n := gpuNode("gpu-2")
	n.Spec.Unschedulable = true
	c := fake.NewClientset(n)
	a := New(c, Options{Clock: clock})
	d, r, err := a.State(ctx, "gpu-2")
	if err != nil || !d || drain.Owned(r) {
		t.Fatalf("state %v %q %v", d, r, err)
	}
	if err := a.Drain(ctx, "gpu-2", "PSU swap (bob)"); err != nil {
		t.Fatal(err)
	}
	got := getNode(t, c, "gpu-2")
	if _, ok := got.Annotations[AnnotationCordoned]; ok {
		t.Fatal("claimed a cordon gpuwatch did not make")
	}
	if tv := got.Spec.Taints[1].Value; tv != "manual" {
		t.Fatalf("taint value %q", tv)
	}
	if err := a.Resume(ctx, "gpu-2"); err != nil {
		t.Fatal(err)
	}
	if got := getNode(t, c, "gpu-2"); !got.Spec.Unschedulable || len(got.Spec.Taints) != 1 {
		t.Fatalf("resume undid the admin's cordon: %+v", got.Spec)
	}
}

func TestResumeUnmarkedNodeIsNoop(t *testing.T) {
	c := fake.NewClientset(gpuNode("gpu-3"))
	a := New(c, Options{Clock: clock})
	c.ClearActions()
	if err := a.Resume(context.Background(), "gpu-3"); err != nil {
		t.Fatal(err)
	}
	for _, act := range c.Actions() {
		if act.GetVerb() != "get" {
			t.Fatalf("resume of an unmarked node wrote: %v", act)
		}
	}
}

func TestRebootAnnotation(t *testing.T) {
	c := fake.NewClientset(gpuNode("gpu-4"))
	a := New(c, Options{Clock: clock})
	if err := a.Reboot(context.Background(), "gpu-4", reason); err != nil {
		t.Fatal(err)
	}
	if n := getNode(t, c, "gpu-4"); n.Annotations[AnnotationReboot] != reason || !n.Spec.Unschedulable {
		t.Fatalf("%+v %v", n.Spec, n.Annotations)
	}
	a.Resume(context.Background(), "gpu-4")
	if n := getNode(t, c, "gpu-4"); n.Annotations[AnnotationReboot] != "" {
		t.Fatal("reboot annotation left after resume")
	}
}

func TestMissingNodeIsPermanent(t *testing.T) {
	a := New(fake.NewClientset(), Options{Clock: clock})
	if err := a.Drain(context.Background(), "ghost", reason); !errors.Is(err, drain.ErrPermanent) {
		t.Fatalf("%v", err)
	}
}

func pod(ns, name, node string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}, Spec: corev1.PodSpec{NodeName: node}}
}

func TestEvacuate(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(gpuNode("gpu-1"),
		pod("team-a", "train-0", "gpu-1", "uid-a0"),
		pod("team-a", "train-1", "gpu-1", "uid-a1"), // protected by a PDB
		pod("team-b", "web-0", "gpu-7", "uid-b0"),   // recreated on another node since attribution
	)
	var evictions []policyv1.Eviction
	c.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := action.(k8stesting.CreateAction)
		if !ok || action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := ca.GetObject().(*policyv1.Eviction)
		evictions = append(evictions, *ev)
		if ev.Name == "train-1" {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
		}
		return true, nil, nil
	})
	a := New(c, Options{Clock: clock})
	err := a.Evacuate(ctx, "gpu-1", []string{"team-a/train-0", "team-a/train-1", "team-b/web-0", "team-c/gone"})
	if err == nil || errors.Is(err, drain.ErrPermanent) || !strings.Contains(err.Error(), "team-a/train-1: blocked by a PodDisruptionBudget") {
		t.Fatalf("err %v: want a retryable PDB error", err)
	}
	var got []string
	for _, ev := range evictions {
		got = append(got, fmt.Sprintf("%s/%s uid=%s", ev.Namespace, ev.Name, *ev.DeleteOptions.Preconditions.UID))
	}
	if want := []string{"team-a/train-0 uid=uid-a0", "team-a/train-1 uid=uid-a1"}; !slices.Equal(got, want) {
		t.Fatalf("evictions %q, want %q", got, want)
	}
	if err := a.Evacuate(ctx, "gpu-1", []string{"no-namespace"}); !errors.Is(err, drain.ErrPermanent) {
		t.Fatalf("malformed reference: %v", err)
	}
	if TaintValue("gpuwatch: "+strings.Repeat("x", 100)) != strings.Repeat("x", 63) || TaintValue("gpuwatch: a/b") != "a_b" || TaintValue("gpuwatch:") != "unknown" {
		t.Fatal("TaintValue")
	}
}

// The drain controller and this actuator together: a fatal Xid taints the node, a
// PDB blocks the first eviction of the pod on the bad GPU, the retry evicts it.
func TestWithController(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(gpuNode("gpu-1"), pod("team-a", "train-0", "gpu-1", "uid-a0"))
	blocked := 1
	var evicted []string
	c.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		if blocked > 0 {
			blocked--
			return true, nil, apierrors.NewTooManyRequests("pdb", 1)
		}
		evicted = append(evicted, action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name)
		return true, nil, nil
	})
	cur := now
	pol := drain.DefaultPolicy()
	ctl, err := drain.New(drain.Options{Dir: t.TempDir(), Policy: pol, Actuator: New(c, Options{Clock: clock}),
		Clock: func() time.Time { return cur },
		Workloads: func(node string, gpus []string) []string {
			if node == "gpu-1" && slices.Equal(gpus, []string{"GPU-3"}) {
				return []string{"team-a/train-0"}
			}
			return nil
		},
		Logger: nil})
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	dbe := telemetry.Condition{Kind: telemetry.ConditionECCDBE, Target: telemetry.GPUTarget(telemetry.GPUID{Node: "gpu-1", Index: 3}),
		GPUUUID: "GPU-3", Severity: telemetry.SeverityCritical, Action: telemetry.ActionResetGPU}
	rep := healthreport.Report{Node: "gpu-1", Time: cur, GPUs: []healthreport.GPUReport{{Index: 3, UUID: "GPU-3", Conditions: []telemetry.Condition{dbe}}}}
	for range 3 {
		ctl.Observe(rep)
	}
	ctl.Process(ctx)
	n := getNode(t, c, "gpu-1")
	if !n.Spec.Unschedulable || n.Spec.Taints[1].Value != "ecc-dbe" || n.Annotations[AnnotationReason] != "gpuwatch: ecc-dbe gpu=GPU-3 action=RESET_GPU" {
		t.Fatalf("node %+v %v", n.Spec, n.Annotations)
	}
	if len(evicted) != 0 {
		t.Fatal("evicted through the PDB")
	}
	cur = cur.Add(5 * time.Second)
	ctl.Process(ctx)
	if !slices.Equal(evicted, []string{"train-0"}) {
		t.Fatalf("evicted %v", evicted)
	}
	if s, _ := ctl.Node("gpu-1"); s.State != telemetry.StateDrained || s.Pending != nil {
		t.Fatalf("%+v", s)
	}
}

// TestOwnedDrains lists what gpuwatch drained (automatic, manual, reboot; a
// taint whose annotation someone removed) and nothing else: not an
// administrator's cordon, not a healthy node, not a node gpuwatch resumed.
func TestOwnedDrains(t *testing.T) {
	ctx := context.Background()
	cordoned := gpuNode("admin-cordoned")
	cordoned.Spec.Unschedulable = true
	c := fake.NewClientset(gpuNode("auto"), gpuNode("manual"), gpuNode("reboot"), gpuNode("bare-taint"),
		gpuNode("healthy"), gpuNode("resumed"), cordoned)
	a := New(c, Options{Clock: clock})
	for node, r := range map[string]string{"auto": reason, "manual": "PSU swap (bob)", "bare-taint": reason, "resumed": reason} {
		if err := a.Drain(ctx, node, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Reboot(ctx, "reboot", reason); err != nil {
		t.Fatal(err)
	}
	if err := a.Resume(ctx, "resumed"); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, c, "bare-taint")
	delete(n.Annotations, AnnotationReason)
	if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := a.OwnedDrains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string]drain.OwnedDrain{}
	for _, d := range got {
		byNode[d.Node] = d
	}
	want := map[string]drain.OwnedDrain{
		"auto":       {Node: "auto", Reason: reason, Since: now},
		"manual":     {Node: "manual", Reason: "PSU swap (bob)", Since: now},
		"reboot":     {Node: "reboot", Reason: reason, Reboot: true, Since: now},
		"bare-taint": {Node: "bare-taint", Reason: drain.ReasonPrefix + " xid79", Since: now},
	}
	if len(byNode) != len(want) {
		t.Errorf("OwnedDrains listed %d nodes, want %d: %+v", len(byNode), len(want), got)
	}
	for node, w := range want {
		if d := byNode[node]; d.Node != w.Node || d.Reason != w.Reason || d.Reboot != w.Reboot || !d.Since.Equal(w.Since) {
			t.Errorf("%s: %+v, want %+v", node, d, w)
		}
	}
	if drain.Owned(byNode["manual"].Reason) || !drain.Owned(byNode["bare-taint"].Reason) {
		t.Errorf("ownership: manual %q, bare taint %q", byNode["manual"].Reason, byNode["bare-taint"].Reason)
	}
}
