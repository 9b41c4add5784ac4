package shipper

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzSegment feeds arbitrary bytes to the queue as a segment left by an earlier
// process: opening never fails or panics on content, every record it indexes
// reads back with a good checksum, and the queue drains.
func FuzzSegment(f *testing.F) {
	dir := f.TempDir()
	q, err := openQueue(queueOptions{dir: dir, maxBytes: 1 << 20, logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		if err := q.append([]byte{byte(i), 1, 2, 3, 4, 5}, 2); err != nil {
			f.Fatal(err)
		}
	}
	q.close()
	good, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.seg"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add(good[:5])
	f.Add([]byte{})
	bad := append([]byte(nil), good...)
	bad[frameHeader+20] ^= 1
	f.Add(bad)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000007.seg"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		corrupt := 0
		q, err := openQueue(queueOptions{dir: dir, maxBytes: 1 << 20, syncInterval: time.Hour, logger: slog.New(slog.DiscardHandler),
			dropped: func(reason string, n int) {
				if reason == reasonCorrupt {
					corrupt++
				}
			}})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer q.close()
		_, queued := q.stats()
		total := 0
		for {
			recs := q.peek(1 << 30)
			if len(recs) == 0 {
				break
			}
			for _, r := range recs {
				total += r.samples
				if r.seq < 7 {
					t.Fatalf("record seq %d before the segment's first", r.seq)
				}
			}
			q.commit(recs[len(recs)-1].seq+1, nil)
		}
		if int64(total) != queued {
			t.Errorf("read %d samples, the queue said %d", total, queued)
		}
		if b, s := q.stats(); b != 0 || s != 0 {
			t.Errorf("drained queue holds %d bytes, %d samples", b, s)
		}
		// The queue still takes new records after the old segment.
		if err := q.append([]byte("x"), 1); err != nil {
			t.Fatal(err)
		}
		if recs := q.peek(10); len(recs) != 1 || string(recs[0].data) != "x" {
			t.Errorf("after replay: %v", recs)
		}
	})
}
