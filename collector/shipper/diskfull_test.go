package shipper

import (
	"fmt"
	"github.com/gpuwatch/gpuwatch/test/fulldisk"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fault tests of the queue's directory: full (ENOSPC), or refusing writes.
// The agent-level test with a real full file system is
// collector/agent.TestAgentQueueDiskFull (it needs root to mount a small tmpfs);
// these run anywhere.

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// drain reads and commits everything queued, returning the payloads.
func drain(q *queue) []string {
	var out []string
	for {
		recs := q.peek(1 << 30)
		if len(recs) == 0 {
			return out
		}
		for _, r := range recs {
			out = append(out, string(r.data))
		}
		q.commit(recs[len(recs)-1].seq+1, nil)
	}
}

// TestQueueDirectoryRefusingWrites: the next segment's name is made a link to
// /dev/full, so every write to it fails with ENOSPC, as on a file system with
// no space left that the queue cannot free. Records are then held in memory,
// bounded and oldest dropped first, still delivered in order; the refusal is
// logged once, and after diskRetry the queue goes back to disk by itself.
func TestQueueDirectoryRefusingWrites(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	var logs logBuffer
	dropped := map[string]int{}
	q, err := openQueue(queueOptions{dir: dir, maxBytes: 64 << 10, segmentBytes: 8 << 10, syncInterval: time.Hour,
		logger: logs.logger(), now: clk.now, dropped: func(r string, n int) { dropped[r] += n }})
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	rec := func(i int) []byte { return fmt.Appendf(nil, "record %04d %s", i, strings.Repeat("x", 1000)) }
	if err := os.Symlink("/dev/full", filepath.Join(dir, fmt.Sprintf("%020d%s", 0, segSuffix))); err != nil {
		t.Fatal(err)
	}
	// 200 records of 1 KB while the disk refuses: memory holds at most 64 KB.
	for i := range 200 {
		if err := q.append(rec(i), 1); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if q.memBytes > q.memMax {
			t.Fatalf("record %d: %d bytes in memory, bound %d", i, q.memBytes, q.memMax)
		}
		clk.add(10 * time.Millisecond)
	}
	if n := strings.Count(logs.String(), "refuses writes"); n != 1 || !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("the refusal was logged %d times, want once, naming ENOSPC:\n%s", n, logs.String())
	}
	b, n := q.stats()
	if b > q.memMax || dropped[reasonQueueFull] == 0 || int64(dropped[reasonQueueFull])+n != 200 {
		t.Errorf("queue %d bytes, %d samples, %d dropped: want at most %d bytes and every sample accounted for", b, n, dropped[reasonQueueFull], q.memMax)
	}
	got := drain(q)
	first := 200 - len(got)
	for i, p := range got {
		if p != string(rec(first+i)) {
			t.Fatalf("delivered %d: %.12q, want the newest records in order from %d", i, p, first)
		}
	}
	// The disk takes writes again; after diskRetry the queue uses it.
	clk.add(diskRetry)
	for i := 200; i < 210; i++ {
		if err := q.append(rec(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(logs.String(), "takes writes again") {
		t.Errorf("the recovery is not logged:\n%s", logs.String())
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	var onDisk int64
	for _, p := range segs {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			onDisk += st.Size()
		}
	}
	if onDisk == 0 {
		t.Errorf("after the disk came back nothing is written to it: %v", segs)
	}
	if got := drain(q); len(got) != 10 || got[0] != string(rec(200)) || got[9] != string(rec(209)) {
		t.Errorf("after the disk came back, delivered %d records", len(got))
	}
}

// TestQueueDiskFullDropsOldest: the directory's file system fills up (a small
// tmpfs, so root is needed to mount it) while nothing is sent: the queue drops
// its oldest records to make room, counted, so the newest are kept and the
// queue never holds more than the disk; with space back it grows again.
func TestQueueDiskFullDropsOldest(t *testing.T) {
	dir := fulldisk.Tmpfs(t, 256<<10)
	dropped := map[string]int{}
	var logs logBuffer
	q, err := openQueue(queueOptions{dir: dir, maxBytes: 64 << 20, segmentBytes: 32 << 10, syncInterval: time.Hour,
		logger: logs.logger(), dropped: func(r string, n int) { dropped[r] += n }})
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	rec := func(i int) []byte { return fmt.Appendf(nil, "record %04d %s", i, strings.Repeat("y", 3000)) }
	const n = 300 // 900 KB into 256 KB
	for i := range n {
		if err := q.append(rec(i), 2); err != nil {
			t.Fatal(err)
		}
	}
	b, queued := q.stats()
	if b > 256<<10 || dropped[reasonQueueFull] == 0 || int64(dropped[reasonQueueFull])+queued != 2*n {
		t.Errorf("queue of %d bytes on a 256 KB disk, %d samples queued, %d dropped of %d", b, queued, dropped[reasonQueueFull], 2*n)
	}
	if q.diskErr != nil || strings.Contains(logs.String(), "refuses writes") {
		t.Errorf("the queue went to memory although it could free its own disk space:\n%s", logs.String())
	}
	got := drain(q)
	first := n - len(got)
	if first == 0 || len(got) < 40 {
		t.Fatalf("kept %d records from %d", len(got), first)
	}
	for i, p := range got {
		if p != string(rec(first+i)) {
			t.Fatalf("delivered %d: %.12q, want the newest records in order from %d", i, p, first)
		}
	}
}
