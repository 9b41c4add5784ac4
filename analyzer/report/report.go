package report

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// By is the dimension a report groups by.
type By string

// The dimensions a report groups by.
const (
	ByAccount   By = "account"
	ByUser      By = "user"
	ByJob       By = "job"
	ByNamespace By = "namespace"
	ByNode      By = "node"
	ByModel     By = "model"
)

// Dimensions lists every By, in the order help texts show them.
var Dimensions = []By{ByAccount, ByUser, ByJob, ByNamespace, ByNode, ByModel}

// ParseBy checks a dimension's name.
func ParseBy(s string) (By, error) {
	for _, b := range Dimensions {
		if string(b) == s {
			return b, nil
		}
	}
	names := make([]string, len(Dimensions))
	for i, b := range Dimensions {
		names[i] = string(b)
	}
	return "", fmt.Errorf("unknown grouping %q: want one of %s", s, strings.Join(names, ", "))
}

// The sources of measured use.
const (
	SourceSMActive = "sm_active" // DCGM_FI_PROF_SM_ACTIVE (DCGM profiling)
	SourceGPUUtil  = "gpu_util"  // DCGM_FI_DEV_GPU_UTIL (NVML utilization)
	SourceMixed    = "sm_active+gpu_util"
	SourceNone     = "none"
)

// None is the group key of a consumer that has no value for the dimension
// (the namespace of a Slurm job, the model of a GPU without a DCGM series).
const None = "(none)"

// ErrNoData marks a window in which no GPU was seen allocated.
var ErrNoData = errors.New("no GPU was seen allocated in the window")

// Report is a utilization report over [From, To).
type Report struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	By   By        `json:"by"`
	// StepSeconds is the resolution the window was cut into; SampleIntervalSeconds
	// the time one allocation sample stands for (docs/reports.md).
	StepSeconds           float64 `json:"step_seconds"`
	SampleIntervalSeconds float64 `json:"sample_interval_seconds"`
	// IdleBelow (0–1) and IdleForSeconds define idle: allocated, measured below
	// IdleBelow, for at least IdleForSeconds without a break.
	IdleBelow      float64   `json:"idle_below"`
	IdleForSeconds float64   `json:"idle_for_seconds"`
	GeneratedAt    time.Time `json:"generated_at"`
	// Groups are sorted by allocated GPU-hours, largest first; Total sums them.
	Groups []Group `json:"groups"`
	Total  Group   `json:"total"`
	// TopIdleJobs are the jobs with the most idle allocated GPU-hours.
	TopIdleJobs []IdleJob `json:"top_idle_jobs"`
	// PreviousFrom and PreviousTo are the period of the same length before
	// the window that each group's Previous compares against; zero when it was
	// not computed.
	PreviousFrom time.Time `json:"previous_from,omitzero"`
	PreviousTo   time.Time `json:"previous_to,omitzero"`
	// FairShareNote says why groups carry no fair-share standing, when they
	// do not ("fair share is not configured", "only by account or user").
	FairShareNote string `json:"fair_share_note,omitempty"`
	// Filter is the allocations the report (and its previous period) counts;
	// absent when it counts every allocation.
	Filter Filter `json:"filter,omitzero"`
}

// Filter limits a report to some allocations: those whose account, user and
// namespace are among the values given, compared exactly with the keys the
// report's rows show by that dimension (a pod without an account has its
// namespace's, a job without a user its account's, an allocation without a
// namespace "(none)"). An empty list takes every value; the lists are
// combined with and. A GPU shared with an allocation the filter leaves out
// still counts in part: the share is computed before the filter.
type Filter struct {
	Accounts   []string `json:"accounts,omitempty"`
	Users      []string `json:"users,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
}

// The bounds of a filter: values per list, and bytes per value.
const (
	MaxFilterValues = 10_000
	MaxFilterValue  = 256
)

// IsZero says the filter takes every allocation.
func (f Filter) IsZero() bool {
	return len(f.Accounts) == 0 && len(f.Users) == 0 && len(f.Namespaces) == 0
}

// String is the filter as the report's headers show it: "account nlp,
// vision; user bob", or "" for none.
func (f Filter) String() string {
	var parts []string
	for _, l := range f.lists() {
		if len(l.values) > 0 {
			parts = append(parts, l.name+" "+strings.Join(l.values, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

type filterList struct {
	name   string
	by     By
	values []string
}

func (f Filter) lists() []filterList {
	return []filterList{{"account", ByAccount, f.Accounts}, {"user", ByUser, f.Users}, {"namespace", ByNamespace, f.Namespaces}}
}

// check refuses an empty value, one longer than MaxFilterValue or one with a
// control character, and more than MaxFilterValues values in a list.
func (f Filter) check() error {
	for _, l := range f.lists() {
		if err := CheckFilterValues(l.name, l.values); err != nil {
			return err
		}
	}
	return nil
}

// CheckFilterValues checks one list of a Filter; name names it in the error.
func CheckFilterValues(name string, values []string) error {
	if len(values) > MaxFilterValues {
		return fmt.Errorf("%s: %d values, at most %d", name, len(values), MaxFilterValues)
	}
	for _, v := range values {
		switch {
		case v == "":
			return fmt.Errorf("%s: an empty value: leave the filter out to take every %s", name, name)
		case len(v) > MaxFilterValue:
			return fmt.Errorf("%s %.40q…: %d bytes, at most %d", name, v, len(v), MaxFilterValue)
		case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return fmt.Errorf("%s %q: a control character", name, v)
		}
	}
	return nil
}

// matcher is a filter's lists as sets; nil takes everything.
type matcher []struct {
	by  By
	set map[string]bool
}

func (f Filter) matcher() matcher {
	var m matcher
	for _, l := range f.lists() {
		if len(l.values) == 0 {
			continue
		}
		set := make(map[string]bool, len(l.values))
		for _, v := range l.values {
			set[v] = true
		}
		m = append(m, struct {
			by  By
			set map[string]bool
		}{l.by, set})
	}
	return m
}

func (m matcher) keeps(a *alloc) bool {
	for _, l := range m {
		if !l.set[a.key(l.by)] {
			return false
		}
	}
	return true
}

// Group is one row of the report. Hours are GPU-hours.
type Group struct {
	Key string `json:"key"`
	// Owners: the accounts (by job, user or namespace) or the accounts and
	// users (by node or model) the group's allocations belong to, up to five.
	Owners []string `json:"owners,omitempty"`
	GPUs   int      `json:"gpus"`
	Jobs   int      `json:"jobs"`
	// Allocated is the GPU time allocated to the group's jobs; a GPU shared by
	// n jobs at once gives each 1/n.
	Allocated float64 `json:"allocated_gpu_hours"`
	// Measured is allocated time weighted by the GPU's activity (0–1) over
	// the same steps; Unmeasured is allocated time with no activity series.
	Measured   float64 `json:"measured_gpu_hours"`
	Unmeasured float64 `json:"unmeasured_gpu_hours"`
	// MeasuredBy says where activity came from: sm_active, gpu_util, both
	// (some GPUs had DCGM profiling, others not), or none.
	MeasuredBy string `json:"measured_by"`
	// Efficiency is Measured over the measured part of Allocated; nil when
	// nothing allocated was measured.
	Efficiency *float64 `json:"efficiency"`
	// Idle is allocated time spent under the idle threshold for at least
	// the idle duration.
	Idle float64 `json:"idle_gpu_hours"`
	// Gaps is time inside an allocation during which its agent shipped
	// nothing; it is in neither Allocated nor Measured.
	Gaps float64 `json:"gap_gpu_hours"`
	// MemPeakMiB is the highest framebuffer use seen on one of the group's
	// GPUs while allocated to it, MemTotalMiB that GPU's framebuffer;
	// MemHeadroom is 1 − the highest peak/total over the group's GPUs; nil
	// without memory series.
	MemPeakMiB  float64  `json:"mem_peak_mib"`
	MemTotalMiB float64  `json:"mem_total_mib"`
	MemHeadroom *float64 `json:"mem_headroom"`
	// TopIdle are the group's jobs with the most idle time (at most three).
	TopIdle []IdleJob `json:"top_idle,omitempty"`
	// Previous is the same group over the previous period; nil when it had
	// no allocation then.
	Previous *Previous `json:"previous,omitempty"`
	// FairShare is the account's or user's standing, when the server runs
	// fair share and the report is by account or user.
	FairShare *FairShare `json:"fair_share,omitempty"`
}

// Previous is a group's numbers over the previous period of the same length.
type Previous struct {
	Allocated  float64  `json:"allocated_gpu_hours"`
	Measured   float64  `json:"measured_gpu_hours"`
	Efficiency *float64 `json:"efficiency"`
}

// FairShare is a group's fair-share standing (scheduler/fairshare).
type FairShare struct {
	// SharesNormalized is the group's normalized share of the machine,
	// UsageNormalized its share of the decayed charged usage; Factor is the
	// factor (Fair Tree for users, classic for accounts, which Fair Tree
	// does not rank); nil where it is undefined.
	SharesNormalized float64  `json:"shares_normalized"`
	UsageNormalized  float64  `json:"usage_normalized"`
	Factor           *float64 `json:"factor"`
	Algorithm        string   `json:"algorithm"`
}

// IdleJob is a job with idle allocated time, and who owns it.
type IdleJob struct {
	Job     string  `json:"job"`
	Account string  `json:"account"`
	User    string  `json:"user"`
	GPUs    int     `json:"gpus"`
	Idle    float64 `json:"idle_gpu_hours"`
	// Allocated is the job's allocated GPU-hours in the window.
	Allocated float64 `json:"allocated_gpu_hours"`
}
