package attribution

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultKubeletSocket is the kubelet's pod-resources socket.
const DefaultKubeletSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// maxKubeletMessage bounds a List answer (the kubelet's own client allows 16 MiB).
const maxKubeletMessage = 16 << 20

// podDevice is one GPU (or MIG device) given to one container.
type podDevice struct {
	Pod, Namespace, Container string
	Resource                  string // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", …
	DeviceID                  string // GPU-… or MIG-… UUID, any "::N" replica suffix removed
}

// IsGPUResource reports whether a device-plugin resource name hands out NVIDIA
// GPUs: nvidia.com/gpu, nvidia.com/gpu.shared (time-slicing renamed) or a MIG
// profile nvidia.com/mig-<profile>.
func IsGPUResource(name string) bool {
	return name == "nvidia.com/gpu" || name == "nvidia.com/gpu.shared" ||
		strings.HasPrefix(name, "nvidia.com/mig-")
}

// deviceUUID strips the "::<replica>" suffix the device plugin adds to shared
// (time-sliced) GPUs.
func deviceUUID(id string) string {
	if i := strings.Index(id, "::"); i >= 0 {
		return id[:i]
	}
	return id
}

// kubelet is a client of the kubelet's pod-resources API.
type kubelet struct {
	socket string
	conn   *grpc.ClientConn
	client podresources.PodResourcesListerClient
}

func newKubelet(socket string) (*kubelet, error) {
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxKubeletMessage)))
	if err != nil {
		return nil, fmt.Errorf("kubelet pod-resources %s: %w", socket, err)
	}
	return &kubelet{socket: socket, conn: conn, client: podresources.NewPodResourcesListerClient(conn)}, nil
}

// list returns the GPU devices of every container.
func (k *kubelet) list(ctx context.Context) ([]podDevice, error) {
	resp, err := k.client.List(ctx, &podresources.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("kubelet pod-resources %s: List: %w", k.socket, err)
	}
	var out []podDevice
	for _, p := range resp.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				if !IsGPUResource(d.GetResourceName()) {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					out = append(out, podDevice{Pod: p.GetName(), Namespace: p.GetNamespace(),
						Container: c.GetName(), Resource: d.GetResourceName(), DeviceID: deviceUUID(id)})
				}
			}
		}
	}
	return out, nil
}

func (k *kubelet) close() error { return k.conn.Close() }
