package shipper

import (
	"bytes"
	"log/slog"
	"testing"
)

// TestMemoryQueueKeepsOnlyUnsent: in memory, delivered records are let go at the
// next append instead of filling the segment (8 MiB) first; what is unsent is
// kept, in order.
func TestMemoryQueueKeepsOnlyUnsent(t *testing.T) {
	q, err := openQueue(queueOptions{maxBytes: 256 << 20, logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	rec := bytes.Repeat([]byte{7}, 3000)
	held := func() (n int) {
		q.mu.Lock()
		defer q.mu.Unlock()
		for _, s := range q.segs {
			n += cap(s.mem)
		}
		return n
	}
	for i := range 1000 {
		if err := q.append(rec, 10); err != nil {
			t.Fatal(err)
		}
		recs := q.peek(1 << 20)
		if len(recs) != 1 || !bytes.Equal(recs[0].data, rec) {
			t.Fatalf("append %d: %d records waiting", i, len(recs))
		}
		q.commit(recs[0].seq+1, nil)
	}
	if n := held(); n > 4*len(rec) {
		t.Errorf("%d bytes held after every record was sent", n)
	}
	// Unsent records stay, in order, across segments.
	for i := range 5 {
		if err := q.append(append([]byte{byte(i)}, rec...), 10); err != nil {
			t.Fatal(err)
		}
	}
	recs := q.peek(1 << 20)
	if len(recs) != 5 {
		t.Fatalf("%d unsent records, want 5", len(recs))
	}
	for i, r := range recs {
		if r.data[0] != byte(i) {
			t.Errorf("record %d is %d", i, r.data[0])
		}
	}
	if b, n := q.stats(); n != 50 || b == 0 {
		t.Errorf("stats %d bytes %d samples", b, n)
	}
}
