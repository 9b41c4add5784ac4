package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestAgentRemoteWrites: with RemoteWriteURL the agent ships every series /metrics
// shows, stamped with its collection time, and reports the shipper on /metrics.
func TestAgentRemoteWrites(t *testing.T) {
	var mu sync.Mutex
	names := map[string]bool{}
	var times []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, body)
		var wr prompb.WriteRequest
		if err == nil {
			err = wr.Unmarshal(raw)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, ts := range wr.Timeseries {
			for _, l := range ts.Labels {
				if l.Name == "__name__" {
					names[l.Value] = true
					if l.Value == telemetry.DCGMGPUTemp {
						times = append(times, ts.Samples[0].Timestamp)
					}
				}
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s := newSimAgent(t, simhw.FleetSpec{Seed: 3}, func(o *Options) {
		o.RemoteWriteURL = srv.URL + "/api/v1/write"
		o.QueueDir = t.TempDir()
	})
	s.step(0)
	first := s.fleet.Now()
	s.step(10 * time.Second)
	scraped := s.metrics()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(times)
		mu.Unlock()
		if n >= 16 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.step(10 * time.Second) // the shipper's counters after the first sends
	mu.Lock()
	for name := range scraped {
		// The Go runtime's and the process's own series stay scrape-only.
		if !names[name] && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
			t.Errorf("%s is on /metrics but was not shipped", name)
		}
	}
	if len(times) != 16 || time.UnixMilli(times[0]).Before(first.Add(-time.Second)) || times[8] <= times[0] {
		t.Errorf("GPU temperature shipped at %v, want 8 samples per collection from %s on", times, first)
	}
	mu.Unlock()
	fams := s.metrics()
	if v, ok := value(fams, telemetry.MetricShipperSamplesSentTotal, map[string]string{"node": s.node.Name()}); !ok || v <= 0 {
		t.Errorf("gpuwatch_shipper_samples_sent_total = %v (present %v)", v, ok)
	}
	if v, ok := value(fams, telemetry.MetricSourceUp, map[string]string{"source": "shipper"}); !ok || v != 1 {
		t.Errorf("source_up{source=shipper} = %v (present %v)", v, ok)
	}
	checkLabelsDeclared(t, fams)
}
