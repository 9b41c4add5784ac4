package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// DownsampleOptions configure a Downsampler.
type DownsampleOptions struct {
	// SampleInterval is the agents' full collection interval, the step the
	// summaries are computed at (default 10 s): a report at another step
	// reads raw samples.
	SampleInterval time.Duration
	// IdleBelow (default 0.05) and IdleFor (default 30 minutes) are the idle
	// definition the summaries hold: a report with another threshold reads
	// raw samples, one with another duration reads five-minute summaries
	// (hourly ones hold the idle runs inside the hour against IdleFor).
	IdleBelow float64
	IdleFor   time.Duration
	// Delay is how long after an interval ends it is summarized (default 2
	// minutes): samples an agent ships later than that (a replayed queue
	// after an outage) are not in the summary. docs/reports.md.
	Delay time.Duration
	// CatchUp is how far back a starting Downsampler summarizes the intervals
	// the store holds no summary of, and how long a failed interval is tried
	// again (default 6 hours; the server keeps it within the embedded store's
	// out-of-order window).
	CatchUp time.Duration
	// StartDelay is how long a starting Downsampler leaves the intervals
	// that ended before it started (its catch-up) alone, so that agents
	// replay what they queued while the server was away first (default 10
	// minutes; negative: none).
	StartDelay time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
}

func (o *DownsampleOptions) defaults() error {
	if o.SampleInterval <= 0 {
		o.SampleInterval = 10 * time.Second
	}
	if o.IdleBelow == 0 {
		o.IdleBelow = 0.05
	}
	if o.IdleFor == 0 {
		o.IdleFor = 30 * time.Minute
	}
	if o.Delay == 0 {
		o.Delay = 2 * time.Minute
	}
	if o.CatchUp == 0 {
		o.CatchUp = 6 * time.Hour
	}
	if o.StartDelay == 0 {
		o.StartDelay = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	fine := Resolutions[len(Resolutions)-1]
	switch {
	case o.SampleInterval%time.Second != 0 || fine%o.SampleInterval != 0:
		return fmt.Errorf("downsampling: sample interval %s: want whole seconds that divide %s", o.SampleInterval, fine)
	case o.IdleBelow < 0 || o.IdleBelow > 1:
		return fmt.Errorf("downsampling: idle threshold %g: want a fraction between 0 and 1", o.IdleBelow)
	case o.IdleFor < fine:
		return fmt.Errorf("downsampling: idle duration %s: want at least %s", o.IdleFor, fine)
	case o.Delay < 0 || o.CatchUp < 0:
		return fmt.Errorf("downsampling: delay %s, catch-up %s: want durations of zero or more", o.Delay, o.CatchUp)
	}
	return nil
}

// Downsampler keeps the report's summaries in the store: for every
// allocation, every five minutes and every hour (Resolutions), the Summary
// of its steps, written as the gpuwatch_report_* series, and a
// gpuwatch_report_summaries marker per interval. It reads and writes only
// through store.Querier and store.Appender, so it works the same on the
// embedded store and on an external one. One Downsampler writes a store.
type Downsampler struct {
	q       store.Querier
	app     store.Appender
	opts    DownsampleOptions
	next    time.Time // intervals ending after it are not looked at yet
	started time.Time // the first Step's now

	retry   []interval // failed intervals, tried again from retryAt
	retryAt time.Time
}

type interval struct {
	res time.Duration
	end time.Time
}

// IntervalStats is what summarizing one interval did.
type IntervalStats struct {
	Resolution  time.Duration
	End         time.Time
	Allocations int
	Samples     int
	Took        time.Duration
}

// ResolutionLabel is the resolution as the summaries' resolution label
// writes it: 5m, 1h.
func (s IntervalStats) ResolutionLabel() string { return formatDuration(s.Resolution) }

// NewDownsampler checks opts and builds a Downsampler over q and app.
func NewDownsampler(q store.Querier, app store.Appender, opts DownsampleOptions) (*Downsampler, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return &Downsampler{q: q, app: app, opts: opts}, nil
}

// Run calls Step every interval until ctx ends; report, when set, hears what
// each interval cost.
func (d *Downsampler) Run(ctx context.Context, every time.Duration, report func(IntervalStats, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		st, err := d.Step(ctx)
		if report != nil {
			for _, s := range st {
				report(s, nil)
			}
			if err != nil && ctx.Err() == nil {
				report(IntervalStats{}, err)
			}
		}
		if err != nil && ctx.Err() == nil {
			d.opts.Logger.Warn("cannot summarize for reports; the reports read raw samples meanwhile", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step summarizes every interval that ended at least Delay ago and has no
// summary yet, oldest first, each five minutes before the hour that ends
// with it. An interval that fails is tried again at later steps (at most
// every five minutes) while it is younger than CatchUp; the reports read raw
// samples where a summary is missing.
func (d *Downsampler) Step(ctx context.Context) ([]IntervalStats, error) {
	fine := Resolutions[len(Resolutions)-1]
	now := d.opts.Now()
	target := alignDown(now.Add(-d.opts.Delay), fine)
	if d.next.IsZero() {
		d.next = alignDown(target.Add(-d.opts.CatchUp), time.Hour)
		d.started = now
	}
	// Until StartDelay has passed, only the intervals that end after the
	// start are summarized; the catch-up waits for the agents' replays.
	from, catchUpWaits := d.next, false
	if live := alignDown(d.started.Add(-d.opts.Delay), fine); now.Before(d.started.Add(d.opts.StartDelay)) && from.Before(live) {
		from, catchUpWaits = live, true
	}
	oldest := target.Add(-d.opts.CatchUp)
	todo := map[int64][]time.Duration{}
	if len(d.retry) > 0 && !now.Before(d.retryAt) {
		for _, iv := range d.retry {
			if iv.end.After(oldest) {
				todo[iv.end.UnixMilli()] = append(todo[iv.end.UnixMilli()], iv.res)
			}
		}
		d.retry = nil
	}
	if target.After(from) {
		for i := len(Resolutions) - 1; i >= 0; i-- {
			res := Resolutions[i]
			marked, err := d.marked(ctx, res, from, target)
			if err != nil {
				return nil, err
			}
			for end := alignUp(from.Add(time.Millisecond), res); !end.After(target); end = end.Add(res) {
				// An hour that began before a waiting catch-up waits too.
				if catchUpWaits && end.Add(-res).Before(from) {
					continue
				}
				if !marked[end.UnixMilli()] {
					todo[end.UnixMilli()] = append(todo[end.UnixMilli()], res)
				}
			}
		}
		if !catchUpWaits {
			d.next = target
		}
	}
	ends := make([]int64, 0, len(todo))
	for e := range todo {
		ends = append(ends, e)
	}
	slices.Sort(ends)
	var out []IntervalStats
	var errs []error
	for _, e := range ends {
		// Five minutes before the hour that ends with them.
		ress := todo[e]
		slices.Sort(ress)
		for _, res := range ress {
			end := time.UnixMilli(e).UTC()
			st, err := d.Downsample(ctx, res, end)
			if err != nil {
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
				if len(errs) < 3 {
					errs = append(errs, err)
				}
				d.retry = append(d.retry, interval{res, end})
				continue
			}
			out = append(out, st)
		}
	}
	if len(d.retry) > 0 {
		d.retryAt = now.Add(fine)
		errs = append(errs, fmt.Errorf("%d intervals not summarized, tried again from %s", len(d.retry), d.retryAt.UTC().Format(time.RFC3339)))
	}
	return out, errors.Join(errs...)
}

// marked is the ends of the intervals of resolution res in (from, to] that
// the store holds this Downsampler's marker for.
func (d *Downsampler) marked(ctx context.Context, res time.Duration, from, to time.Time) (map[int64]bool, error) {
	first := alignUp(from.Add(time.Millisecond), res)
	if first.After(to) {
		return map[int64]bool{}, nil
	}
	sel := fmt.Sprintf(`%s{%s=%q,%s=%q,%s=%q,%s=%q}`, MetricSummaries,
		LabelResolution, formatDuration(res), LabelSampleInterval, formatDuration(d.opts.SampleInterval),
		LabelIdleBelow, formatFraction(d.opts.IdleBelow), LabelIdleFor, formatDuration(d.opts.IdleFor))
	return markedEnds(ctx, d.q, sel, res, first, alignDown(to, res), nil)
}

// Downsample writes the summaries of the interval (end−res, end] of
// resolution res, and its marker, in one append: five minutes from the raw
// samples, an hour from the five-minute summaries where the store has them
// (raw samples where not).
func (d *Downsampler) Downsample(ctx context.Context, res time.Duration, end time.Time) (IntervalStats, error) {
	t0 := time.Now()
	st := IntervalStats{Resolution: res, End: end}
	if !alignDown(end, res).Equal(end) {
		return st, fmt.Errorf("downsampling: %s does not end a %s interval", end.UTC().Format(time.RFC3339), formatDuration(res))
	}
	opts := Options{From: end.Add(-res), To: end, Step: d.opts.SampleInterval, SampleInterval: d.opts.SampleInterval,
		IdleBelow: d.opts.IdleBelow, IdleFor: d.opts.IdleFor, NoPrevious: true, Now: d.opts.Now}
	finer := time.Duration(0)
	for _, r := range Resolutions {
		if r < res {
			finer = r
			break
		}
	}
	if finer == 0 {
		opts.RawOnly = true
	} else {
		opts.maxResolution = finer
	}
	if err := opts.defaults(); err != nil {
		return st, err
	}
	pl, err := planWindow(ctx, d.q, opts.From, opts.To, opts)
	if err != nil {
		return st, err
	}
	p, err := read(ctx, d.q, pl, opts, func() {})
	if err != nil {
		return st, err
	}
	var allocs []AllocSummary
	for _, a := range p.list() {
		allocs = append(allocs, AllocSummary{Labels: SummaryLabels(a.labels, res), Node: a.node, Model: a.model, Summary: a.sum})
	}
	batch := AppendSummaries(nil, allocs, res, opts.Step, end)
	batch = append(batch, SummariesMarker(res, opts.SampleInterval, opts.IdleBelow, opts.IdleFor, end, len(p.order)))
	if err := d.app.Append(ctx, batch); err != nil {
		return st, fmt.Errorf("writing the %s summaries ending %s: %w", formatDuration(res), end.UTC().Format(time.RFC3339), err)
	}
	st.Allocations, st.Samples, st.Took = len(p.order), len(batch), time.Since(t0)
	return st, nil
}
