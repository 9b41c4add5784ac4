package report

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// The API's query parameters (GET /api/gpuwatch/v1/report).
const (
	ParamFrom      = "from"       // RFC 3339
	ParamTo        = "to"         // RFC 3339
	ParamLast      = "last"       // a Go duration, instead of from and to: the window ending now
	ParamBy        = "by"         // a By
	ParamIdleBelow = "idle_below" // "5%" or 0.05
	ParamIdleFor   = "idle_for"   // a Go duration
	ParamStep      = "step"       // a Go duration
	ParamProgress  = "progress"   // "1": answer NDJSON progress lines, then the report
	// Repeated, one exact value each: only the allocations of these
	// accounts, users and namespaces (Filter).
	ParamAccount   = "account"
	ParamUser      = "user"
	ParamNamespace = "namespace"
)

// ParsePercent reads a threshold written "5%" or as a fraction "0.05".
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "%")), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v/scale > 1 {
		return 0, fmt.Errorf("%q: want a percentage such as 5%% or a fraction such as 0.05", s)
	}
	return v / scale, nil
}

// ParseQuery turns the API's query parameters into Options; the window is
// from and to, or last before now (default the last 24 hours).
func ParseQuery(v url.Values, now time.Time) (Options, error) {
	return ParseQueryAs(v, now, func(p string) string { return p })
}

// ParseQueryAs is ParseQuery with errors naming each parameter as name
// says (a command names its flags).
func ParseQueryAs(v url.Values, now time.Time, name func(param string) string) (Options, error) {
	var o Options
	var err error
	if o.From, o.To, err = ParseWindow(v, now, 24*time.Hour, name); err != nil {
		return o, err
	}
	if b := v.Get(ParamBy); b != "" {
		by, err := ParseBy(b)
		if err != nil {
			return o, fmt.Errorf("%s: %w", name(ParamBy), err)
		}
		o.By = by
	}
	if s := v.Get(ParamIdleBelow); s != "" {
		p, err := ParsePercent(s)
		if err != nil {
			return o, fmt.Errorf("%s %w", name(ParamIdleBelow), err)
		}
		if p == 0 {
			p = 1e-12 // "0%": nothing is below it; 0 would mean the default
		}
		o.IdleBelow = p
	}
	for _, f := range []struct {
		param string
		into  *[]string
	}{{ParamAccount, &o.Filter.Accounts}, {ParamUser, &o.Filter.Users}, {ParamNamespace, &o.Filter.Namespaces}} {
		vals := v[f.param]
		if err := CheckFilterValues(name(f.param), vals); err != nil {
			return o, err
		}
		*f.into = append([]string(nil), vals...)
	}
	for _, d := range []struct {
		name string
		into *time.Duration
	}{{ParamIdleFor, &o.IdleFor}, {ParamStep, &o.Step}} {
		if s := v.Get(d.name); s != "" {
			x, err := time.ParseDuration(s)
			if err != nil || x <= 0 {
				return o, fmt.Errorf("%s %q: want a positive duration such as 30m", name(d.name), s)
			}
			*d.into = x
		}
	}
	return o, o.validate()
}

// JobSelector is the label matcher of a job's gpuwatch_gpu_allocation_info
// series: {job_id="…"}, or {namespace="…",pod="…"} for "namespace/pod" (a pod
// without a job id, as the analyzer names it). The values are quoted: an id
// cannot inject PromQL.
func JobSelector(job string) string {
	if ns, pod, ok := strings.Cut(job, "/"); ok {
		return "{" + telemetry.LabelNamespace + "=" + strconv.Quote(ns) + "," + telemetry.LabelPod + "=" + strconv.Quote(pod) + "}"
	}
	return "{" + telemetry.LabelJobID + "=" + strconv.Quote(job) + "}"
}

// GPUMatcher is the quoted regular expression that matches exactly the GPUs
// uuids (each quoted, in sorted order), for a =~ matcher on gpuwatch's
// gpu_uuid or dcgm-exporter's UUID.
func GPUMatcher(uuids []string) string {
	quoted := make([]string, len(uuids))
	for i, u := range uuids {
		quoted[i] = regexp.QuoteMeta(u)
	}
	sort.Strings(quoted)
	return strconv.Quote(strings.Join(quoted, "|"))
}

// OverGPUs is fn over metric's series of the GPUs that matcher (GPUMatcher)
// names, over the range rng ("[1m]"), whether a series names its GPU by
// dcgm-exporter's UUID or by gpuwatch's gpu_uuid (a relabelled DCGM series).
func OverGPUs(fn, metric, matcher, rng string) string {
	return fn + "(" + metric + "{" + telemetry.DCGMLabelUUID + "=~" + matcher + "}" + rng + ") or " +
		fn + "(" + metric + "{" + telemetry.LabelGPUUUID + "=~" + matcher + "}" + rng + ")"
}

// ParseWindow reads a window from the API's from and to (RFC 3339) or last
// (a Go duration ending at now; def when none is given), with errors naming
// each parameter as name says. The fault report (analyzer/faults) shares it.
func ParseWindow(v url.Values, now time.Time, def time.Duration, name func(param string) string) (start, end time.Time, err error) {
	from, to, last := v.Get(ParamFrom), v.Get(ParamTo), v.Get(ParamLast)
	switch {
	case last != "" && (from != "" || to != ""):
		return start, end, fmt.Errorf("give either %s and %s, or %s, not both", name(ParamFrom), name(ParamTo), name(ParamLast))
	case (from == "") != (to == ""):
		return start, end, fmt.Errorf("give both %s and %s (RFC 3339, e.g. 2026-11-01T00:00:00Z), or %s", name(ParamFrom), name(ParamTo), name(ParamLast))
	case from != "":
		if start, err = time.Parse(time.RFC3339, from); err != nil {
			return start, end, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-11-01T00:00:00Z", name(ParamFrom), from)
		}
		if end, err = time.Parse(time.RFC3339, to); err != nil {
			return start, end, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-11-08T00:00:00Z", name(ParamTo), to)
		}
		if !end.After(start) {
			return start, end, fmt.Errorf("the window %s to %s is empty or reversed: %s must be after %s", from, to, name(ParamTo), name(ParamFrom))
		}
	default:
		d := def
		if last != "" {
			if d, err = time.ParseDuration(last); err != nil || d <= 0 {
				return start, end, fmt.Errorf("%s %q: want a positive duration such as 24h or 168h", name(ParamLast), last)
			}
		}
		end, start = now, now.Add(-d)
	}
	return start, end, nil
}

// validate checks what defaults would otherwise reject, on a copy.
func (o Options) validate() error { return o.defaults() }

// Query is the inverse of ParseQuery, for clients.
func (o Options) Query() url.Values {
	v := url.Values{}
	v.Set(ParamFrom, o.From.UTC().Format(time.RFC3339))
	v.Set(ParamTo, o.To.UTC().Format(time.RFC3339))
	if o.By != "" {
		v.Set(ParamBy, string(o.By))
	}
	if o.IdleBelow > 0 {
		v.Set(ParamIdleBelow, strconv.FormatFloat(o.IdleBelow, 'g', -1, 64))
	}
	if o.IdleFor > 0 {
		v.Set(ParamIdleFor, o.IdleFor.String())
	}
	if o.Step > 0 {
		v.Set(ParamStep, o.Step.String())
	}
	for param, vals := range map[string][]string{ParamAccount: o.Filter.Accounts, ParamUser: o.Filter.Users, ParamNamespace: o.Filter.Namespaces} {
		if len(vals) > 0 {
			v[param] = append([]string(nil), vals...)
		}
	}
	return v
}

// AttachFairShare adds each account's (by account) or user's (by user)
// fair-share standing to the report's groups, or says why it does not.
func AttachFairShare(r *Report, st *fairshare.Standing) {
	switch {
	case st == nil:
		r.FairShareNote = "fair share is not configured on this server"
		return
	case r.By != ByAccount && r.By != ByUser:
		r.FairShareNote = "shown by account or by user only"
		return
	}
	rows := map[string]fairshare.StandingRow{}
	for _, row := range st.Associations {
		switch {
		case r.By == ByAccount && row.User == "" && row.Account != "":
			rows[row.Account] = row
		case r.By == ByUser && row.User != "":
			if _, seen := rows[row.User]; !seen { // a user in two accounts: the first
				rows[row.User] = row
			}
		}
	}
	for i := range r.Groups {
		if row, ok := rows[r.Groups[i].Key]; ok {
			fs := &FairShare{SharesNormalized: row.SharesNormalized, UsageNormalized: row.UsageNormalized, Algorithm: string(st.Algorithm)}
			// Fair Tree ranks users only; an account shows its classic factor.
			f := st.Factor(row)
			if r.By == ByAccount {
				f, fs.Algorithm = float64(row.ClassicFactor), string(fairshare.Classic)
			}
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				fs.Factor = &f
			}
			r.Groups[i].FairShare = fs
		}
	}
}
