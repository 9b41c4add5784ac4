package xid

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxLine bounds one log line or kmsg record; the rest of a longer line is dropped.
const maxLine = 64 << 10

// Run reads the kernel log until ctx is done and returns nil then; it returns an
// error only when called while already running. Read errors (a missing file, no
// permission for /dev/kmsg) do not end it: it logs them, reports them from
// Collect and tries again, with back-off, so a log that appears later is read.
//
// /dev/kmsg (any character device) is read record by record, one read(2) each,
// without a poller thread of its own: the runtime's netpoller wakes the reader.
// EPIPE (records overwritten before they were read) is counted, and the records
// lost are counted from the sequence-number gap. Any other file is tailed by
// polling every PollInterval for appended lines; a file that shrinks is read again
// from its start, a path that names a new file (rotation) is reopened.
func (s *Source) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("xid: Run called while already running")
	}
	defer s.running.Store(false)
	s.bootTime()

	// Accept NVML events whose kernel-log line did not come, even while the
	// reader is blocked.
	tick := time.NewTicker(max(s.mergeWindow/4, 10*time.Millisecond))
	defer tick.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.flush()
			}
		}
	}()

	fromStart := s.opts.FromStart
	backoff := s.poll
	var lastErr string
	for ctx.Err() == nil {
		err := s.readOnce(ctx, fromStart)
		if ctx.Err() != nil {
			break
		}
		if err == nil {
			backoff = s.poll
			continue
		}
		s.mu.Lock()
		s.readErr = err
		s.mu.Unlock()
		if err.Error() != lastErr {
			s.log.Warn("xid: cannot read the kernel log", "path", s.opts.KmsgPath, "error", err)
			lastErr = err.Error()
		}
		// A log that was missing or unreadable: when it comes, read all of it.
		// One that was read and failed: /dev/kmsg goes on from its end, a file
		// from where it was left (tailFile), so nothing counts twice.
		fromStart = !s.opened
		if !sleep(ctx, backoff) {
			break
		}
		backoff = min(backoff*2, 30*time.Second)
	}
	return nil
}

// readOnce opens the log and reads it until an error or ctx is done.
func (s *Source) readOnce(ctx context.Context, fromStart bool) error {
	fi, err := os.Stat(s.opts.KmsgPath)
	if err != nil {
		return fmt.Errorf("kernel log: %w", err)
	}
	if fi.Mode()&fs.ModeCharDevice != 0 {
		s.device.Store(true)
		return s.readDevice(ctx, fromStart)
	}
	return s.tailFile(ctx, fromStart)
}

// Sync waits until the running reader has caught up with the log as it is now: a
// file read to the end it had when Sync was called, /dev/kmsg's history read. A
// one-shot check and the demo call it before collecting, so every line already
// logged is counted. It returns the reader's error, if it has one, or ctx's.
func (s *Source) Sync(ctx context.Context) error {
	start := s.drains.Load()
	for {
		s.mu.Lock()
		err := s.readErr
		s.mu.Unlock()
		switch {
		case err != nil && s.running.Load():
			return err
		case s.device.Load() && s.live.Load():
			return nil
		case !s.device.Load() && s.drains.Load() >= start+2:
			// The drain running at the call may have started before the last
			// write; the next one began after it.
			return nil
		}
		if !sleep(ctx, time.Millisecond) {
			return ctx.Err()
		}
	}
}

// setReadErr records the reader's health for Collect.
func (s *Source) setReadErr(err error) {
	s.mu.Lock()
	s.readErr = err
	s.mu.Unlock()
}

// readDevice reads /dev/kmsg.
func (s *Source) readDevice(ctx context.Context, fromStart bool) error {
	path := s.opts.KmsgPath
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("kernel log: %w", err)
	}
	defer f.Close()
	if !fromStart {
		// SEEK_END on /dev/kmsg: after the last record.
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			return fmt.Errorf("kernel log: seek to end of %s: %w", path, err)
		}
		s.live.Store(true)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("kernel log: %s: %w", path, err)
	}
	// With the netpoller (the normal case) a read waits for the next record and
	// ctx ends it through the deadline; without it the reader polls.
	pollable := f.SetReadDeadline(time.Time{}) == nil
	if pollable {
		stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
		defer stop()
	}
	s.setReadErr(nil)
	s.opened = true
	s.mu.Lock()
	s.haveSeq = false
	s.mu.Unlock()
	buf := make([]byte, maxLine)
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), buf)
			if rerr == syscall.EAGAIN && pollable {
				s.live.Store(true)
				return false // wait for the next record
			}
			return true
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("kernel log: read %s: %w", path, err)
		}
		wait, err := s.deviceStep(buf[:max(n, 0)], rerr)
		if err != nil {
			return fmt.Errorf("kernel log: read %s: %w", path, err)
		}
		if wait && !sleep(ctx, s.poll) {
			return nil
		}
	}
}

// deviceStep handles the result of one read(2) of /dev/kmsg: a record, EPIPE
// (records overwritten: the next record's sequence number says how many), EAGAIN
// (caught up; wait). It returns an error the reader cannot go on after.
func (s *Source) deviceStep(rec []byte, err error) (wait bool, _ error) {
	switch {
	case err == nil && len(rec) > 0:
		s.lines.Add(1)
		s.handleRecord(rec, s.live.Load())
		return false, nil
	case err == nil, errors.Is(err, syscall.EAGAIN):
		s.live.Store(true)
		return true, nil
	case errors.Is(err, syscall.EPIPE):
		s.mu.Lock()
		s.stats.Overruns++
		s.mu.Unlock()
		return false, nil
	case errors.Is(err, syscall.EINTR):
		return false, nil
	}
	return false, err
}

// tailFile tails a regular file (or anything else that is not a character
// device) until ctx is done or the file cannot be read.
func (s *Source) tailFile(ctx context.Context, fromStart bool) error {
	path := s.opts.KmsgPath
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("kernel log: %w", err)
	}
	defer func() { f.Close() }()
	t := &tailer{s: s, r: bufio.NewReaderSize(f, 64<<10)}
	cur, err := f.Stat()
	if err != nil {
		return fmt.Errorf("kernel log: %w", err)
	}
	// Where to start: where a previous Run left this same file, else at the end
	// (only new lines) or the start.
	off, whence := int64(0), io.SeekStart
	switch {
	case s.resume.info != nil:
		if os.SameFile(cur, s.resume.info) && cur.Size() >= s.resume.off {
			off = s.resume.off
		}
	case !fromStart:
		whence = io.SeekEnd
	}
	if off != 0 || whence != io.SeekStart {
		if t.off, err = f.Seek(off, whence); err != nil {
			return fmt.Errorf("kernel log: seek in %s: %w", path, err)
		}
		s.live.Store(true)
	}
	s.setReadErr(nil)
	s.opened = true
	for {
		if err := t.drain(); err != nil {
			return fmt.Errorf("kernel log: read %s: %w", path, err)
		}
		s.live.Store(true)
		// Truncated, or replaced by a new file?
		cur, err := f.Stat()
		if err != nil {
			return fmt.Errorf("kernel log: %w", err)
		}
		s.resume.info, s.resume.off = cur, t.off-int64(len(t.partial))
		now, err := os.Stat(path)
		switch {
		case err == nil && !os.SameFile(cur, now):
			nf, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("kernel log: %w", err)
			}
			f.Close()
			f = nf
			t.reset(f)
			s.mu.Lock()
			s.stats.Rotations++
			s.mu.Unlock()
			continue // read the new file from its start at once
		case cur.Size() < t.off:
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("kernel log: seek to start of %s: %w", path, err)
			}
			t.reset(f)
			s.mu.Lock()
			s.stats.Truncations++
			s.mu.Unlock()
			continue
		}
		if !sleep(ctx, s.poll) {
			return nil
		}
	}
}

// tailer splits a file into lines as it grows.
type tailer struct {
	s       *Source
	r       *bufio.Reader
	off     int64  // bytes consumed
	partial []byte // an unfinished last line
	// stale: the unfinished line did not grow over a whole poll, so it is
	// handled as it is (a file whose writer never ends its last line);
	// skipRest then drops what the writer adds to it after all.
	stale    bool
	skipRest bool
}

func (t *tailer) reset(f *os.File) {
	t.r.Reset(f)
	t.off = 0
	t.partial = t.partial[:0]
	t.stale, t.skipRest = false, false
	t.s.mu.Lock()
	t.s.haveSeq = false
	t.s.mu.Unlock()
}

// drain reads and handles every complete line available; it returns nil at the
// end of the file.
func (t *tailer) drain() error {
	live := t.s.live.Load()
	defer t.s.drains.Add(1)
	for {
		line, err := t.r.ReadSlice('\n')
		t.off += int64(len(line))
		if len(line) > 0 {
			t.stale = false
		}
		if t.skipRest {
			if err == nil {
				t.skipRest = false
			}
			if err == nil || errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			line = line[:0]
		}
		switch {
		case err == nil:
			if len(t.partial) > 0 {
				t.partial = appendBounded(t.partial, line)
				line = t.partial
				t.partial = t.partial[:0]
			}
			t.s.handleLine(line, live)
		case errors.Is(err, bufio.ErrBufferFull):
			t.partial = appendBounded(t.partial, line)
		case errors.Is(err, io.EOF):
			// An unfinished line waits for the rest of it, for one poll.
			t.partial = appendBounded(t.partial, line)
			if len(t.partial) > 0 && t.stale {
				t.s.handleLine(t.partial, live)
				t.partial = t.partial[:0]
				t.skipRest = true
			}
			t.stale = len(t.partial) > 0
			return nil
		default:
			return err
		}
	}
}

func appendBounded(dst, b []byte) []byte {
	if room := maxLine - len(dst); room < len(b) {
		b = b[:max(room, 0)]
	}
	return append(dst, b...)
}

var (
	nvrmBytes     = []byte(nvrm)
	sxidBytes     = []byte(sxidMarker)
	nvswitchBytes = []byte(nvswitchPrefix)
)

// driverLine returns where the driver's part of a log line starts: its "NVRM: "
// or, on an SXid line, its "nvidia-nvswitchN"; -1 on other lines.
func driverLine(line []byte) int {
	if i := bytes.Index(line, nvrmBytes); i >= 0 {
		return i
	}
	if j := bytes.Index(line, sxidBytes); j >= 0 {
		return bytes.LastIndex(line[:j], nvswitchBytes)
	}
	return -1
}

// handleLine handles one line of a log file: a kmsg record ("4,1234,5678901,-;…",
// the simulator's and `cat /dev/kmsg`'s format) or a dmesg/journalctl line.
func (s *Source) handleLine(line []byte, live bool) {
	line = bytes.TrimRight(line, "\r\n")
	s.lines.Add(1)
	if len(line) == 0 || line[0] == ' ' { // a kmsg dictionary line
		return
	}
	if line[0] >= '0' && line[0] <= '9' && looksLikeKmsg(string(line[:min(len(line), 64)])) {
		s.handleRecord(line, live)
		return
	}
	i := driverLine(line)
	if i < 0 {
		return
	}
	str := string(line)
	l, ok := ParseLine(str)
	if !ok {
		return
	}
	arrived := s.now()
	boot, haveBoot := s.bootTime()
	at, ok := textTime(str[:i], boot, haveBoot)
	if !ok {
		at = arrived
	}
	s.observeLog(l, at, arrived, live)
}

// handleRecord handles one kmsg record; live says the reader has caught up
// with the log's history.
func (s *Source) handleRecord(rec []byte, live bool) {
	// Sequence numbers first, for every record: gaps are records lost.
	seq, seqOK := kmsgSeq(rec)
	if seqOK {
		s.mu.Lock()
		if s.haveSeq && seq > s.lastSeq+1 {
			s.stats.RecordsLost += seq - s.lastSeq - 1
		}
		s.lastSeq, s.haveSeq = seq, true
		s.mu.Unlock()
	}
	if driverLine(rec) < 0 {
		return
	}
	r, err := ParseKmsgRecord(string(rec))
	if err != nil || r.Facility != 0 {
		// Malformed, or written by a process (facility != 0): a process cannot
		// forge a kernel line in /dev/kmsg.
		s.mu.Lock()
		s.stats.Ignored++
		s.mu.Unlock()
		return
	}
	l, ok := ParseLine(r.Message)
	if !ok {
		return
	}
	arrived := s.now()
	at := arrived
	if boot, ok := s.bootTime(); ok {
		at = boot.Add(r.SinceBoot)
	}
	s.observeLog(l, at, arrived, live)
}

// kmsgSeq reads the sequence number of a kmsg record cheaply.
func kmsgSeq(rec []byte) (uint64, bool) {
	c1 := bytes.IndexByte(rec, ',')
	if c1 < 0 {
		return 0, false
	}
	rest := rec[c1+1:]
	c2 := bytes.IndexByte(rest, ',')
	if c2 <= 0 || c2 > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range rest[:c2] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// systemBootTime returns when the machine booted: now minus /proc/uptime
// (CLOCK_BOOTTIME, centisecond resolution), else /proc/stat's btime (seconds).
func systemBootTime(now time.Time) (time.Time, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err == nil {
		f := strings.Fields(string(b))
		if len(f) > 0 {
			if d, ok := secondsSinceBoot(f[0]); ok {
				return now.Add(-d), nil
			}
		}
	}
	b, err2 := os.ReadFile("/proc/stat")
	if err2 != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", errors.Join(err, err2))
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time: /proc/stat btime %q: %w", v, err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, errors.New("boot time: no btime in /proc/stat")
}
