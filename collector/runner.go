package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// RunnerOptions configure the collection loop.
type RunnerOptions struct {
	// Sources in registry order; Derivers run after them in every cycle.
	Sources  []Source
	Derivers []Deriver
	// Inventory is the node's GPUs; it rides along in every snapshot.
	Inventory *Inventory
	// Interval is the full collection schedule (every field of every source).
	Interval time.Duration
	// HealthInterval is the short schedule for HealthCollector sources; a full
	// cycle replaces every Interval/HealthInterval-th health tick (rounded down).
	// Zero or a value not below Interval means one schedule.
	HealthInterval time.Duration
	// Timeout bounds one source's collection in every cycle. Zero means the
	// health interval in health cycles and the full interval in full cycles, so a
	// slow first discovery (topology, DCGM's connect) is not cut short.
	Timeout time.Duration
	// OnPublish is called with every published snapshot, on the loop's goroutine
	// (the agent publishes it to the exporter and hands it to the shipper there).
	OnPublish func(*Snapshot)
	Logger    *slog.Logger
	// Now is the clock that stamps samples and snapshots; nil means time.Now. The
	// demo and --simulate pass simulated time. Durations are always measured on
	// the wall clock.
	Now func() time.Time
}

// Runner collects every source on its schedule and publishes immutable snapshots.
// A scrape or API call reads the last snapshot and never touches the hardware.
type Runner struct {
	opts    RunnerOptions
	slots   []*slot
	current atomic.Pointer[Snapshot]
	cycles  atomic.Uint64
	gens    atomic.Uint64 // numbers the collections: SamplePart.Gen
}

// slot is one source's state between cycles. busy guards against calling a source
// that overran its timeout again before it returned.
type slot struct {
	src    Source
	health HealthCollector // nil when the source has no health tier

	busy atomic.Bool

	mu       sync.Mutex
	until    time.Time // the running call's deadline (wall clock)
	full     []telemetry.Sample
	fast     []telemetry.Sample
	fullGen  uint64 // the collection full came from
	fastGen  uint64
	status   SourceStatus
	reported string // the error last logged, to log each distinct error once
}

// NewRunner checks the options and builds a runner.
func NewRunner(opts RunnerOptions) (*Runner, error) {
	if opts.Interval <= 0 {
		return nil, fmt.Errorf("collection interval %s: must be positive", opts.Interval)
	}
	if opts.HealthInterval <= 0 || opts.HealthInterval >= opts.Interval {
		opts.HealthInterval = opts.Interval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Runner{opts: opts}
	seen := map[string]bool{}
	for _, s := range opts.Sources {
		if seen[s.Name()] {
			return nil, fmt.Errorf("source %q registered twice", s.Name())
		}
		seen[s.Name()] = true
		sl := &slot{src: s, status: SourceStatus{Name: s.Name()}}
		if h, ok := s.(HealthCollector); ok {
			sl.health = h
		}
		r.slots = append(r.slots, sl)
	}
	return r, nil
}

// timeout is the per-source bound of a cycle.
func (r *Runner) timeout(full bool) time.Duration {
	switch {
	case r.opts.Timeout > 0:
		return r.opts.Timeout
	case full:
		return r.opts.Interval
	}
	return r.opts.HealthInterval
}

// ticksPerFull is how many health ticks make one full interval.
func (r *Runner) ticksPerFull() int {
	n := int(r.opts.Interval / r.opts.HealthInterval)
	return max(n, 1)
}

// Run collects until ctx is done: a full cycle at once, then a health cycle every
// HealthInterval and a full one every Interval.
func (r *Runner) Run(ctx context.Context) error {
	t := time.NewTicker(r.opts.HealthInterval)
	defer t.Stop()
	n := r.ticksPerFull()
	for tick := 0; ; tick++ {
		r.cycle(ctx, tick%n == 0, true)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Snapshot returns the last published snapshot, or nil before the first cycle.
func (r *Runner) Snapshot() *Snapshot { return r.current.Load() }

// Cycles returns the number of cycles run.
func (r *Runner) Cycles() uint64 { return r.cycles.Load() }

// Cycle runs one collection cycle (full: every source's Collect and CollectHealth;
// otherwise only CollectHealth), then the derivers, publishes the snapshot and
// returns it. Sources run concurrently; one that overruns the timeout serves no
// samples, is reported down with a timeout error, and is not called again until
// its pending call returns.
func (r *Runner) Cycle(ctx context.Context, full bool) *Snapshot {
	return r.cycle(ctx, full, false)
}

// cycle is Cycle. scheduled (Run's cycles) bounds the wait of a full cycle by
// what a health cycle may take: a source's full collection that takes longer
// goes on in the background until its own timeout, keeping its previous samples
// meanwhile, and a later cycle publishes what it read. So a source that hangs in
// its full tier costs the health schedule nothing, not a full interval.
func (r *Runner) cycle(ctx context.Context, full, scheduled bool) *Snapshot {
	var wg sync.WaitGroup
	for _, sl := range r.slots {
		if !full && sl.health == nil {
			continue
		}
		if !sl.busy.CompareAndSwap(false, true) {
			sl.mu.Lock()
			pending := time.Now().Before(sl.until)
			sl.mu.Unlock()
			if !pending {
				sl.fail(r, errors.New("previous collection still running"), 0)
			}
			continue
		}
		sl.mu.Lock()
		sl.until = time.Now().Add(r.timeout(full))
		sl.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.collect(ctx, sl, full)
		}()
	}
	if wait := r.timeout(false); scheduled && full && wait < r.timeout(true) {
		all := make(chan struct{})
		go func() { wg.Wait(); close(all) }()
		t := time.NewTimer(wait)
		select {
		case <-all:
		case <-t.C:
		}
		t.Stop()
	} else {
		wg.Wait()
	}

	now := r.opts.Now()
	snap := &Snapshot{Time: now, Inventory: r.opts.Inventory}
	total := 0
	for _, sl := range r.slots {
		sl.mu.Lock()
		total += len(sl.full) + len(sl.fast)
		sl.mu.Unlock()
	}
	snap.Samples = make([]telemetry.Sample, 0, total+64)
	snap.Sources = make([]SourceStatus, 0, len(r.slots)+len(r.opts.Derivers))
	snap.Parts = make([]SamplePart, 0, 2*len(r.slots)+len(r.opts.Derivers))
	for _, sl := range r.slots {
		sl.mu.Lock()
		snap.Samples = append(snap.Samples, sl.full...)
		snap.Parts = appendPart(snap.Parts, len(snap.Samples), sl.fullGen)
		snap.Samples = append(snap.Samples, sl.fast...)
		snap.Parts = appendPart(snap.Parts, len(snap.Samples), sl.fastGen)
		snap.Sources = append(snap.Sources, sl.status)
		sl.mu.Unlock()
	}
	for _, d := range r.opts.Derivers {
		start, t0 := r.opts.Now(), time.Now()
		dctx, cancel := context.WithTimeout(ctx, r.timeout(full))
		var derived []telemetry.Sample
		err := d.Derive(dctx, snap, func(s telemetry.Sample) {
			if s.Time.IsZero() {
				s.Time = start
			}
			derived = append(derived, s)
		})
		cancel()
		st := SourceStatus{Name: d.Name(), Up: err == nil, Duration: time.Since(t0), Samples: len(derived)}
		if err != nil {
			st.Err = err.Error()
			r.opts.Logger.Warn("deriver failed", telemetry.LabelSource, d.Name(), "err", err)
		} else {
			st.LastSuccess = start
		}
		snap.Samples = append(snap.Samples, derived...)
		snap.Parts = appendPart(snap.Parts, len(snap.Samples), r.gens.Add(1))
		snap.Sources = append(snap.Sources, st)
	}
	r.current.Store(snap)
	r.cycles.Add(1)
	if r.opts.OnPublish != nil {
		r.opts.OnPublish(snap)
	}
	return snap
}

// appendPart ends a part of a snapshot's samples at end; an empty one is left out.
func appendPart(parts []SamplePart, end int, gen uint64) []SamplePart {
	if len(parts) > 0 && parts[len(parts)-1].End == end || len(parts) == 0 && end == 0 {
		return parts
	}
	return append(parts, SamplePart{End: end, Gen: gen})
}

// collect runs one source's collection with the per-source timeout. A call that
// outlives the timeout finishes in the background; its samples are dropped.
func (r *Runner) collect(ctx context.Context, sl *slot, full bool) {
	start, t0 := r.opts.Now(), time.Now()
	timeout := r.timeout(full)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	type result struct {
		full, fast []telemetry.Sample
		err        error
	}
	done := make(chan result, 1)
	go func() {
		defer sl.busy.Store(false)
		var res result
		stamp := func(dst *[]telemetry.Sample) func(telemetry.Sample) {
			return func(s telemetry.Sample) {
				if s.Time.IsZero() {
					s.Time = start
				}
				*dst = append(*dst, s)
			}
		}
		var errs []error
		if sl.health != nil {
			sl.mu.Lock()
			res.fast = make([]telemetry.Sample, 0, len(sl.fast))
			sl.mu.Unlock()
			if err := sl.health.CollectHealth(cctx, stamp(&res.fast)); err != nil {
				errs = append(errs, err)
			}
		}
		if full {
			sl.mu.Lock()
			res.full = make([]telemetry.Sample, 0, len(sl.full))
			sl.mu.Unlock()
			if err := sl.src.Collect(cctx, stamp(&res.full)); err != nil {
				errs = append(errs, err)
			}
		}
		res.err = errors.Join(errs...)
		done <- res
	}()
	var res result
	select {
	case res = <-done:
	case <-cctx.Done():
		cancel()
		// What the source said last is no longer known to be true: serve nothing
		// rather than stale values that look fresh.
		sl.mu.Lock()
		sl.full, sl.fast = nil, nil
		sl.status.Samples = 0
		sl.mu.Unlock()
		sl.fail(r, fmt.Errorf("collection timed out after %s", timeout), time.Since(t0))
		return
	}
	cancel()
	dur := time.Since(t0)
	if errors.Is(res.err, ErrNoDevices) {
		res.err = nil
	}
	sl.mu.Lock()
	// A failed collection keeps the samples it emitted; what it could not read is
	// absent, so nothing stale is served as if it were fresh.
	if sl.health != nil {
		sl.fast, sl.fastGen = res.fast, r.gens.Add(1)
	}
	if full {
		sl.full, sl.fullGen = res.full, r.gens.Add(1)
	}
	sl.status.Duration = dur
	sl.status.Samples = len(sl.full) + len(sl.fast)
	if len(res.full)+len(res.fast) > 0 {
		sl.status.LastData = start
	}
	sl.mu.Unlock()
	if res.err != nil {
		sl.fail(r, res.err, dur)
		return
	}
	sl.mu.Lock()
	sl.status.Up = true
	sl.status.Err = ""
	sl.status.LastSuccess = start
	sl.reported = ""
	sl.mu.Unlock()
}

// fail records a failed collection and logs each distinct error once.
func (sl *slot) fail(r *Runner, err error, dur time.Duration) {
	sl.mu.Lock()
	sl.status.Up = false
	sl.status.Err = err.Error()
	sl.status.Errors++
	if dur > 0 {
		sl.status.Duration = dur
	}
	logIt := sl.reported != sl.status.Err
	sl.reported = sl.status.Err
	sl.mu.Unlock()
	if logIt {
		r.opts.Logger.Warn("source failed", telemetry.LabelSource, sl.src.Name(), "err", err)
	}
}
