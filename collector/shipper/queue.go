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
	dirty  bool  // written since the last fsync
	sealed bool  // left by an earlier process, or refused a write: read only
	limit  int64 // size at which it is rotated
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

	// While the directory refuses writes (full, read-only, failing), records are
	// held in memory segments, bounded by memMax; the disk is tried again every
	// diskRetry.
	diskErr    error // nil while the directory takes writes
	diskErrAt  time.Time
	memBytes   int64 // frame bytes in memory segments (disk mode only)
	memMax     int64
	cursorErr  bool // the last cursor write failed (logged once)
	memDropped int  // samples dropped for memMax since diskErr, for the log
}

// Holding records in memory while the queue directory refuses writes.
const (
	// memFallbackMax bounds the memory a queue on disk may use when its directory
	// refuses writes: the agent's own limit (systemd MemoryMax 256M) is far below
	// the queue's default bound.
	memFallbackMax = 32 << 20
	// diskRetry is how often a queue in memory tries its directory again.
	diskRetry = 5 * time.Second
)

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
	q.memMax = min(opts.maxBytes, memFallbackMax)
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
// the segment: it is reported, its samples are counted when its header says how
// many, and the file is cut there, so a torn tail (an agent killed in the middle
// of a write) or a damaged frame is counted once, not again at every start.
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
		// bad ends the segment at off; cut says the bytes are known bad (not
		// merely unreadable now) and the file may be truncated to off.
		bad := func(what string, samples int, cut bool) {
			q.opts.logger.Error("remote-write queue: corrupt segment; skipping the rest of it",
				"file", path, "offset", off, "problem", what, "bytes_skipped", seg.size-off, "samples_lost", samples)
			q.opts.dropped(reasonCorrupt, samples)
			if cut {
				if err := os.Truncate(path, off); err != nil {
					q.opts.logger.Warn("remote-write queue: cannot cut a corrupt segment; it will be reported again at the next start", "file", path, "err", err)
				}
			}
			seg.size = off
		}
		if n, err := f.ReadAt(hdr[:], off); err != nil {
			torn := errors.Is(err, io.EOF) && off+int64(n) == seg.size
			bad(fmt.Sprintf("truncated frame header, %d of %d bytes (%v)", n, frameHeader, err), 0, torn)
			break
		}
		size := binary.LittleEndian.Uint32(hdr[4:])
		samples := binary.LittleEndian.Uint32(hdr[8:])
		if size > maxRecord || off+frameHeader+int64(size) > seg.size {
			bad(fmt.Sprintf("frame length %d runs past the end of the file", size), plausibleSamples(size, samples), true)
			break
		}
		buf = slices.Grow(buf[:0], int(size))[:size]
		if _, err := f.ReadAt(buf, off+frameHeader); err != nil {
			bad(fmt.Sprintf("unreadable payload (%v)", err), 0, false)
			break
		}
		if frameCRC(hdr[4:], buf) != binary.LittleEndian.Uint32(hdr[:4]) {
			bad("checksum mismatch", plausibleSamples(size, samples), true)
			break
		}
		seg.recs = append(seg.recs, recMeta{off: off, size: size, samples: samples})
		off += frameHeader + int64(size)
	}
	return seg, nil
}

// plausibleSamples is the sample count of a frame header that cannot be checked
// (its payload is torn or damaged), or 0 when the header itself is implausible:
// a record's length at most maxRecord, and no more samples than payload bytes.
func plausibleSamples(size, samples uint32) int {
	if size > maxRecord || samples > size {
		return 0
	}
	return int(samples)
}

func frameCRC(hdrRest, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, hdrRest)
	return crc32.Update(c, castagnoli, payload)
}

// append adds a record, dropping the oldest records when the bound would be
// exceeded. A record larger than the whole bound is dropped itself.
//
// When the directory refuses the write because it is full, the oldest unsent
// records on disk are dropped (counted as queue_full) until the record fits: the
// disk, not only MaxBytes, bounds the queue. When nothing is left to drop, or the
// directory refuses writes for another reason (read-only, I/O errors), the record
// is held in memory (at most memFallbackMax, oldest dropped first; lost if the
// agent stops before it is sent) and the directory is tried again every
// diskRetry; each change is logged once.
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
	frame := make([]byte, frameHeader, need)
	binary.LittleEndian.PutUint32(frame[4:], uint32(len(data)))
	binary.LittleEndian.PutUint32(frame[8:], uint32(samples))
	binary.LittleEndian.PutUint32(frame[:4], frameCRC(frame[4:frameHeader], data))
	frame = append(frame, data...)
	seg := q.store(frame, samples)
	seg.recs = append(seg.recs, recMeta{off: seg.size, size: uint32(len(data)), samples: uint32(samples)})
	seg.size += need
	q.next++
	q.bytes += need
	q.samples += int64(samples)
	if q.syncDue() {
		q.syncLocked()
	}
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return nil
}

// store writes frame at the end of the active segment, on disk or in memory,
// and returns that segment.
func (q *queue) store(frame []byte, samples int) *segment {
	need := int64(len(frame))
	for {
		seg := q.active(need)
		if seg.f == nil {
			if q.opts.dir != "" {
				// Held in memory while the directory refuses writes: bounded on
				// its own, oldest first.
				for q.memBytes+need > q.memMax && q.head < q.next {
					before := q.samples
					q.dropHead()
					q.memDropped += int(before - q.samples)
				}
				q.memBytes += need
			}
			seg.mem = append(seg.mem, frame...)
			return seg
		}
		_, err := seg.f.Write(frame)
		if err == nil {
			seg.dirty = true
			if q.diskErr != nil {
				q.opts.logger.Info("remote-write queue: the queue directory takes writes again; queueing on disk",
					"dir", q.opts.dir, "samples_dropped_meanwhile_for_memory", q.memDropped)
				q.diskErr, q.memDropped = nil, 0
			}
			return seg
		}
		// A partial write leaves a torn frame; make the file end where the
		// index does.
		_ = seg.f.Truncate(seg.size)
		_, _ = seg.f.Seek(seg.size, io.SeekStart)
		if noSpace(err) && q.makeRoom(seg) {
			continue
		}
		q.diskFailed(fmt.Errorf("remote-write queue segment %s: %w", seg.path, err), samples)
		seg.sealed = true // the next active() holds records in memory
		if seg.size == 0 && len(seg.recs) == 0 && q.segs[len(q.segs)-1] == seg {
			// A segment just opened for a retry: not one file per retry.
			seg.f.Close()
			_ = os.Remove(seg.path)
			q.segs[len(q.segs)-1] = nil
			q.segs = q.segs[:len(q.segs)-1]
		}
	}
}

// noSpace reports whether err says the file system (or the user's quota) is full.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// makeRoom frees disk space for a write into active that failed for want of
// it: it drops the unsent records of the oldest segment on disk (queue_full), so
// that its file is deleted, or, when every record is sent, closes active so that
// its file, holding only sent records, is deleted at the next rotation. It
// reports whether anything will be freed.
func (q *queue) makeRoom(active *segment) bool {
	if q.head < q.next {
		if seg, _ := q.locate(q.head); seg != nil && seg.f != nil {
			end := seg.end()
			for q.head < end && q.head < q.next {
				q.dropHead()
			}
			seg.sealed = true // if it was the active one, the next active() rotates
			q.gc()
			return true
		}
	}
	if active.size > 0 && active.end() <= q.head {
		active.sealed = true
		return true
	}
	return false
}

// diskFailed records that the directory refused a write: the first failure of
// a run is logged, the rest are not.
func (q *queue) diskFailed(err error, samples int) {
	if q.diskErr == nil {
		q.opts.logger.Error("remote-write queue: the queue directory refuses writes; holding records in memory (lost if the agent stops before they are sent) and trying the directory again",
			"dir", q.opts.dir, "err", err, "memory_bound_bytes", q.memMax, "retry_every", diskRetry, "samples", samples)
	}
	q.diskErr, q.diskErrAt = err, q.opts.now()
}

// active returns the segment to append need bytes to, rotating when full. While
// the directory refuses writes it is a memory segment, until diskRetry has
// passed since the last refusal.
//
// A segment on disk is at most an eighth of the space the file system had free
// when it was started, so that a full disk, which makes the queue drop whole
// segments, drops the oldest eighth rather than everything.
func (q *queue) active(need int64) *segment {
	since := q.opts.now().Sub(q.diskErrAt)
	retryDisk := q.diskErr != nil && (since >= diskRetry || since < 0)
	if n := len(q.segs); n > 0 {
		s := q.segs[n-1]
		if !s.sealed && s.end() == q.next && (s.size+need <= s.limit || len(s.recs) == 0) && !(retryDisk && s.f == nil) {
			return s
		}
		if s.f != nil && s.dirty {
			if err := s.f.Sync(); err != nil {
				q.opts.logger.Warn("remote-write queue: fsync failed", "file", s.path, "err", err)
			}
			s.dirty = false
		}
	}
	seg := &segment{first: q.next, limit: q.opts.segmentBytes}
	if q.opts.dir != "" && (q.diskErr == nil || retryDisk) {
		path := filepath.Join(q.opts.dir, fmt.Sprintf("%020d%s", q.next, segSuffix))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			q.diskFailed(fmt.Errorf("remote-write queue segment: %w", err), 0)
		} else {
			seg.path, seg.f = path, f
			var st syscall.Statfs_t
			if err := syscall.Fstatfs(int(f.Fd()), &st); err == nil {
				seg.limit = min(seg.limit, max(int64(st.Bavail)*int64(st.Bsize)/8, 4<<10))
			}
		}
	}
	if seg.f == nil && q.opts.dir != "" {
		seg.limit = max(min(seg.limit, q.memMax/4), 4<<10) // memory freed in steps
	}
	q.segs = append(q.segs, seg)
	q.gc()
	return seg
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

// gc removes segments wholly before head, except the active one on disk.
func (q *queue) gc() {
	for len(q.segs) > 1 && q.segs[0].end() <= q.head {
		s := q.segs[0]
		if s.f != nil {
			s.f.Close()
			if err := os.Remove(s.path); err != nil {
				q.opts.logger.Warn("remote-write queue: cannot remove a sent segment", "file", s.path, "err", err)
			}
		} else if q.opts.dir != "" {
			q.memBytes -= int64(len(s.mem))
		}
		q.segs[0] = nil
		q.segs = q.segs[1:]
	}
	// In memory the active segment goes too once every record in it is sent:
	// kept, it would hold up to segmentBytes (8 MiB) of sent requests before
	// being replaced. The next append starts a new one.
	if q.opts.dir == "" && len(q.segs) == 1 && len(q.segs[0].recs) > 0 && q.segs[0].end() <= q.head {
		q.segs[0] = nil
		q.segs = q.segs[:0]
	}
}

func (q *queue) writeCursor() {
	if q.opts.dir == "" || q.closed {
		return
	}
	tmp := filepath.Join(q.opts.dir, cursorFile+".tmp")
	err := os.WriteFile(tmp, []byte(strconv.FormatUint(q.head, 10)+"\n"), 0o644)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(q.opts.dir, cursorFile))
	}
	switch {
	case err != nil && !q.cursorErr:
		// This process still sends nothing twice; a restart would send again
		// what was sent since the last cursor written (at least once).
		q.opts.logger.Warn("remote-write queue: cannot write the cursor; a restart would send again what was sent since", "file", tmp, "err", err)
		q.cursorErr = true
	case err == nil && q.cursorErr:
		q.opts.logger.Info("remote-write queue: the cursor is written again", "file", filepath.Join(q.opts.dir, cursorFile))
		q.cursorErr = false
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
	if !q.closed && q.syncDue() {
		q.syncLocked()
	}
}

// syncDue says whether SyncInterval has passed since the last fsync; a clock
// that stepped back makes it due at once rather than a step later.
func (q *queue) syncDue() bool {
	d := q.opts.now().Sub(q.lastSync)
	return q.opts.syncInterval < 0 || d >= q.opts.syncInterval || d < 0
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
	if q.opts.dir != "" {
		lost := 0
		for _, s := range q.segs {
			if s.f != nil {
				continue
			}
			for i, r := range s.recs {
				if s.first+uint64(i) >= q.head {
					lost += int(r.samples)
				}
			}
		}
		if lost > 0 {
			q.opts.logger.Warn("remote-write queue: samples held in memory while the queue directory refused writes are lost at shutdown", "dir", q.opts.dir, "samples", lost)
		}
	}
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
