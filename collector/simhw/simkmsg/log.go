package simkmsg

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Syslog levels of the kernel facility. A Record's Priority is the syslog prefix,
// facility<<3 | level; for kernel messages (facility 0) that is the level.
const (
	LevelEmerg   = 0
	LevelAlert   = 1
	LevelCrit    = 2
	LevelErr     = 3
	LevelWarning = 4
	LevelNotice  = 5
	LevelInfo    = 6
	LevelDebug   = 7
)

// DefaultCapacity is the number of records a Log keeps before it drops the oldest,
// about what a 16 MiB kernel ring (log_buf_len=16M) holds of NVRM-sized lines.
const DefaultCapacity = 1 << 16

// DefaultDriver is the driver version a Log prints like unless WithDriver says
// otherwise: an R570 production branch, the first branch that both reports the
// NVLink5 Xids (144–150) and Xid 154 and prints Xids with no owning process
// without the "pid='<unknown>', name=<unknown>, " part.
const DefaultDriver = "570.124.06"

// Record is one kernel log record.
type Record struct {
	// Seq is the kernel's record sequence number: 0 for the first record after
	// boot, +1 for each record, never reused.
	Seq uint64
	// Time is when the record was logged (boot plus the monotonic timestamp).
	Time time.Time
	// Priority is the syslog prefix: facility<<3 | level (LevelWarning, …).
	Priority int
	// Message is the text, one line, without the trailing newline.
	Message string
}

// Log is the kernel log ring of one simulated node.
type Log struct {
	boot     time.Time
	driver   string
	major    int // driver branch, e.g. 570
	hostname string

	mu       sync.Mutex
	capacity int      // records the ring keeps
	buf      []Record // the ring; grows up to capacity as records come
	start    int      // index of the oldest record in buf
	n        int      // records held
	next     uint64   // Seq of the next record
	last     time.Time
	gpus     map[string]*gpu // by NVRM bus id, "0000:9b:00"
	ngpus    int
	actions  map[string]RecoveryAction // last Xid 154 recovery action, by bus id
	dropped  uint64

	wmu sync.Mutex
	pos map[string]uint64 // AppendTo path -> next Seq to write
}

// gpu is what the simulated driver knows of one GPU.
type gpu struct {
	index        int // the driver's GPU instance number, in attach order
	uuid, serial string
	logged       bool // mapping lines printed since attach
}

// Option configures a Log.
type Option func(*Log)

// WithCapacity sets how many records the ring keeps (DefaultCapacity if n < 1).
func WithCapacity(n int) Option {
	return func(l *Log) {
		if n > 0 {
			l.capacity = n
		}
	}
}

// WithDriver sets the NVIDIA driver version the log is printed by, e.g.
// "550.144.03". The branch decides two formats: before R570 an Xid with no owning
// process prints "pid='<unknown>', name=<unknown>, "; before R575 the NVLink5 Xids
// carry the V1 IntrInfo encoding and six words, from R575 the V2 encoding and four.
func WithDriver(version string) Option {
	return func(l *Log) { l.driver = version }
}

// WithHostname sets the host name syslog and journal lines carry ("localhost" by
// default).
func WithHostname(name string) Option {
	return func(l *Log) { l.hostname = name }
}

// New returns an empty log of a node that booted at boot.
func New(boot time.Time, opts ...Option) *Log {
	l := &Log{
		boot:     boot,
		driver:   DefaultDriver,
		hostname: "localhost",
		gpus:     make(map[string]*gpu),
		actions:  make(map[string]RecoveryAction),
		pos:      make(map[string]uint64),
		last:     boot,
	}
	for _, o := range opts {
		o(l)
	}
	if l.capacity == 0 {
		l.capacity = DefaultCapacity
	}
	l.major = driverMajor(l.driver)
	return l
}

// driverMajor returns the branch of a version like "550.144.03"; an unparsable
// version counts as the newest behaviour.
func driverMajor(v string) int {
	var major int
	if _, err := fmt.Sscanf(v, "%d", &major); err != nil || major <= 0 {
		return 1 << 30
	}
	return major
}

// Boot returns the boot time the log's timestamps count from.
func (l *Log) Boot() time.Time { return l.boot }

// Driver returns the driver version the log prints like.
func (l *Log) Driver() string { return l.driver }

// Hostname returns the host name of syslog and journal lines.
func (l *Log) Hostname() string { return l.hostname }

// Printf logs a formatted message at priority (a syslog prefix such as
// LevelInfo). A message with embedded newlines becomes one record per line, as
// separate printk calls would.
func (l *Log) Printf(at time.Time, priority int, format string, args ...any) {
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	at = l.clamp(at)
	for line := range strings.SplitSeq(msg, "\n") {
		l.appendLocked(at, priority, line)
	}
}

// Since returns the records with Seq >= seq that the ring still holds, oldest
// first. When the first record returned has a Seq above seq, the records between
// were dropped from the full ring before anyone read them (the kernel answers
// EPIPE on /dev/kmsg in that case).
func (l *Log) Since(seq uint64) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.next - uint64(l.n)
	if seq < first {
		seq = first
	}
	if seq >= l.next {
		return nil
	}
	out := make([]Record, 0, l.next-seq)
	for i := int(seq - first); i < l.n; i++ {
		out = append(out, l.buf[(l.start+i)%l.capacity])
	}
	return out
}

// Next returns the Seq the next record will get.
func (l *Log) Next() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Dropped returns how many records the ring has dropped to make room.
func (l *Log) Dropped() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// clamp keeps timestamps monotone: never before boot or before the previous
// record (the kernel stamps records with a monotonic clock). l.mu must be held.
func (l *Log) clamp(at time.Time) time.Time {
	if at.Before(l.last) {
		at = l.last
	}
	return at.In(l.boot.Location())
}

// appendLocked adds one record. l.mu must be held.
func (l *Log) appendLocked(at time.Time, priority int, msg string) {
	r := Record{Seq: l.next, Time: at, Priority: priority, Message: msg}
	if l.n < l.capacity {
		// Until the ring is full its oldest record is at 0 (start moves
		// only when it is full, skipLocked resets it), so the next slot is
		// at most one past the end of what was allocated so far.
		if i := (l.start + l.n) % l.capacity; i < len(l.buf) {
			l.buf[i] = r
		} else {
			l.buf = append(l.buf, r)
		}
		l.n++
	} else {
		l.buf[l.start] = r
		l.start = (l.start + 1) % l.capacity
		l.dropped++
	}
	l.next++
	l.last = at
}

// skipLocked accounts for n records that are logged and then pushed out of the
// ring by at least capacity records that follow at once: the records the ring
// holds now are dropped too. l.mu must be held.
func (l *Log) skipLocked(n uint64, last time.Time) {
	l.dropped += uint64(l.n) + n
	l.start, l.n = 0, 0
	l.next += n
	l.last = last
}
