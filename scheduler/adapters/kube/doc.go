// Package kube is gpuwatch's adapter to Kubernetes through client-go: the drain
// controller's Actuator for clusters whose nodes are Kubernetes nodes.
//
// A drain cordons the node (spec.unschedulable), adds the NoSchedule taint
// gpuwatch.io/gpu-unhealthy=<condition>, sets the node condition GpuwatchGPUHealthy to
// False with the reason as its message (a strategic-merge patch of the status, so
// the kubelet's and other conditions stay), and records the reason in the
// gpuwatch.io/drain-reason annotation. Evacuate evicts only the pods the caller
// names (those attribution puts on the bad GPU) through the Eviction API, so
// PodDisruptionBudgets are honoured; a blocked eviction (429) is retried by the
// controller. Resume undoes only what gpuwatch set: its taint, its annotations, and
// the cordon only when gpuwatch.io/cordoned says gpuwatch made it.
//
// Kubernetes has no reboot call: Reboot drains and sets gpuwatch.io/reboot-requested
// for a node-side agent to act on.
//
// OwnedDrains lists the drains gpuwatch set (its taint and annotations on the
// Node objects, the truth on Kubernetes) for a server that takes over
// (drain.Lister). Elector elects the one acting server among replicas through
// a coordination.k8s.io Lease (client-go's leaderelection).
//
// NodeLabels and NodeLocations read the fabric from the nodes' live labels in
// NVIDIA topograph's scheme (what `gpuwatch topology labels` writes), for the
// placement service's site topology.
//
// test/k8s (its own module) runs all of it against a real kube-apiserver with
// the Helm chart's RBAC.
package kube
