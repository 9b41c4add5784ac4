package fairshare

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Paths of the default inputs under the shared data folder (../shared/data).
const (
	HeliosSequenceFile = "helios-earth-vc-sequences/earth_vc_sequence_10min.csv"
	HeliosQuotaFile    = "helios-earth-vc-sequences/Earth_gpu_number.csv"
	DutyCycleFile      = "alibaba-genai-v2026/pod_gpu_duty_cycle_anon.csv"
)

// DutyCycleStep is the sampling interval of the GenAI duty-cycle series.
const DutyCycleStep = 57 * time.Second

// MinProfileSamples drops pods with shorter series (under about an hour):
// repeating a handful of samples for a day-long job says nothing about it.
const MinProfileSamples = 60

// heliosStep is the resolution of the Helios VC sequences.
const heliosStep = 10 * time.Minute

// LoadDutyCycleProfiles reads the GenAI pod GPU duty cycles
// (value,timestamp_anon,container_ip; value in percent) into one profile per
// pod with at least MinProfileSamples samples: the pod's samples in time
// order with a 57-s step (gaps in a pod's series are closed up, not filled),
// divided by 100. Profiles come back sorted by pod.
func LoadDutyCycleProfiles(path string) ([]*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read duty-cycle profiles: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.ReuseRecord = true
	col, err := header(r, path, "value", "timestamp_anon", "container_ip")
	if err != nil {
		return nil, err
	}
	type pt struct{ t, v float64 }
	pods := map[string][]pt{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("cannot read duty-cycle profiles: %w", err)
		}
		v, err1 := strconv.ParseFloat(rec[col[0]], 64)
		ts, err2 := strconv.ParseFloat(rec[col[1]], 64)
		if err1 != nil || err2 != nil || math.IsNaN(v) || math.IsNaN(ts) {
			return nil, fmt.Errorf("%s:%d: value %q, timestamp %q: want numbers", path, line, rec[col[0]], rec[col[1]])
		}
		if v < 0 || v > 100 {
			return nil, fmt.Errorf("%s:%d: duty cycle %v%%: want a percentage in [0,100]", path, line, v)
		}
		pods[rec[col[2]]] = append(pods[rec[col[2]]], pt{ts, v / 100})
	}
	names := make([]string, 0, len(pods))
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*Profile
	for _, n := range names {
		ps := pods[n]
		if len(ps) < MinProfileSamples {
			continue
		}
		slices.SortStableFunc(ps, func(a, b pt) int { return cmpFloat(a.t, b.t) })
		vals := make([]float64, len(ps))
		for i, p := range ps {
			vals[i] = p.v
		}
		label := n
		if len(label) > 8 {
			label = label[:8]
		}
		p, err := NewProfile("pod "+label, DutyCycleStep, vals)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no pod has %d or more samples", path, MinProfileSamples)
	}
	return out, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// header reads a CSV header and returns the column index of each wanted name.
func header(r *csv.Reader, path string, want ...string) ([]int, error) {
	h, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: cannot read the header: %w", path, err)
	}
	idx := make([]int, len(want))
	for i, w := range want {
		idx[i] = slices.Index(h, w)
		if idx[i] < 0 {
			return nil, fmt.Errorf("%s:1: header has no %q column (have %v)", path, w, h)
		}
	}
	return idx, nil
}

// VCDemand is one Helios virtual cluster's running GPUs per 10-minute step,
// split into jobs of fewer than 8 GPUs and of 8 or more, with the mean job
// size of each class over the window.
type VCDemand struct {
	VC    string
	Quota int64
	// Small and Large are running GPUs at each step of the window.
	Small, Large []int
	// SmallSize and LargeSize are the job sizes of the decomposition.
	SmallSize, LargeSize int
}

// LoadHeliosDemand reads the Earth VC sequences and quotas for the window
// [from, from+days): per VC the running GPUs of jobs under 8 GPUs and of 8 or
// more at each 10-minute step, and the VC's GPU quota on the first day.
func LoadHeliosDemand(seqPath, quotaPath string, from time.Time, days int) ([]VCDemand, error) {
	if days <= 0 {
		return nil, fmt.Errorf("helios window of %d days: want at least 1", days)
	}
	steps := int(time.Duration(days) * 24 * time.Hour / heliosStep)
	f, err := os.Open(seqPath)
	if err != nil {
		return nil, fmt.Errorf("cannot read Helios demand: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.ReuseRecord = true
	col, err := header(r, seqPath, "vc", "time", "running_gpu_num_less_8", "running_gpu_num_noless_8", "running_job_num_less_8", "running_job_num_noless_8")
	if err != nil {
		return nil, err
	}
	type acc struct {
		d              VCDemand
		seen           []bool
		smallG, smallJ float64
		largeG, largeJ float64
	}
	vcs := map[string]*acc{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("cannot read Helios demand: %w", err)
		}
		t, err := time.Parse(time.DateTime, rec[col[1]])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: time %q: want YYYY-MM-DD hh:mm:ss", seqPath, line, rec[col[1]])
		}
		if t.Before(from) || !t.Before(from.Add(time.Duration(steps)*heliosStep)) {
			continue
		}
		off := t.Sub(from)
		if off%heliosStep != 0 {
			return nil, fmt.Errorf("%s:%d: time %s is not on the 10-minute grid from %s", seqPath, line, rec[col[1]], from.Format(time.DateTime))
		}
		var v [4]float64
		for i := range v {
			x, err := strconv.ParseFloat(rec[col[2+i]], 64)
			if err != nil || x < 0 || math.IsNaN(x) || x > 1e6 {
				return nil, fmt.Errorf("%s:%d: %q: want a non-negative count", seqPath, line, rec[col[2+i]])
			}
			v[i] = math.Round(x)
		}
		vc := rec[col[0]]
		a := vcs[vc]
		if a == nil {
			a = &acc{d: VCDemand{VC: vc, Small: make([]int, steps), Large: make([]int, steps)}, seen: make([]bool, steps)}
			vcs[vc] = a
		}
		k := int(off / heliosStep)
		if a.seen[k] {
			return nil, fmt.Errorf("%s:%d: second row for vc %s at %s", seqPath, line, vc, rec[col[1]])
		}
		a.seen[k] = true
		a.d.Small[k], a.d.Large[k] = int(v[0]), int(v[1])
		a.smallG += v[0]
		a.largeG += v[1]
		a.smallJ += v[2]
		a.largeJ += v[3]
	}
	if len(vcs) == 0 {
		return nil, fmt.Errorf("%s: no rows in the window [%s, +%d days)", seqPath, from.Format(time.DateTime), days)
	}
	quotas, err := loadQuotas(quotaPath, from)
	if err != nil {
		return nil, err
	}
	var out []VCDemand
	for _, a := range vcs {
		for k, ok := range a.seen {
			if !ok {
				return nil, fmt.Errorf("%s: vc %s has no row at %s", seqPath, a.d.VC, from.Add(time.Duration(k)*heliosStep).Format(time.DateTime))
			}
		}
		q, ok := quotas[a.d.VC]
		if !ok {
			return nil, fmt.Errorf("%s: vc %s has no quota column", quotaPath, a.d.VC)
		}
		a.d.Quota = q
		a.d.SmallSize, a.d.LargeSize = 1, 8
		if a.smallJ > 0 {
			a.d.SmallSize = int(min(7, max(1, math.Round(a.smallG/a.smallJ))))
		}
		if a.largeJ > 0 {
			a.d.LargeSize = 8 * int(max(1, math.Round(a.largeG/a.largeJ/8)))
		}
		out = append(out, a.d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VC < out[j].VC })
	return out, nil
}

// loadQuotas reads Earth_gpu_number.csv's row for from's date.
func loadQuotas(path string, from time.Time) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read Helios quotas: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	h, err := r.Read()
	if err != nil || len(h) < 2 || h[0] != "date" {
		return nil, fmt.Errorf("%s:1: want a header starting with date", path)
	}
	day := from.Format(time.DateOnly)
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: no quota row for %s", path, day)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read Helios quotas: %w", err)
		}
		if rec[0] != day {
			continue
		}
		line, _ := r.FieldPos(0)
		q := map[string]int64{}
		for i := 1; i < len(h) && i < len(rec); i++ {
			n, err := strconv.ParseInt(rec[i], 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s:%d: %s quota %q: want a non-negative integer", path, line, h[i], rec[i])
			}
			q[h[i]] = n
		}
		return q, nil
	}
}

// HeliosOptions chooses the window, seed and cluster of the default
// composed workload.
type HeliosOptions struct {
	// DataDir is the shared data folder (holding HeliosSequenceFile etc.).
	DataDir string
	From    time.Time
	Days    int
	Seed    uint64
	Cluster Cluster
	// WalltimeFactor: each job asks for duration × factor.
	WalltimeFactor float64
	// Bands is the number of activity bands the pods are split into.
	Bands int
}

// Defaults of the composed workload: the week after the 10 May 2020 outage
// in the Helios Earth trace, on 64 nodes × 8 GPUs.
var (
	DefaultHeliosFrom    = time.Date(2020, 5, 11, 0, 0, 0, 0, time.UTC)
	DefaultHeliosDays    = 7
	DefaultHeliosCluster = Cluster{Nodes: 64, GPUsPerNode: 8}
	DefaultBands         = 4
)

func (o HeliosOptions) withDefaults() HeliosOptions {
	if o.From.IsZero() {
		o.From = DefaultHeliosFrom
	}
	if o.Days == 0 {
		o.Days = DefaultHeliosDays
	}
	if o.Cluster == (Cluster{}) {
		o.Cluster = DefaultHeliosCluster
	}
	if o.WalltimeFactor == 0 {
		o.WalltimeFactor = DefaultWalltimeFactor
	}
	if o.Bands == 0 {
		o.Bands = DefaultBands
	}
	return o
}

// ComposeHelios builds the default workload from two real sources: job
// demand per team from the Helios Earth VC sequences and utilization
// profiles from the GenAI pod duty cycles. See Compose for the rules.
func ComposeHelios(o HeliosOptions) (*Workload, error) {
	o = o.withDefaults()
	demand, err := LoadHeliosDemand(filepath.Join(o.DataDir, HeliosSequenceFile), filepath.Join(o.DataDir, HeliosQuotaFile), o.From, o.Days)
	if err != nil {
		return nil, err
	}
	profiles, err := LoadDutyCycleProfiles(filepath.Join(o.DataDir, DutyCycleFile))
	if err != nil {
		return nil, err
	}
	w, err := Compose(demand, profiles, o)
	if err != nil {
		return nil, err
	}
	w.Name = fmt.Sprintf("Helios Earth VCs %s + %dd × Alibaba GenAI duty cycles (seed %d)", o.From.Format(time.DateOnly), o.Days, o.Seed)
	return w, nil
}

// Compose turns per-VC demand and pod profiles into jobs, deterministically
// for a seed:
//
//  1. Jobs from demand (per VC, separately for the <8-GPU and ≥8-GPU
//     classes): the running GPUs G_k at each 10-minute step are a stack of
//     jobs. When G rises, jobs of the class's size (mean GPUs per running
//     job over the window, rounded: 1–7 for small, a multiple of 8 for
//     large) are pushed until the stack holds G_k; the last takes the
//     remainder. When G falls, the newest jobs end (LIFO) until the stack
//     holds at most G_k; an overshoot is refilled by new jobs at once. A
//     job first seen at step k (k > 0) arrives at t_k − U[0,10 min); one
//     gone at step j ends at t_j − U[0,10 min); jobs present at the window
//     start arrive at 0, those present at the end end there. So each job is
//     submitted when it started running in Helios (Helios's own queueing is
//     not replayed: this cluster's queue replaces it).
//  2. Profiles: pods sorted by mean duty cycle are cut into Bands equal
//     bands (band 0 the least active). Teams sorted by name get bands by a
//     seeded permutation (team i → band perm[i] mod Bands), and every job
//     draws a pod uniformly from its team's band and a uniform phase in the
//     pod's series. A job's GPUs all follow its pod's profile.
//  3. Each VC is an account with one user of the same name; its shares are
//     its GPU quota on the first day.
func Compose(demand []VCDemand, profiles []*Profile, o HeliosOptions) (*Workload, error) {
	o = o.withDefaults()
	if o.Bands <= 0 || o.Bands > len(profiles) {
		return nil, fmt.Errorf("%d activity bands for %d pod profiles: want 1..%d", o.Bands, len(profiles), len(profiles))
	}
	if !(o.WalltimeFactor >= 1) || math.IsInf(o.WalltimeFactor, 0) {
		return nil, fmt.Errorf("walltime factor %v: want ≥ 1 (a job never runs past its walltime)", o.WalltimeFactor)
	}
	if len(demand) == 0 {
		return nil, errors.New("no team demand to compose")
	}
	sorted := slices.Clone(profiles)
	slices.SortStableFunc(sorted, func(a, b *Profile) int {
		if c := cmpFloat(a.Mean(), b.Mean()); c != 0 {
			return c
		}
		return cmp.Compare(a.label, b.label)
	})
	bands := make([][]*Profile, o.Bands)
	for b := range bands {
		bands[b] = sorted[b*len(sorted)/o.Bands : (b+1)*len(sorted)/o.Bands]
	}
	teams := make([]string, len(demand))
	for i, d := range demand {
		teams[i] = d.VC
	}
	sort.Strings(teams)
	perm := rand.New(rand.NewPCG(o.Seed, 0x6261_6e64)).Perm(len(teams))
	bandOf := map[string]int{}
	for i, t := range teams {
		bandOf[t] = perm[i] % o.Bands
	}
	w := &Workload{Start: o.From, Cluster: o.Cluster, Shares: map[string]int64{}}
	steps := len(demand[0].Small)
	w.WindowEnd = time.Duration(steps) * heliosStep
	for _, d := range demand {
		if len(d.Small) != steps || len(d.Large) != steps {
			return nil, fmt.Errorf("vc %s: %d steps, want %d like the others", d.VC, len(d.Small), steps)
		}
		w.Shares[d.VC] = d.Quota
		band := bands[bandOf[d.VC]]
		for class, series := range [][]int{d.Small, d.Large} {
			size := d.SmallSize
			if class == 1 {
				size = d.LargeSize
			}
			rng := rand.New(rand.NewPCG(o.Seed, hashName(d.VC, class)))
			for _, iv := range decompose(series, size) {
				arr := time.Duration(0)
				if iv.start > 0 {
					arr = time.Duration(iv.start)*heliosStep - time.Duration(rng.Int64N(int64(heliosStep)))
				}
				end := w.WindowEnd
				if iv.end < steps {
					end = time.Duration(iv.end)*heliosStep - time.Duration(rng.Int64N(int64(heliosStep)))
				}
				p := band[rng.IntN(len(band))]
				phase := time.Duration(rng.IntN(p.Len())) * p.Step()
				dur := end - arr
				w.Jobs = append(w.Jobs, Job{Arrival: arr, Duration: dur, Walltime: time.Duration(float64(dur) * o.WalltimeFactor),
					GPUs: iv.gpus, Account: d.VC, User: d.VC, Profile: p, Phase: phase})
			}
		}
	}
	slices.SortStableFunc(w.Jobs, func(a, b Job) int {
		if c := cmp.Compare(a.Arrival, b.Arrival); c != 0 {
			return c
		}
		return cmp.Compare(a.Account, b.Account)
	})
	for i := range w.Jobs {
		w.Jobs[i].ID = i
		w.Jobs[i].Name = fmt.Sprintf("%s-%d", w.Jobs[i].Account, i)
	}
	for b, ps := range bands {
		var m float64
		for _, p := range ps {
			m += p.Mean()
		}
		var ts []string
		for _, t := range teams {
			if bandOf[t] == b {
				ts = append(ts, t)
			}
		}
		w.Notes = append(w.Notes, fmt.Sprintf("activity band %d: %d pods, mean duty cycle %.3f (%.3f–%.3f): %v", b, len(ps), m/float64(len(ps)), ps[0].Mean(), ps[len(ps)-1].Mean(), ts))
	}
	return w, nil
}

func hashName(s string, class int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64() + uint64(class)
}

// interval is one job of a decomposed series: present from step start to
// step end (exclusive), holding gpus.
type interval struct{ start, end, gpus int }

// decompose cuts a running-GPU series into jobs as Compose describes: a LIFO
// stack of jobs of the given size (the last of a rise takes the remainder).
func decompose(series []int, size int) []interval {
	type live struct{ start, gpus int }
	var stack []live
	var out []interval
	level := 0
	for k, g := range series {
		for level > g {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			level -= top.gpus
			out = append(out, interval{top.start, k, top.gpus})
		}
		for level < g {
			n := min(size, g-level)
			stack = append(stack, live{k, n})
			level += n
		}
	}
	for _, l := range stack {
		out = append(out, interval{l.start, len(series), l.gpus})
	}
	return out
}
