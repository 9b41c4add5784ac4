package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
)

// What gpuwatch sets on a Node. Everything it sets is named here, and Resume removes
// exactly these.
const (
	// TaintKey is the NoSchedule taint gpuwatch adds; its value names the
	// condition ("xid79", "ecc-dbe", "manual").
	TaintKey = "gpuwatch.io/gpu-unhealthy"
	// ConditionType is the node condition gpuwatch maintains: False while the node
	// is drained by gpuwatch, True after Resume.
	ConditionType corev1.NodeConditionType = "GpuwatchGPUHealthy"
	// AnnotationReason holds the drain reason; its presence is the mark that
	// gpuwatch set the drain (automation owns it only when the reason also
	// starts with drain.ReasonPrefix).
	AnnotationReason = "gpuwatch.io/drain-reason"
	// AnnotationCordoned is "true" when gpuwatch set spec.unschedulable (the node
	// was schedulable before), so Resume uncordons only a node it cordoned.
	AnnotationCordoned = "gpuwatch.io/cordoned"
	// AnnotationReboot asks for a reboot (Kubernetes has no reboot API): a
	// node-side agent (a kured sentinel command, a site's own reboot daemon)
	// reboots the node when it sees it, and removes nothing; the drain stays until
	// the controller resumes the node after probation.
	AnnotationReboot = "gpuwatch.io/reboot-requested"
)

// Condition reasons (CamelCase, as Kubernetes condition reasons are).
const (
	ReasonDrained = "GpuwatchDrained"
	ReasonHealthy = "GpuwatchResumed"
)

// Actuator drains Kubernetes nodes: cordon, taint, node condition, and eviction of
// the pods using a bad GPU through the Eviction API (which honours
// PodDisruptionBudgets). It implements drain.Actuator and drain.Evacuator.
type Actuator struct {
	client kubernetes.Interface
	now    func() time.Time
}

// Options configure an Actuator.
type Options struct {
	// Clock stamps condition transition times (nil: time.Now).
	Clock func() time.Time
}

var (
	_ drain.Actuator  = (*Actuator)(nil)
	_ drain.Evacuator = (*Actuator)(nil)
)

// New returns an Actuator using client.
func New(client kubernetes.Interface, opts Options) *Actuator {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Actuator{client: client, now: opts.Clock}
}

// TaintValue turns a drain reason into the taint's value: the condition's name
// ("gpuwatch: xid79 gpu=… action=…" → "xid79"), "manual" for a reason gpuwatch's
// automation did not write, always a valid label value.
func TaintValue(reason string) string {
	rest, owned := strings.CutPrefix(strings.TrimSpace(reason), drain.ReasonPrefix)
	if !owned {
		return "manual"
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "unknown"
	}
	var b strings.Builder
	for _, r := range f[0] {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 63 {
			break
		}
	}
	v := strings.Trim(b.String(), "-_.")
	if v == "" {
		return "unknown"
	}
	return v
}

// update applies mutate to the node with optimistic concurrency, retrying on
// conflicts. mutate reports whether it changed anything.
func (a *Actuator) update(ctx context.Context, node string, mutate func(n *corev1.Node) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return notFoundPermanent(err)
		}
		n = n.DeepCopy()
		if !mutate(n) {
			return nil
		}
		_, err = a.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// notFoundPermanent marks a missing node permanent: retrying will not create it.
func notFoundPermanent(err error) error {
	if apierrors.IsNotFound(err) {
		return drain.Permanent(err)
	}
	return err
}

// setCondition patches gpuwatch's node condition (strategic merge on status: the
// conditions list merges by type, so other conditions are untouched).
func (a *Actuator) setCondition(ctx context.Context, node string, status corev1.ConditionStatus, reason, msg string) error {
	now := metav1.NewTime(a.now())
	patch := map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: ConditionType, Status: status, Reason: reason, Message: msg,
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = a.client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("set condition %s on node %s: %w", ConditionType, node, notFoundPermanent(err))
	}
	return nil
}

func (a *Actuator) drain(ctx context.Context, node, reason string, reboot bool) error {
	taint := corev1.Taint{Key: TaintKey, Value: TaintValue(reason), Effect: corev1.TaintEffectNoSchedule}
	err := a.update(ctx, node, func(n *corev1.Node) bool {
		changed := false
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if !n.Spec.Unschedulable {
			n.Spec.Unschedulable = true
			n.Annotations[AnnotationCordoned] = "true"
			changed = true
		}
		found := false
		for i, t := range n.Spec.Taints {
			if t.Key == TaintKey && t.Effect == corev1.TaintEffectNoSchedule {
				found = true
				if t.Value != taint.Value {
					n.Spec.Taints[i].Value = taint.Value
					changed = true
				}
			}
		}
		if !found {
			tt := taint
			t := metav1.NewTime(a.now())
			tt.TimeAdded = &t
			n.Spec.Taints = append(n.Spec.Taints, tt)
			changed = true
		}
		if n.Annotations[AnnotationReason] != reason {
			n.Annotations[AnnotationReason] = reason
			changed = true
		}
		if reboot && n.Annotations[AnnotationReboot] != reason {
			n.Annotations[AnnotationReboot] = reason
			changed = true
		}
		return changed
	})
	if err != nil {
		return fmt.Errorf("drain node %s: %w", node, err)
	}
	return a.setCondition(ctx, node, corev1.ConditionFalse, ReasonDrained, reason)
}

// Drain cordons the node (remembering whether it was schedulable), adds the
// gpuwatch.io/gpu-unhealthy NoSchedule taint, records the reason in an annotation and
// sets the GpuwatchGPUHealthy condition to False with the reason as its message.
// Repeating it changes nothing.
func (a *Actuator) Drain(ctx context.Context, node, reason string) error {
	return a.drain(ctx, node, reason, false)
}

// Reboot drains the node and asks for a reboot through the
// gpuwatch.io/reboot-requested annotation, which a node-side agent acts on; the node
// stays drained after it until Resume.
func (a *Actuator) Reboot(ctx context.Context, node, reason string) error {
	return a.drain(ctx, node, reason, true)
}

// Resume undoes what Drain set and nothing else: its taint, the cordon only when
// gpuwatch cordoned, its annotations; the condition becomes True. A node gpuwatch
// never marked is left alone.
func (a *Actuator) Resume(ctx context.Context, node string) error {
	marked := false
	err := a.update(ctx, node, func(n *corev1.Node) bool {
		changed := false
		taints := n.Spec.Taints[:0:0]
		for _, t := range n.Spec.Taints {
			if t.Key == TaintKey {
				changed = true
				continue
			}
			taints = append(taints, t)
		}
		n.Spec.Taints = taints
		if n.Annotations[AnnotationCordoned] == "true" {
			n.Spec.Unschedulable = false
			changed = true
		}
		for _, k := range []string{AnnotationCordoned, AnnotationReason, AnnotationReboot} {
			if _, ok := n.Annotations[k]; ok {
				delete(n.Annotations, k)
				changed = true
			}
		}
		marked = changed
		return changed
	})
	if err != nil {
		return fmt.Errorf("resume node %s: %w", node, err)
	}
	if !marked {
		return nil
	}
	return a.setCondition(ctx, node, corev1.ConditionTrue, ReasonHealthy, "resumed by gpuwatch")
}

// State reports the node drained when it is cordoned or carries gpuwatch's taint.
// The reason is gpuwatch's annotation when present; a node cordoned by someone else
// reads "cordoned outside gpuwatch", which automation does not own.
func (a *Actuator) State(ctx context.Context, node string) (bool, string, error) {
	n, err := a.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false, "", fmt.Errorf("read node %s: %w", node, notFoundPermanent(err))
	}
	drained := n.Spec.Unschedulable || gpuwatchTaint(n) != nil
	if !drained {
		return false, "", nil
	}
	if r, ok := n.Annotations[AnnotationReason]; ok {
		return true, r, nil
	}
	return true, "cordoned outside gpuwatch", nil
}

// Evacuate evicts the named pods ("namespace/name") through the Eviction API, so
// PodDisruptionBudgets are honoured. A pod that is gone, already terminating, or now
// on another node (a StatefulSet pod recreated elsewhere under the same name) is
// skipped; the eviction carries the pod's UID as a precondition so a pod recreated
// between the read and the eviction is not touched. A PodDisruptionBudget that
// blocks an eviction (HTTP 429) is an error the controller retries; the other pods
// are still evicted.
func (a *Actuator) Evacuate(ctx context.Context, node string, work []string) error {
	var bad []string
	for _, w := range work {
		if ns, name, ok := strings.Cut(w, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			bad = append(bad, w)
		}
	}
	if len(bad) > 0 {
		return drain.Permanent(fmt.Errorf("evacuate node %s: %q are not namespace/name pod references", node, bad))
	}
	var errs []error
	for _, w := range work {
		ns, name, _ := strings.Cut(w, "/")
		pod, err := a.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("read pod %s: %w", w, err))
			continue
		case pod.Spec.NodeName != node || pod.DeletionTimestamp != nil:
			continue
		}
		uid := pod.UID
		ev := &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: name, Namespace: ns},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
		}
		err = a.client.PolicyV1().Evictions(ns).Evict(ctx, ev)
		switch {
		case err == nil, apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			errs = append(errs, fmt.Errorf("evict pod %s: blocked by a PodDisruptionBudget, will retry: %w", w, err))
		default:
			errs = append(errs, fmt.Errorf("evict pod %s: %w", w, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evacuate node %s: %w", node, err)
	}
	return nil
}

var _ drain.Lister = (*Actuator)(nil)

// OwnedDrains lists every node carrying a drain gpuwatch set: its taint or its
// reason annotation. The Node objects are the truth on Kubernetes: a gpuwatch
// server that takes over from another reads them before it acts
// (drain.Controller.Takeover). The reason is the annotation's; a node with the
// taint and no annotation (edited by hand) reads "gpuwatch: <taint value>", or
// a manual reason when the value is "manual". Since is when the taint was
// added. A node only an administrator cordoned is not listed.
func (a *Actuator) OwnedDrains(ctx context.Context) ([]drain.OwnedDrain, error) {
	var out []drain.OwnedDrain
	err := listNodes(ctx, a.client, "", func(n *corev1.Node) {
		if d, ok := ownedDrain(n); ok {
			out = append(out, d)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ownedDrain reads gpuwatch's drain off a node.
func ownedDrain(n *corev1.Node) (drain.OwnedDrain, bool) {
	d := drain.OwnedDrain{Node: n.Name}
	taint := gpuwatchTaint(n)
	reason, annotated := n.Annotations[AnnotationReason]
	switch {
	case annotated:
		d.Reason = reason
	case taint == nil:
		return d, false
	case taint.Value == "manual":
		d.Reason = "manual drain (gpuwatch's taint without its reason annotation)"
	default:
		d.Reason = drain.ReasonPrefix + " " + taint.Value
	}
	if taint != nil && taint.TimeAdded != nil {
		d.Since = taint.TimeAdded.Time
	}
	_, d.Reboot = n.Annotations[AnnotationReboot]
	return d, true
}

// gpuwatchTaint is the node's taint of TaintKey (the last, should there be
// several), nil when it has none.
func gpuwatchTaint(n *corev1.Node) *corev1.Taint {
	var taint *corev1.Taint
	for i, t := range n.Spec.Taints {
		if t.Key == TaintKey {
			taint = &n.Spec.Taints[i]
		}
	}
	return taint
}
