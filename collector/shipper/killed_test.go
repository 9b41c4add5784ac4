package shipper

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// The fault tests of the on-disk queue: the agent killed in the middle of
// writing it.
//
// What the queue acknowledges (queue.go): append returns nil once the record's
// frame has been handed to write(2) on the active segment, so it is in the page
// cache and survives the process being killed (fsync, every SyncInterval, is what
// makes it survive the machine crashing). commit rewrites the cursor after the
// store answered 2xx; records before the cursor are never sent again, records at
// or after it are (at least once: a kill between the store's answer and the
// cursor's rename resends that one request). So after a kill:
//
//   - every record whose append returned is delivered, byte for byte as written;
//   - a record whose write was cut short (a torn tail) is never delivered: it is
//     cut from the file, logged, and its samples counted as corrupt, once;
//   - no record before the cursor is sent again, and what is sent again after a
//     restart is at most the one request that was in flight.

// faultRecord is record id of the kill tests: 1 to 3 series, the first padded
// with incompressible text (up to 8 KB, every 16th record 0.5 to 1 MB) so frames
// span pages and a kill can tear one, each carrying its id in a label, its value and its
// timestamp, so a received sample says which record it came from and whether it
// arrived intact.
func faultRecord(id uint64) (data []byte, samples int) {
	rng := rand.New(rand.NewPCG(id, 0x9e3779b97f4a7c15))
	var wr prompb.WriteRequest
	n := 1 + int(id%3)
	for part := range n {
		ls := []prompb.Label{{Name: "__name__", Value: "fault_record"}, {Name: "id", Value: strconv.FormatUint(id, 10)}}
		if part == 0 {
			size := rng.IntN(8 << 10)
			if id%16 == 0 {
				size = 512<<10 + rng.IntN(512<<10) // a write(2) long enough to be cut by a kill
			}
			off := rng.IntN(len(padText) - size)
			ls = append(ls, prompb.Label{Name: "pad", Value: padText[off : off+size]})
		}
		ls = append(ls, prompb.Label{Name: "part", Value: strconv.Itoa(part)})
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: ls,
			Samples: []prompb.Sample{{Value: float64(id) + float64(part)/10, Timestamp: t0.UnixMilli() + int64(id)}}})
	}
	raw, err := wr.Marshal()
	if err != nil {
		panic(err)
	}
	return snappy.Encode(nil, raw), n
}

// padText is incompressible text the records take their padding from.
var padText = func() string {
	rng := rand.New(rand.NewPCG(7, 7))
	b := make([]byte, 2<<20)
	for i := range b {
		b[i] = 'a' + byte(rng.IntN(26))
	}
	return string(b)
}()

// faultSamples is what the receiver records for record id.
func faultSamples(id uint64) []got {
	data, _ := faultRecord(id)
	raw, err := snappy.Decode(nil, data)
	if err != nil {
		panic(err)
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		panic(err)
	}
	var out []got
	for _, ts := range wr.Timeseries {
		out = append(out, got{series: seriesString(ts.Labels), ts: ts.Samples[0].Timestamp, value: ts.Samples[0].Value})
	}
	return out
}

// recordID is the id label of a received fault_record sample.
func recordID(t *testing.T, g got) uint64 {
	t.Helper()
	i := strings.Index(g.series, `id="`)
	if i < 0 {
		t.Fatalf("received a sample without an id: %.200s", g.series)
	}
	rest := g.series[i+4:]
	id, err := strconv.ParseUint(rest[:strings.IndexByte(rest, '"')], 10, 64)
	if err != nil {
		t.Fatalf("received a sample with a bad id: %.200s", g.series)
	}
	return id
}

const (
	childDirEnv = "GPUWATCH_SHIPPER_KILL_DIR"
	childURLEnv = "GPUWATCH_SHIPPER_KILL_URL"
)

func killOpts(url, dir string) Options {
	o := fastOpts(url)
	o.QueueDir = dir
	o.SegmentBytes = 64 << 10 // a rotation every few records
	o.BatchSamples = 20       // several requests per backlog
	o.MaxBytes = 1 << 30      // never full: every loss would be the kill's
	return o
}

// queueWriterChild is the process the kill test kills: a real shipper on the
// queue directory, sending to the parent's receiver, and a loop appending
// records as the encoder does, printing "ack <seq>" after each append returned.
func queueWriterChild(dir, url string) {
	opts := killOpts(url, dir)
	s, err := New(opts)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	st := s.Stats()
	s.q.mu.Lock()
	seq := s.q.next
	s.q.mu.Unlock()
	fmt.Printf("open corrupt=%d queued=%d next=%d\n", st.Dropped[reasonCorrupt], st.QueueSamples, seq)
	go func() { _ = s.Run(context.Background()) }()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), seq))
	deadline := time.Now().Add(30 * time.Second) // killed long before, unless the test is gone
	for ; time.Now().Before(deadline); seq++ {
		data, n := faultRecord(seq)
		fmt.Printf("write %d %d\n", seq, len(data))
		if err := s.q.append(data, n); err != nil {
			fmt.Println("append:", err)
			os.Exit(3)
		}
		fmt.Printf("ack %d\n", seq)
		if rng.IntN(8) == 0 {
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
		}
	}
}

// segmentFrames walks a segment file's frames and says how the file ends: the
// sample count in a torn last frame's header (-1: no torn frame; 0: a torn
// header or one that does not say).
func segmentFrames(t *testing.T, path string) (frames int, tornSamples int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for off+frameHeader <= len(b) {
		size := binary.LittleEndian.Uint32(b[off+4:])
		if off+frameHeader+int(size) > len(b) {
			return frames, plausibleSamples(size, binary.LittleEndian.Uint32(b[off+8:]))
		}
		frames++
		off += frameHeader + int(size)
	}
	if off < len(b) {
		return frames, 0
	}
	return frames, -1
}

// TestQueueKilledMidWrite kills a real writer (this test binary, re-executed)
// at random points while it appends and sends, several times on the same queue
// directory with the store refusing a third of the requests, then reopens the
// queue and drains it. Nothing acknowledged is lost, nothing arrives damaged,
// torn tails are counted once, and nothing before a cursor is sent again.
func TestQueueKilledMidWrite(t *testing.T) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		queueWriterChild(dir, os.Getenv(childURLEnv))
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	r := newReceiver(t)
	refuse := rand.New(rand.NewPCG(seed, 2))
	r.decide = func(*prompb.WriteRequest) int { // under r.mu
		if refuse.IntN(3) == 0 {
			return http.StatusServiceUnavailable
		}
		return 0
	}
	// bounds[k] is how many samples had arrived when writer k was dead: sample i
	// came from run k, the first with i < bounds[k] (run len(bounds): the final
	// drain).
	var bounds []int
	dir := t.TempDir()
	acked := map[uint64]bool{}
	var cursors []uint64 // the cursor on disk after each kill
	const kills = 6
	for k := range kills {
		// What the previous kill left: torn tails the next start must count.
		wantCorrupt := 0
		segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
		for _, p := range segs {
			if _, torn := segmentFrames(t, p); torn > 0 {
				wantCorrupt += torn
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestQueueKilledMidWrite$", "-test.count=1")
		cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childURLEnv+"="+r.url())
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		target := 5 + rng.IntN(60)
		reached := make(chan struct{})
		big := make(chan struct{}) // a big record is being written after the target
		lines := make(chan error, 1)
		var opened string
		n, bigClosed := 0, false
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "ack "):
					id, err := strconv.ParseUint(line[4:], 10, 64)
					if err != nil {
						lines <- fmt.Errorf("child said %q", line)
						return
					}
					acked[id] = true
					if n++; n == target {
						close(reached)
					}
				case strings.HasPrefix(line, "write "):
					var id, size int
					fmt.Sscanf(line, "write %d %d", &id, &size)
					if n >= target && size >= 512<<10 && !bigClosed {
						close(big)
						bigClosed = true
					}
				case strings.HasPrefix(line, "open "):
					opened = line
				case strings.HasPrefix(line, "append:"), strings.HasPrefix(line, "open:"):
					lines <- fmt.Errorf("child failed: %s", line)
					return
				}
			}
			lines <- sc.Err()
		}()
		select {
		case <-reached:
		case <-time.After(10 * time.Second):
			t.Fatalf("kill %d: the writer acknowledged %d records in 10 s", k, n)
		}
		// Kill it while it writes: mostly in the middle of a big record, else at
		// a random moment.
		if k%3 != 2 {
			select {
			case <-big:
				time.Sleep(time.Duration(100+rng.IntN(500)) * time.Microsecond)
			case <-time.After(2 * time.Second):
			}
		} else {
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := <-lines; err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		time.Sleep(20 * time.Millisecond) // a request already in the receiver's socket
		waitFor(t, "the dead writer's requests answered", func() bool { return r.inflight.Load() == 0 })
		r.mu.Lock()
		bounds = append(bounds, len(r.samples))
		r.mu.Unlock()
		var corrupt int
		if _, err := fmt.Sscanf(opened, "open corrupt=%d", &corrupt); err != nil {
			t.Fatalf("kill %d: the writer did not say what it found: %q", k, opened)
		}
		if corrupt != wantCorrupt {
			t.Errorf("start %d: counted %d corrupt samples, want the %d of the torn tails left by the kill before", k, corrupt, wantCorrupt)
		}
		b, err := os.ReadFile(filepath.Join(dir, cursorFile))
		c := uint64(0)
		if err == nil {
			c, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
		cursors = append(cursors, c)
		t.Logf("kill %d after %d acks: cursor %d, %s", k, n, c, opened)
	}

	// The agent starts again and the store is back: everything is sent.
	wantCorrupt := 0
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	for _, p := range segs {
		if _, torn := segmentFrames(t, p); torn > 0 {
			wantCorrupt += torn
		}
	}
	r.setStatus(0)
	r.mu.Lock()
	r.decide = nil
	r.mu.Unlock()
	var logs logBuffer
	opts := killOpts(r.url(), dir)
	opts.Logger = logs.logger()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Dropped[reasonCorrupt]; got != uint64(wantCorrupt) {
		t.Errorf("final start: %d corrupt samples counted, want %d", got, wantCorrupt)
	}
	stop := run(t, s)
	waitFor(t, "the queue drained", func() bool { return s.Stats().QueueSamples == 0 })
	stop()
	// Once more: the torn tails were cut, nothing is counted twice.
	s2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if st := s2.Stats(); st.Dropped[reasonCorrupt] != 0 || st.QueueSamples != 0 {
		t.Errorf("a second start after the drain: %+v", st)
	}
	s2.Close()

	samples := r.all()
	phases := make([]int, len(samples))
	for i := range phases {
		for phases[i] < len(bounds) && i >= bounds[phases[i]] {
			phases[i]++
		}
	}

	// Every sample received is one of a record's, intact; per record, the
	// parts arrive together.
	byID := map[uint64][]int{} // sample indexes
	for i, g := range samples {
		byID[recordID(t, g)] = append(byID[recordID(t, g)], i)
	}
	bad := 0
	for id, idx := range byID {
		want := faultSamples(id)
		copies := len(idx) / len(want)
		if len(idx)%len(want) != 0 {
			t.Errorf("record %d: %d samples received, not a whole number of its %d", id, len(idx), len(want))
			bad++
		}
		for _, i := range idx {
			if !slices.Contains(want, samples[i]) {
				t.Errorf("record %d arrived damaged: %.120s @%d = %g", id, samples[i].series, samples[i].ts, samples[i].value)
				bad++
				break
			}
		}
		if copies > 1 {
			// Sent again after a restart: only at or after that restart's cursor.
			first := phases[idx[0]]
			for _, i := range idx[len(want):] {
				if p := phases[i]; p > first && id < cursors[p-1] {
					t.Errorf("record %d sent again after restart %d although the cursor (%d) was past it", id, p, cursors[p-1])
					bad++
				}
			}
		}
		if bad > 5 {
			t.FailNow()
		}
	}
	// Nothing acknowledged is lost.
	lost := 0
	for id := range acked {
		if _, ok := byID[id]; !ok {
			if lost++; lost <= 5 {
				t.Errorf("record %d was acknowledged by the queue but never delivered", id)
			}
		}
	}
	// Resent after a restart: at most the one request in flight at the kill.
	for p := 1; p <= kills; p++ {
		resent := 0
		for id, idx := range byID {
			if id < cursors[p-1] {
				continue
			}
			before, after := false, false
			for _, i := range idx {
				before = before || phases[i] < p
				after = after || phases[i] == p
			}
			if before && after {
				resent += len(faultSamples(id))
			}
		}
		if resent > opts.BatchSamples+2 {
			t.Errorf("after kill %d, %d samples were sent again: more than the one request in flight", p-1, resent)
		}
	}
	// In order: within a run of the writer, records arrive by id.
	last := map[int]uint64{}
	for i, g := range samples {
		id, p := recordID(t, g), phases[i]
		if id < last[p] {
			t.Errorf("run %d: record %d arrived after record %d", p, id, last[p])
			break
		}
		last[p] = id
	}
	t.Logf("%d records acknowledged, %d received (%d samples), %d corrupt samples counted at the last start",
		len(acked), len(byID), len(samples), wantCorrupt)
	if wantCorrupt > 0 && !strings.Contains(logs.String(), "corrupt segment") {
		t.Errorf("a torn tail was not logged:\n%s", logs.String())
	}
}

// TestQueueTornAtEveryOffset cuts the last record of a segment at every byte
// offset (what an agent killed in the middle of write(2) leaves) and zero-fills
// a tail (what a machine crash may leave past the last fsync): each time the
// records before it are replayed exactly, the torn one is not, its samples are
// counted once when its header survived, and the queue goes on appending after
// it.
func TestQueueTornAtEveryOffset(t *testing.T) {
	src := t.TempDir()
	q, err := openQueue(queueOptions{dir: src, maxBytes: 1 << 20, logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	payloads := [][]byte{[]byte("first record"), []byte("second, a little longer"), []byte("the last one, the one that tears: 0123456789abcdef")}
	for i, p := range payloads {
		if err := q.append(p, 5+i); err != nil {
			t.Fatal(err)
		}
	}
	q.close()
	seg := filepath.Join(src, "00000000000000000000.seg")
	good, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	lastStart := len(good) - frameHeader - len(payloads[2])
	type tail struct {
		name string
		data []byte
		// samples the start must count as corrupt
		corrupt int
	}
	var tails []tail
	for cut := lastStart; cut < len(good); cut++ {
		want := 0
		if cut-lastStart >= frameHeader {
			want = 7 // the last record's header survived: its count is known
		}
		tails = append(tails, tail{fmt.Sprintf("cut at %d", cut), good[:cut], want})
	}
	for _, n := range []int{1, frameHeader - 1, frameHeader, 4096} {
		tails = append(tails, tail{fmt.Sprintf("%d zero bytes", n), append(good[:lastStart:lastStart], make([]byte, n)...), 0})
	}
	for _, tc := range tails {
		dir := t.TempDir()
		path := filepath.Join(dir, filepath.Base(seg))
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		corrupt := 0
		var logs logBuffer
		opts := queueOptions{dir: dir, maxBytes: 1 << 20, logger: logs.logger(),
			dropped: func(reason string, n int) {
				if reason == reasonCorrupt {
					corrupt += n
				}
			}}
		q, err := openQueue(opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		torn := len(tc.data) > lastStart
		if corrupt != tc.corrupt || torn != strings.Contains(logs.String(), "corrupt segment") {
			t.Errorf("%s: %d corrupt samples counted, want %d; log:\n%s", tc.name, corrupt, tc.corrupt, logs.String())
		}
		if err := q.append([]byte("after the restart"), 1); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			recs := q.peek(1 << 20)
			if len(recs) == 0 {
				break
			}
			for _, r := range recs {
				got = append(got, string(r.data))
			}
			q.commit(recs[len(recs)-1].seq+1, nil)
		}
		want := []string{string(payloads[0]), string(payloads[1]), "after the restart"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: replayed %q, want %q", tc.name, got, want)
		}
		q.close()
		if st, err := os.Stat(path); err == nil && st.Size() != int64(lastStart) {
			t.Errorf("%s: the segment was left at %d bytes, want it cut to the last good frame at %d", tc.name, st.Size(), lastStart)
		}
		// A second start finds nothing to count.
		corrupt = 0
		q, err = openQueue(opts)
		if err != nil {
			t.Fatal(err)
		}
		if corrupt != 0 {
			t.Errorf("%s: the torn tail was counted again at the next start", tc.name)
		}
		q.close()
	}
}
