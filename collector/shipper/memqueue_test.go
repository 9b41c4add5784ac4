package shipper

import (
	"log/slog"
	"testing"
)

// A memory queue keeps no sent request: the soak (internal/soak) found 1,000
// agents holding every request they had sent, up to a segment (8 MiB) each.
func TestMemoryQueueReleasesSentRecords(t *testing.T) {
	q, err := openQueue(queueOptions{maxBytes: 256 << 20, logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	data := make([]byte, 1000)
	for range 100 {
		if err := q.append(data, 10); err != nil {
			t.Fatal(err)
		}
		recs := q.peek(1 << 20)
		if len(recs) != 1 {
			t.Fatalf("peek: %d records, want 1", len(recs))
		}
		if n := q.commit(recs[0].seq+1, nil); n != 10 {
			t.Fatalf("commit: %d samples, want 10", n)
		}
	}
	held := 0
	for _, s := range q.segs {
		held += cap(s.mem)
	}
	if held != 0 {
		t.Errorf("after every record was sent the queue holds %d bytes in %d segments, want none", held, len(q.segs))
	}
	// And it goes on working: a record appended now is sent.
	if err := q.append(data, 7); err != nil {
		t.Fatal(err)
	}
	if recs := q.peek(1 << 20); len(recs) != 1 || recs[0].samples != 7 {
		t.Fatalf("after release: peek %v, want one record of 7 samples", recs)
	}
	if b, s := q.stats(); b != int64(len(data)+frameHeader) || s != 7 {
		t.Errorf("stats %d bytes, %d samples; want %d, 7", b, s, len(data)+frameHeader)
	}
}
