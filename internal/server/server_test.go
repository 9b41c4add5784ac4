package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

func samples(now time.Time, n int) []telemetry.Sample {
	var out []telemetry.Sample
	for i := range n {
		out = append(out, telemetry.Sample{Name: telemetry.DCGMGPUUtil,
			Labels: telemetry.NewLabels("Hostname", "node-01", "gpu", string(rune('0'+i%8))),
			Value:  float64(10 * i), Time: now.Add(-time.Duration(n-i) * time.Second)})
	}
	return out
}

func post(t *testing.T, url, contentType string, body []byte, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestEmbeddedRoundTrip: remote write 1.0 into the server, read back through its
// Querier and its Prometheus API; bad input is refused and loses nothing.
func TestEmbeddedRoundTrip(t *testing.T) {
	s, err := New(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	now := time.Now().Truncate(time.Millisecond)
	body, err := realstore.EncodeWriteRequest(samples(now, 8))
	if err != nil {
		t.Fatal(err)
	}
	rw := map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
	if resp := post(t, ts.URL+"/api/v1/write", "application/x-protobuf", body, rw); resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("remote write: %d %s", resp.StatusCode, b)
	}
	v, err := s.Querier().Instant(context.Background(), `sum(DCGM_FI_DEV_GPU_UTIL)`, now)
	if err != nil || len(v) != 1 || v[0].Value != 280 {
		t.Fatalf("sum = %v, %v; want 280", v, err)
	}
	// Bad input: garbage in place of snappy, a huge label value.
	if resp := post(t, ts.URL+"/api/v1/write", "application/x-protobuf", []byte("not snappy"), rw); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("garbage: %d", resp.StatusCode)
	}
	huge := samples(now.Add(time.Second), 1)
	huge[0].Labels = telemetry.NewLabels("Hostname", strings.Repeat("x", 1<<20), "gpu", "0")
	body, _ = realstore.EncodeWriteRequest(huge)
	if resp := post(t, ts.URL+"/api/v1/write", "application/x-protobuf", body, rw); resp.StatusCode/100 != 4 {
		t.Errorf("huge label: %d", resp.StatusCode)
	}
	resp, err := http.Get(ts.URL + "/api/v1/query?query=count(DCGM_FI_DEV_GPU_UTIL)")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"value":[`) || !strings.Contains(string(b), `"8"]`) {
		t.Errorf("earlier data not intact after refused requests: %s", b)
	}
}

// TestExternalVictoriaMetrics: with --store.url the server reads a real
// VictoriaMetrics through the same Querier and proxies the query API to it.
func TestExternalVictoriaMetrics(t *testing.T) {
	vm := realstore.StartVictoriaMetrics(t)
	s, err := New(Options{StoreURL: vm.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	now := time.Now().Truncate(time.Millisecond)
	vm.Write(samples(now, 8))
	vm.Flush()
	realstore.Eventually(t, 10*time.Second, "samples visible in VictoriaMetrics", func() bool {
		v, err := s.Querier().Instant(context.Background(), `sum(DCGM_FI_DEV_GPU_UTIL)`, now)
		return err == nil && len(v) == 1 && v[0].Value == 280
	})
	resp, err := http.Get(ts.URL + "/api/v1/query?query=count(DCGM_FI_DEV_GPU_UTIL)")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"8"]`) {
		t.Errorf("proxied query: %d %s", resp.StatusCode, b)
	}
}

func TestOptionsErrors(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("no data dir: %v", err)
	}
	if _, err := New(Options{StoreURL: "localhost:8428"}); err == nil || !strings.Contains(err.Error(), "http://host:port") {
		t.Errorf("bad url: %v", err)
	}
}

// TestHealthzSaysWhenTheStoreRefusesWrites: a store that cannot take writes
// (here: less free space than it keeps) makes /healthz answer 503 with why.
func TestHealthzSaysWhenTheStoreRefusesWrites(t *testing.T) {
	s, err := New(Options{DataDir: t.TempDir(), MinFreeBytes: 1 << 60})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "free") {
		t.Errorf("/healthz with a full disk: %d %s", rec.Code, rec.Body)
	}
	ok, err := New(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close(context.Background())
	rec = httptest.NewRecorder()
	ok.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz: %d %s", rec.Code, rec.Body)
	}
}
