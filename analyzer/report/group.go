package report

import (
	"cmp"
	"slices"
	"sort"
)

// key is the allocation's group under by.
func (a *alloc) key(by By) string {
	var k string
	switch by {
	case ByAccount:
		k = a.account
	case ByUser:
		k = a.user
	case ByJob:
		k = a.job
	case ByNamespace:
		k = a.namespace
	case ByNode:
		k = a.node
	case ByModel:
		k = a.model
	}
	if k == "" {
		return None
	}
	return k
}

// owner is who the allocation belongs to, as a group's Owners lists it.
func (a *alloc) owner(by By) string {
	switch by {
	case ByAccount:
		return ""
	case ByJob, ByUser, ByNamespace:
		return a.account
	default:
		return a.account + "/" + a.user
	}
}

type acc struct {
	g            Group
	gpus, jobs   map[string]bool
	owners       map[string]bool
	sm, util     float64
	peakFraction float64
	idleJobs     map[string]*IdleJob
	jobGPUs      map[string]map[string]bool
}

func newAcc(key string) *acc {
	return &acc{g: Group{Key: key}, gpus: map[string]bool{}, jobs: map[string]bool{}, owners: map[string]bool{},
		idleJobs: map[string]*IdleJob{}, jobGPUs: map[string]map[string]bool{}, peakFraction: -1}
}

func (c *acc) add(a *alloc, by By) {
	const h = 3600.0
	g := &c.g
	c.gpus[a.gpu] = true
	c.jobs[a.job] = true
	if o := a.owner(by); o != "" {
		c.owners[o] = true
	}
	g.Allocated += a.allocated / h
	g.Measured += a.measured / h
	g.Unmeasured += a.unmeasured / h
	g.Idle += a.idle / h
	g.Gaps += a.gaps / h
	c.sm += a.smSeconds
	c.util += a.utilSeconds
	if a.totalMiB > 0 && a.peakMiB > 0 {
		if f := a.peakMiB / a.totalMiB; f > c.peakFraction {
			c.peakFraction, g.MemPeakMiB, g.MemTotalMiB = f, a.peakMiB, a.totalMiB
		}
	}
	j := c.idleJobs[a.job]
	if j == nil {
		j = &IdleJob{Job: a.job, Account: a.account, User: a.user}
		c.idleJobs[a.job] = j
		c.jobGPUs[a.job] = map[string]bool{}
	}
	j.Idle += a.idle / h
	j.Allocated += a.allocated / h
	c.jobGPUs[a.job][a.gpu] = true
}

func (c *acc) finish(topN int) Group {
	g := c.g
	g.GPUs, g.Jobs = len(c.gpus), len(c.jobs)
	for o := range c.owners {
		g.Owners = append(g.Owners, o)
	}
	sort.Strings(g.Owners)
	if len(g.Owners) > 5 {
		g.Owners = append(g.Owners[:5], "…")
	}
	switch {
	case c.sm > 0 && c.util > 0:
		g.MeasuredBy = SourceMixed
	case c.sm > 0:
		g.MeasuredBy = SourceSMActive
	case c.util > 0:
		g.MeasuredBy = SourceGPUUtil
	default:
		g.MeasuredBy = SourceNone
	}
	g.Efficiency = efficiency(g.Measured, g.Allocated-g.Unmeasured)
	if c.peakFraction >= 0 {
		h := 1 - c.peakFraction
		g.MemHeadroom = &h
	}
	g.TopIdle = c.topIdle(topN)
	return g
}

func (c *acc) topIdle(n int) []IdleJob {
	var out []IdleJob
	for job, j := range c.idleJobs {
		if j.Idle <= 0 {
			continue
		}
		jj := *j
		jj.GPUs = len(c.jobGPUs[job])
		out = append(out, jj)
	}
	slices.SortFunc(out, func(a, b IdleJob) int {
		if c := cmp.Compare(b.Idle, a.Idle); c != 0 {
			return c
		}
		return cmp.Compare(a.Job, b.Job)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func efficiency(measured, allocated float64) *float64 {
	if allocated <= 1e-12 {
		return nil
	}
	e := measured / allocated
	return &e
}

// group sums allocations into groups under by, largest allocation first,
// and the total over all of them.
func group(allocs []*alloc, by By) ([]Group, Group) {
	accs := map[string]*acc{}
	var keys []string
	total := newAcc("total")
	for _, a := range allocs {
		k := a.key(by)
		c := accs[k]
		if c == nil {
			c = newAcc(k)
			accs[k] = c
			keys = append(keys, k)
		}
		c.add(a, by)
		total.add(a, by)
	}
	out := make([]Group, 0, len(keys))
	for _, k := range keys {
		out = append(out, accs[k].finish(3))
	}
	slices.SortFunc(out, func(a, b Group) int {
		if c := cmp.Compare(b.Allocated, a.Allocated); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	t := total.finish(0)
	t.Owners, t.TopIdle = nil, nil
	return out, t
}

// topIdle is the n jobs with the most idle GPU-hours over the whole window.
func topIdle(allocs []*alloc, n int) []IdleJob {
	c := newAcc("")
	for _, a := range allocs {
		c.add(a, ByJob)
	}
	return c.topIdle(n)
}
