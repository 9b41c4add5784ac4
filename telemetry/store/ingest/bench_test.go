package ingest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/prometheus/prompb"
)

// nodePayload builds a remote write request shaped like an HGX H100 node's
// collection cycle: 8 GPUs, dcgm-exporter's labels, one sample per series.
func nodePayload(tb testing.TB, nodes, perNode int) []byte {
	var ts []prompb.TimeSeries
	for n := range nodes {
		host := fmt.Sprintf("gpu-node-%04d", n)
		for i := range perNode {
			gpu := i % 8
			ts = append(ts, series(lbls(
				"__name__", fmt.Sprintf("DCGM_FI_FIELD_%03d", i/8),
				"gpu", fmt.Sprint(gpu),
				"UUID", fmt.Sprintf("GPU-%08x-1111-2222-3333-%012x", n, gpu),
				"pci_bus_id", fmt.Sprintf("00000000:%02X:00.0", 0x18+gpu*0x10),
				"device", fmt.Sprintf("nvidia%d", gpu),
				"modelName", "NVIDIA H100 80GB HBM3",
				"Hostname", host,
				"DCGM_FI_DRIVER_VERSION", "550.144.03",
				"instance", host+":9400",
				"job", "gpuwatch",
			), float64(i)))
		}
	}
	return encodeWrite(tb, ts...)
}

// BenchmarkRemoteWrite: snappy decode, protobuf decode, validation and one
// Append into a no-op appender, through ServeHTTP.
func BenchmarkRemoteWrite(b *testing.B) {
	for _, c := range []struct {
		name       string
		nodes, per int
	}{
		{"1500_samples_one_node", 1, 1500},
		{"15000_samples_ten_nodes", 10, 1500},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := nodePayload(b, c.nodes, c.per)
			h := NewHandler(nopAppender{}, DefaultLimits(), Options{Now: fixedNow})
			samples := c.nodes * c.per
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, WritePath, bytes.NewReader(body))
				req.Header.Set("Content-Encoding", "snappy")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusNoContent {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
