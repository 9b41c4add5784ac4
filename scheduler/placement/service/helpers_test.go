package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// failingStore answers every query with an error, as an unreachable external
// store does.
type failingStore struct{}

func (failingStore) Instant(context.Context, string, time.Time) (store.Vector, error) {
	return nil, errors.New("connection refused")
}

func (failingStore) Range(context.Context, string, store.Range) (store.Matrix, error) {
	return nil, errors.New("connection refused")
}

// switchStore fails while failing is set and reads through to Querier otherwise.
type switchStore struct {
	store.Querier
	failing bool
}

func (s *switchStore) Instant(ctx context.Context, expr string, at time.Time) (store.Vector, error) {
	if s.failing {
		return nil, errors.New("connection refused")
	}
	return s.Querier.Instant(ctx, expr, at)
}

// fleetSamples writes what agents report for nodes HGX-like nodes of 8 GPUs
// (node-00, node-01, …), perLeaf under each leaf, at time at: inventory,
// memory, health, utilization (10%), temperature and power, the node's place
// and an NVSwitch topology with one rail NIC per GPU.
func fleetSamples(nodes, perLeaf int, at time.Time) []telemetry.Sample {
	var out []telemetry.Sample
	for n := range nodes {
		node := fmt.Sprintf("node-%02d", n)
		leaf := fmt.Sprintf("leaf-%02d", n/perLeaf)
		out = append(out, sample(telemetry.MetricTopologyNodeInfo, 1, at, "node", node, "leaf", leaf, "spine", "spine-00"))
		for g := range 8 {
			idx := strconv.Itoa(g)
			uuid := fmt.Sprintf("GPU-%02d-%d", n, g)
			out = append(out,
				sample(telemetry.MetricGPUInfo, 1, at, "node", node, "gpu_index", idx, "gpu_uuid", uuid, "model", "NVIDIA H100 80GB HBM3"),
				sample(metricFBTotal, 81559, at, "node", node, "gpu", idx, "UUID", uuid),
				sample(telemetry.MetricGPUHealthState, 0, at, "node", node, "gpu_index", idx),
				sample(metricUtil, 10, at, "node", node, "gpu", idx),
				sample(metricTemp, 40, at, "node", node, "gpu", idx),
				sample(metricSlowdownTemp, 90, at, "node", node, "gpu", idx),
				sample(metricPowerUsage, 100, at, "node", node, "gpu", idx),
				sample(metricEnforcedPowerLim, 700, at, "node", node, "gpu", idx),
				sample(telemetry.MetricTopologyGPUInfo, 1, at, "node", node, "gpu_index", idx),
				sample(telemetry.MetricTopologyGPUNICInfo, 1, at, "node", node, "gpu_index", idx, "ib_device", "mlx5_"+idx, "link_type", "PIX", "rail", "true"),
			)
			for p := g + 1; p < 8; p++ {
				out = append(out, sample(telemetry.MetricTopologyGPULinkInfo, 1, at, "node", node, "gpu_index", idx,
					"peer_gpu_index", strconv.Itoa(p), "link_type", "NVSWITCH", "nvlink_count", "18"))
			}
		}
	}
	return out
}

// testService is a service over an embedded store holding fleetSamples, fed
// once, with its clock at now (movable through *now).
func testService(t testing.TB, nodes, perLeaf int, opts Options) (*Service, *time.Time) {
	t.Helper()
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: time.Hour})
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if err := st.Append(context.Background(), fleetSamples(nodes, perLeaf, now.Add(-2*time.Second))); err != nil {
		t.Fatal(err)
	}
	if opts.Querier == nil {
		opts.Querier = st
	} else if s, ok := opts.Querier.(*switchStore); ok {
		s.Querier = st
	}
	clock := &now
	opts.Now = func() time.Time { return *clock }
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, clock
}
