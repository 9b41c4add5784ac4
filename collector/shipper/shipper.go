package shipper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Reasons a sample is dropped: the values of gpuwatch_shipper_samples_dropped_total's
// reason label.
const (
	reasonQueueFull = "queue_full"
	reasonRejected  = "rejected"
	reasonCorrupt   = "corrupt"
)

// Defaults.
const (
	DefaultMaxBytes     = 256 << 20
	DefaultBatchSamples = 2000
	DefaultTimeout      = 30 * time.Second
	DefaultBackoffMin   = 100 * time.Millisecond
	DefaultBackoffMax   = 10 * time.Second
	DefaultSyncInterval = time.Second
	// pendingSnapshots bounds the snapshots waiting for the encoder; past it the
	// oldest is dropped (the encoder is stuck, e.g. on a hung disk).
	pendingSnapshots = 64
)

// Options configure a Shipper. Zero values take the defaults.
type Options struct {
	// URL is the remote-write 1.0 endpoint: http(s)://host:port/api/v1/write.
	URL string
	// QueueDir holds the on-disk queue; "" keeps it in memory (same bound, lost
	// on restart).
	QueueDir string
	// MaxBytes bounds the queued data (default 256 MiB); past it the oldest is
	// dropped.
	MaxBytes int64
	// SegmentBytes is the size at which an on-disk segment is closed and a new one
	// started (default min(8 MiB, MaxBytes/4)).
	SegmentBytes int64
	// SyncInterval is the longest a written record waits for fsync (default 1s;
	// negative: fsync after every record).
	SyncInterval time.Duration
	// UnchangedInterval is the longest a series whose value has not changed goes
	// without being shipped again; a changed value ships at once. 0 ships every
	// sample collected (the agent passes its full-cycle interval, so the 1 s
	// health cycle costs the store only its changes).
	UnchangedInterval time.Duration
	// BatchSamples is the most samples in one request (default 2000).
	BatchSamples int
	// Timeout bounds one request (default 30s).
	Timeout time.Duration
	// BackoffMin and BackoffMax bound the wait between retries (default 100ms,
	// 10s); the wait doubles after each failure.
	BackoffMin, BackoffMax time.Duration
	// ExtraLabels are added to every shipped series that lacks them (the agent
	// passes node, and the instance and job a scrape of it would add).
	ExtraLabels telemetry.Labels
	// Version goes into the User-Agent (gpuwatch/<version>).
	Version string
	// Client sends the requests (default: a client of its own).
	Client *http.Client
	Logger *slog.Logger
	// Now is the clock for the last-send time and fsync pacing; nil means time.Now.
	Now func() time.Time
}

// Stats are the shipper's counters.
type Stats struct {
	SamplesSent    uint64
	Dropped        map[string]uint64 // by reason
	QueueBytes     int64
	QueueSamples   int64
	SendErrors     uint64
	LastSend       time.Time
	RequestsSent   uint64
	PendingSamples int // series of enqueued snapshots not yet in the queue
}

// Shipper sends the agent's samples to a remote-write endpoint through a bounded
// queue. Enqueue feeds it, Run sends; it is a collector.Source for its own metrics.
type Shipper struct {
	opts   Options
	ua     string
	target string // the URL without credentials, for logs
	q      *queue
	enc    *encoder
	log    *slog.Logger

	pmu      sync.Mutex
	pending  []*collector.Exposition
	encoding int // series of the snapshots being encoded
	wake     chan struct{}

	sent, sendErrors, requests atomic.Uint64
	lastSend                   atomic.Int64 // unix nanoseconds
	dmu                        sync.Mutex
	dropped                    map[string]uint64

	runMu   sync.Mutex
	running bool
	closed  bool
}

// New checks the options and opens the queue (replaying nothing yet: Run sends).
func New(opts Options) (*Shipper, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("remote-write URL %q: %w", opts.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote-write URL %q: want http(s)://host:port/api/v1/write", opts.URL)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.BatchSamples == 0 {
		opts.BatchSamples = DefaultBatchSamples
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.BackoffMin == 0 {
		opts.BackoffMin = DefaultBackoffMin
	}
	if opts.BackoffMax == 0 {
		opts.BackoffMax = DefaultBackoffMax
	}
	if opts.SyncInterval == 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	switch {
	case opts.MaxBytes < 0:
		return nil, fmt.Errorf("remote-write queue bound %d bytes: must be positive", opts.MaxBytes)
	case opts.UnchangedInterval < 0:
		return nil, fmt.Errorf("remote-write unchanged interval %s: must not be negative", opts.UnchangedInterval)
	case opts.BatchSamples < 0:
		return nil, fmt.Errorf("remote-write batch of %d samples: must be positive", opts.BatchSamples)
	case opts.Timeout < 0 || opts.BackoffMin < 0 || opts.BackoffMax < opts.BackoffMin:
		return nil, fmt.Errorf("remote-write timeout %s, back-off %s..%s: want positive durations, min ≤ max", opts.Timeout, opts.BackoffMin, opts.BackoffMax)
	}
	for _, l := range opts.ExtraLabels {
		if !validLabelName(l.Name) {
			return nil, fmt.Errorf("remote-write extra label %q: not a valid label name", l.Name)
		}
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, MaxIdleConns: 2, IdleConnTimeout: 90 * time.Second,
			ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second,
		}}
	}
	s := &Shipper{opts: opts, ua: "gpuwatch/" + opts.Version, target: redact(u), log: opts.Logger.With("remote_write", redact(u)),
		wake: make(chan struct{}, 1), dropped: map[string]uint64{}}
	s.enc = newEncoder(opts.ExtraLabels, opts.BatchSamples, opts.UnchangedInterval)
	s.q, err = openQueue(queueOptions{dir: opts.QueueDir, maxBytes: opts.MaxBytes, segmentBytes: opts.SegmentBytes,
		syncInterval: opts.SyncInterval, logger: s.log, now: opts.Now, dropped: s.drop})
	if err != nil {
		return nil, err
	}
	if b, n := s.q.stats(); n > 0 {
		s.log.Info("remote-write queue holds unsent samples from before; they are sent first", "samples", n, "bytes", b)
	}
	return s, nil
}

func redact(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("xxx")
	}
	return c.String()
}

func validLabelName(n string) bool {
	if n == "" {
		return false
	}
	for i, c := range n {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (s *Shipper) drop(reason string, samples int) {
	s.dmu.Lock()
	s.dropped[reason] += uint64(samples)
	s.dmu.Unlock()
}

// Enqueue hands a published snapshot, as the exporter exposes it
// (Exporter.Publish), to the shipper. It never blocks: it appends to a short list
// the encoder drains; if the encoder is far behind (64 snapshots) the oldest
// snapshot waiting is dropped and its series counted as queue_full (an upper
// bound: the encoder would have skipped those already sent). The exposition is
// shared, not copied: it is immutable.
func (s *Shipper) Enqueue(x *collector.Exposition) {
	if x == nil || x.Snapshot() == nil {
		return
	}
	s.pmu.Lock()
	if len(s.pending) >= pendingSnapshots {
		s.drop(reasonQueueFull, s.pending[0].Len())
		s.pending[0] = nil
		s.pending = s.pending[1:]
	}
	s.pending = append(s.pending, x)
	s.pmu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// encodePending moves every waiting snapshot into the queue.
func (s *Shipper) encodePending() {
	s.pmu.Lock()
	batch := s.pending
	s.pending = nil
	for _, x := range batch {
		s.encoding += x.Len()
	}
	s.pmu.Unlock()
	for i, x := range batch {
		s.enc.encode(x, func(data []byte, n int) {
			if err := s.q.append(data, n); err != nil {
				s.log.Error("remote-write queue: cannot store samples", "samples", n, "err", err)
			}
		})
		s.pmu.Lock()
		s.encoding -= x.Len()
		s.pmu.Unlock()
		batch[i] = nil
	}
}

// Run encodes enqueued snapshots and sends the queue, in order, until ctx is
// done; then it stores what is still waiting (so a restart on the same QueueDir
// sends it) and closes the queue. It returns nil when ctx ends it.
func (s *Shipper) Run(ctx context.Context) error {
	s.runMu.Lock()
	if s.running || s.closed {
		s.runMu.Unlock()
		return errors.New("remote-write shipper: Run called twice")
	}
	s.running = true
	s.runMu.Unlock()

	encDone := make(chan struct{})
	go func() {
		defer close(encDone)
		// fsync pacing: only a queue on disk has anything to sync.
		var syncs <-chan time.Time
		if s.opts.QueueDir != "" {
			tick := time.NewTicker(max(s.opts.SyncInterval, 10*time.Millisecond))
			defer tick.Stop()
			syncs = tick.C
		}
		for {
			select {
			case <-ctx.Done():
				s.encodePending()
				return
			case <-s.wake:
				s.encodePending()
			case <-syncs:
				s.q.sync()
			}
		}
	}()
	s.send(ctx)
	<-encDone
	s.runMu.Lock()
	s.closed = true
	s.runMu.Unlock()
	s.q.close()
	return nil
}

// Close releases the queue of a shipper whose Run never ran. Run closes its own.
func (s *Shipper) Close() error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.running || s.closed {
		return nil
	}
	s.closed = true
	s.q.close()
	return nil
}

// Stats returns the shipper's counters.
func (s *Shipper) Stats() Stats {
	// The queue first: a commit moves it and then the counters, under its lock.
	var st Stats
	st.QueueBytes, st.QueueSamples = s.q.stats()
	st.SamplesSent, st.SendErrors, st.RequestsSent = s.sent.Load(), s.sendErrors.Load(), s.requests.Load()
	st.Dropped = map[string]uint64{}
	if ns := s.lastSend.Load(); ns != 0 {
		st.LastSend = time.Unix(0, ns)
	}
	s.dmu.Lock()
	for k, v := range s.dropped {
		st.Dropped[k] = v
	}
	s.dmu.Unlock()
	s.pmu.Lock()
	st.PendingSamples = s.encoding
	for _, x := range s.pending {
		st.PendingSamples += x.Len()
	}
	s.pmu.Unlock()
	return st
}

// Name implements collector.Source.
func (s *Shipper) Name() string { return "shipper" }

// Collect implements collector.Source: the shipper's self-metrics.
func (s *Shipper) Collect(_ context.Context, emit func(telemetry.Sample)) error {
	st := s.Stats()
	emit(telemetry.Sample{Name: telemetry.MetricShipperSamplesSentTotal, Value: float64(st.SamplesSent)})
	for _, r := range []string{reasonQueueFull, reasonRejected, reasonCorrupt} {
		emit(telemetry.Sample{Name: telemetry.MetricShipperSamplesDroppedTotal,
			Labels: telemetry.NewLabels(telemetry.LabelReason, r), Value: float64(st.Dropped[r])})
	}
	emit(telemetry.Sample{Name: telemetry.MetricShipperQueueBytes, Value: float64(st.QueueBytes)})
	emit(telemetry.Sample{Name: telemetry.MetricShipperQueueSamples, Value: float64(st.QueueSamples)})
	emit(telemetry.Sample{Name: telemetry.MetricShipperSendErrorsTotal, Value: float64(st.SendErrors)})
	if !st.LastSend.IsZero() {
		emit(telemetry.Sample{Name: telemetry.MetricShipperLastSendTimestampSeconds, Value: float64(st.LastSend.UnixNano()) / 1e9})
	}
	return nil
}

var _ collector.Source = (*Shipper)(nil)
