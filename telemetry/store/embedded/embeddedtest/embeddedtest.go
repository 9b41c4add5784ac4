package embeddedtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
)

// GPUsPerNode is the GPU count of the simulated HGX nodes.
const GPUsPerNode = 8

// Model and DriverVersion are the modelName and DCGM_FI_DRIVER_VERSION labels on
// every generated series.
const (
	Model         = "NVIDIA H100 80GB HBM3"
	DriverVersion = "550.144.03"
)

// Hostname is the Hostname label of node n: "node-00", "node-01", … (the
// series are spelled as dcgm-exporter before 4.8 spelled them).
func Hostname(n int) string { return fmt.Sprintf("node-%02d", n) }

// GPULabels are the dcgm-exporter labels of GPU g on node n.
func GPULabels(n, g int) telemetry.Labels {
	return telemetry.NewLabels(
		telemetry.DCGMLabelGPU, fmt.Sprint(g),
		telemetry.DCGMLabelUUID, fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", n, g),
		telemetry.DCGMLabelPCIBusID, fmt.Sprintf("00000000:%02X:00.0", 0x18+g*0x10),
		telemetry.DCGMLabelDevice, fmt.Sprintf("nvidia%d", g),
		telemetry.DCGMLabelModelName, Model,
		telemetry.DCGMLabelHostnameLegacy, Hostname(n),
		telemetry.DCGMLabelDriverVersion, DriverVersion,
	)
}

// Util is the DCGM_FI_DEV_GPU_UTIL value of GPU g on node n at step i: an integer
// percentage, so sums and averages of it are exact.
func Util(n, g, i int) float64 { return float64((n*13 + g*7 + i*3) % 101) }

// GPUUtil returns DCGM_FI_DEV_GPU_UTIL for nodes × GPUsPerNode GPUs at steps
// start, start+step, …, n steps, ordered by time then node then GPU.
func GPUUtil(nodes int, start time.Time, steps int, step time.Duration) []telemetry.Sample {
	out := make([]telemetry.Sample, 0, nodes*GPUsPerNode*steps)
	for i := 0; i < steps; i++ {
		at := start.Add(time.Duration(i) * step)
		for n := 0; n < nodes; n++ {
			for g := 0; g < GPUsPerNode; g++ {
				out = append(out, telemetry.Sample{Name: telemetry.DCGMGPUUtil, Labels: GPULabels(n, g), Value: Util(n, g, i), Time: at})
			}
		}
	}
	return out
}

// NodeSeries is the series count of one simulated H100 node's collection cycle,
// the figure the performance yardsticks use.
const NodeSeries = 1500

// NodeCycle returns one collection cycle of node n at time at: NodeSeries samples
// over the DCGM_FI_* names of the catalog, spread over the node's GPUs, with a
// "link" label where a name repeats (as per-link NVLink counters do). The label
// sets are the same for every cycle of the same node; the values vary with at.
func NodeCycle(n int, at time.Time) []telemetry.Sample {
	names := dcgmNames()
	out := make([]telemetry.Sample, 0, NodeSeries)
	for k := 0; k < NodeSeries; k++ {
		g := k % GPUsPerNode
		j := k / GPUsPerNode
		name := names[j%len(names)]
		ls := GPULabels(n, g)
		if link := j / len(names); link > 0 {
			ls = append(ls, telemetry.Label{Name: "link", Value: fmt.Sprint(link)})
			ls = telemetry.NewLabels(flatten(ls)...)
		}
		out = append(out, telemetry.Sample{Name: name, Labels: ls, Value: float64((k + int(at.Unix())) % 1000), Time: at})
	}
	return out
}

func flatten(ls telemetry.Labels) []string {
	kv := make([]string, 0, 2*len(ls))
	for _, l := range ls {
		kv = append(kv, l.Name, l.Value)
	}
	return kv
}

func dcgmNames() []string {
	var names []string
	for _, d := range telemetry.Metrics() {
		if strings.HasPrefix(d.Name, "DCGM_FI_") {
			names = append(names, d.Name)
		}
	}
	return names
}

// Open opens an embedded store in a temp directory of t and closes it when t ends.
// opts.Dir is replaced.
func Open(t testing.TB, opts embedded.Options) *embedded.Store {
	t.Helper()
	opts.Dir = t.TempDir()
	s, err := embedded.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
