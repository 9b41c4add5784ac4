// Package extender is gpuwatch's kube-scheduler extender: POST filter and
// prioritize handlers speaking k8s.io/kube-scheduler/extender/v1 (ExtenderArgs in,
// ExtenderFilterResult or HostPriorityList out) that judge a pod's candidate nodes
// from the placement snapshot through the engine's Evaluate.
//
// It is written for nodeCacheCapable: true (the scheduler sends node names, not
// Node objects) and answers in the form it was asked (names for names, Node
// objects for Node objects). The pod's request is the sum of its containers'
// nvidia.com/gpu limits (or its largest init container's, when larger) plus
// gpuwatch annotations:
//
//	gpuwatch.io/milli-gpu          share of each GPU, 1..1000 (alone: one GPU)
//	gpuwatch.io/gpu-model          GPU model substring, case-insensitive ("h100")
//	gpuwatch.io/min-gpu-memory-mib smallest GPU memory in MiB
//	gpuwatch.io/topology-tier      preferred tier (node, nvlink_domain, leaf, spine, block, cluster)
//	gpuwatch.io/near               comma-separated nodes the pod's peers run on
//	gpuwatch.io/require-fresh      "true": reject GPUs whose health is stale
//
// Scores in [0,1] become 0..MaxExtenderPriority (10) by rounding.
//
// # Speed
//
// kube-scheduler calls filter and prioritize for every pod with every candidate
// node. The plain nodeCacheCapable body (Pod, NodeNames, null Nodes) is read by
// a small scanner into pooled buffers and the answers are written by hand, byte
// for byte what encoding/json writes; any other body (Node objects, escapes,
// repeated keys, invalid JSON) goes through encoding/json, which stays the
// authority. FuzzFastJSON holds both paths to the same results.
//
// # Failing open
//
// gpuwatch must never be the reason a cluster stops scheduling. Any internal
// error, a stale or missing snapshot, a bad annotation, or a node the snapshot
// does not know: every such node passes the filter with score 0, the event is
// logged and counted in gpuwatch_extender_fail_open_total{verb,reason}. Only a
// body that is not ExtenderArgs is answered with an error (400), which an
// ignorable extender's scheduler skips.
package extender
