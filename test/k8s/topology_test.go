package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/kube"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/scheduler/topology"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// topoSite puts four nodes in two NVLink domains under two leaves of one spine.
const topoSite = `nodes:
  - names: topo-node-[01-02]
    nvlink_domain: nvl-a
    leaf: leaf-a
    spine: spine-1
  - names: topo-node-[03-04]
    nvlink_domain: nvl-b
    leaf: leaf-b
    spine: spine-1
`

// TestTopologyLabelsOnRealNodes applies the node labels `gpuwatch topology
// labels` writes (topograph's scheme) to real Node objects, as its kubectl
// output does (a merge patch of metadata.labels per node), and reads the
// topology back from the live API with kube.NodeLocations: every node lands in
// the NVLink domain, leaf and spine of the site file; and a gpuwatch server
// given those locations places the nodes its agents report by them (the agents
// report other leaves).
func TestTopologyLabelsOnRealNodes(t *testing.T) {
	ctx := context.Background()
	tree, err := topology.FromYAML("site.yaml", []byte(topoSite))
	if err != nil {
		t.Fatal(err)
	}
	labels := tree.Labels(topology.LabelOptions{})
	var kubectl bytes.Buffer
	if err := topology.WriteKubectl(&kubectl, labels); err != nil {
		t.Fatal(err)
	}
	t.Logf("gpuwatch topology labels --output kubectl:\n%s", kubectl.String())
	var names []string
	for n := range labels {
		names = append(names, n)
	}
	slices.Sort(names)
	createNodes(t, "topo", names, 8)
	for _, n := range names {
		// What `kubectl label node N k=v … --overwrite` sends.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels[n]}})
		if _, err := cp.client.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("label node %s: %v", n, err)
		}
		if !strings.Contains(kubectl.String(), "kubectl label node "+n+" ") {
			t.Errorf("kubectl output has no line for %s", n)
		}
	}

	locs, err := kube.NodeLocations(ctx, cp.client, suiteLabel+"=topo")
	if err != nil {
		t.Fatal(err)
	}
	h, err := tree.Hierarchy()
	if err != nil {
		t.Fatal(err)
	}
	want := h.Nodes()
	if len(locs) != len(want) {
		t.Fatalf("read %d node locations from the API, the site file has %d: %+v", len(locs), len(want), locs)
	}
	for i := range want {
		if locs[i] != want[i] {
			t.Errorf("node %d: from the API %+v, from the site file %+v", i, locs[i], want[i])
		}
	}
	if _, err := kube.NodeLocations(ctx, cp.client, suiteLabel+"=nothing"); err == nil {
		t.Error("NodeLocations with a selector matching no node: no error")
	}

	// The placement snapshot takes the live labels over what the agents
	// report (the simulated agents say leaf-0…, the cluster leaf-a/leaf-b).
	fl := startFleet(t, "topo-", 4)
	if !slices.Equal(fl.names, names) {
		t.Fatalf("fleet nodes %v, labelled nodes %v", fl.names, names)
	}
	g := startGpuwatch(t, server.Options{Placement: &server.PlacementOptions{Interval: 2 * time.Second, Locations: locs}})
	byName := map[string]telemetry.NodeLocation{}
	for _, l := range locs {
		byName[string(l.Node)] = l
	}
	placedBy := func(byName map[string]telemetry.NodeLocation) func(service.SnapshotSummary) bool {
		return func(s service.SnapshotSummary) bool {
			if len(s.NodeList) != 4 {
				return false
			}
			for _, n := range s.NodeList {
				got, want := n.Location, byName[n.Name]
				got.Node, want.Node = "", ""
				if got != want {
					return false
				}
			}
			return true
		}
	}
	g.waitSnapshot("4 nodes placed by their live labels", placedBy(byName))
	g.stop()

	// The server reading the labels itself (gpuwatch server
	// --placement.k8s-live, with the chart's ServiceAccount), every second:
	// the same places, and a node relabelled onto another leaf moves there.
	client := serverClient(t)
	live := startGpuwatch(t, server.Options{Placement: &server.PlacementOptions{Interval: time.Second, LiveInterval: time.Second,
		LiveLocations: func(ctx context.Context) ([]telemetry.NodeLocation, error) {
			return kube.NodeLocations(ctx, client, suiteLabel+"=topo")
		}}})
	live.waitSnapshot("4 nodes placed by the labels the server read", placedBy(byName))
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
		topology.LabelLeaf: "leaf-a", topology.LabelAccelerator: "nvl-a"}}})
	if _, err := cp.client.CoreV1().Nodes().Patch(ctx, "topo-node-04", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	moved := map[string]telemetry.NodeLocation{}
	for k, v := range byName {
		moved[k] = v
	}
	moved["topo-node-04"] = telemetry.NodeLocation{Node: "topo-node-04", NVLinkDomain: "nvl-a", Leaf: "leaf-a", Spine: byName["topo-node-04"].Spine}
	live.waitSnapshot("topo-node-04 moved to leaf-a by its new label", placedBy(moved))
	if v := live.metric("gpuwatch_placement_topology_last_read_timestamp_seconds"); v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("gpuwatch_placement_topology_last_read_timestamp_seconds = %v", v)
	}
}
