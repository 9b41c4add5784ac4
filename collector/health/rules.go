package health

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Rules are the engine's thresholds and windows. The zero value of a field means
// "use the default" (DefaultRules); set a threshold negative to switch its rule off
// where the field says so.
type Rules struct {
	// SBEPerHour is the single-bit (corrected) volatile ECC errors per hour above
	// which ecc-sbe-rate is raised (warning). Default 1000/h. For scale: Azure's
	// azurehpc-health-checks fails an H100 node at 10,000 corrected SRAM errors and
	// 20,000,000 DRAM errors in total (nd96isr_h100_v5.conf: check_gpu_ecc 20000000
	// 10000); a rate catches a GPU that is getting worse long before such totals.
	// Negative: off.
	SBEPerHour float64

	// NVLink error growth per link within NVLinkWindow that raises nvlink-errors
	// (warning). Defaults: 100 CRC flit or data errors, 100 replays, 1 recovery
	// within 10 minutes. Replays and CRC errors are retried in hardware and some
	// are normal; a recovery retrains the link and stalls traffic. Negative: off.
	NVLinkCRCDelta      float64
	NVLinkReplayDelta   float64
	NVLinkRecoveryDelta float64
	NVLinkWindow        time.Duration

	// IBErrorDelta is the growth of an InfiniBand port error counter (port receive
	// errors, symbol errors, local link integrity, excessive buffer overrun, remote
	// physical errors) within IBWindow that raises ib-errors (warning). Default 100
	// in 10 minutes. IBRecoveryDelta is the same for link_error_recovery (the link
	// retrained without going down); default 10. Negative: off.
	IBErrorDelta    float64
	IBRecoveryDelta float64
	IBWindow        time.Duration
	// IBFlapWindow and IBFlapCount: one link_downed increment raises ib-flap as a
	// warning; IBFlapCount of them within IBFlapWindow make it critical. Defaults
	// 6 hours and 2, Azure's check_ib_link_flapping ("multiple IB link flapping
	// events within 6 hours").
	IBFlapWindow time.Duration
	IBFlapCount  int

	// PCIeReplayDelta is the PCIe replay counter growth within PCIeWindow that
	// raises pcie-replay (warning). Default 100 in 10 minutes; negative: off.
	PCIeReplayDelta float64
	PCIeWindow      time.Duration

	// ThermalFraction is the share of wall time the thermal violation counter grew
	// by within ThrottleWindow above which thermal-throttle is raised (warning);
	// PowerFraction the same for power violation and power-throttle, raised as
	// info only: power capping under full load is normal on H100 (Azure's
	// check_gpu_clock_throttling ignores SW power cap too). Defaults 0.05, 0.5 and
	// 10 minutes.
	ThermalFraction float64
	PowerFraction   float64
	ThrottleWindow  time.Duration

	// RetiredPagesMax is the total of pages retired for SBE and DBE (pre-Ampere)
	// at which retired-pages becomes critical with CONTACT_SUPPORT. Default 60:
	// the table holds 64 and Azure's check_SDBE_ecc fails at 62 with a pending
	// retirement.
	RetiredPagesMax float64
	// RemappedRowsMax is the count of rows remapped for uncorrectable errors above
	// which row-remap-failure is raised (critical, CONTACT_SUPPORT). Default 512,
	// Azure's check_ecc ("Row remap uncorrectable error count is too high").
	RemappedRowsMax float64

	// StaleAfter: a source that has been down or silent for longer raises
	// telemetry-stale on the node (warning). Default 2 minutes. Sources named in
	// RequiredSources are judged from the start; others only once they have
	// worked (DCGM is optional: a node without a host engine must not be suspect).
	StaleAfter      time.Duration
	RequiredSources []string

	// XidWindow is how long Xids on one GPU count as "seen together" for the
	// catalog's workflows (48 with 63 or 64). Default 10 minutes.
	XidWindow time.Duration
	// XidSticky is how long a non-fatal Xid (catalog action RESTART_APP or weaker)
	// keeps its condition after its last occurrence. Default 15 minutes.
	XidSticky time.Duration
	// XidIncidentGap merges occurrences of the same Xid on the same GPU closer
	// than this into one incident: a burst of 600 Xid 13 lines is one incident, and
	// so are the GSP timeouts a hung GPU reports every few minutes (gpud's real log
	// has five Xid 119 within six minutes). Default 5 minutes.
	XidIncidentGap time.Duration

	// Repeat offenders. The same Xid on the same GPU in RepeatCount incidents
	// within RepeatWindow, or on RepeatGPUs GPUs of the node within RepeatWindow,
	// raises that GPU's Xid condition one step: severity one level (info →
	// warning → critical → fatal) and action one rung of EscalateAction's ladder.
	// Only Xids whose catalog action is RESTART_APP or stronger escalate: NVIDIA
	// says the IGNORE ones are informational however often they come. A condition
	// escalates one step at most, whichever trigger fired. Defaults 24 hours, 3
	// incidents, 3 GPUs.
	RepeatWindow time.Duration
	RepeatCount  int
	RepeatGPUs   int

	// ClearAfter is the quiet period after which a counter-based condition clears.
	// Default 15 minutes.
	ClearAfter time.Duration
	// ClearCycles is the number of consecutive good cycles after which a
	// state-based condition clears. Default 3.
	ClearCycles int
	// Probation is how long a GPU or node back from drained stays in probation
	// without a warning before it is healthy. Default 30 minutes.
	Probation time.Duration
}

// DefaultRules returns the defaults documented on Rules.
func DefaultRules() Rules {
	return Rules{
		SBEPerHour:          1000,
		NVLinkCRCDelta:      100,
		NVLinkReplayDelta:   100,
		NVLinkRecoveryDelta: 1,
		NVLinkWindow:        10 * time.Minute,
		IBErrorDelta:        100,
		IBRecoveryDelta:     10,
		IBWindow:            10 * time.Minute,
		IBFlapWindow:        6 * time.Hour,
		IBFlapCount:         2,
		PCIeReplayDelta:     100,
		PCIeWindow:          10 * time.Minute,
		ThermalFraction:     0.05,
		PowerFraction:       0.5,
		ThrottleWindow:      10 * time.Minute,
		RetiredPagesMax:     60,
		RemappedRowsMax:     512,
		StaleAfter:          2 * time.Minute,
		RequiredSources:     []string{string(telemetry.SourceNVML)},
		XidWindow:           10 * time.Minute,
		XidSticky:           15 * time.Minute,
		XidIncidentGap:      5 * time.Minute,
		RepeatWindow:        24 * time.Hour,
		RepeatCount:         3,
		RepeatGPUs:          3,
		ClearAfter:          15 * time.Minute,
		ClearCycles:         3,
		Probation:           30 * time.Minute,
	}
}

// withDefaults fills zero fields from DefaultRules.
func (r Rules) withDefaults() Rules {
	d := DefaultRules()
	setF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	setI := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setF(&r.SBEPerHour, d.SBEPerHour)
	setF(&r.NVLinkCRCDelta, d.NVLinkCRCDelta)
	setF(&r.NVLinkReplayDelta, d.NVLinkReplayDelta)
	setF(&r.NVLinkRecoveryDelta, d.NVLinkRecoveryDelta)
	setD(&r.NVLinkWindow, d.NVLinkWindow)
	setF(&r.IBErrorDelta, d.IBErrorDelta)
	setF(&r.IBRecoveryDelta, d.IBRecoveryDelta)
	setD(&r.IBWindow, d.IBWindow)
	setD(&r.IBFlapWindow, d.IBFlapWindow)
	setI(&r.IBFlapCount, d.IBFlapCount)
	setF(&r.PCIeReplayDelta, d.PCIeReplayDelta)
	setD(&r.PCIeWindow, d.PCIeWindow)
	setF(&r.ThermalFraction, d.ThermalFraction)
	setF(&r.PowerFraction, d.PowerFraction)
	setD(&r.ThrottleWindow, d.ThrottleWindow)
	setF(&r.RetiredPagesMax, d.RetiredPagesMax)
	setF(&r.RemappedRowsMax, d.RemappedRowsMax)
	setD(&r.StaleAfter, d.StaleAfter)
	if r.RequiredSources == nil {
		r.RequiredSources = d.RequiredSources
	}
	setD(&r.XidWindow, d.XidWindow)
	setD(&r.XidSticky, d.XidSticky)
	setD(&r.XidIncidentGap, d.XidIncidentGap)
	setD(&r.RepeatWindow, d.RepeatWindow)
	setI(&r.RepeatCount, d.RepeatCount)
	setI(&r.RepeatGPUs, d.RepeatGPUs)
	setD(&r.ClearAfter, d.ClearAfter)
	setI(&r.ClearCycles, d.ClearCycles)
	setD(&r.Probation, d.Probation)
	return r
}

// validate checks a filled-in Rules.
func (r Rules) validate() error {
	var errs []error
	for name, d := range map[string]time.Duration{
		"NVLinkWindow": r.NVLinkWindow, "IBWindow": r.IBWindow, "IBFlapWindow": r.IBFlapWindow,
		"PCIeWindow": r.PCIeWindow, "ThrottleWindow": r.ThrottleWindow, "StaleAfter": r.StaleAfter,
		"XidWindow": r.XidWindow, "XidSticky": r.XidSticky, "XidIncidentGap": r.XidIncidentGap,
		"RepeatWindow": r.RepeatWindow, "ClearAfter": r.ClearAfter, "Probation": r.Probation,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("rule %s: negative duration %s", name, d))
		}
	}
	for name, n := range map[string]int{"IBFlapCount": r.IBFlapCount, "RepeatCount": r.RepeatCount,
		"RepeatGPUs": r.RepeatGPUs, "ClearCycles": r.ClearCycles} {
		if n < 1 {
			errs = append(errs, fmt.Errorf("rule %s: %d, want at least 1", name, n))
		}
	}
	if r.ThermalFraction > 1 || r.PowerFraction > 1 {
		errs = append(errs, fmt.Errorf("rules ThermalFraction %g, PowerFraction %g: a share of time is at most 1", r.ThermalFraction, r.PowerFraction))
	}
	return errors.Join(errs...)
}

// SeverityForAction is the severity of a condition whose recommended action is a:
// nothing to do or restart the application → info (the GPU is fine); an action that
// takes the GPU out of service (RESTART_VM, RESET_GPU, RESTART_FM, DRAIN_AND_RESET,
// UPDATE_SWFW, CHECK_MECHANICALS, CONTACT_SUPPORT) → critical; rebooting the node →
// fatal (the GPU is unusable until then, as after Xid 79).
func SeverityForAction(a telemetry.Action) telemetry.Severity {
	switch {
	case a.Rank() <= telemetry.ActionRestartApp.Rank():
		return telemetry.SeverityInfo
	case a == telemetry.ActionRestartBM:
		return telemetry.SeverityFatal
	default:
		return telemetry.SeverityCritical
	}
}

// EscalateAction is one rung up the repeat-offender ladder:
//
//	RESTART_APP → RESET_GPU
//	RESTART_VM, RESET_GPU, RESTART_FM → DRAIN_AND_RESET
//	DRAIN_AND_RESET → RESTART_BM
//	RESTART_BM, UPDATE_SWFW, CHECK_MECHANICALS → CONTACT_SUPPORT
//
// NONE, IGNORE and CONTACT_SUPPORT stay as they are.
func EscalateAction(a telemetry.Action) telemetry.Action {
	switch a {
	case telemetry.ActionRestartApp:
		return telemetry.ActionResetGPU
	case telemetry.ActionRestartVM, telemetry.ActionResetGPU, telemetry.ActionRestartFM:
		return telemetry.ActionDrainAndReset
	case telemetry.ActionDrainAndReset:
		return telemetry.ActionRestartBM
	case telemetry.ActionRestartBM, telemetry.ActionUpdateSWFW, telemetry.ActionCheckMechanicals:
		return telemetry.ActionContactSupport
	}
	return a
}

// escalateSeverity is one severity level up, at most fatal.
func escalateSeverity(s telemetry.Severity) telemetry.Severity {
	if s < telemetry.SeverityFatal {
		return s + 1
	}
	return s
}
