package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
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

// TestRemoteWriteLabelsMatchScrape: what the agent remote-writes carries the
// label sets a Prometheus scrape of its /metrics stores, instance and job
// included (the scraper adds those two; the shipper adds the same values), so
// a store fed either way holds the same series; DCGM's profiling fields among
// them.
func TestRemoteWriteLabelsMatchScrape(t *testing.T) {
	const instance = "10.1.2.3:9400"
	var mu sync.Mutex
	shipped := map[string]bool{}
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
			kv := map[string]string{}
			for _, l := range ts.Labels {
				kv[l.Name] = l.Value
			}
			shipped[seriesKey(kv)] = true
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s := newSimAgent(t, simhw.FleetSpec{Seed: 5}, func(o *Options) {
		o.RemoteWriteURL = srv.URL + "/api/v1/write"
		o.Instance = instance
	})
	s.step(0)
	s.step(10 * time.Second)
	scraped := map[string]bool{}
	for name, fam := range s.metrics() {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") {
			continue // scrape-only: the HTTP handler adds them
		}
		for _, m := range fam.Metric {
			// What a scrape with job_name "gpuwatch" of target 10.1.2.3:9400 stores.
			kv := map[string]string{"__name__": name, telemetry.LabelInstance: instance, telemetry.LabelJob: telemetry.DefaultJob}
			for _, l := range m.Label {
				kv[l.GetName()] = l.GetValue()
			}
			scraped[seriesKey(kv)] = true
		}
	}
	var missing []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		missing = missing[:0]
		mu.Lock()
		for k := range scraped {
			if !shipped[k] {
				missing = append(missing, k)
			}
		}
		mu.Unlock()
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	slices.Sort(missing)
	for _, k := range missing {
		t.Errorf("scraped but not shipped with the same labels: %s", k)
	}
	mu.Lock()
	defer mu.Unlock()
	prof := 0
	for k := range shipped {
		if !scraped[k] && !strings.HasPrefix(k, "gpuwatch_shipper_") {
			t.Errorf("shipped but no scrape gives it: %s", k)
		}
		if strings.HasPrefix(k, telemetry.DCGMProfPipeTensorActive+"{") {
			prof++
		}
	}
	if prof != 8 {
		t.Errorf("%d GPUs shipped %s, want 8", prof, telemetry.DCGMProfPipeTensorActive)
	}
}

// seriesKey writes a series as name{k="v",…} with its labels sorted.
func seriesKey(kv map[string]string) string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(kv["__name__"] + "{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + strconv.Quote(kv[k]))
	}
	b.WriteByte('}')
	return b.String()
}
