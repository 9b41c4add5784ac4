package datasource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
	"github.com/gpuwatch/gpuwatch/analyzer/jobstats"
	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
)

// The query types, each one endpoint of the server's API.
const (
	TypeReport     = "report"     // GET /report: one row per group
	TypeJobStats   = "jobstats"   // GET /jobs/{id}: one row per GPU, and the job's verdict
	TypeFaults     = "faults"     // GET /faults: one table, chosen by Query.Faults
	TypeStragglers = "stragglers" // GET /stragglers: one row per straggling GPU and signal
	TypeExplain    = "explain"    // GET /explain/{id}: the decision, and one row per candidate node
	TypeDrains     = "drains"     // GET /audit: the drain audit log over the time range
	TypeFairShare  = "fairshare"  // GET /fairshare: one row per association
)

// QueryTypes lists the query types in the order the query editor shows them.
var QueryTypes = []string{TypeReport, TypeJobStats, TypeFaults, TypeStragglers, TypeExplain, TypeDrains, TypeFairShare}

// The faults query's tables (Query.Faults), one frame each.
const (
	FaultsXidByCode   = "xid_by_code"
	FaultsXidByAction = "xid_by_action"
	FaultsXidByModel  = "xid_by_model"
	FaultsXidByNode   = "xid_by_node"
	FaultsConditions  = "conditions"
	FaultsMTBFByNode  = "mtbf_by_node"
	FaultsMTBFByModel = "mtbf_by_model"
	FaultsLemons      = "lemons"
	FaultsDrainSoon   = "drain_soon"
	FaultsInfiniBand  = "infiniband"
	FaultsNVLink      = "nvlink"
)

// FaultTables lists the faults query's tables; the first is the default.
var FaultTables = []string{FaultsXidByCode, FaultsXidByAction, FaultsXidByModel, FaultsXidByNode, FaultsConditions,
	FaultsMTBFByNode, FaultsMTBFByModel, FaultsLemons, FaultsDrainSoon, FaultsInfiniBand, FaultsNVLink}

// MaxQueryBytes bounds a query's JSON.
const MaxQueryBytes = 64 << 10

// Query is one panel query, as the query editor (plugin/module.js) writes it.
// Grafana adds its own fields (refId, datasource, intervalMs, …), which are
// ignored. Every field is a string as a person types it, with Grafana's
// template variables already replaced by the front end.
type Query struct {
	QueryType string `json:"queryType"`
	// Window, when set, replaces the start of the panel's time range: the
	// window is this long and ends where the panel's range ends ("7d", "168h").
	Window string `json:"window,omitempty"`

	// report: the grouping (account, user, job, namespace, node, model) and
	// the step; report and jobstats: the idle threshold ("5%" or 0.05) and
	// how long below it is idle ("30m").
	By        string `json:"by,omitempty"`
	Step      string `json:"step,omitempty"`
	IdleBelow string `json:"idleBelow,omitempty"`
	IdleFor   string `json:"idleFor,omitempty"`

	// report: only the allocations of these accounts, users and namespaces
	// (empty: all). Each is a comma-separated string, as Grafana's ${var:csv}
	// writes a multi-value variable, or an array of strings; Grafana's All
	// ($__all) is every allocation.
	Account   List `json:"account,omitempty"`
	User      List `json:"user,omitempty"`
	Namespace List `json:"namespace,omitempty"`

	// jobstats: the job (a Slurm job id, or namespace/pod); stragglers: only
	// this job when set.
	JobID string `json:"jobId,omitempty"`

	// faults: the table (FaultTables; default xid_by_code).
	Faults string `json:"faults,omitempty"`

	// stragglers: the lag that counts ("10%") and for how long ("2m").
	MinGap      string `json:"minGap,omitempty"`
	MinDuration string `json:"minDuration,omitempty"`

	// explain: the placement decision's id.
	PlacementID string `json:"placementId,omitempty"`

	// drains: at most this many records, the latest (default the server's 1,000).
	Limit int `json:"limit,omitempty"`
}

// AllValue is what Grafana sends for a variable's All option when it has no
// custom all value and is not expanded: every allocation.
const AllValue = "$__all"

// List is a query's list of values: a comma-separated string ("nlp,vision",
// spaces around each value dropped) or an array of strings (each one value,
// trimmed); a value AllValue makes the list empty (all).
type List []string

// UnmarshalJSON reads a string, an array of strings or null.
func (l *List) UnmarshalJSON(data []byte) error {
	var vals []string
	var one string
	switch err := json.Unmarshal(data, &one); {
	case err == nil:
		if strings.TrimSpace(one) != "" {
			vals = strings.Split(one, ",")
		}
	default:
		if err := json.Unmarshal(data, &vals); err != nil {
			return &listError{got: truncate(data, 40)}
		}
	}
	out := make(List, 0, len(vals))
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == AllValue {
			*l = nil
			return nil
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		out = nil
	}
	*l = out
	return nil
}

// listError is a List that is neither a string nor an array of strings;
// ParseQuery names its field.
type listError struct{ got string }

func (e *listError) Error() string {
	return "want a comma-separated string or an array of strings, got " + e.got
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// ParseQuery reads a query's JSON and checks what can be checked without a
// time range: a known query type, the fields that type needs, and values
// that parse. queryType, when not empty, is Grafana's own copy of the query
// type (backend.DataQuery.QueryType) and wins.
func ParseQuery(data []byte, queryType string) (Query, error) {
	var q Query
	if len(data) > MaxQueryBytes {
		return q, fmt.Errorf("the query is %d bytes: at most %d", len(data), MaxQueryBytes)
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &q); err != nil {
			if le := (*listError)(nil); errors.As(err, &le) {
				var raw map[string]json.RawMessage
				_ = json.Unmarshal(data, &raw)
				for _, k := range []string{"account", "user", "namespace"} {
					var l List
					if r, ok := raw[k]; ok && l.UnmarshalJSON(r) != nil {
						return q, fmt.Errorf("%s: %w", k, le)
					}
				}
			}
			return q, fmt.Errorf("cannot read the query: %w", err)
		}
	}
	if queryType != "" {
		q.QueryType = queryType
	}
	q.trim()
	if q.QueryType == "" {
		return q, fmt.Errorf("no query type: choose one of %s", strings.Join(QueryTypes, ", "))
	}
	if !slices.Contains(QueryTypes, q.QueryType) {
		return q, fmt.Errorf("unknown query type %q: want one of %s", q.QueryType, strings.Join(QueryTypes, ", "))
	}
	if q.Window != "" {
		if _, err := parseWindow(q.Window); err != nil {
			return q, err
		}
	}
	switch q.QueryType {
	case TypeReport:
		if q.By != "" {
			if _, err := report.ParseBy(q.By); err != nil {
				return q, fmt.Errorf("group by: %w", err)
			}
		}
		for _, l := range []struct {
			name string
			vals List
		}{{"account", q.Account}, {"user", q.User}, {"namespace", q.Namespace}} {
			if err := report.CheckFilterValues(l.name, l.vals); err != nil {
				return q, err
			}
		}
	case TypeJobStats:
		if err := checkJobID(q.JobID); err != nil {
			return q, err
		}
	case TypeStragglers:
		if q.JobID != "" {
			if err := checkJobID(q.JobID); err != nil {
				return q, err
			}
		}
	case TypeFaults:
		if q.Faults != "" && !slices.Contains(FaultTables, q.Faults) {
			return q, fmt.Errorf("unknown faults table %q: want one of %s", q.Faults, strings.Join(FaultTables, ", "))
		}
	case TypeExplain:
		if q.PlacementID == "" {
			return q, fmt.Errorf("explain needs a placement decision id (the id POST /place answered, or gpuwatch place printed)")
		}
		if len(q.PlacementID) > 256 || strings.ContainsAny(q.PlacementID, "/?#") || hasControl(q.PlacementID) || dots(q.PlacementID) {
			return q, fmt.Errorf("placement id %q: want the id of a decision, such as d-0001", q.PlacementID)
		}
	case TypeDrains:
		if q.Limit < 0 {
			return q, fmt.Errorf("limit %d: want a positive number of records", q.Limit)
		}
	}
	return q, nil
}

func (q *Query) trim() {
	for _, p := range []*string{&q.QueryType, &q.Window, &q.By, &q.Step, &q.IdleBelow, &q.IdleFor, &q.JobID, &q.Faults,
		&q.MinGap, &q.MinDuration, &q.PlacementID} {
		*p = strings.TrimSpace(*p)
	}
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// dots: a part "." or "..", which a server's router would take for a path step.
func dots(s string) bool {
	for _, p := range strings.Split(s, "/") {
		if p == "." || p == ".." {
			return true
		}
	}
	return false
}

// checkJobID: a job_id label, or namespace/pod.
func checkJobID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("jobstats needs a job id: a Slurm job id, or namespace/pod for a pod without one")
	case len(id) > 512 || hasControl(id) || strings.Count(id, "/") > 1 || strings.HasPrefix(id, "/") || strings.HasSuffix(id, "/") || dots(id):
		return fmt.Errorf("job id %q: want a Slurm job id (such as 4242) or namespace/pod", id)
	}
	return nil
}

// parseWindow reads a window's length: a Go duration, or a number of days
// ("7d") as Grafana's time pickers write them.
func parseWindow(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		n, perr := strconv.ParseFloat(days, 64)
		if perr == nil && n > 0 && n <= 3660 {
			d, err = time.Duration(n*24*float64(time.Hour)), nil
		}
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("window %q: want a positive duration such as 24h or 7d", s)
	}
	return d, nil
}

// editorNames names the API's parameters as the query editor labels them, so
// the analyzer's own checks speak the panel's language.
var editorNames = map[string]string{
	report.ParamFrom: "the time range's start", report.ParamTo: "the time range's end", report.ParamLast: "window",
	report.ParamBy: "group by", report.ParamIdleBelow: "idle below", report.ParamIdleFor: "idle for",
	report.ParamStep: "step", stragglers.ParamMinGap: "min gap", stragglers.ParamMinDuration: "min duration",
	stragglers.ParamJob: "job id",
}

func editorName(p string) string {
	if n, ok := editorNames[p]; ok {
		return n
	}
	return p
}

// RequestPath is the server path, query string included, of the GET that
// answers q over the panel's time range [from, to]; an error says what in q
// or the range the server would refuse.
func RequestPath(q Query, from, to time.Time) (string, error) {
	c, err := q.request(from, to)
	if err != nil {
		return "", err
	}
	path := APIPrefix + c.Path
	if len(c.Values) > 0 {
		path += "?" + c.Values.Encode()
	}
	return path, nil
}

// call is one GET of the server's API.
type call struct {
	Path   string // under the API prefix, already escaped
	Values url.Values
}

// request turns q over the panel's time range [from, to] into the call that
// answers it, checking its parameters with the analyzer's own parsers (the
// ones the server runs), so a bad value is refused before anything is sent.
func (q Query) request(from, to time.Time) (call, error) {
	if q.Window != "" {
		d, err := parseWindow(q.Window)
		if err != nil {
			return call{}, err
		}
		from = to.Add(-d)
	}
	if from.IsZero() || to.IsZero() || !to.After(from) {
		return call{}, fmt.Errorf("the time range %s to %s is empty or reversed", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	v := url.Values{}
	v.Set(report.ParamFrom, from.UTC().Format(time.RFC3339Nano))
	v.Set(report.ParamTo, to.UTC().Format(time.RFC3339Nano))
	set := func(param, value string) {
		if value != "" {
			v.Set(param, value)
		}
	}
	var err error
	c := call{Values: v}
	switch q.QueryType {
	case TypeReport:
		set(report.ParamBy, q.By)
		set(report.ParamStep, q.Step)
		set(report.ParamIdleBelow, q.IdleBelow)
		set(report.ParamIdleFor, q.IdleFor)
		for param, l := range map[string]List{report.ParamAccount: q.Account, report.ParamUser: q.User, report.ParamNamespace: q.Namespace} {
			if len(l) > 0 {
				v[param] = l
			}
		}
		_, err = report.ParseQueryAs(v, to, editorName)
		c.Path = "/report"
	case TypeJobStats:
		set(jobstats.ParamIdleBelow, q.IdleBelow)
		set(jobstats.ParamIdleFor, q.IdleFor)
		_, err = jobstats.ParseQuery(q.JobID, v, to, editorName)
		c.Path = "/jobs/" + url.PathEscape(q.JobID)
	case TypeFaults:
		_, err = faults.ParseQuery(v, to, editorName)
		c.Path = "/faults"
	case TypeStragglers:
		set(stragglers.ParamMinGap, q.MinGap)
		set(stragglers.ParamMinDuration, q.MinDuration)
		set(stragglers.ParamJob, q.JobID)
		_, err = stragglers.ParseQuery(v, to, editorName)
		c.Path = "/stragglers"
	case TypeExplain:
		c.Path, c.Values = "/explain/"+url.PathEscape(q.PlacementID), nil
	case TypeDrains:
		// The audit log is asked from the range's start; records after its
		// end are left out when the frame is built.
		c.Values = url.Values{"since": {from.UTC().Format(time.RFC3339)}}
		if q.Limit > 0 {
			c.Values.Set("limit", strconv.Itoa(q.Limit))
		}
		c.Path = "/audit"
	case TypeFairShare:
		c.Path, c.Values = "/fairshare", nil
	default:
		return call{}, fmt.Errorf("unknown query type %q: want one of %s", q.QueryType, strings.Join(QueryTypes, ", "))
	}
	if err != nil {
		return call{}, err
	}
	return c, nil
}
