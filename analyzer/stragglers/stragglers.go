package stragglers

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// MetricStragglerGPU is the server's series of the stragglers it names:
// gpuwatch_straggler_gpu{job_id,node,gpu_uuid,signal}, the GPU's relative lag
// on the signal (0.25: 25 % behind its job's reference).
// The name lives in telemetry, where the placement feeder reads it too.
const MetricStragglerGPU = telemetry.MetricStragglerGPU

// The signals compared, as the report and the series' signal label name them.
const (
	SignalSMClock  = "sm_clock"
	SignalSMActive = "sm_active" // DCGM_FI_PROF_SM_ACTIVE
	SignalGPUUtil  = "gpu_util"  // DCGM_FI_DEV_GPU_UTIL, where a job's GPUs lack SM_ACTIVE
	SignalPower    = "power"
)

// The API's query parameters (GET /api/gpuwatch/v1/stragglers), besides
// report.ParamFrom, report.ParamTo and report.ParamLast (default 10 minutes).
const (
	ParamMinGap      = "min_gap"      // "10%" or 0.1
	ParamMinDuration = "min_duration" // a Go duration
	ParamJob         = "job_id"       // only this job
)

// Options say what to look at and how far behind counts.
type Options struct {
	From, To time.Time
	// MinGap is the relative lag behind the job's reference a GPU's median
	// must reach (default 0.10).
	MinGap float64
	// MinDuration is how long, in steps, the GPU must lag by MinGap or more
	// (default 2 minutes, at most the window).
	MinDuration time.Duration
	// MADs is how many scaled median absolute deviations of the reference
	// GPUs the gap must also exceed (default 3), so a noisy job needs a
	// wider gap.
	MADs float64
	// Step is the range queries' resolution (default 15 s, or the window
	// over 1,000 when that is longer).
	Step time.Duration
	// Job restricts the report to one job.
	Job string
	Now func() time.Time
}

func (o *Options) defaults() error {
	if o.MinGap == 0 {
		o.MinGap = 0.10
	}
	if o.MADs == 0 {
		o.MADs = 3
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.From.IsZero() || o.To.IsZero():
		return fmt.Errorf("the window needs a start and an end")
	case !o.To.After(o.From):
		return fmt.Errorf("the window %s to %s is empty or reversed: the end must be after the start",
			o.From.UTC().Format(time.RFC3339), o.To.UTC().Format(time.RFC3339))
	case o.MinGap < 0 || o.MinGap >= 1:
		return fmt.Errorf("minimum gap %g: want a fraction between 0 and 1, such as 0.1", o.MinGap)
	case o.MinDuration < 0:
		return fmt.Errorf("minimum duration %s: want a positive duration", o.MinDuration)
	case o.Step < 0:
		return fmt.Errorf("step %s: want a positive duration", o.Step)
	}
	if o.Step == 0 {
		o.Step = max(15*time.Second, (o.To.Sub(o.From) / 1000).Truncate(time.Second))
	}
	if o.MinDuration == 0 {
		o.MinDuration = min(2*time.Minute, o.To.Sub(o.From))
	}
	if w := o.To.Sub(o.From); w < o.Step {
		return fmt.Errorf("the window %s is shorter than a step (%s): want %s or more", w, o.Step, o.Step)
	}
	return nil
}

// ParseQuery turns the API's query parameters into Options, errors naming
// each parameter as name says (a command names its flags).
func ParseQuery(v url.Values, now time.Time, name func(param string) string) (Options, error) {
	var o Options
	var err error
	if o.From, o.To, err = report.ParseWindow(v, now, 10*time.Minute, name); err != nil {
		return o, err
	}
	if s := v.Get(ParamMinGap); s != "" {
		p, err := report.ParsePercent(s)
		if err != nil || p <= 0 || p >= 1 {
			return o, fmt.Errorf("%s %q: want a percentage above 0 and under 100, such as 10%%", name(ParamMinGap), s)
		}
		o.MinGap = p
	}
	if s := v.Get(ParamMinDuration); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s %q: want a positive duration such as 2m", name(ParamMinDuration), s)
		}
		o.MinDuration = d
	}
	o.Job = v.Get(ParamJob)
	c := o
	return o, c.defaults()
}

// Query is the inverse of ParseQuery, for clients.
func (o Options) Query() url.Values {
	v := url.Values{}
	v.Set(report.ParamFrom, o.From.UTC().Format(time.RFC3339))
	v.Set(report.ParamTo, o.To.UTC().Format(time.RFC3339))
	if o.MinGap > 0 {
		v.Set(ParamMinGap, strconv.FormatFloat(o.MinGap, 'g', -1, 64))
	}
	if o.MinDuration > 0 {
		v.Set(ParamMinDuration, o.MinDuration.String())
	}
	if o.Job != "" {
		v.Set(ParamJob, o.Job)
	}
	return v
}

// Report is the stragglers of the jobs running in [From, To].
type Report struct {
	From           time.Time `json:"from"`
	To             time.Time `json:"to"`
	StepSeconds    float64   `json:"step_seconds"`
	GeneratedAt    time.Time `json:"generated_at"`
	MinGap         float64   `json:"min_gap"`
	MinDurationSec float64   `json:"min_duration_seconds"`
	// Jobs with two GPUs or more in the window, by job id.
	Jobs []Job `json:"jobs"`
}

// Job is one multi-GPU job and its stragglers (none for a healthy job).
type Job struct {
	JobID      string      `json:"job_id"`
	GPUs       int         `json:"gpus"`
	Nodes      int         `json:"nodes"`
	Stragglers []Straggler `json:"stragglers"`
}

// Straggler is a GPU behind its job's reference on one signal or more.
type Straggler struct {
	Node     string     `json:"node"`
	GPU      string     `json:"gpu_uuid"`
	Evidence []Evidence `json:"evidence"`
	// ThrottleReasons are the clock-throttle reasons
	// (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) the GPU reported in the window,
	// besides gpu_idle.
	ThrottleReasons []string `json:"throttle_reasons,omitempty"`
}

// Evidence is how far behind a straggler is on one signal.
type Evidence struct {
	Signal string `json:"signal"`
	// Median is the GPU's median over the window; Reference its job's.
	Median    float64 `json:"median"`
	Reference float64 `json:"reference"`
	// Lag is (Reference - Median) / Reference.
	Lag float64 `json:"lag"`
	// BehindSeconds is how long the GPU lagged by MinGap or more.
	BehindSeconds float64 `json:"behind_seconds"`
}

// throttleBits are DCGM's DCGM_CLOCKS_THROTTLE_REASON_* bits (NVML's
// nvmlClocksEventReason*), by name.
var throttleBits = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// ThrottleReasons names the bits of a throttle-reasons mask, gpu_idle left
// out (an idle GPU is not throttled).
func ThrottleReasons(mask uint64) []string {
	var out []string
	for _, b := range throttleBits {
		if mask&b.bit != 0 && b.bit != 0x1 {
			out = append(out, b.name)
		}
	}
	return out
}
