package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// TestAgentCommandRemoteWrites runs `gpuwatch agent --simulate --remote-write` as a
// user would, against a receiver that decodes remote write 1.0 as a store does.
func TestAgentCommandRemoteWrites(t *testing.T) {
	var mu sync.Mutex
	series := map[string]int64{} // labels → last timestamp
	var bad []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, body)
		var wr prompb.WriteRequest
		if err == nil {
			err = wr.Unmarshal(raw)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil || r.Header.Get("Content-Encoding") != "snappy" || r.URL.Path != "/api/v1/write" {
			bad = append(bad, fmt.Sprintf("%s %q: %v", r.URL.Path, r.Header.Get("Content-Encoding"), err))
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		for _, ts := range wr.Timeseries {
			var b strings.Builder
			for _, l := range ts.Labels {
				b.WriteString(l.Name + "=" + l.Value + ",")
			}
			for _, s := range ts.Samples {
				series[b.String()] = s.Timestamp
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	find := func(parts ...string) (string, int64) {
		mu.Lock()
		defer mu.Unlock()
	next:
		for k, ts := range series {
			for _, p := range parts {
				if !strings.Contains(k, p) {
					continue next
				}
			}
			return k, ts
		}
		return "", 0
	}

	queue := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int)
	start := time.Now()
	go func() {
		done <- run(ctx, []string{"agent", "--simulate", "hgx-h100", "--listen", "127.0.0.1:0",
			"--collect.interval", "1s", "--remote-write", srv.URL + "/api/v1/write", "--queue.dir", queue}, &stdout, &stderr)
	}()
	for _, want := range [][]string{
		{"__name__=DCGM_FI_DEV_GPU_TEMP,", "gpu=0,", "hostname=node-01,", "instance=127.0.0.1:", "job=gpuwatch,", "node=node-01,"},
		{"__name__=DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,", "gpu=0,", "instance=127.0.0.1:", "job=gpuwatch,", "node=node-01,"},
		{"__name__=node_infiniband_port_data_received_bytes_total,", "node=node-01,"},
		{"__name__=gpuwatch_source_up,", "source=shipper,"},
	} {
		for {
			k, ts := find(want...)
			if k != "" {
				// The simulated fleet starts at the wall clock, truncated to the second.
				if at := time.UnixMilli(ts); at.Before(start.Add(-2*time.Second)) || at.After(time.Now().Add(time.Minute)) {
					t.Errorf("%s stamped %s, not its collection time", k, at)
				}
				break
			}
			if time.Since(start) > 15*time.Second {
				mu.Lock()
				t.Fatalf("no series with %v among %d shipped (bad requests %v); stderr:\n%s", want, len(series), bad, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The instance is the address the agent serves on, as a scrape sees it.
	if k, _ := find("__name__=gpuwatch_build_info,"); !strings.Contains(stdout.String(), "http://"+strings.Split(strings.Split(k, "instance=")[1], ",")[0]+"/metrics") {
		t.Errorf("build info shipped as %s; the agent says %q", k, stdout.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(queue, "cursor")); err != nil {
		t.Errorf("the queue directory has no cursor after a clean stop: %v", err)
	}
}

// TestScrapeInstance: the instance remote write adds is what a scrape of the
// listen address would store.
func TestScrapeInstance(t *testing.T) {
	for _, tc := range []struct{ listen, port, node, want string }{
		{":9400", "9400", "gpu07", "gpu07:9400"},
		{"0.0.0.0:9400", "9400", "gpu07", "gpu07:9400"},
		{"[::]:9400", "9400", "gpu07", "gpu07:9400"},
		{"10.0.0.7:9400", "9400", "gpu07", "10.0.0.7:9400"},
		{"127.0.0.1:0", "41234", "gpu07", "127.0.0.1:41234"},
		{"[fd00::7]:9400", "9400", "gpu07", "[fd00::7]:9400"},
	} {
		if got, err := scrapeInstance(tc.listen, tc.port, tc.node); err != nil || got != tc.want {
			t.Errorf("scrapeInstance(%q, %q, %q) = %q, %v; want %q", tc.listen, tc.port, tc.node, got, err, tc.want)
		}
	}
	if _, err := scrapeInstance("9400", "9400", "gpu07"); err == nil || !strings.Contains(err.Error(), `--listen "9400"`) {
		t.Errorf("bad listen address: %v", err)
	}
}

func TestRemoteWriteFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"agent", "--simulate", "hgx-h100", "--queue.dir", "/tmp/x"}, 2, "--queue.dir and --queue.max-bytes need --remote-write"},
		{[]string{"agent", "--simulate", "hgx-h100", "--remote-write", "http://127.0.0.1:1/api/v1/write", "--queue.max-bytes", "0"}, 2, "--queue.max-bytes must be positive"},
		{[]string{"agent", "--simulate", "hgx-h100", "--listen", "127.0.0.1:0", "--remote-write", "ftp://store/api/v1/write"}, 1, `remote-write URL "ftp://store/api/v1/write"`},
		{[]string{"agent", "--simulate", "hgx-h100", "--remote-write.instance", "gpu07:9400"}, 2, "--remote-write.instance and --remote-write.job need --remote-write"},
		{[]string{"agent", "--simulate", "hgx-h100", "--listen", "127.0.0.1:0", "--remote-write", "http://127.0.0.1:1/api/v1/write", "--remote-write.job", ""}, 2, "--remote-write.job must not be empty"},
		{[]string{"agent", "--simulate", "hgx-h100", "--listen", "127.0.0.1:0", "--labels.hostname", "HOSTNAME"}, 1, `host-name label "HOSTNAME": want hostname`},
	} {
		if code, _, errOut := runCmd(t, tc.args...); code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}
