package feed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// Metric names read from the store.
const (
	metricAllocation = telemetry.MetricGPUAllocationInfo
	metricSMActive   = telemetry.DCGMProfSMActive
	metricGPUUtil    = telemetry.DCGMGPUUtil
)

// ReadOptions say how to read an interval.
type ReadOptions struct {
	// SampleInterval is how often the agents ship an unchanged allocation
	// series: their full-cycle interval (default 10 s).
	SampleInterval time.Duration
}

// promDuration writes d as a PromQL duration in whole seconds (at least 1s).
func promDuration(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Round(d.Seconds()))), 10) + "s"
}

func label(ls telemetry.Labels, names ...string) string {
	for _, n := range names {
		if v := ls.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// Read returns the fair-share samples of [from, to): one per GPU and consumer
// seen allocated in it.
func Read(ctx context.Context, q store.Querier, from, to time.Time, opts ReadOptions) ([]fairshare.Sample, error) {
	if !to.After(from) {
		return nil, fmt.Errorf("fair-share read: interval %s to %s is empty", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	if opts.SampleInterval <= 0 {
		opts.SampleInterval = 10 * time.Second
	}
	span := to.Sub(from)
	d := promDuration(span)
	allocs, err := q.Instant(ctx, "count_over_time("+metricAllocation+"["+d+"])", to)
	if err != nil {
		return nil, fmt.Errorf("fair-share read: allocations: %w", err)
	}
	if len(allocs) == 0 {
		return nil, nil
	}
	activity := func(metric string) (map[string]float64, error) {
		v, err := q.Instant(ctx, "avg_over_time("+metric+"["+d+"])", to)
		if err != nil {
			return nil, fmt.Errorf("fair-share read: %s: %w", metric, err)
		}
		m := make(map[string]float64, len(v))
		for _, s := range v {
			if uuid := label(s.Labels, telemetry.DCGMLabelUUID, telemetry.LabelGPUUUID); uuid != "" && !math.IsNaN(s.Value) {
				m[uuid] = s.Value
			}
		}
		return m, nil
	}
	sm, err := activity(metricSMActive)
	if err != nil {
		return nil, err
	}
	util, err := activity(metricGPUUtil)
	if err != nil {
		return nil, err
	}

	type consumer struct {
		job, account, user string
		seen               time.Duration
	}
	byGPU := map[string][]consumer{}
	for _, s := range allocs {
		uuid := label(s.Labels, telemetry.LabelGPUUUID, telemetry.DCGMLabelUUID)
		if uuid == "" {
			continue // an allocation the agent could not tie to a GPU UUID
		}
		c := consumer{
			job:     label(s.Labels, telemetry.LabelJobID),
			account: label(s.Labels, telemetry.LabelAccount),
			user:    label(s.Labels, telemetry.LabelUser),
		}
		if ns, pod := s.Labels.Get(telemetry.LabelNamespace), s.Labels.Get(telemetry.LabelPod); c.job == "" && pod != "" {
			c.job = ns + "/" + pod
			if c.account == "" {
				c.account = ns
			}
		}
		if c.job == "" || c.account == "" {
			continue // not attributable: nobody to charge
		}
		if c.user == "" {
			c.user = c.account
		}
		c.seen = min(span, time.Duration(s.Value)*opts.SampleInterval)
		byGPU[uuid] = append(byGPU[uuid], c)
	}
	uuids := make([]string, 0, len(byGPU))
	for u := range byGPU {
		uuids = append(uuids, u)
	}
	sort.Strings(uuids)
	var out []fairshare.Sample
	for _, uuid := range uuids {
		cs := byGPU[uuid]
		smv, haveSM := sm[uuid]
		uv, haveUtil := util[uuid]
		act, src := fairshare.PickActivity(clamp(smv, 0, 1), haveSM, clamp(uv, 0, 100), haveUtil)
		for _, c := range cs {
			if c.seen <= 0 {
				continue
			}
			out = append(out, fairshare.Sample{
				Time: to.Add(-c.seen), Duration: c.seen, Job: c.job, Account: c.account, User: c.user,
				GPU: uuid, Fraction: 1 / float64(len(cs)), Activity: act, ActivitySource: src,
			})
		}
	}
	return out, nil
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// Options configure a Feeder.
type Options struct {
	Querier store.Querier
	Config  *fairshare.Config
	// LedgerPath is where the ledger is saved after every interval and loaded
	// from at start ("" keeps it in memory).
	LedgerPath string
	// Interval is how often the store is read (default 1 minute); a read
	// covers at least Read.SampleInterval.
	Interval time.Duration
	// Delay is how far behind now the read interval ends, so samples still in
	// flight from agents are in (default 15 s).
	Delay time.Duration
	// Rebuild, when the ledger is empty (none saved yet, or deleted to
	// recompute it), reads this much history from the store first (e.g. two
	// half-lives), and bounds how long a gap is replayed (at least 24 h).
	Rebuild  time.Duration
	Read     ReadOptions
	Logger   *slog.Logger
	Now      func() time.Time
	OnUpdate func(*fairshare.Standing) // called after each interval (e.g. the Slurm site-factor writer)
}

// Feeder keeps a ledger up to date from the store and publishes the standing.
type Feeder struct {
	opts      Options
	ledger    *fairshare.Ledger
	collector *fairshare.Collector

	mu       sync.Mutex
	standing *fairshare.Standing
	last     time.Time // end of the last interval read
	lastErr  error
}

// New loads the ledger (or starts an empty one).
func New(opts Options) (*Feeder, error) {
	if opts.Querier == nil || opts.Config == nil || opts.Config.Tree == nil {
		return nil, errors.New("fair share: a store and a configuration with an account tree are needed")
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Minute
	}
	if opts.Delay <= 0 {
		opts.Delay = 15 * time.Second
	}
	if opts.Read.SampleInterval <= 0 {
		opts.Read.SampleInterval = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := &Feeder{opts: opts, collector: fairshare.NewCollector(opts.Now)}
	lopts := opts.Config.LedgerOptions()
	if opts.Rebuild > 0 {
		// Charge history as old as the rebuild reaches.
		lopts.DedupWindow = max(lopts.DedupWindow, opts.Rebuild+time.Hour)
	}
	var err error
	if opts.LedgerPath != "" {
		f.ledger, err = fairshare.LoadLedger(opts.LedgerPath, lopts)
		if errors.Is(err, fs.ErrNotExist) {
			f.ledger, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if f.ledger == nil {
		if f.ledger, err = fairshare.NewLedger(lopts); err != nil {
			return nil, err
		}
	}
	if t := f.ledger.LastInput(); !t.IsZero() {
		f.last = t
	}
	f.publish(opts.Now())
	return f, nil
}

// Collector exports gpuwatch_fairshare_*.
func (f *Feeder) Collector() *fairshare.Collector { return f.collector }

// Standing is the latest standing and the last read error (nil when the last
// interval was read).
func (f *Feeder) Standing() (*fairshare.Standing, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.standing, f.lastErr
}

// Step reads the store up to now minus the delay, records it and publishes.
func (f *Feeder) Step(ctx context.Context) error {
	now := f.opts.Now()
	to := now.Add(-f.opts.Delay)
	from := f.last
	back := max(f.opts.Rebuild, 24*time.Hour)
	switch {
	case from.IsZero() && f.opts.Rebuild > 0:
		from = to.Add(-f.opts.Rebuild) // an empty ledger: rebuild it from the store's history
	case from.IsZero():
		from = to.Add(-max(f.opts.Interval, f.opts.Read.SampleInterval))
	case to.Sub(from) > back:
		from = to.Add(-back) // a longer gap is not replayed: the store may not hold it
	}
	var err error
	windows := 0
	// Read in windows of at most an hour, so a rebuild or a gap is replayed
	// with the same resolution as live intervals. A window shorter than the
	// agents' sample interval would see some allocations and miss others:
	// it waits for the next step.
	for to.Sub(from) >= f.opts.Read.SampleInterval && err == nil && ctx.Err() == nil {
		end := from.Add(time.Hour)
		if end.After(to) {
			end = to
		}
		var samples []fairshare.Sample
		samples, err = Read(ctx, f.opts.Querier, from, end, f.opts.Read)
		if err != nil {
			break
		}
		var res fairshare.RecordResult
		if res, err = f.ledger.Record(end, samples); err != nil {
			break
		}
		f.opts.Logger.Debug("fair-share interval recorded", "from", from, "to", end, "samples", len(samples), "result", fmt.Sprintf("%+v", res))
		f.last, from = end, end
		windows++
	}
	if windows > 0 && f.opts.LedgerPath != "" {
		if serr := f.ledger.Save(f.opts.LedgerPath); serr != nil {
			f.opts.Logger.Warn("saving the fair-share ledger failed", "err", serr)
		}
	}
	f.mu.Lock()
	f.lastErr = err
	f.mu.Unlock()
	f.publish(now)
	return err
}

func (f *Feeder) publish(now time.Time) {
	u, staleErr := f.ledger.Usage(now)
	if staleErr != nil {
		u = fairshare.AllocationFallback(u)
	}
	st := fairshare.NewStanding(f.opts.Config.Tree, u, staleErr, fairshare.StandingOptions{
		Algorithm: f.opts.Config.Algorithm, Dampening: f.opts.Config.Dampening, Now: now})
	f.collector.Update(st)
	f.mu.Lock()
	f.standing = st
	f.mu.Unlock()
	if f.opts.OnUpdate != nil {
		f.opts.OnUpdate(st)
	}
}

// Run steps every interval until ctx is done.
func (f *Feeder) Run(ctx context.Context) error {
	t := time.NewTicker(f.opts.Interval)
	defer t.Stop()
	for {
		if err := f.Step(ctx); err != nil && ctx.Err() == nil {
			f.opts.Logger.Warn("fair-share interval not recorded; the standing keeps the last good usage", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
