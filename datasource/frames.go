package datasource

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
	"github.com/gpuwatch/gpuwatch/analyzer/jobstats"
	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Units in Grafana's unit ids.
const (
	UnitGPUHours = "suffix: GPU-h"
	UnitFraction = "percentunit" // 0–1 shown as a percentage
	UnitPercent  = "percent"     // 0–100
	UnitMiB      = "mbytes"      // Grafana's mbytes is MiB
	UnitWatt     = "watt"
	UnitJoule    = "joule"
	UnitSeconds  = "s"
	UnitHours    = "h"
)

// column builds one field of n rows from get, with a unit when not empty.
func column[T any](name, unit string, n int, get func(i int) T) *data.Field {
	vals := make([]T, n)
	for i := range vals {
		vals[i] = get(i)
	}
	f := data.NewField(name, nil, vals)
	if unit != "" {
		f.Config = &data.FieldConfig{Unit: unit}
	}
	return f
}

// table is a frame meant for Grafana's table panel.
func table(name string, fields ...*data.Field) *data.Frame {
	return data.NewFrame(name, fields...).SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTable})
}

func notice(f *data.Frame, sev data.NoticeSeverity, text string) {
	if text == "" {
		return
	}
	f.Meta.Notices = append(f.Meta.Notices, data.Notice{Severity: sev, Text: text})
}

// title is a dimension or key as a column header: "account" → "Account".
func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func hours(seconds float64) float64 { return seconds / 3600 }

// finite is v, or nil when v is NaN or infinite (a table cell left empty).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// reportFrame is the utilization report: a row per group, then the total.
func reportFrame(r *report.Report) *data.Frame {
	rows := append(append([]report.Group(nil), r.Groups...), r.Total)
	if r.Total.Key == "" {
		rows[len(rows)-1].Key = "total"
	}
	n := len(rows)
	by := string(r.By)
	if by == "" {
		by = string(report.ByAccount)
	}
	fields := []*data.Field{
		column(title(by), "", n, func(i int) string { return rows[i].Key }),
		column("Owners", "", n, func(i int) string { return strings.Join(rows[i].Owners, ", ") }),
		column("GPUs", "", n, func(i int) int64 { return int64(rows[i].GPUs) }),
		column("Jobs", "", n, func(i int) int64 { return int64(rows[i].Jobs) }),
		column("Allocated", UnitGPUHours, n, func(i int) float64 { return rows[i].Allocated }),
		column("Measured", UnitGPUHours, n, func(i int) float64 { return rows[i].Measured }),
		column("Efficiency", UnitFraction, n, func(i int) *float64 { return rows[i].Efficiency }),
		column("Idle", UnitGPUHours, n, func(i int) float64 { return rows[i].Idle }),
		column("Unmeasured", UnitGPUHours, n, func(i int) float64 { return rows[i].Unmeasured }),
		column("Gaps", UnitGPUHours, n, func(i int) float64 { return rows[i].Gaps }),
		column("Memory peak", UnitMiB, n, func(i int) float64 { return rows[i].MemPeakMiB }),
		column("Memory headroom", UnitFraction, n, func(i int) *float64 { return rows[i].MemHeadroom }),
		column("Measured by", "", n, func(i int) string { return rows[i].MeasuredBy }),
		column("Previous allocated", UnitGPUHours, n, func(i int) *float64 {
			if p := rows[i].Previous; p != nil {
				return &p.Allocated
			}
			return nil
		}),
		column("Previous efficiency", UnitFraction, n, func(i int) *float64 {
			if p := rows[i].Previous; p != nil {
				return p.Efficiency
			}
			return nil
		}),
		column("Fair-share factor", "", n, func(i int) *float64 {
			if f := rows[i].FairShare; f != nil {
				return f.Factor
			}
			return nil
		}),
	}
	f := table("report by "+by, fields...)
	notice(f, data.NoticeSeverityInfo, r.FairShareNote)
	if !r.Filter.IsZero() {
		notice(f, data.NoticeSeverityInfo, "only allocations of "+r.Filter.String())
	}
	return f
}

// jobFrames are one job's GPUs, a row each (a straggler's lag among them), and
// the job's summary row with its verdict (also the GPU table's notice).
func jobFrames(j *jobstats.Result) data.Frames {
	g := j.GPUs
	n := len(g)
	xids := func(i int) string {
		return joinEach(g[i].Xids, ", ", func(x jobstats.Xid) string {
			return fmt.Sprintf("%s×%s", strconv.FormatFloat(x.Count, 'f', -1, 64), x.Xid)
		})
	}
	conds := func(i int) string {
		return joinEach(g[i].Conditions, ", ", func(c jobstats.Cond) string { return c.Condition })
	}
	// straggler is the GPU's worst lag against its peers, with the throttle
	// reasons seen, when jobstats named it a straggler; "" otherwise.
	lagging := map[string]string{}
	for _, s := range j.Stragglers {
		w := s.Worst()
		text := fmt.Sprintf("%s %.0f%% behind", w.Signal, 100*w.Lag)
		if len(s.ThrottleReasons) > 0 {
			text += " (" + strings.Join(s.ThrottleReasons, ", ") + ")"
		}
		lagging[s.Node+"/"+s.UUID] = text
	}
	gpus := table("job "+j.Job+" GPUs",
		column("Node", "", n, func(i int) string { return g[i].Node }),
		column("GPU", "", n, func(i int) string { return g[i].Index }),
		column("UUID", "", n, func(i int) string { return g[i].UUID }),
		column("Model", "", n, func(i int) string { return g[i].Model }),
		column("Allocated", UnitHours, n, func(i int) float64 { return g[i].AllocatedHours }),
		column("SM active", UnitFraction, n, func(i int) *float64 { return g[i].SMActive }),
		column("Utilization", UnitPercent, n, func(i int) *float64 { return g[i].Utilization }),
		column("Activity", UnitFraction, n, func(i int) *float64 { return g[i].Activity }),
		column("Activity source", "", n, func(i int) string { return g[i].ActivitySource }),
		column("Memory peak", UnitMiB, n, func(i int) *float64 { return g[i].MemPeakMiB }),
		column("Memory total", UnitMiB, n, func(i int) *float64 { return g[i].MemTotalMiB }),
		column("Power", UnitWatt, n, func(i int) *float64 { return g[i].PowerW }),
		column("Energy", UnitJoule, n, func(i int) *float64 { return g[i].EnergyJ }),
		column("Idle", UnitSeconds, n, func(i int) float64 { return g[i].IdleSeconds }),
		column("Did nothing", "", n, func(i int) bool { return g[i].DidNothing }),
		column("Xids", "", n, xids),
		column("Conditions", "", n, conds),
		column("Straggler", "", n, func(i int) string { return lagging[g[i].Node+"/"+g[i].UUID] }),
	)
	notice(gpus, data.NoticeSeverityInfo, j.Verdict)
	summary := table("job "+j.Job,
		column("Job", "", 1, func(int) string { return j.Job }),
		column("Start", "", 1, func(int) time.Time { return j.Start }),
		column("End", "", 1, func(int) time.Time { return j.End }),
		column("Account", "", 1, func(int) string { return j.Account }),
		column("User", "", 1, func(int) string { return j.User }),
		column("Namespace", "", 1, func(int) string { return j.Namespace }),
		column("GPUs", "", 1, func(int) int64 { return int64(len(j.GPUs)) }),
		column("GPUs idle", "", 1, func(int) int64 { return int64(j.Idle) }),
		column("Allocated", UnitGPUHours, 1, func(int) float64 { return j.AllocatedGPU }),
		column("Verdict", "", 1, func(int) string { return j.Verdict }),
	)
	return data.Frames{gpus, summary}
}

// faultsFrame is the fault report's table named by which.
func faultsFrame(r *faults.Report, which string) *data.Frame {
	counts := func(name, key string, c []faults.Count) *data.Frame {
		n := len(c)
		return table(name,
			column(key, "", n, func(i int) string { return c[i].Key }),
			column("Count", "", n, func(i int) float64 { return c[i].Count }))
	}
	mtbf := func(name, key string, m []faults.MTBF) *data.Frame {
		n := len(m)
		return table(name,
			column(key, "", n, func(i int) string { return m[i].Key }),
			column("Nodes", "", n, func(i int) int64 { return int64(m[i].Nodes) }),
			column("Observed", UnitHours, n, func(i int) float64 { return m[i].ObservedHours }),
			column("Failures", "", n, func(i int) int64 { return int64(m[i].Failures) }),
			column("MTBF", UnitHours, n, func(i int) *float64 { return m[i].MTBFHours }))
	}
	var f *data.Frame
	switch which {
	case FaultsXidByAction:
		f = counts("Xids by action", "Action", r.XidByAct)
	case FaultsXidByModel:
		f = counts("Xids by GPU model", "Model", r.XidByModel)
	case FaultsXidByNode:
		f = counts("Xids by node", "Node", r.XidByNode)
	case FaultsConditions:
		f = counts("health conditions by kind", "Condition", r.Conditions)
	case FaultsMTBFByNode:
		f = mtbf("MTBF by node", "Node", r.MTBFByNode)
	case FaultsMTBFByModel:
		f = mtbf("MTBF by GPU model", "Model", r.MTBFByMod)
	case FaultsLemons:
		l := r.Lemons
		n := len(l)
		f = table("lemon nodes",
			column("Node", "", n, func(i int) string { return l[i].Node }),
			column("Drains", "", n, func(i int) int64 { return int64(l[i].Drains) }),
			column("Most within window", "", n, func(i int) int64 { return int64(l[i].MaxWithin) }),
			column("Last drain", "", n, func(i int) *time.Time {
				if len(l[i].Times) == 0 {
					return nil
				}
				t := l[i].Times[len(l[i].Times)-1]
				return &t
			}),
			column("Reasons", "", n, func(i int) string { return strings.Join(l[i].Reasons, "; ") }))
	case FaultsDrainSoon:
		d := r.DrainSoon
		n := len(d)
		f = table("drain soon",
			column("Node", "", n, func(i int) string { return d[i].Node }),
			column("GPU", "", n, func(i int) string { return d[i].GPU }),
			column("Counter", "", n, func(i int) string { return d[i].What }),
			column("Value", "", n, func(i int) float64 { return d[i].Value }),
			column("Growth", "", n, func(i int) float64 { return d[i].Growth }),
			column("Limit", "", n, func(i int) float64 { return d[i].Limit }),
			column("Of limit", UnitFraction, n, func(i int) float64 { return d[i].Fraction }),
			column("Hours to limit", UnitHours, n, func(i int) *float64 { return d[i].HoursToLimit }),
			column("Row remap pending", "", n, func(i int) bool { return d[i].RemapPending }),
			column("Row remap failure", "", n, func(i int) bool { return d[i].RemapFailed }))
	case FaultsInfiniBand:
		p := r.IBPorts
		n := len(p)
		f = table("InfiniBand ports",
			column("Node", "", n, func(i int) string { return p[i].Node }),
			column("Device", "", n, func(i int) string { return p[i].Device }),
			column("Port", "", n, func(i int) string { return p[i].Port }),
			column("Flaps", "", n, func(i int) float64 { return p[i].Flaps }),
			column("Symbol errors", "", n, func(i int) float64 { return p[i].SymbolErrors }))
	case FaultsNVLink:
		l := r.NVLinks
		n := len(l)
		f = table("NVLinks",
			column("Node", "", n, func(i int) string { return l[i].Node }),
			column("GPU", "", n, func(i int) string { return l[i].GPU }),
			column("Link", "", n, func(i int) string { return l[i].Link }),
			column("CRC errors", "", n, func(i int) float64 { return l[i].CRCErrors }),
			column("Replays", "", n, func(i int) float64 { return l[i].Replays }),
			column("Recovery errors", "", n, func(i int) float64 { return l[i].Recovery }))
	default:
		f = counts("Xids by code", "Xid", r.XidByCode)
	}
	notice(f, data.NoticeSeverityWarning, r.DrainAuditNote)
	return f
}

// stragglersFrame is a row per straggling GPU and signal.
func stragglersFrame(r *stragglers.Report) *data.Frame {
	type row struct {
		job, node, gpu string
		e              stragglers.Evidence
		throttle       string
	}
	var rows []row
	for _, j := range r.Jobs {
		for _, s := range j.Stragglers {
			for _, e := range s.Evidence {
				rows = append(rows, row{j.JobID, s.Node, s.GPU, e, strings.Join(s.ThrottleReasons, ", ")})
			}
		}
	}
	n := len(rows)
	f := table("stragglers",
		column("Job", "", n, func(i int) string { return rows[i].job }),
		column("Node", "", n, func(i int) string { return rows[i].node }),
		column("GPU", "", n, func(i int) string { return rows[i].gpu }),
		column("Signal", "", n, func(i int) string { return rows[i].e.Signal }),
		column("Median", "", n, func(i int) float64 { return rows[i].e.Median }),
		column("Reference", "", n, func(i int) float64 { return rows[i].e.Reference }),
		column("Lag", UnitFraction, n, func(i int) float64 { return rows[i].e.Lag }),
		column("Behind for", UnitSeconds, n, func(i int) float64 { return rows[i].e.BehindSeconds }),
		column("Throttle reasons", "", n, func(i int) string { return rows[i].throttle }))
	if n == 0 {
		notice(f, data.NoticeSeverityInfo, fmt.Sprintf("no stragglers among %d jobs with two GPUs or more", len(r.Jobs)))
	}
	return f
}

// explainFrames are a placement decision: its summary row, and a row per
// recorded candidate node with its verdicts and scores.
func explainFrames(d *framework.Decision) data.Frames {
	chosen := joinEach(d.Assignments, "; ", func(a framework.Assignment) string { return fmt.Sprintf("%s %v", a.Node, a.GPUs) })
	rejected := joinEach(d.Rejections, "; ", func(r framework.Rejection) string {
		return fmt.Sprintf("%s: %s (%d nodes)", r.Plugin, r.Reason, r.Nodes)
	})
	summary := table("decision "+d.ID,
		column("Decision", "", 1, func(int) string { return d.ID }),
		column("Time", "", 1, func(int) time.Time { return d.At }),
		column("Outcome", "", 1, func(int) string { return string(d.Outcome) }),
		column("Reason", "", 1, func(int) string { return d.Reason }),
		column("Dry run", "", 1, func(int) bool { return d.DryRun }),
		column("Evaluated", "", 1, func(int) int64 { return int64(d.Evaluated) }),
		column("Feasible", "", 1, func(int) int64 { return int64(d.Feasible) }),
		column("Domain", "", 1, func(int) string { return d.Domain }),
		column("Chosen", "", 1, func(int) string { return chosen }),
		column("Rejections", "", 1, func(int) string { return rejected }),
		column("Notes", "", 1, func(int) string { return strings.Join(d.Notes, "; ") }))
	c := d.Candidates
	n := len(c)
	verdicts := func(i int) string {
		return joinEach(c[i].Verdicts, "; ", func(v framework.Verdict) string { return v.Plugin + ": " + v.Status.String() })
	}
	scores := func(i int) string {
		return joinEach(c[i].Scores, "; ", func(s framework.ScoreRecord) string {
			return fmt.Sprintf("%s %.3f×%g", s.Plugin, s.Score, s.Weight)
		})
	}
	cands := table("decision "+d.ID+" candidates",
		column("Node", "", n, func(i int) string { return c[i].Node }),
		column("Chosen", "", n, func(i int) bool { return c[i].Chosen }),
		column("Feasible", "", n, func(i int) bool { return c[i].Feasible }),
		column("Score", UnitFraction, n, func(i int) float64 { return c[i].Total }),
		column("GPUs", "", n, func(i int) string { return joinEach(c[i].GPUs, ",", strconv.Itoa) }),
		column("Verdicts", "", n, verdicts),
		column("Scores", "", n, scores))
	msg := fmt.Sprintf("%s: %s", d.ID, d.Outcome)
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	notice(summary, data.NoticeSeverityInfo, msg)
	return data.Frames{summary, cands}
}

// joinEach is each of xs as str says, joined by sep.
func joinEach[T any](xs []T, sep string, str func(T) string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = str(x)
	}
	return strings.Join(s, sep)
}

// drainsFrame is the audit log's records in [from, to], oldest first.
func drainsFrame(recs []drain.AuditRecord, from, to time.Time) *data.Frame {
	var r []drain.AuditRecord
	for _, a := range recs {
		if !a.Time.Before(from) && !a.Time.After(to) {
			r = append(r, a)
		}
	}
	sort.SliceStable(r, func(i, j int) bool { return r[i].Time.Before(r[j].Time) })
	n := len(r)
	evidence := func(i int) string {
		return joinEach(r[i].Evidence, ", ", func(c telemetry.Condition) string { return string(c.Kind) })
	}
	return table("drain audit log",
		column("Time", "", n, func(i int) time.Time { return r[i].Time }),
		column("Node", "", n, func(i int) string { return r[i].Node }),
		column("GPU", "", n, func(i int) string { return r[i].GPU }),
		column("Event", "", n, func(i int) string { return r[i].Event }),
		column("Action", "", n, func(i int) string { return r[i].Action }),
		column("Rule", "", n, func(i int) string { return r[i].Rule }),
		column("Reason", "", n, func(i int) string { return r[i].Reason }),
		column("From", "", n, func(i int) string { return r[i].From }),
		column("To", "", n, func(i int) string { return r[i].To }),
		column("Outcome", "", n, func(i int) string { return string(r[i].Outcome) }),
		column("Dry run", "", n, func(i int) bool { return r[i].DryRun }),
		column("User", "", n, func(i int) string { return r[i].User }),
		column("Evidence", "", n, evidence),
		column("Error", "", n, func(i int) string { return r[i].Error }))
}

// fairShareFrame is the standing's associations in tree order.
func fairShareFrame(st *fairshare.Standing, stale string) *data.Frame {
	a := st.Associations
	n := len(a)
	num := func(v fairshare.Number) *float64 { return finite(float64(v)) }
	f := table("fair-share standing",
		column("Account", "", n, func(i int) string { return a[i].Account }),
		column("User", "", n, func(i int) string { return a[i].User }),
		column("Parent", "", n, func(i int) string { return a[i].Parent }),
		column("Depth", "", n, func(i int) int64 { return int64(a[i].Depth) }),
		column("Shares", UnitFraction, n, func(i int) float64 { return a[i].SharesNormalized }),
		column("Measured", UnitGPUHours, n, func(i int) float64 { return hours(a[i].UsageMeasured) }),
		column("Allocated", UnitGPUHours, n, func(i int) float64 { return hours(a[i].UsageAllocated) }),
		column("Charged", UnitGPUHours, n, func(i int) float64 { return hours(a[i].UsageCharged) }),
		column("Usage", UnitFraction, n, func(i int) float64 { return a[i].UsageNormalized }),
		column("Effective usage", UnitFraction, n, func(i int) float64 { return a[i].UsageEffective }),
		column("Classic factor", "", n, func(i int) *float64 { return num(a[i].ClassicFactor) }),
		column("Level FS", "", n, func(i int) *float64 { return num(a[i].LevelFS) }),
		column("Fair Tree factor", "", n, func(i int) *float64 { return num(a[i].FairTreeFactor) }),
		column("Fallback", "", n, func(i int) bool { return a[i].Fallback }))
	notice(f, data.NoticeSeverityInfo, fmt.Sprintf("charged by %s, %s factor fed to the scheduler, half-life %s; usage decayed",
		st.Charge, st.Algorithm, time.Duration(st.HalfLifeSeconds*float64(time.Second))))
	if st.Fallback {
		notice(f, data.NoticeSeverityWarning, "charged by allocation: "+st.FallbackReason)
	}
	notice(f, data.NoticeSeverityWarning, stale)
	return f
}
