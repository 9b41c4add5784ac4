package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/healthpush"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// TestAgentPushesToEveryServer: with two server replicas and one that hangs
// (accepts the connection, never answers), each live replica gets the node's
// report at once: the hung one holds up only its own pusher.
func TestAgentPushesToEveryServer(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	replica := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var rep healthreport.Report
			b, _ := io.ReadAll(r.Body)
			if r.URL.Path == healthpush.Path && json.Unmarshal(b, &rep) == nil && rep.Node == "gpu01" {
				mu.Lock()
				got[name]++
				mu.Unlock()
			}
			w.WriteHeader(http.StatusAccepted)
		}))
	}
	r0, r1 := replica("server-0"), replica("server-1")
	defer r0.Close()
	defer r1.Close()
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer hung.Close()
	defer close(release)

	a, err := New(driverlessOptions(t, hung.URL+", "+r0.URL+","+r1.URL))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Pushers) != 3 {
		t.Fatalf("%d pushers for three servers", len(a.Pushers))
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	defer func() { cancel(); wait(); a.Close() }()
	start := time.Now()
	a.Collect(ctx, true)
	for {
		mu.Lock()
		n0, n1 := got["server-0"], got["server-1"]
		mu.Unlock()
		if n0 > 0 && n1 > 0 {
			break
		}
		// healthpush's request timeout is 5 s: a pusher shared with the
		// hung replica would wait that long.
		if time.Since(start) > 2*time.Second {
			t.Fatalf("after %s: server-0 got %d reports, server-1 %d; the hung replica held them up", time.Since(start), n0, n1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the live replicas got the report after %s", d)
	}
}

func TestServerURLs(t *testing.T) {
	for in, want := range map[string][]string{
		"":                                 nil,
		"http://a:9402":                    {"http://a:9402"},
		" http://a:9402 ,, http://b:9402,": {"http://a:9402", "http://b:9402"},
	} {
		if got := ServerURLs(in); !slices.Equal(got, want) {
			t.Errorf("ServerURLs(%q) = %q, want %q", in, got, want)
		}
	}
}
