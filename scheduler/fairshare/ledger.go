package fairshare

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

const (
	// DefaultHalfLife is Slurm's PriorityDecayHalfLife default, 7 days.
	DefaultHalfLife = 7 * 24 * time.Hour
	// DefaultStaleAfter bounds the age of the ledger's last input before Usage
	// reports ErrStale.
	DefaultStaleAfter = 5 * time.Minute
	// DefaultDedupWindow is how long the ledger remembers what it charged per
	// GPU slice and job, so that replays (an agent's disk buffer after an
	// outage) are not charged twice.
	DefaultDedupWindow = 24 * time.Hour
)

// LedgerOptions configures a Ledger. Zero durations take the defaults.
type LedgerOptions struct {
	Policy Policy
	// HalfLife is the usage decay half-life: usage *= 2^(-dt/HalfLife).
	HalfLife time.Duration
	// StaleAfter is how old the last input may be before Usage says ErrStale.
	StaleAfter time.Duration
	// DedupWindow is how far back the ledger can tell a replayed sample from a
	// new one; samples ending before (newest input − DedupWindow) are dropped
	// and counted as too old.
	DedupWindow time.Duration
}

func (o LedgerOptions) withDefaults() LedgerOptions {
	if o.HalfLife == 0 {
		o.HalfLife = DefaultHalfLife
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.DedupWindow == 0 {
		o.DedupWindow = DefaultDedupWindow
	}
	return o
}

// Validate reports the first problem with the options (after defaults).
func (o LedgerOptions) Validate() error {
	o = o.withDefaults()
	if err := o.Policy.Validate(); err != nil {
		return err
	}
	if o.HalfLife < 0 {
		return fmt.Errorf("half-life %v: must be positive", o.HalfLife)
	}
	if o.StaleAfter < 0 {
		return fmt.Errorf("stale-after %v: must be positive", o.StaleAfter)
	}
	if o.DedupWindow < 0 {
		return fmt.Errorf("dedup window %v: must be positive", o.DedupWindow)
	}
	return nil
}

// ErrStale says the ledger's last input is older than its staleness bound; the
// usage returned with it is the last good usage, decayed to the time asked.
var ErrStale = errors.New("fair-share ledger is stale")

// StaleError is the error Usage returns past the staleness bound; it matches
// ErrStale with errors.Is.
type StaleError struct {
	// LastInput is the newest input time; zero if the ledger never had input.
	LastInput time.Time
	Now       time.Time
	Bound     time.Duration
}

func (e *StaleError) Error() string {
	if e.LastInput.IsZero() {
		return "fair-share ledger is stale: it has had no input yet"
	}
	return fmt.Sprintf("fair-share ledger is stale: last input at %s, %s before %s (bound %s)",
		e.LastInput.UTC().Format(time.RFC3339), e.Now.Sub(e.LastInput).Round(time.Second), e.Now.UTC().Format(time.RFC3339), e.Bound)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// UsageEntry is one user association's decayed usage in GPU-seconds.
type UsageEntry struct {
	// Measured is charged max(activity, idle floor) per allocated GPU-second.
	Measured float64 `json:"measured_gpu_seconds"`
	// Allocated is charged 1 per allocated GPU-second.
	Allocated float64 `json:"allocated_gpu_seconds"`
	// Unmeasured is the part of Allocated that had no activity measurement
	// (charged as fully used in Measured).
	Unmeasured float64 `json:"unmeasured_gpu_seconds"`
	// Charged is what the policy charges: the input of the factors.
	Charged float64 `json:"charged_gpu_seconds"`
}

// Usage is the ledger's decayed usage at one time.
type Usage struct {
	// At is the time the usage is decayed to.
	At time.Time
	// LastInput is the newest input the ledger had.
	LastInput time.Time
	Policy    Policy
	HalfLife  time.Duration
	// Fallback is true when Charged holds allocation-based usage in place of
	// the policy's because measured data was stale (see AllocationFallback).
	Fallback bool
	Entries  map[Assoc]UsageEntry
}

// Charged is the charged usage per user association: ComputeFactors' input.
func (u Usage) Charged() map[Assoc]float64 {
	out := make(map[Assoc]float64, len(u.Entries))
	for a, e := range u.Entries {
		out[a] = e.Charged
	}
	return out
}

// AllocationFallback is the documented degradation for stale data: the same
// usage with Charged set to the allocation-based usage (what Slurm itself
// would charge) and Fallback set, so every consumer can say it is not using
// measurements. Use it when Usage returns ErrStale:
//
//	u, err := ledger.Usage(now)
//	if errors.Is(err, fairshare.ErrStale) {
//		u = fairshare.AllocationFallback(u) // and report err
//	}
//
// A consumer with its scheduler's own allocation accounting (Slurm's sshare)
// may prefer that; this one needs nothing but the ledger.
func AllocationFallback(u Usage) Usage {
	out := u
	out.Fallback = true
	out.Entries = make(map[Assoc]UsageEntry, len(u.Entries))
	for a, e := range u.Entries {
		e.Charged = e.Allocated
		out.Entries[a] = e
	}
	return out
}

// Ledger accumulates charged GPU time per user association with exponential
// decay. It is safe for concurrent use.
type Ledger struct {
	mu        sync.Mutex
	opts      LedgerOptions
	ref       time.Time // entries are decayed to ref
	lastInput time.Time
	entries   map[Assoc]*UsageEntry
	marks     map[markKey]time.Time // charged through, per GPU slice and job
}

type markKey struct{ GPU, Slice, Job string }

// NewLedger returns an empty ledger.
func NewLedger(opts LedgerOptions) (*Ledger, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("cannot create fair-share ledger: %w", err)
	}
	return &Ledger{opts: opts.withDefaults(), entries: map[Assoc]*UsageEntry{}, marks: map[markKey]time.Time{}}, nil
}

// Options returns the ledger's options with defaults filled in.
func (l *Ledger) Options() LedgerOptions { return l.opts }

// LastInput is the newest input time (zero before any).
func (l *Ledger) LastInput() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastInput
}

// RecordResult counts what Record did with a batch.
type RecordResult struct {
	// Charged samples were charged, whole or in part.
	Charged int
	// Trimmed samples overlapped time already charged for their GPU slice and
	// job; only the rest was charged.
	Trimmed int
	// Duplicates were entirely charged before (replays).
	Duplicates int
	// TooOld samples ended before the dedup window and were dropped.
	TooOld int
}

// decay is the factor usage keeps over dt: 2^(-dt/half-life). Slurm's decay
// thread multiplies usage by (1 - 0.693/half-life)^dt with dt in seconds, the
// first-order expansion of the same curve: after one 7-day half-life it keeps
// 0.500073 where this keeps exactly 0.5.
func (l *Ledger) decay(dt time.Duration) float64 {
	return math.Exp2(-dt.Seconds() / l.opts.HalfLife.Seconds())
}

// Record charges a batch of samples that a producer read from its source up
// to through (the newest time the batch speaks for, also when it is empty: an
// idle cluster still keeps the ledger fresh). The batch is all or nothing:
// a sample that fails validation, ends after through, or makes the overlapping
// fractions on one GPU exceed 1 rejects the batch with an error naming it.
//
// Each sample is charged at its end time, decayed from there; per GPU slice and
// job only time after what was already charged counts, so a batch replayed or
// overlapping an earlier one is never charged twice.
func (l *Ledger) Record(through time.Time, samples []Sample) (RecordResult, error) {
	var res RecordResult
	if through.IsZero() {
		return res, errors.New("cannot record fair-share samples: batch time (through) is not set")
	}
	for i, s := range samples {
		if err := s.Validate(); err != nil {
			return res, fmt.Errorf("cannot record fair-share samples: sample %d (%s): %w", i, s.describe(), err)
		}
		if s.End().After(through) {
			return res, fmt.Errorf("cannot record fair-share samples: sample %d (%s) ends at %s, after the batch time %s",
				i, s.describe(), s.End().UTC().Format(time.RFC3339Nano), through.UTC().Format(time.RFC3339Nano))
		}
	}
	if err := checkCapacity(samples); err != nil {
		return res, fmt.Errorf("cannot record fair-share samples: %w", err)
	}

	order := make([]int, len(samples))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return samples[order[a]].Time.Before(samples[order[b]].Time) })

	l.mu.Lock()
	defer l.mu.Unlock()
	if through.After(l.ref) {
		if !l.ref.IsZero() {
			k := l.decay(through.Sub(l.ref))
			for _, e := range l.entries {
				e.Measured *= k
				e.Allocated *= k
				e.Unmeasured *= k
			}
		}
		l.ref = through
	}
	if through.After(l.lastInput) {
		l.lastInput = through
	}
	horizon := l.ref.Add(-l.opts.DedupWindow)
	floor := l.opts.Policy.IdleFloor
	for _, i := range order {
		s := samples[i]
		end := s.End()
		if !end.After(horizon) {
			res.TooOld++
			continue
		}
		key := markKey{GPU: s.GPU, Slice: s.Slice, Job: s.Job}
		start := s.Time
		if m, ok := l.marks[key]; ok && m.After(start) {
			if !end.After(m) {
				res.Duplicates++
				continue
			}
			start = m
			res.Trimmed++
		}
		l.marks[key] = end
		c := chargeSeconds(s, end.Sub(start).Seconds(), floor)
		k := l.decay(l.ref.Sub(end))
		a := Assoc{Account: s.Account, User: s.User}
		e := l.entries[a]
		if e == nil {
			e = &UsageEntry{}
			l.entries[a] = e
		}
		e.Measured += c.Measured * k
		e.Allocated += c.Allocated * k
		e.Unmeasured += c.Unmeasured * k
		res.Charged++
	}
	for k, m := range l.marks {
		if !m.After(horizon) {
			delete(l.marks, k)
		}
	}
	return res, nil
}

// checkCapacity rejects overlapping samples on one GPU whose fractions sum
// above 1: two consumers cannot both hold more than the whole GPU at once.
func checkCapacity(samples []Sample) error {
	byGPU := map[string][]int{}
	for i, s := range samples {
		byGPU[s.GPU] = append(byGPU[s.GPU], i)
	}
	type event struct {
		at    time.Time
		delta float64
		idx   int
	}
	for gpu, idx := range byGPU {
		if len(idx) < 2 {
			continue
		}
		// A replayed duplicate of the same slice and job is not a second
		// consumer: count each (slice, job) once per instant by merging its
		// intervals first.
		type sj struct{ slice, job string }
		groups := map[sj][]int{}
		for _, i := range idx {
			k := sj{samples[i].Slice, samples[i].Job}
			groups[k] = append(groups[k], i)
		}
		var ev []event
		for _, g := range groups {
			sort.Slice(g, func(a, b int) bool { return samples[g[a]].Time.Before(samples[g[b]].Time) })
			var cur []int // merged run of overlapping samples of one consumer
			flush := func() {
				if len(cur) == 0 {
					return
				}
				start, end, frac := samples[cur[0]].Time, samples[cur[0]].End(), 0.0
				for _, i := range cur {
					if e := samples[i].End(); e.After(end) {
						end = e
					}
					frac = math.Max(frac, samples[i].Fraction)
				}
				ev = append(ev, event{start, frac, cur[0]}, event{end, -frac, cur[0]})
				cur = cur[:0]
			}
			var curEnd time.Time
			for _, i := range g {
				if len(cur) > 0 && samples[i].Time.Before(curEnd) {
					cur = append(cur, i)
					if e := samples[i].End(); e.After(curEnd) {
						curEnd = e
					}
					continue
				}
				flush()
				cur = append(cur, i)
				curEnd = samples[i].End()
			}
			flush()
		}
		sort.Slice(ev, func(a, b int) bool {
			if !ev[a].at.Equal(ev[b].at) {
				return ev[a].at.Before(ev[b].at)
			}
			return ev[a].delta < ev[b].delta // ends before starts at the same instant
		})
		sum := 0.0
		for _, e := range ev {
			sum += e.delta
			if sum > 1+1e-9 {
				return fmt.Errorf("gpu %q: consumers overlapping at %s hold fractions summing to %.4g > 1 (sample %d, job %q): a GPU's shares cannot exceed the whole GPU",
					gpu, e.at.UTC().Format(time.RFC3339Nano), sum, e.idx, samples[e.idx].Job)
			}
		}
	}
	return nil
}

// Usage returns the usage decayed to now. Past the staleness bound (or before
// any input) it returns the last good usage, still decayed to now, together
// with a *StaleError (errors.Is(err, ErrStale)); see AllocationFallback.
func (l *Ledger) Usage(now time.Time) (Usage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := Usage{At: now, LastInput: l.lastInput, Policy: l.opts.Policy, HalfLife: l.opts.HalfLife,
		Entries: make(map[Assoc]UsageEntry, len(l.entries))}
	k := 1.0
	if !l.ref.IsZero() {
		k = l.decay(now.Sub(l.ref))
	}
	for a, e := range l.entries {
		v := UsageEntry{Measured: e.Measured * k, Allocated: e.Allocated * k, Unmeasured: e.Unmeasured * k}
		v.Charged = l.opts.Policy.Charged(v.Measured, v.Allocated)
		u.Entries[a] = v
	}
	if l.lastInput.IsZero() || now.Sub(l.lastInput) > l.opts.StaleAfter {
		return u, &StaleError{LastInput: l.lastInput, Now: now, Bound: l.opts.StaleAfter}
	}
	return u, nil
}
