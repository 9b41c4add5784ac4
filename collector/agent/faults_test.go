package agent

import (
	"github.com/gpuwatch/gpuwatch/test/fulldisk"
	"github.com/gpuwatch/gpuwatch/test/syncbuf"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// rwReceiver is a remote-write endpoint that answers status (0: 204) and keeps
// the timestamps of one series it accepted.
type rwReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	code  int
	times []int64 // of DCGM_FI_DEV_GPU_TEMP{gpu="0"}, in arrival order
	total int     // samples accepted
}

func newRWReceiver(t *testing.T) *rwReceiver {
	r := &rwReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		raw, err := snappy.Decode(nil, body)
		var wr prompb.WriteRequest
		if err == nil {
			err = wr.Unmarshal(raw)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.code != 0 {
			w.Header().Set("Retry-After", "1") // the shipper's back-off would reach 10 s
			http.Error(w, "the store is down", r.code)
			return
		}
		for _, ts := range wr.Timeseries {
			r.total += len(ts.Samples)
			name, gpu := "", ""
			for _, l := range ts.Labels {
				switch l.Name {
				case "__name__":
					name = l.Value
				case telemetry.DCGMLabelGPU:
					gpu = l.Value
				}
			}
			if name == telemetry.DCGMGPUTemp && gpu == "0" {
				r.times = append(r.times, ts.Samples[0].Timestamp)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *rwReceiver) url() string { return r.srv.URL + "/api/v1/write" }

func (r *rwReceiver) set(code int) {
	r.mu.Lock()
	r.code = code
	r.mu.Unlock()
}

func (r *rwReceiver) received() (times []int64, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.times), r.total
}

// syncBuffer is a buffer safe for a writer and a reader at once.
type syncBuffer = syncbuf.Buffer

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// dirBytes is the size of the regular files in dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

// TestAgentQueueDiskFull: the queue directory is on a 512 KiB file system,
// half of it taken by another file, while the store is down. The queue fills the
// disk and then drops its oldest samples, counted in
// gpuwatch_shipper_samples_dropped_total{reason="queue_full"}; the agent keeps
// collecting, every cycle, and the queue never holds more than the disk; once the other
// file is deleted the queue grows again without dropping, and when the store
// comes back the newest samples arrive, in order, each once.
func TestAgentQueueDiskFull(t *testing.T) {
	mnt := fulldisk.Tmpfs(t, 512<<10)
	filler := filepath.Join(mnt, "someone-elses-file")
	fulldisk.Fill(t, filler, 256<<10)
	r := newRWReceiver(t)
	r.set(http.StatusServiceUnavailable)
	var logs syncBuffer
	queueDir := filepath.Join(mnt, "queue")
	s := newSimAgent(t, simhw.FleetSpec{Seed: 11}, func(o *Options) {
		o.RemoteWriteURL = r.url()
		o.QueueDir = queueDir
		o.QueueMaxBytes = 64 << 20 // the disk is the bound
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	sh := s.a.Shipper
	var fullTimes []int64 // collection time of every cycle
	cycles := 0
	// run collects n full cycles, 10 simulated seconds apart.
	run := func(n int) {
		t.Helper()
		for range n {
			if err := s.fleet.Advance(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			snap := s.a.Collect(s.ctx, true)
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("a collection took %s with the queue's disk full", d)
			}
			cycles++
			fullTimes = append(fullTimes, snap.Time.UnixMilli())
			waitUntil(t, "the shipper to take the snapshot", func() bool { return sh.Stats().PendingSamples == 0 })
		}
	}
	dropped := func() uint64 { return sh.Stats().Dropped["queue_full"] }

	// The disk fills up.
	cycles0 := s.a.Runner.Cycles()
	for dropped() == 0 && cycles < 300 {
		run(1)
	}
	if dropped() == 0 {
		t.Fatalf("the queue never filled 256 KiB: %+v", sh.Stats())
	}
	run(8) // and stays full
	if got := s.a.Runner.Cycles() - cycles0; got != uint64(cycles) {
		t.Errorf("%d collections ran of %d", got, cycles)
	}
	st := sh.Stats()
	if disk := dirBytes(t, queueDir); disk > 256<<10 || st.QueueBytes > 256<<10 {
		t.Errorf("queue of %d bytes, %d on disk, on a disk with 256 KiB free", st.QueueBytes, disk)
	}
	if v, ok := value(s.metrics(), telemetry.MetricShipperSamplesDroppedTotal, map[string]string{"reason": "queue_full"}); !ok || v <= 0 {
		t.Errorf("/metrics: samples_dropped_total{reason=queue_full} = %v (present %v)", v, ok)
	}
	if v, ok := value(s.metrics(), telemetry.MetricSourceUp, map[string]string{"source": "nvml"}); !ok || v != 1 {
		t.Errorf("nvml source up = %v with the queue's disk full", v)
	}
	if strings.Contains(logs.String(), "refuses writes") {
		t.Errorf("the queue went to memory although it could drop its own oldest data:\n%s", logs.String())
	}

	// Space comes back: the queue grows past what it held, without dropping.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	before, held := dropped(), sh.Stats().QueueBytes
	run(6)
	if st := sh.Stats(); st.Dropped["queue_full"] != before || st.QueueBytes <= held {
		t.Errorf("with space back the queue went from %d to %d bytes and dropped %d more samples", held, st.QueueBytes, st.Dropped["queue_full"]-before)
	}

	// The store comes back: the newest samples arrive, in order, each once.
	r.set(0)
	waitUntil(t, "the queue drained", func() bool { return sh.Stats().QueueSamples == 0 })
	times, total := r.received()
	st = sh.Stats()
	if uint64(total) != st.SamplesSent || st.Dropped["corrupt"] != 0 || st.Dropped["rejected"] != 0 {
		t.Errorf("received %d samples, the shipper says it sent %d; %+v", total, st.SamplesSent, st.Dropped)
	}
	// The temperature of GPU 0 ships every cycle: what arrived is every cycle
	// from some point on (the oldest were dropped), in order.
	if len(times) == 0 || len(times) >= len(fullTimes) {
		t.Fatalf("%d of %d full cycles arrived", len(times), len(fullTimes))
	}
	if want := fullTimes[len(fullTimes)-len(times):]; !slices.Equal(times, want) {
		t.Errorf("arrived %d cycles, not the newest %d in order:\n got %v\nwant %v", len(times), len(want), times, want)
	}
	t.Logf("%d collections; %d samples dropped, %d delivered; %d of %d cycles of GPU 0 kept", cycles, st.Dropped["queue_full"], st.SamplesSent, len(times), len(fullTimes))
}
