package faults

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// None is the key of a group a series has no value for (a node without
// gpuwatch_gpu_info has no GPU model).
const None = report.None

// Limits from the agent's health engine (collector/health DefaultRules,
// docs/health.md), which this package may not import: a GPU that reaches one
// is drained by the engine's conditions.
const (
	// RetiredPagesLimit: retired pages (SBE + DBE, pre-Ampere) at which
	// retired-pages turns critical, CONTACT_SUPPORT. The page retirement
	// table holds 64 (NVIDIA's Dynamic Page Retirement guide).
	RetiredPagesLimit = 60
	// RemappedRowsLimit: rows remapped for uncorrectable errors above which
	// row-remap-failure is raised (critical, CONTACT_SUPPORT).
	RemappedRowsLimit = 512
)

// FailureAction is the weakest catalog action that makes an Xid a failure:
// RESET_GPU and everything more disruptive (telemetry.Action.Rank).
const FailureAction = telemetry.ActionResetGPU

// IncidentGap merges failures of one node closer than this into one: a fatal
// Xid and the drain it causes are one failure.
const IncidentGap = 10 * time.Minute

// The API's query parameters (GET /api/gpuwatch/v1/faults), besides
// report.ParamFrom, report.ParamTo and report.ParamLast (default 7 days).
const (
	ParamLemonCount  = "lemon_count"  // drains that make a lemon (default 3)
	ParamLemonWindow = "lemon_window" // within this long (default 168h)
	ParamTop         = "top"          // rows of each ranked list (default 20)
)

// Options say what to report.
type Options struct {
	From, To time.Time
	// LemonCount drains of one node within LemonWindow make it a lemon
	// (defaults 3 and 7 days).
	LemonCount  int
	LemonWindow time.Duration
	// Top bounds the ranked lists (drain soon, InfiniBand, NVLink; default 20).
	Top int
	// MaxPoints bounds the points a range query asks per series (default
	// 10,000); the step is the window over it, at least 15 s.
	MaxPoints int
	Now       func() time.Time
}

func (o *Options) defaults() error {
	if o.LemonCount == 0 {
		o.LemonCount = 3
	}
	if o.LemonWindow == 0 {
		o.LemonWindow = 7 * 24 * time.Hour
	}
	if o.Top == 0 {
		o.Top = 20
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 10_000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.LemonCount < 1:
		return fmt.Errorf("lemon count %d: want 1 or more drains", o.LemonCount)
	case o.LemonWindow < 0:
		return fmt.Errorf("lemon window %s: want a positive duration", o.LemonWindow)
	case o.Top < 1:
		return fmt.Errorf("top %d: want 1 or more rows", o.Top)
	case o.From.IsZero() || o.To.IsZero():
		return fmt.Errorf("the window needs a start and an end")
	case !o.To.After(o.From):
		return fmt.Errorf("the window %s to %s is empty or reversed: the end must be after the start",
			o.From.UTC().Format(time.RFC3339), o.To.UTC().Format(time.RFC3339))
	}
	return nil
}

// step is the range queries' resolution.
func (o *Options) step() time.Duration {
	s := (o.To.Sub(o.From) / time.Duration(o.MaxPoints)).Truncate(time.Second) + time.Second
	return max(s, 15*time.Second)
}

// ParseQuery turns the API's query parameters into Options, errors naming
// each parameter as name says (a command names its flags).
func ParseQuery(v url.Values, now time.Time, name func(param string) string) (Options, error) {
	var o Options
	var err error
	if o.From, o.To, err = report.ParseWindow(v, now, 7*24*time.Hour, name); err != nil {
		return o, err
	}
	for _, p := range []struct {
		param string
		into  *int
	}{{ParamLemonCount, &o.LemonCount}, {ParamTop, &o.Top}} {
		if s := v.Get(p.param); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return o, fmt.Errorf("%s %q: want a whole number, 1 or more", name(p.param), s)
			}
			*p.into = n
		}
	}
	if s := v.Get(ParamLemonWindow); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s %q: want a positive duration such as 168h", name(ParamLemonWindow), s)
		}
		o.LemonWindow = d
	}
	c := o
	return o, c.defaults()
}

// Query is the inverse of ParseQuery, for clients.
func (o Options) Query() url.Values {
	v := url.Values{}
	v.Set(report.ParamFrom, o.From.UTC().Format(time.RFC3339))
	v.Set(report.ParamTo, o.To.UTC().Format(time.RFC3339))
	if o.LemonCount > 0 {
		v.Set(ParamLemonCount, strconv.Itoa(o.LemonCount))
	}
	if o.LemonWindow > 0 {
		v.Set(ParamLemonWindow, o.LemonWindow.String())
	}
	if o.Top > 0 {
		v.Set(ParamTop, strconv.Itoa(o.Top))
	}
	return v
}

// Report is the fault report over [From, To].
type Report struct {
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	StepSeconds float64   `json:"step_seconds"`
	GeneratedAt time.Time `json:"generated_at"`
	// Nodes and GPUs seen in the window (gpuwatch_gpu_info).
	Nodes int `json:"nodes"`
	GPUs  int `json:"gpus"`
	// XidTotal is every Xid counted; the breakdowns each sum to it.
	XidTotal   float64 `json:"xid_total"`
	XidByCode  []Count `json:"xid_by_code"`
	XidByAct   []Count `json:"xid_by_action"`
	XidByModel []Count `json:"xid_by_model"`
	XidByNode  []Count `json:"xid_by_node"`
	// Conditions counts the health conditions the agents raised, by kind
	// (gpuwatch_health_conditions_total).
	Conditions []Count      `json:"conditions_by_kind"`
	Failures   int          `json:"failures"`
	MTBFByNode []MTBF       `json:"mtbf_by_node"`
	MTBFByMod  []MTBF       `json:"mtbf_by_model"`
	Lemons     []Lemon      `json:"lemons"`
	DrainSoon  []DrainSoon  `json:"drain_soon"`
	IBPorts    []IBPort     `json:"infiniband_ports"`
	NVLinks    []NVLinkLink `json:"nvlink_links"`
	// DrainAuditNote says why drains were not counted, when they were not
	// ("the server runs no drain controller").
	DrainAuditNote string `json:"drain_audit_note,omitempty"`
	LemonCount     int    `json:"lemon_count"`
	LemonWindowSec int64  `json:"lemon_window_seconds"`
}

// Count is a number of Xids under a key.
type Count struct {
	Key   string  `json:"key"`
	Count float64 `json:"count"`
}

// MTBF is the mean time between failures of a node or of the nodes of a GPU
// model: observed node-hours over failures; nil without failures.
type MTBF struct {
	Key           string   `json:"key"`
	Nodes         int      `json:"nodes"`
	ObservedHours float64  `json:"observed_node_hours"`
	Failures      int      `json:"failures"`
	MTBFHours     *float64 `json:"mtbf_hours"`
}

// Lemon is a node drained LemonCount times or more within LemonWindow.
type Lemon struct {
	Node string `json:"node"`
	// Drains in the whole window, and the most within one LemonWindow.
	Drains    int         `json:"drains"`
	MaxWithin int         `json:"max_within_window"`
	Times     []time.Time `json:"times"`
	Reasons   []string    `json:"reasons,omitempty"`
}

// DrainSoon is a GPU whose retired pages or remapped rows grew in the window,
// or whose row remapping is pending or failed.
type DrainSoon struct {
	Node string `json:"node"`
	GPU  string `json:"gpu_uuid"`
	// What is the counter nearest its limit: retired_pages or remapped_rows.
	What   string  `json:"what"`
	Value  float64 `json:"value"`
	Growth float64 `json:"growth"`
	Limit  float64 `json:"limit"`
	// Fraction is Value over Limit; HoursToLimit extrapolates the window's
	// growth rate, nil when it did not grow.
	Fraction       float64  `json:"fraction"`
	HoursToLimit   *float64 `json:"hours_to_limit"`
	DBEGrowth      float64  `json:"ecc_dbe_growth"`
	RemapPending   bool     `json:"row_remap_pending"`
	RemapFailed    bool     `json:"row_remap_failure"`
	RemappedRowsCE float64  `json:"correctable_remapped_rows"`
}

// IBPort is an InfiniBand port's flaps (link_downed increments) and symbol
// errors in the window.
type IBPort struct {
	Node         string  `json:"node"`
	Device       string  `json:"device"`
	Port         string  `json:"port"`
	Flaps        float64 `json:"flaps"`
	SymbolErrors float64 `json:"symbol_errors"`
}

// NVLinkLink is one NVLink's CRC (flit + data) and replay errors in the window.
type NVLinkLink struct {
	Node      string  `json:"node"`
	GPU       string  `json:"gpu_uuid"`
	Link      string  `json:"link"`
	CRCErrors float64 `json:"crc_errors"`
	Replays   float64 `json:"replays"`
	Recovery  float64 `json:"recovery_errors"`
}

// Drain is one drain of a node (the drain controller's audit log: a
// transition into draining, automatic or manual).
type Drain struct {
	Node   string
	Time   time.Time
	Reason string
}
