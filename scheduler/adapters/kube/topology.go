package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuwatch/gpuwatch/scheduler/topology"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// NodeLabels reads every node's labels from the live API (a paged list of
// Nodes): the same map `kubectl get nodes -o json` gives, the input of
// topology.FromLabels. selector, when not empty, keeps the nodes it matches
// ("nvidia.com/gpu.present=true").
func NodeLabels(ctx context.Context, client kubernetes.Interface, selector string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if err := listNodes(ctx, client, selector, func(n *corev1.Node) { out[n.Name] = n.Labels }); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if selector != "" {
			return nil, fmt.Errorf("list nodes: no node matches %q", selector)
		}
		return nil, fmt.Errorf("list nodes: the cluster has no nodes")
	}
	return out, nil
}

// listPage is how many nodes one list call reads.
const listPage = 500

// listNodes calls each with every node selector matches ("": all), read a
// page of listPage nodes at a time.
func listNodes(ctx context.Context, client kubernetes.Interface, selector string, each func(*corev1.Node)) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: listPage}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		for i := range list.Items {
			each(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// NodeLocations places the cluster's nodes in the fabric from their live
// labels in NVIDIA topograph's scheme (network.topology.nvidia.com/
// accelerator, leaf, spine, core: what `gpuwatch topology labels` writes): the
// placement service's site topology, read from the API server rather than
// from a `kubectl get nodes -o json` file.
func NodeLocations(ctx context.Context, client kubernetes.Interface, selector string) ([]telemetry.NodeLocation, error) {
	labels, err := NodeLabels(ctx, client, selector)
	if err != nil {
		return nil, err
	}
	tree, err := topology.FromLabels(labels)
	if err != nil {
		return nil, fmt.Errorf("node labels: %w", err)
	}
	h, err := tree.Hierarchy()
	if err != nil {
		return nil, fmt.Errorf("node labels: %w", err)
	}
	return h.Nodes(), nil
}
