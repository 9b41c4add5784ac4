package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestWorkloadsFromStore: the drain controller's default workload source names
// the jobs and pods the agents attribute to a node's GPUs, through the real
// remote-write path into the embedded store: all of the node's with no GPUs
// given, only the faulty GPUs' otherwise, never a job whose series ended, never
// another node's.
func TestWorkloadsFromStore(t *testing.T) {
	s, err := New(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	now := time.Now()
	alloc := func(at time.Time, node, uuid string, kv ...string) telemetry.Sample {
		return telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Time: at, Value: 1,
			Labels: telemetry.NewLabels(append([]string{telemetry.LabelNode, node, telemetry.LabelGPUUUID, uuid}, kv...)...)}
	}
	var samples []telemetry.Sample
	for i := range 12 {
		at := now.Add(-3*time.Minute + time.Duration(i)*10*time.Second)
		samples = append(samples, alloc(at, "gpu01", "GPU-3", telemetry.LabelJobID, "9")) // ended 70 s before now
	}
	for i := range 6 {
		at := now.Add(-55*time.Second + time.Duration(i)*10*time.Second)
		samples = append(samples,
			alloc(at, "gpu01", "GPU-1", telemetry.LabelJobID, "7"),
			alloc(at, "gpu01", "GPU-2", telemetry.LabelPod, "train-0", telemetry.LabelNamespace, "ml"),
			alloc(at, "gpu02", "GPU-9", telemetry.LabelJobID, "11"),
			telemetry.Sample{Name: telemetry.DCGMGPUTemp, Time: at, Value: 40, Labels: telemetry.NewLabels(
				telemetry.LabelNode, "gpu01", telemetry.DCGMLabelUUID, "GPU-1")})
	}
	body, err := realstore.EncodeWriteRequest(samples)
	if err != nil {
		t.Fatal(err)
	}
	rw := map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
	if resp := post(t, ts.URL+"/api/v1/write", "application/x-protobuf", body, rw); resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("remote write: %d %s", resp.StatusCode, b)
	}

	work := s.workloadsFromStore(func() time.Time { return now })
	for _, tc := range []struct {
		node string
		gpus []string
		want []string
	}{
		{"gpu01", nil, []string{"7", "ml/train-0"}},
		{"gpu01", []string{"GPU-2"}, []string{"ml/train-0"}},
		{"gpu01", []string{"GPU-1", "GPU-2"}, []string{"7", "ml/train-0"}},
		{"gpu01", []string{"GPU-3"}, nil},
		{"gpu02", nil, []string{"11"}},
		{"gpu03", nil, nil},
	} {
		if got := work(tc.node, tc.gpus); !slices.Equal(got, tc.want) {
			t.Errorf("workloads(%s, %v) = %q, want %q", tc.node, tc.gpus, got, tc.want)
		}
	}
}
