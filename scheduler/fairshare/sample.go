package fairshare

import (
	"fmt"
	"math"
	"time"
)

// ActivitySource says what a sample's Activity measures, and so its unit.
type ActivitySource string

const (
	// SourceNone: no activity was measured for the interval. The ledger
	// charges such a sample as fully used (activity 1) and counts it as
	// unmeasured, so hiding telemetry never makes GPU time cheaper.
	SourceNone ActivitySource = ""
	// SourceDCGMSMActive is DCGM's SM activity (DCGM_FI_PROF_SM_ACTIVE, field
	// 1002), a ratio in [0,1]: the fraction of time at least one warp was
	// resident on an SM, averaged over SMs. For a MIG device, DCGM reports it
	// relative to the instance.
	SourceDCGMSMActive ActivitySource = "dcgm_sm_active"
	// SourceNVMLGPUUtil is NVML's GPU utilization (nvmlDeviceGetUtilizationRates
	// .gpu, DCGM_FI_DEV_GPU_UTIL), a percentage in [0,100]: the fraction of time
	// a kernel was running. Coarser than SM activity; used when DCGM profiling
	// is not available.
	SourceNVMLGPUUtil ActivitySource = "nvml_gpu_util"
)

// PickActivity chooses a sample's activity the way the fair-share model asks:
// DCGM SM activity when available, else NVML GPU utilization, else none.
func PickActivity(smActive float64, haveSMActive bool, gpuUtil float64, haveGPUUtil bool) (float64, ActivitySource) {
	switch {
	case haveSMActive:
		return smActive, SourceDCGMSMActive
	case haveGPUUtil:
		return gpuUtil, SourceNVMLGPUUtil
	}
	return 0, SourceNone
}

// Sample is one consumer's use of one GPU (or a slice of one) over an interval:
// the unit the ledger charges.
//
// Shared GPUs: Fraction is the consumer's share of the physical GPU (1 for a
// whole GPU; 1/7 for a 1g MIG slice of an A100/H100 in compute terms, or the
// site's chosen weight; 0.25 for one of four time-sliced replicas; 0.5 for 500
// milli-GPU). Activity is measured on the consumer's own slice: a MIG device's
// own SM activity; for a time-sliced or milli share, the consumer's use of the
// whole GPU divided by its Fraction, clamped to the unit's maximum by the
// producer. The ledger charges Fraction × max(activity, idle floor) per
// second, so each consumer pays for what it used and, because overlapping
// fractions on one GPU may not exceed 1, the charges on a GPU never exceed its
// GPU-seconds.
type Sample struct {
	// Time is the start of the interval.
	Time time.Time
	// Duration is the interval's length, > 0.
	Duration time.Duration
	// Job is the scheduler's job (Slurm job id, or namespace/pod).
	Job string
	// Account and User name the association charged.
	Account string
	User    string
	// GPU is the physical GPU's UUID; overlapping samples on one GPU are
	// checked against its capacity.
	GPU string
	// Slice names the consumer's part of a shared GPU: the MIG device UUID, a
	// time-slice replica, a milli-GPU claim. Empty for a whole GPU.
	Slice string
	// Fraction is the consumer's share of the GPU, in (0,1].
	Fraction float64
	// Activity is in the unit of ActivitySource: [0,1] for dcgm_sm_active,
	// [0,100] for nvml_gpu_util, 0 for none.
	Activity       float64
	ActivitySource ActivitySource
}

// End is the end of the sample's interval.
func (s Sample) End() time.Time { return s.Time.Add(s.Duration) }

func (s Sample) describe() string {
	return fmt.Sprintf("job %q, gpu %q", s.Job, s.GPU)
}

// Validate reports the first problem with the sample.
func (s Sample) Validate() error {
	switch {
	case s.Time.IsZero():
		return fmt.Errorf("time is not set")
	case s.Duration <= 0:
		return fmt.Errorf("duration %v: must be positive", s.Duration)
	case s.Job == "":
		return fmt.Errorf("job is empty")
	case s.GPU == "":
		return fmt.Errorf("gpu is empty")
	}
	if err := checkName(s.Account); err != nil {
		return fmt.Errorf("account: %w", err)
	}
	if err := checkName(s.User); err != nil {
		return fmt.Errorf("user: %w", err)
	}
	if !(s.Fraction > 0 && s.Fraction <= 1) {
		return fmt.Errorf("fraction %v: want a share of the GPU in (0,1]", s.Fraction)
	}
	var max float64
	switch s.ActivitySource {
	case SourceNone:
		if s.Activity != 0 {
			return fmt.Errorf("activity %v with no activity source: set activity_source", s.Activity)
		}
		return nil
	case SourceDCGMSMActive:
		max = 1
	case SourceNVMLGPUUtil:
		max = 100
	default:
		return fmt.Errorf("activity source %q: want %q, %q or none", string(s.ActivitySource), SourceDCGMSMActive, SourceNVMLGPUUtil)
	}
	if math.IsNaN(s.Activity) || s.Activity < 0 || s.Activity > max {
		return fmt.Errorf("activity %v out of range [0,%v] for %s", s.Activity, max, s.ActivitySource)
	}
	return nil
}

// activity is the sample's activity as a ratio in [0,1], and whether it was
// measured at all.
func (s Sample) activity() (float64, bool) {
	switch s.ActivitySource {
	case SourceDCGMSMActive:
		return s.Activity, true
	case SourceNVMLGPUUtil:
		return s.Activity / 100, true
	}
	return 1, false
}

// ChargePolicy says what a GPU-second costs.
type ChargePolicy string

const (
	// ChargeAllocation charges 1 per allocated GPU-second, as Slurm does.
	ChargeAllocation ChargePolicy = "allocation"
	// ChargeMeasured charges max(activity, idle floor) per allocated GPU-second.
	ChargeMeasured ChargePolicy = "measured"
	// ChargeBlend charges w × measured + (1-w) × allocation.
	ChargeBlend ChargePolicy = "blend"
)

// Policy is how usage is charged.
type Policy struct {
	Charge ChargePolicy
	// BlendWeight is w for ChargeBlend, in [0,1].
	BlendWeight float64
	// IdleFloor is the least a measured GPU-second costs, in [0,1], so that
	// holding an idle GPU is never free.
	IdleFloor float64
}

// DefaultIdleFloor is the idle floor when none is configured.
const DefaultIdleFloor = 0.1

// Validate reports the first problem with the policy.
func (p Policy) Validate() error {
	switch p.Charge {
	case ChargeAllocation, ChargeMeasured, ChargeBlend:
	default:
		return fmt.Errorf("charge %q: want %q, %q or %q", string(p.Charge), ChargeAllocation, ChargeMeasured, ChargeBlend)
	}
	if !(p.BlendWeight >= 0 && p.BlendWeight <= 1) {
		return fmt.Errorf("blend weight %v: want a value in [0,1]", p.BlendWeight)
	}
	if !(p.IdleFloor >= 0 && p.IdleFloor <= 1) {
		return fmt.Errorf("idle floor %v: want a value in [0,1]", p.IdleFloor)
	}
	return nil
}

// Charged combines measured and allocated usage under the policy.
func (p Policy) Charged(measured, allocated float64) float64 {
	switch p.Charge {
	case ChargeAllocation:
		return allocated
	case ChargeBlend:
		return p.BlendWeight*measured + (1-p.BlendWeight)*allocated
	}
	return measured
}

// Charge is what one sample costs, in GPU-seconds before decay.
type Charge struct {
	// Allocated is Duration × Fraction.
	Allocated float64
	// Measured is Allocated × max(activity, idle floor); Allocated when the
	// sample has no activity.
	Measured float64
	// Unmeasured is Allocated when the sample has no activity, else 0.
	Unmeasured float64
}

// ChargeFor prices a whole sample under an idle floor, with no decay and no
// deduplication; the ledger applies the same rule to the part of a sample it
// has not charged before.
func ChargeFor(s Sample, idleFloor float64) Charge {
	return chargeSeconds(s, s.Duration.Seconds(), idleFloor)
}

func chargeSeconds(s Sample, seconds, idleFloor float64) Charge {
	alloc := seconds * s.Fraction
	a, ok := s.activity()
	if !ok {
		return Charge{Allocated: alloc, Measured: alloc, Unmeasured: alloc}
	}
	return Charge{Allocated: alloc, Measured: alloc * math.Min(1, math.Max(a, idleFloor))}
}
