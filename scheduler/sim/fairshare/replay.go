package fairshare

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	fs "github.com/gpuwatch/gpuwatch/scheduler/fairshare"
)

// Weights are the multifactor priority weights (Slurm's PriorityWeight*):
// priority = Fairshare × fair-share factor + Age × min(1, age/MaxAge).
type Weights struct {
	Fairshare float64 `json:"fairshare"`
	Age       float64 `json:"age"`
	// MaxAge is Slurm's PriorityMaxAge: the age at which the age factor
	// reaches 1.
	MaxAge time.Duration `json:"max_age_ns"`
}

// Defaults of Config, each Slurm's where Slurm has one.
const (
	// DefaultInterval is Slurm's PriorityCalcPeriod (5 minutes): how often
	// usage is charged, factors recomputed and pending priorities refreshed.
	DefaultInterval = 5 * time.Minute
	// DefaultWalltimeFactor: a job asks for twice the time it will run.
	// Users overestimate walltime, often by far more; 2 is a mild, stated
	// choice, not a measurement.
	DefaultWalltimeFactor = 2.0
	// DefaultBackfillDepth is Slurm's bf_max_job_test default.
	DefaultBackfillDepth = 500
	// DefaultBlendWeight is the blend policy's w in w×measured + (1-w)×allocation.
	DefaultBlendWeight = 0.5
)

// DefaultWeights: fair share dominates age by 10:1, age saturating after
// Slurm's default PriorityMaxAge of 7 days.
var DefaultWeights = Weights{Fairshare: 10000, Age: 1000, MaxAge: 7 * 24 * time.Hour}

// Config is everything about a replay except the workload. Zero fields take
// the defaults above and the fairshare package's (idle floor 0.1, half-life
// 7 days, Fair Tree).
type Config struct {
	// Policy is how the ledger charges GPU time (allocation, measured, blend).
	Policy fs.Policy
	// Algorithm is Fair Tree (default) or classic.
	Algorithm fs.Algorithm
	HalfLife  time.Duration
	Interval  time.Duration
	Weights   Weights
	// BackfillDepth bounds how many pending jobs behind the head one
	// scheduling pass considers for backfill; negative disables backfill.
	BackfillDepth int
}

func (c Config) withDefaults() Config {
	if c.Algorithm == "" {
		c.Algorithm = fs.FairTree
	}
	if c.HalfLife == 0 {
		c.HalfLife = fs.DefaultHalfLife
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Weights == (Weights{}) {
		c.Weights = DefaultWeights
	}
	if c.BackfillDepth == 0 {
		c.BackfillDepth = DefaultBackfillDepth
	}
	return c
}

// Validate reports the first problem with the configuration (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.Policy.Validate(); err != nil {
		return err
	}
	if c.Algorithm != fs.FairTree && c.Algorithm != fs.Classic {
		return fmt.Errorf("algorithm %q: want %q or %q", c.Algorithm, fs.FairTree, fs.Classic)
	}
	if c.HalfLife < 0 {
		return fmt.Errorf("half-life %v must be positive", c.HalfLife)
	}
	if c.Interval < time.Second {
		return fmt.Errorf("interval %v: want at least 1s", c.Interval)
	}
	w := c.Weights
	for _, v := range []float64{w.Fairshare, w.Age} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("priority weights %+v: want finite, non-negative weights", w)
		}
	}
	if w.MaxAge <= 0 {
		return fmt.Errorf("priority max age %v must be positive", w.MaxAge)
	}
	return nil
}

// JobOutcome is when one job started and ended in a replay.
type JobOutcome struct {
	Start, End time.Duration
	// Backfilled is true when the job started ahead of a blocked
	// higher-priority job.
	Backfilled bool
}

// Trace is the raw outcome of one replay: per job (by ID) when it ran, and the
// number of scheduling decisions.
type Trace struct {
	Jobs []JobOutcome
	// FactorUpdates counts fair-share recomputations.
	FactorUpdates int
}

type runJob struct {
	job         *Job
	start, end  time.Duration
	expectedEnd time.Duration // start + walltime
	charged     time.Duration // charged through (offset)
	gpus        [][2]int
}

type endHeap []*runJob

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	return h[i].job.ID < h[j].job.ID
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(*runJob)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type pending struct {
	job  *Job
	prio float64
}

// queueLess orders pending jobs: higher priority first, then earlier
// arrival, then lower ID.
func queueLess(a, b pending) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.job.Arrival != b.job.Arrival {
		return a.job.Arrival < b.job.Arrival
	}
	return a.job.ID < b.job.ID
}

type replay struct {
	w       *Workload
	cfg     Config
	tree    *fs.Tree
	ledger  *fs.Ledger
	factors map[fs.Assoc]float64
	nodes   *nodeState
	queue   []pending
	running []*runJob // unordered
	ends    endHeap
	done    []*runJob // finished since the last charge
	out     Trace
	names   []string
	scratch []take
	samples []fs.Sample
}

// Replay runs the workload under one configuration. It is deterministic: the
// same workload and configuration give the same trace.
func Replay(ctx context.Context, w *Workload, cfg Config) (*Trace, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cannot replay %s: %w", w.Name, err)
	}
	cfg = cfg.withDefaults()
	tree, err := buildTree(w)
	if err != nil {
		return nil, fmt.Errorf("cannot replay %s: %w", w.Name, err)
	}
	stale := 2 * cfg.Interval
	if stale < fs.DefaultStaleAfter {
		stale = fs.DefaultStaleAfter
	}
	ledger, err := fs.NewLedger(fs.LedgerOptions{Policy: cfg.Policy, HalfLife: cfg.HalfLife, StaleAfter: stale, DedupWindow: 2 * stale})
	if err != nil {
		return nil, fmt.Errorf("cannot replay %s: %w", w.Name, err)
	}
	r := &replay{w: w, cfg: cfg, tree: tree, ledger: ledger, nodes: newNodeState(w.Cluster),
		out: Trace{Jobs: make([]JobOutcome, len(w.Jobs))}, names: make([]string, len(w.Jobs))}
	for i := range w.Jobs {
		r.names[i] = "job" + strconv.Itoa(i)
	}
	if err := r.run(ctx); err != nil {
		return nil, fmt.Errorf("cannot replay %s under %s charging: %w", w.Name, cfg.Policy.Charge, err)
	}
	return &r.out, nil
}

// buildTree is root → one account per entry of Shares → one user association
// per (account, user) seen in the jobs, each with 1 share.
func buildTree(w *Workload) (*fs.Tree, error) {
	users := map[string][]string{}
	seen := map[fs.Assoc]bool{}
	for _, j := range w.Jobs {
		a := fs.Assoc{Account: j.Account, User: j.User}
		if !seen[a] {
			seen[a] = true
			users[j.Account] = append(users[j.Account], j.User)
		}
	}
	accts := make([]string, 0, len(w.Shares))
	for a := range w.Shares {
		accts = append(accts, a)
	}
	sort.Strings(accts)
	var spec fs.TreeSpec
	for _, a := range accts {
		us := users[a]
		sort.Strings(us)
		as := fs.AccountSpec{Name: a, Shares: fs.Shares(w.Shares[a])}
		for _, u := range us {
			as.Users = append(as.Users, fs.UserSpec{Name: u, Shares: 1})
		}
		spec.Accounts = append(spec.Accounts, as)
	}
	return fs.NewTree(spec)
}

func (r *replay) run(ctx context.Context) error {
	jobs := r.w.Jobs
	arrivals := make([]*Job, len(jobs))
	for i := range jobs {
		arrivals[i] = &jobs[i]
	}
	slices.SortStableFunc(arrivals, func(a, b *Job) int {
		if c := cmp.Compare(a.Arrival, b.Arrival); c != 0 {
			return c
		}
		return a.ID - b.ID
	})
	next := 0 // next arrival
	tick := time.Duration(0)
	if len(arrivals) > 0 {
		tick = arrivals[0].Arrival
	}
	if err := r.charge(tick); err != nil {
		return err
	}
	tick += r.cfg.Interval
	for steps := 0; next < len(arrivals) || len(r.queue) > 0 || len(r.running) > 0; steps++ {
		if steps%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// Idle and nothing waiting: jump the tick to the next arrival.
		if len(r.queue) == 0 && len(r.running) == 0 && arrivals[next].Arrival > tick {
			gap := arrivals[next].Arrival - tick
			tick += (gap / r.cfg.Interval) * r.cfg.Interval
		}
		now := tick
		if next < len(arrivals) && arrivals[next].Arrival < now {
			now = arrivals[next].Arrival
		}
		if len(r.ends) > 0 && r.ends[0].end < now {
			now = r.ends[0].end
		}
		for len(r.ends) > 0 && r.ends[0].end <= now {
			rj := heap.Pop(&r.ends).(*runJob)
			r.nodes.release(rj.gpus)
			r.running = slices.DeleteFunc(r.running, func(x *runJob) bool { return x == rj })
			r.done = append(r.done, rj)
		}
		if now == tick {
			if err := r.charge(now); err != nil {
				return err
			}
			for i := range r.queue {
				r.queue[i].prio = r.priority(r.queue[i].job, now)
			}
			slices.SortFunc(r.queue, func(a, b pending) int {
				if queueLess(a, b) {
					return -1
				}
				if queueLess(b, a) {
					return 1
				}
				return 0
			})
			tick += r.cfg.Interval
		}
		for next < len(arrivals) && arrivals[next].Arrival <= now {
			p := pending{job: arrivals[next], prio: r.priority(arrivals[next], now)}
			i := sort.Search(len(r.queue), func(i int) bool { return queueLess(p, r.queue[i]) })
			r.queue = slices.Insert(r.queue, i, p)
			next++
		}
		r.schedule(now)
	}
	return nil
}

// priority is the multifactor priority of a pending job at now, from the
// factors of the last recomputation.
func (r *replay) priority(j *Job, now time.Duration) float64 {
	wt := r.cfg.Weights
	age := math.Min(1, float64(now-j.Arrival)/float64(wt.MaxAge))
	return wt.Fairshare*r.factors[fs.Assoc{Account: j.Account, User: j.User}] + wt.Age*age
}

// charge records every running (and recently finished) job's GPU time up to
// now in the ledger, one sample per GPU, and recomputes the factors.
func (r *replay) charge(now time.Duration) error {
	base := r.w.Start
	r.samples = r.samples[:0]
	add := func(rj *runJob) {
		from := max(rj.start, rj.charged)
		to := min(rj.end, now)
		if to <= from {
			return
		}
		j := rj.job
		act := j.Profile.Activity(j.Phase, from-rj.start, to-rj.start)
		for _, ng := range rj.gpus {
			r.samples = append(r.samples, fs.Sample{
				Time: base.Add(from), Duration: to - from, Job: r.names[j.ID],
				Account: j.Account, User: j.User, GPU: r.nodes.names[ng[0]][ng[1]], Fraction: 1,
				Activity: min(100, act*100), ActivitySource: fs.SourceNVMLGPUUtil,
			})
		}
		rj.charged = to
	}
	for _, rj := range r.done {
		add(rj)
	}
	r.done = r.done[:0]
	for _, rj := range r.running {
		add(rj)
	}
	if _, err := r.ledger.Record(base.Add(now), r.samples); err != nil {
		return err
	}
	u, err := r.ledger.Usage(base.Add(now))
	if err != nil && !errors.Is(err, fs.ErrStale) {
		return err
	}
	if err != nil {
		return fmt.Errorf("ledger went stale inside the replay at %v: %w", now, err)
	}
	f := fs.ComputeFactors(r.tree, u.Charged(), fs.FactorOptions{})
	if r.factors == nil {
		r.factors = make(map[fs.Assoc]float64)
	}
	for _, a := range r.tree.Users() {
		v, _ := f.Factor(r.cfg.Algorithm, a)
		r.factors[a] = v
	}
	r.out.FactorUpdates++
	return nil
}

// schedule is one scheduling pass at now: start pending jobs in priority
// order until one does not fit (the head); then EASY backfill.
func (r *replay) schedule(now time.Duration) {
	gpn := r.w.Cluster.GPUsPerNode
	i := 0
	for i < len(r.queue) {
		p, ok := place(r.nodes.free, gpn, r.queue[i].job.GPUs, r.scratch)
		r.scratch = p
		if !ok {
			break
		}
		r.start(r.queue[i].job, now, p, false)
		i++
	}
	r.queue = r.queue[i:]
	if len(r.queue) < 2 || r.cfg.BackfillDepth < 0 {
		return
	}
	head := r.queue[0].job
	var res *reservation
	limit := min(len(r.queue), 1+r.cfg.BackfillDepth)
	startedAny := false
	for k := 1; k < limit; k++ {
		free := r.nodes.totalFree()
		if free == 0 {
			break
		}
		j := r.queue[k].job
		if j.GPUs > free {
			continue
		}
		p, ok := place(r.nodes.free, gpn, j.GPUs, r.scratch)
		r.scratch = p
		if !ok {
			continue
		}
		if res == nil {
			rv := reserve(r.nodes, r.running, head.GPUs, nil)
			res = &rv
		}
		if now+j.Walltime > res.shadow {
			// Running past the shadow time: allowed only if the head still
			// fits at the shadow time beside this job's GPUs.
			for _, t := range p {
				res.free[t.node] -= t.gpus
			}
			if !fits(res.free, gpn, head.GPUs, nil) {
				for _, t := range p {
					res.free[t.node] += t.gpus
				}
				continue
			}
		}
		r.start(j, now, p, true)
		r.queue[k].job = nil
		startedAny = true
	}
	if startedAny {
		r.queue = slices.DeleteFunc(r.queue, func(p pending) bool { return p.job == nil })
	}
}

func (r *replay) start(j *Job, now time.Duration, p []take, backfilled bool) {
	rj := &runJob{job: j, start: now, end: now + j.Duration, expectedEnd: now + j.Walltime, charged: now}
	rj.gpus = r.nodes.allocate(p)
	r.running = append(r.running, rj)
	heap.Push(&r.ends, rj)
	r.out.Jobs[j.ID] = JobOutcome{Start: now, End: rj.end, Backfilled: backfilled}
}
