package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// Defaults for Options fields left zero.
const (
	DefaultRetention        = 15 * 24 * time.Hour
	DefaultOutOfOrderWindow = 2 * time.Hour
	DefaultMaxSamples       = 50_000_000 // samples one query may hold in memory (Prometheus's default)
	DefaultQueryTimeout     = 2 * time.Minute
	DefaultLookbackDelta    = 5 * time.Minute
	DefaultMinFreeBytes     = 64 << 20
)

// Options configure Open. Only Dir is required.
type Options struct {
	// Dir holds the WAL and the blocks; it is created when missing.
	Dir string
	// Retention drops blocks older than this; 0 means DefaultRetention (15 days).
	Retention time.Duration
	// MaxBytes caps the size of the blocks on disk, oldest dropped first; 0 means no
	// cap.
	MaxBytes int64
	// OutOfOrderWindow accepts samples up to this far behind the newest one, so an
	// agent can replay samples it buffered during an outage with their original
	// timestamps; 0 means DefaultOutOfOrderWindow (2 h), negative disables it.
	OutOfOrderWindow time.Duration
	// MinFreeBytes is the free space Append keeps on the data directory's file
	// system: below it, and on a read-only one, writes are refused with
	// store.ErrUnavailable before anything reaches the WAL (see Append). 0 means
	// DefaultMinFreeBytes (64 MiB); negative disables the check.
	MinFreeBytes int64
	// Logger receives the TSDB's and the engine's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the TSDB's and the engine's own metrics; nil registers
	// nothing.
	Registerer prometheus.Registerer

	// MaxSamples, QueryTimeout and LookbackDelta configure the PromQL engine; zero
	// means DefaultMaxSamples, DefaultQueryTimeout and DefaultLookbackDelta.
	MaxSamples    int
	QueryTimeout  time.Duration
	LookbackDelta time.Duration
}

// Store is the embedded TSDB and its PromQL engine. It is safe for concurrent use.
type Store struct {
	db     *tsdb.DB
	engine *promql.Engine
	opts   Options
	log    *slog.Logger

	mu     sync.Mutex
	failed error // a write to the WAL failed: writes are refused until a restart
}

var (
	_ store.Appender = (*Store)(nil)
	_ store.Querier  = (*Store)(nil)
)

// Open opens (or creates) the store in opts.Dir, replaying the WAL of an earlier run.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("embedded store: Options.Dir is empty; give a data directory")
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("embedded store: retention %s is negative", opts.Retention)
	}
	if opts.MaxBytes < 0 {
		return nil, fmt.Errorf("embedded store: max bytes %d is negative", opts.MaxBytes)
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	if opts.OutOfOrderWindow == 0 {
		opts.OutOfOrderWindow = DefaultOutOfOrderWindow
	}
	if opts.OutOfOrderWindow < 0 {
		opts.OutOfOrderWindow = 0
	}
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = DefaultMaxSamples
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = DefaultQueryTimeout
	}
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = DefaultLookbackDelta
	}
	if opts.MinFreeBytes == 0 {
		opts.MinFreeBytes = DefaultMinFreeBytes
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded store: data directory %s: %w", opts.Dir, err)
	}

	to := tsdb.DefaultOptions()
	to.RetentionDuration = opts.Retention.Milliseconds()
	to.MaxBytes = opts.MaxBytes
	to.OutOfOrderTimeWindow = opts.OutOfOrderWindow.Milliseconds()
	// Blocks are compacted into larger ones up to a tenth of the retention
	// (at most 31 days), as Prometheus's own server sets it: the library's
	// default keeps every 2-hour block, and a week's query then opens 84.
	to.MaxBlockDuration = max(to.MinBlockDuration, min(opts.Retention.Milliseconds()/10, (31*24*time.Hour).Milliseconds()))
	db, err := tsdb.Open(opts.Dir, logger.With("component", "tsdb"), opts.Registerer, to, nil)
	if err != nil {
		return nil, fmt.Errorf("embedded store: open TSDB in %s: %w", opts.Dir, err)
	}
	engine := promql.NewEngine(promql.EngineOpts{
		Logger:               logger.With("component", "promql"),
		Reg:                  opts.Registerer,
		MaxSamples:           opts.MaxSamples,
		Timeout:              opts.QueryTimeout,
		LookbackDelta:        opts.LookbackDelta,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		// A subquery without a step ([30m:]) evaluates every minute, Prometheus's
		// default global evaluation interval.
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
	})
	return &Store{db: db, engine: engine, opts: opts, log: logger}, nil
}

// Options returns the options in effect, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// Queryable is the storage the PromQL engine and the HTTP API read.
func (s *Store) Queryable() storage.Queryable { return s.db }

// Appendable is the storage's transactional appender, for receivers that already
// hold Prometheus labels (remote write): one Appender per request, Commit or
// Rollback, as Append does.
func (s *Store) Appendable() storage.Appendable { return s.db }

// Engine is the PromQL engine queries run on.
func (s *Store) Engine() *promql.Engine { return s.engine }

// ActiveSeries is the number of series in the head block: those written within
// the last few hours, what a cardinality guard limits.
func (s *Store) ActiveSeries() uint64 { return s.db.Head().NumSeries() }

// Close flushes and closes the TSDB. The store is unusable afterwards.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("embedded store: close %s: %w", s.opts.Dir, err)
	}
	return nil
}

// Append stores batch atomically: every sample is validated first, then written
// through one TSDB appender that is committed only when all were accepted; on any
// error the appender is rolled back and nothing of the batch is stored.
//
// A sample needs a valid metric name, valid label names (not __name__, no
// duplicates), UTF-8 label values and a non-zero Time. Empty label values are
// dropped, as Prometheus treats them as absent. Samples older than the
// out-of-order window are refused.
//
// A store that cannot write refuses with store.ErrUnavailable, the batch
// untouched, so that a sender keeps it and tries again: while the data
// directory's file system has less than MinFreeBytes free or is read-only
// (writes resume by themselves once it has room), and after a write to the WAL
// failed (until the store is reopened). The reason is Prometheus's WAL: a write
// cut short in the middle of a record leaves it torn, and what is written after
// the tear is acknowledged, held in memory, and dropped when the WAL is repaired
// at the next start. So the WAL is kept from meeting a full disk, and once it
// has failed nothing more is acknowledged until a restart has repaired it.
func (s *Store) Append(ctx context.Context, batch []telemetry.Sample) error {
	if len(batch) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("embedded store: append: %w", err)
	}
	if err := s.writable(); err != nil {
		return err
	}
	lsets := make([]labels.Labels, len(batch))
	b := labels.NewScratchBuilder(16)
	for i := range batch {
		ls, err := sampleLabels(&b, &batch[i])
		if err != nil {
			return fmt.Errorf("embedded store: sample %d of %d: %w", i, len(batch), err)
		}
		lsets[i] = ls
	}
	app := s.db.Appender(ctx)
	for i := range batch {
		sm := &batch[i]
		if _, err := app.Append(0, lsets[i], timestamp.FromTime(sm.Time), sm.Value); err != nil {
			_ = app.Rollback()
			return fmt.Errorf("embedded store: sample %d of %d (%s at %s): %w; nothing of the batch was stored",
				i, len(batch), lsets[i], sm.Time.UTC().Format(time.RFC3339Nano), err)
		}
	}
	if err := app.Commit(); err != nil {
		if ioError(err) {
			s.mu.Lock()
			if s.failed == nil {
				s.failed = err
				s.log.Error("embedded store: a write to the WAL failed; refusing writes until the server is restarted (the WAL is repaired at start)", "dir", s.opts.Dir, "err", err)
			}
			s.mu.Unlock()
			return fmt.Errorf("embedded store: %w: commit %d samples: %w; nothing of the batch was stored, and writes are refused until the server is restarted with %s writable (the WAL is repaired at start)",
				store.ErrUnavailable, len(batch), err, s.opts.Dir)
		}
		return fmt.Errorf("embedded store: commit %d samples: %w; nothing of the batch was stored", len(batch), err)
	}
	return nil
}

// Writable says why the store cannot take a write now, or nil: the server's
// /healthz reports it, so that a store refusing writes until a restart is
// seen.
func (s *Store) Writable() error { return s.writable() }

// writable says why the store cannot take a write now, or nil.
func (s *Store) writable() error {
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("embedded store: %w: an earlier write to the WAL in %s failed (%v); writes are refused until the server is restarted with it writable (the WAL is repaired at start, and what was acknowledged before the failure is kept)",
			store.ErrUnavailable, s.opts.Dir, failed)
	}
	if s.opts.MinFreeBytes < 0 {
		return nil
	}
	free, readOnly, err := diskSpace(s.opts.Dir)
	switch {
	case err != nil:
		return nil // no answer: the write itself will tell
	case readOnly:
		return fmt.Errorf("embedded store: %w: the data directory %s is on a read-only file system", store.ErrUnavailable, s.opts.Dir)
	case free < s.opts.MinFreeBytes:
		return fmt.Errorf("embedded store: %w: the data directory %s has %s free, less than the %s kept free so that the WAL never meets a full disk; writes resume once there is room",
			store.ErrUnavailable, s.opts.Dir, mib(free), mib(s.opts.MinFreeBytes))
	}
	return nil
}

// ioError says whether err is the file system's (a write or sync that failed)
// rather than the data's.
func ioError(err error) bool {
	var pe *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &errno)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// sampleLabels validates sm and returns its label set, __name__ included.
func sampleLabels(b *labels.ScratchBuilder, sm *telemetry.Sample) (labels.Labels, error) {
	if sm.Name == "" {
		return labels.EmptyLabels(), errors.New("metric name is empty")
	}
	if !model.LegacyValidation.IsValidMetricName(sm.Name) {
		return labels.EmptyLabels(), fmt.Errorf("metric name %q is not a valid Prometheus metric name", sm.Name)
	}
	if sm.Time.IsZero() {
		return labels.EmptyLabels(), fmt.Errorf("%s%s has no timestamp (Time is zero)", sm.Name, sm.Labels)
	}
	if ms := sm.Time.UnixMilli(); ms <= math.MinInt64/2 || ms >= math.MaxInt64/2 {
		return labels.EmptyLabels(), fmt.Errorf("%s%s: timestamp %s is out of range", sm.Name, sm.Labels, sm.Time)
	}
	b.Reset()
	b.Add(model.MetricNameLabel, sm.Name)
	for _, l := range sm.Labels {
		if l.Name == model.MetricNameLabel {
			return labels.EmptyLabels(), fmt.Errorf("%s%s: label %s is reserved; put the name in Sample.Name", sm.Name, sm.Labels, model.MetricNameLabel)
		}
		if !model.LegacyValidation.IsValidLabelName(l.Name) {
			return labels.EmptyLabels(), fmt.Errorf("%s%s: label name %q is not a valid Prometheus label name", sm.Name, sm.Labels, l.Name)
		}
		if !utf8.ValidString(l.Value) {
			return labels.EmptyLabels(), fmt.Errorf("%s: value of label %q is not valid UTF-8", sm.Name, l.Name)
		}
		if l.Value == "" {
			continue
		}
		b.Add(l.Name, l.Value)
	}
	b.Sort()
	ls := b.Labels()
	if dup, has := ls.HasDuplicateLabelNames(); has {
		return labels.EmptyLabels(), fmt.Errorf("%s%s: label %q appears twice", sm.Name, sm.Labels, dup)
	}
	return ls, nil
}

// Instant evaluates expr at time at. A scalar answer becomes one unlabelled sample;
// a range-vector or string answer is an error (use Range for series over time).
func (s *Store) Instant(ctx context.Context, expr string, at time.Time) (store.Vector, error) {
	if at.IsZero() {
		return nil, fmt.Errorf("embedded store: instant query %q: evaluation time is zero", expr)
	}
	q, err := s.engine.NewInstantQuery(ctx, s.db, nil, expr, at)
	if err != nil {
		return nil, fmt.Errorf("embedded store: instant query %q: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("embedded store: instant query %q at %s: %w", expr, at.UTC().Format(time.RFC3339), res.Err)
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		out := make(store.Vector, 0, len(v))
		for _, sm := range v {
			if sm.H != nil {
				continue // native histograms: gpuwatch writes none
			}
			out = append(out, telemetry.Sample{
				Name:   sm.Metric.Get(model.MetricNameLabel),
				Labels: toTelemetry(sm.Metric),
				Value:  sm.F,
				Time:   timestamp.Time(sm.T).UTC(),
			})
		}
		return out, nil
	case promql.Scalar:
		return store.Vector{{Value: v.V, Time: timestamp.Time(v.T).UTC()}}, nil
	default:
		return nil, fmt.Errorf("embedded store: instant query %q returned a %s, not an instant vector or scalar; use a range query", expr, res.Value.Type())
	}
}

// Range evaluates expr over r; series come sorted by labels.
func (s *Store) Range(ctx context.Context, expr string, r store.Range) (store.Matrix, error) {
	if err := checkRange(r); err != nil {
		return nil, fmt.Errorf("embedded store: range query %q: %w", expr, err)
	}
	q, err := s.engine.NewRangeQuery(ctx, s.db, nil, expr, r.Start, r.End, r.Step)
	if err != nil {
		return nil, fmt.Errorf("embedded store: range query %q: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("embedded store: range query %q from %s to %s step %s: %w", expr,
			r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339), r.Step, res.Err)
	}
	m, ok := res.Value.(promql.Matrix)
	if !ok {
		return nil, fmt.Errorf("embedded store: range query %q returned a %s, not a matrix", expr, res.Value.Type())
	}
	return FromPromQLMatrix(m), nil
}

// Samples reads the stored samples in (from, to] of the series selector
// matches (store.SampleReader): straight from the TSDB, no query engine.
func (s *Store) Samples(ctx context.Context, selector string, from, to time.Time) (store.Matrix, error) {
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("embedded store: series selector %q: %w", selector, err)
	}
	mint, maxt := from.UnixMilli()+1, to.UnixMilli()
	q, err := s.db.Querier(mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("embedded store: reading %s: %w", selector, err)
	}
	defer q.Close()
	set := q.Select(ctx, true, &storage.SelectHints{Start: mint, End: maxt}, ms...)
	var out store.Matrix
	var it chunkenc.Iterator
	for set.Next() {
		ser := set.At()
		it = ser.Iterator(it)
		var pts []store.Point
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue // native histograms: gpuwatch writes none
			}
			t, v := it.At()
			if t < mint || t > maxt || value.IsStaleNaN(v) {
				continue
			}
			pts = append(pts, store.Point{T: timestamp.Time(t).UTC(), V: v})
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("embedded store: reading %s: %w", selector, err)
		}
		if len(pts) > 0 {
			out = append(out, store.Series{Labels: toTelemetry(ser.Labels()), Points: pts})
		}
	}
	if err := set.Err(); err != nil {
		return nil, fmt.Errorf("embedded store: reading %s: %w", selector, err)
	}
	return out, nil
}

// MaxPointsPerSeries is the most points a range query may ask of one series,
// Prometheus's own limit.
const MaxPointsPerSeries = 11000

func checkRange(r store.Range) error {
	switch {
	case r.Start.IsZero() || r.End.IsZero():
		return errors.New("start or end time is zero")
	case r.End.Before(r.Start):
		return fmt.Errorf("end %s is before start %s", r.End.UTC().Format(time.RFC3339), r.Start.UTC().Format(time.RFC3339))
	case r.Step <= 0:
		return fmt.Errorf("step %s is not positive", r.Step)
	case r.End.Sub(r.Start)/r.Step > MaxPointsPerSeries:
		return fmt.Errorf("%s at step %s is more than %d points per series; use a larger step", r.End.Sub(r.Start), r.Step, MaxPointsPerSeries)
	}
	return nil
}

// FromPromQLMatrix converts an engine answer into a store.Matrix, sorted by
// labels; histogram points are left out.
func FromPromQLMatrix(m promql.Matrix) store.Matrix {
	out := make(store.Matrix, 0, len(m))
	for _, ser := range m {
		pts := make([]store.Point, len(ser.Floats))
		for i, p := range ser.Floats {
			pts[i] = store.Point{T: timestamp.Time(p.T).UTC(), V: p.F}
		}
		out = append(out, store.Series{Labels: toTelemetry(ser.Metric), Points: pts})
	}
	sort.SliceStable(out, func(i, j int) bool { return lessLabels(out[i].Labels, out[j].Labels) })
	return out
}

func lessLabels(a, b telemetry.Labels) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].Name != b[i].Name {
			return a[i].Name < b[i].Name
		}
		if a[i].Value != b[i].Value {
			return a[i].Value < b[i].Value
		}
	}
	return len(a) < len(b)
}

// toTelemetry converts Prometheus labels, __name__ included, into sorted
// telemetry.Labels.
func toTelemetry(ls labels.Labels) telemetry.Labels {
	out := make(telemetry.Labels, 0, ls.Len())
	ls.Range(func(l labels.Label) {
		out = append(out, telemetry.Label{Name: l.Name, Value: l.Value})
	})
	return out
}

// Compact compacts the head into blocks where it spans enough time and applies
// retention; the TSDB does this on its own every minute.
func (s *Store) Compact(ctx context.Context) error {
	if err := s.db.Compact(ctx); err != nil {
		return fmt.Errorf("embedded store: compact %s: %w", s.opts.Dir, err)
	}
	return nil
}
