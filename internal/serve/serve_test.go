package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func start(t *testing.T, h http.Handler, o Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(h, o)
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return ln.Addr().String()
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		status := http.StatusBadRequest
		if IsBodyTooLarge(err) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, err.Error(), status)
		return
	}
	io.WriteString(w, "ok")
})

// TestSlowLorisAndFlood: hundreds of connections that trickle their headers,
// plus a flood of idle ones, do not keep a normal client from being served
// promptly; the trickling ones are cut at the header timeout.
func TestSlowLorisAndFlood(t *testing.T) {
	addr := start(t, ok, Options{ReadHeaderTimeout: 500 * time.Millisecond, MaxConns: 300})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 400 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ") // never finished
		}
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for i := range 5 {
		begin := time.Now()
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("request %d during the flood: %v", i, err)
		}
		resp.Body.Close()
		// Bounded by the header timeout, which frees the flood's slots.
		if d := time.Since(begin); d > 2*time.Second {
			t.Errorf("request %d took %s during the flood", i, d)
		}
	}
	// The trickling connections were cut: a read sees the server close.
	conns[0].SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadAll(conns[0]); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Errorf("a slow-loris connection was not closed by the server: %v", err)
	}
}

// TestBodyLimit: a body announced over the limit is refused with 413 before
// it is read; one that turns out too large while read is 413 from the handler.
func TestBodyLimit(t *testing.T) {
	addr := start(t, ok, Options{MaxBodyBytes: func(*http.Request) int64 { return 1 << 10 }})
	resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader(strings.Repeat("x", 2<<10)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "over this endpoint's limit of 1024 bytes") {
		t.Errorf("announced 2 KiB: %d %s", resp.StatusCode, b)
	}
	pr, pw := io.Pipe()
	go func() { pw.Write([]byte(strings.Repeat("y", 4<<10))); pw.Close() }()
	resp, err = http.Post("http://"+addr+"/", "text/plain", pr) // chunked: no length announced
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked 4 KiB: %d, want 413", resp.StatusCode)
	}
}

// TestSlowBody: a client that sends its body slower than the read timeout
// loses its connection; others are served meanwhile.
func TestSlowBody(t *testing.T) {
	addr := start(t, ok, Options{ReadTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
	resp, err := http.Get("http://" + addr + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("another client during a slow body: %v", err)
	}
	resp.Body.Close()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	got, _ := io.ReadAll(c)
	if len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.1 4") {
		t.Errorf("slow body answered %q, want a 4xx or a closed connection", got)
	}
}

// TestOverload: requests beyond MaxInFlight wait QueueWait and then get 503
// with Retry-After; the ones in flight finish.
func TestOverload(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started.Done()
			<-release
		}
		io.WriteString(w, "ok")
	})
	addr := start(t, h, Options{MaxInFlight: 2, QueueWait: 100 * time.Millisecond})
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := http.Get("http://" + addr + "/slow"); err == nil {
				codes[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	started.Wait()
	resp, err := http.Get("http://" + addr + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third request with two in flight: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Errorf("requests in flight: %v, want 200s", codes)
	}
	if resp, err := http.Get("http://" + addr + "/fast"); err != nil || resp.StatusCode != 200 {
		t.Errorf("after the load: %v", err)
	}
}
