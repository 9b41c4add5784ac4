package shipper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Frame layout: crc32c | payload length | samples | payload.
const (
	frameHeader = 12
	// maxRecord bounds one record's payload; a larger length in a header is
	// corruption, not data.
	maxRecord  = 64 << 20
	segSuffix  = ".seg"
	cursorFile = "cursor"
	lockFile   = "lock"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// record is one queued, snappy-compressed WriteRequest.
type record struct {
	seq     uint64
	data    []byte
	samples int
}

type recMeta struct {
	off     int64 // of the frame header
	size    uint32
	samples uint32
}

type segment struct {
	first  uint64
	path   string   // "" in memory mode
	f      *os.File // nil in memory mode
	mem    []byte   // memory mode: the frames
	size   int64
	recs   []recMeta
	dirty  bool // written since the last fsync
	sealed bool // left by an earlier process: read only
}

func (s *segment) end() uint64 { return s.first + uint64(len(s.recs)) }

// queueOptions configure a queue.
type queueOptions struct {
	dir          string // "" memory only
	maxBytes     int64
	segmentBytes int64
	syncInterval time.Duration // <0: fsync after every append
	logger       *slog.Logger
	now          func() time.Time
	// dropped is called, under the queue's lock, with samples dropped and why.
	dropped func(reason string, samples int)
}

// queue is a FIFO of records bounded in bytes, on disk or in memory. It is safe
// for one appender and one reader at a time, and for any number of stat readers.
type queue struct {
	opts queueOptions

	mu       sync.Mutex
	segs     []*segment // oldest first; the last is the active one
	head     uint64     // the oldest unsent record
	next     uint64     // the next record appended
	bytes    int64      // frame bytes of records at or after head
	samples  int64
	lastSync time.Time
	lock     *os.File
	closed   bool
	notify   chan struct{}
}

func openQueue(opts queueOptions) (*queue, error) {
	if opts.segmentBytes <= 0 {
		opts.segmentBytes = min(8<<20, max(opts.maxBytes/4, 4<<10))
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.dropped == nil {
		opts.dropped = func(string, int) {}
	}
	q := &queue{opts: opts, notify: make(chan struct{}, 1)}
	if opts.dir == "" {
		return q, nil
	}
	if err := os.MkdirAll(opts.dir, 0o755); err != nil {
		return nil, fmt.Errorf("queue directory %s: %w", opts.dir, err)
	}
	lf, err := os.OpenFile(filepath.Join(opts.dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("queue directory %s: %w", opts.dir, err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lf.Close()
		return nil, fmt.Errorf("queue directory %s is in use by another process: %w", opts.dir, err)
	}
	q.lock = lf
	if err := q.load(); err != nil {
		q.closeFiles()
		return nil, err
	}
	return q, nil
}

// load indexes the segments a previous process left and reads the cursor.
func (q *queue) load() error {
	ents, err := os.ReadDir(q.opts.dir)
	if err != nil {
		return fmt.Errorf("queue directory %s: %w", q.opts.dir, err)
	}
	var firsts []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, segSuffix) || e.IsDir() {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 10, 64)
		if err != nil {
			q.opts.logger.Warn("remote-write queue: ignoring a file that is not a segment", "file", filepath.Join(q.opts.dir, name))
			continue
		}
		firsts = append(firsts, n)
	}
	slices.Sort(firsts)
	for _, first := range firsts {
		seg, err := q.scan(first)
		if err != nil {
			return err
		}
		if len(seg.recs) == 0 {
			seg.f.Close()
			os.Remove(seg.path)
			continue
		}
		if n := len(q.segs); n > 0 && q.segs[n-1].end() > seg.first {
			// Overlapping names can only come from a damaged directory: trust the
			// later segment's name and cut the earlier one's index.
			prev := q.segs[n-1]
			prev.recs = prev.recs[:seg.first-prev.first]
		}
		q.segs = append(q.segs, seg)
	}
	if len(q.segs) > 0 {
		q.head = q.segs[0].first
		q.next = q.segs[len(q.segs)-1].end()
	}
	if b, err := os.ReadFile(filepath.Join(q.opts.dir, cursorFile)); err == nil {
		if c, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			q.head = max(q.head, min(c, q.next))
			q.next = max(q.next, c)
		} else {
			q.opts.logger.Warn("remote-write queue: unreadable cursor; replaying every segment", "file", filepath.Join(q.opts.dir, cursorFile), "err", err)
		}
	}
	for _, s := range q.segs {
		for i, r := range s.recs {
			if s.first+uint64(i) >= q.head {
				q.bytes += int64(r.size) + frameHeader
				q.samples += int64(r.samples)
			}
		}
	}
	q.gc()
	return nil
}

// scan indexes one segment file, checking every frame. The first bad frame ends
// the segment: it is reported and counted, and what follows is skipped.
func (q *queue) scan(first uint64) (*segment, error) {
	path := filepath.Join(q.opts.dir, fmt.Sprintf("%020d%s", first, segSuffix))
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("queue segment %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("queue segment %s: %w", path, err)
	}
	seg := &segment{first: first, path: path, f: f, size: st.Size(), sealed: true}
	var hdr [frameHeader]byte
	var buf []byte
	for off := int64(0); off < seg.size; {
		bad := func(what string, samples int) {
			q.opts.logger.Error("remote-write queue: corrupt segment; skipping the rest of it",
				"file", path, "offset", off, "problem", what, "bytes_skipped", seg.size-off)
			q.opts.dropped(reasonCorrupt, samples)
			seg.size = off
		}
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			bad(fmt.Sprintf("truncated frame header (%v)", err), 0)
			break
		}
		size := binary.LittleEndian.Uint32(hdr[4:])
		samples := binary.LittleEndian.Uint32(hdr[8:])
		if size > maxRecord || off+frameHeader+int64(size) > seg.size {
			bad(fmt.Sprintf("frame length %d runs past the end of the file", size), 0)
			break
		}
		buf = slices.Grow(buf[:0], int(size))[:size]
		if _, err := f.ReadAt(buf, off+frameHeader); err != nil {
			bad(fmt.Sprintf("unreadable payload (%v)", err), 0)
			break
		}
		if frameCRC(hdr[4:], buf) != binary.LittleEndian.Uint32(hdr[:4]) {
			n := 0
			if int64(samples) <= int64(size) { // a plausible count
				n = int(samples)
			}
			bad("checksum mismatch", n)
			break
		}
		seg.recs = append(seg.recs, recMeta{off: off, size: size, samples: samples})
		off += frameHeader + int64(size)
	}
	return seg, nil
}

func frameCRC(hdrRest, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, hdrRest)
	return crc32.Update(c, castagnoli, payload)
}

// append adds a record, dropping the oldest records when the bound would be
// exceeded. A record larger than the whole bound is dropped itself.
func (q *queue) append(data []byte, samples int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errors.New("remote-write queue is closed")
	}
	need := int64(len(data)) + frameHeader
	if need > q.opts.maxBytes {
		q.opts.dropped(reasonQueueFull, samples)
		return nil
	}
	for q.bytes+need > q.opts.maxBytes && q.head < q.next {
		q.dropHead()
	}
	seg, err := q.active(need)
	if err != nil {
		return err
	}
	frame := make([]byte, frameHeader, need)
	binary.LittleEndian.PutUint32(frame[4:], uint32(len(data)))
	binary.LittleEndian.PutUint32(frame[8:], uint32(samples))
	binary.LittleEndian.PutUint32(frame[:4], frameCRC(frame[4:frameHeader], data))
	frame = append(frame, data...)
	if seg.f != nil {
		if _, err := seg.f.Write(frame); err != nil {
			// A partial write leaves a torn frame the next start detects; make
			// the file end where the index does.
			_ = seg.f.Truncate(seg.size)
			_, _ = seg.f.Seek(seg.size, io.SeekStart)
			q.opts.dropped(reasonQueueFull, samples)
			return fmt.Errorf("remote-write queue segment %s: %w", seg.path, err)
		}
		seg.dirty = true
	} else {
		seg.mem = append(seg.mem, frame...)
	}
	seg.recs = append(seg.recs, recMeta{off: seg.size, size: uint32(len(data)), samples: uint32(samples)})
	seg.size += need
	q.next++
	q.bytes += need
	q.samples += int64(samples)
	if q.opts.syncInterval < 0 || q.opts.now().Sub(q.lastSync) >= q.opts.syncInterval {
		q.syncLocked()
	}
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return nil
}

// active returns the segment to append need bytes to, rotating when full.
func (q *queue) active(need int64) (*segment, error) {
	if n := len(q.segs); n > 0 {
		s := q.segs[n-1]
		// In memory, a segment whose records have all been sent is let go
		// rather than appended to: it would otherwise keep up to SegmentBytes
		// (8 MiB) of delivered data until it filled. On disk it is kept: a file
		// per record would be worse.
		sent := q.opts.dir == "" && len(s.recs) > 0 && s.end() <= q.head
		if !s.sealed && s.end() == q.next && (s.size+need <= q.opts.segmentBytes || len(s.recs) == 0) && !sent {
			return s, nil
		}
		if s.f != nil && s.dirty {
			if err := s.f.Sync(); err != nil {
				q.opts.logger.Warn("remote-write queue: fsync failed", "file", s.path, "err", err)
			}
			s.dirty = false
		}
	}
	seg := &segment{first: q.next}
	if q.opts.dir != "" {
		seg.path = filepath.Join(q.opts.dir, fmt.Sprintf("%020d%s", q.next, segSuffix))
		f, err := os.OpenFile(seg.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("remote-write queue segment: %w", err)
		}
		seg.f = f
	}
	q.segs = append(q.segs, seg)
	q.gc()
	return seg, nil
}

// dropHead drops the oldest unsent record as queue_full.
func (q *queue) dropHead() {
	seg, i := q.locate(q.head)
	if seg == nil {
		q.head = q.next
		return
	}
	r := seg.recs[i]
	q.bytes -= int64(r.size) + frameHeader
	q.samples -= int64(r.samples)
	q.opts.dropped(reasonQueueFull, int(r.samples))
	q.head = seg.first + uint64(i) + 1
	q.gc()
}

// locate finds the first record at or after seq.
func (q *queue) locate(seq uint64) (*segment, int) {
	for _, s := range q.segs {
		if s.end() <= seq {
			continue
		}
		if seq <= s.first {
			return s, 0
		}
		return s, int(seq - s.first)
	}
	return nil, 0
}

// peek returns the oldest unsent records, in order, up to maxSamples samples
// (always at least one when any is queued). A record whose bytes no longer check
// out is dropped as corrupt and skipped.
func (q *queue) peek(maxSamples int) []record {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []record
	total := 0
	seq := q.head
	for seq < q.next {
		seg, i := q.locate(seq)
		if seg == nil {
			break
		}
		r := seg.recs[i]
		seq = seg.first + uint64(i)
		if len(out) > 0 && total+int(r.samples) > maxSamples {
			break
		}
		data, err := q.read(seg, r)
		if err != nil {
			q.opts.logger.Error("remote-write queue: unreadable record; dropping it", "file", seg.path, "offset", r.off, "err", err)
			if len(out) > 0 {
				break // commit what is good first; the next peek drops it
			}
			q.bytes -= int64(r.size) + frameHeader
			q.samples -= int64(r.samples)
			q.opts.dropped(reasonCorrupt, int(r.samples))
			q.head = seq + 1
			q.gc()
			seq++
			continue
		}
		out = append(out, record{seq: seq, data: data, samples: int(r.samples)})
		total += int(r.samples)
		seq++
	}
	return out
}

func (q *queue) read(seg *segment, r recMeta) ([]byte, error) {
	var frame []byte
	if seg.f == nil {
		frame = seg.mem[r.off : r.off+frameHeader+int64(r.size)]
	} else {
		frame = make([]byte, frameHeader+int64(r.size))
		if _, err := seg.f.ReadAt(frame, r.off); err != nil {
			return nil, err
		}
	}
	if frameCRC(frame[4:frameHeader], frame[frameHeader:]) != binary.LittleEndian.Uint32(frame[:4]) {
		return nil, errors.New("checksum mismatch")
	}
	return frame[frameHeader:], nil
}

// commit marks every record before upTo as done and returns the samples that were
// still queued (records dropped meanwhile are not counted twice); done, when set,
// is called with them before the queue's lock is released, so counters move
// together with the queue's stats.
func (q *queue) commit(upTo uint64, done func(samples int)) (samples int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head < upTo && q.head < q.next {
		seg, i := q.locate(q.head)
		if seg == nil || seg.first+uint64(i) >= upTo {
			break
		}
		r := seg.recs[i]
		q.bytes -= int64(r.size) + frameHeader
		q.samples -= int64(r.samples)
		samples += int(r.samples)
		q.head = seg.first + uint64(i) + 1
	}
	q.head = max(q.head, min(upTo, q.next))
	if done != nil {
		done(samples)
	}
	q.gc()
	q.writeCursor()
	return samples
}

// gc removes segments wholly before head, except the active one.
func (q *queue) gc() {
	for len(q.segs) > 1 && q.segs[0].end() <= q.head {
		s := q.segs[0]
		if s.f != nil {
			s.f.Close()
			if err := os.Remove(s.path); err != nil {
				q.opts.logger.Warn("remote-write queue: cannot remove a sent segment", "file", s.path, "err", err)
			}
		}
		q.segs[0] = nil
		q.segs = q.segs[1:]
	}
}

func (q *queue) writeCursor() {
	if q.opts.dir == "" || q.closed {
		return
	}
	tmp := filepath.Join(q.opts.dir, cursorFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(q.head, 10)+"\n"), 0o644); err != nil {
		q.opts.logger.Warn("remote-write queue: cannot write the cursor", "file", tmp, "err", err)
		return
	}
	if err := os.Rename(tmp, filepath.Join(q.opts.dir, cursorFile)); err != nil {
		q.opts.logger.Warn("remote-write queue: cannot write the cursor", "file", tmp, "err", err)
	}
}

func (q *queue) syncLocked() {
	q.lastSync = q.opts.now()
	for _, s := range q.segs {
		if s.f != nil && s.dirty {
			if err := s.f.Sync(); err != nil {
				q.opts.logger.Warn("remote-write queue: fsync failed", "file", s.path, "err", err)
			}
			s.dirty = false
		}
	}
}

// sync fsyncs the active segment if it has unsynced records and SyncInterval
// has passed.
func (q *queue) sync() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed && q.opts.now().Sub(q.lastSync) >= q.opts.syncInterval {
		q.syncLocked()
	}
}

// stats returns the unsent bytes and samples.
func (q *queue) stats() (bytes, samples int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, q.samples
}

// close fsyncs, writes the cursor and releases the directory.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.syncLocked()
	q.writeCursor()
	q.closed = true
	q.closeFiles()
}

func (q *queue) closeFiles() {
	for _, s := range q.segs {
		if s.f != nil {
			s.f.Close()
		}
	}
	if q.lock != nil {
		q.lock.Close() // releases the flock
	}
}
