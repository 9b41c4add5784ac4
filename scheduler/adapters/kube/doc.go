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
// # Build tag (temporary)
//
// client-go's typed clients need modules that go.mod does not list yet
// (github.com/emicklei/go-restful/v3, github.com/go-openapi/*,
// github.com/google/gnostic-models, gopkg.in/evanphx/json-patch.v4; go.sum already
// has their hashes), and this package may not edit go.mod. Until `go get
// k8s.io/client-go@v0.37.0` (or `go mod tidy`) adds them, the code and its tests are
// behind the build tag gpuwatch_kube; remove the tag lines once go.mod has them.
package kube
