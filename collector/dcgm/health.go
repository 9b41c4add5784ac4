package dcgm

import (
	"strconv"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// DefaultHealthSystems are the health watches the source enables: every system.
const DefaultHealthSystems = uint(godcgm.DCGM_HEALTH_WATCH_ALL)

// Incident is one problem a DCGM health watch reported.
type Incident struct {
	// GPUIndex is the NVML index of the GPU; -1 when the incident is on another
	// entity (an NVSwitch, a ConnectX) or on a GPU the inventory does not know.
	GPUIndex int `json:"gpu_index"`
	// Entity is DCGM's entity: "GPU 3", "NvSwitch 1".
	Entity string `json:"entity"`
	// System is the health watch that reported it: pcie, nvlink, pmu, mcu, mem, sm,
	// inforom, thermal, power, driver, nvswitch_nonfatal, nvswitch_fatal, connectx,
	// imex.
	System string `json:"system"`
	// Result is "warn" or "fail".
	Result string `json:"result"`
	// Code is the DCGM_FR_* error code and CodeName its name.
	Code     uint   `json:"code"`
	CodeName string `json:"code_name"`
	// Message is DCGM's text.
	Message string `json:"message"`
	// Since is the first health check that reported the incident (same entity,
	// system and code) without a gap; Observed is the latest.
	Since    time.Time `json:"since"`
	Observed time.Time `json:"observed"`

	nvswitch int // DCGM's NVSwitch id when Entity is an NVSwitch, else -1
}

// key identifies an incident across health checks.
func (i Incident) key() string {
	return i.Entity + "|" + i.System + "|" + strconv.FormatUint(uint64(i.Code), 10)
}

// Condition turns the incident into a health condition of kind
// telemetry.ConditionDCGMHealth on node: on the GPU when it is one, on the
// NVSwitch, or on the node. A failed watch is critical and a warning a warning; the
// action is left to the health engine (DCGM names none). The evidence carries the
// DCGM_FR_* code, the system and the entity.
func (i Incident) Condition(node telemetry.NodeID) telemetry.Condition {
	t := telemetry.NodeTarget(node)
	switch {
	case i.GPUIndex >= 0:
		t = telemetry.GPUTarget(telemetry.GPUID{Node: node, Index: i.GPUIndex})
	case i.nvswitch >= 0:
		t = telemetry.NVSwitchTarget(telemetry.NVSwitchID{Node: node, Index: i.nvswitch})
	}
	sev := telemetry.SeverityWarning
	if i.Result == "fail" {
		sev = telemetry.SeverityCritical
	}
	msg := "DCGM " + i.System + " health " + i.Result + " (" + i.CodeName + ")"
	if i.Message != "" {
		msg += ": " + i.Message
	}
	return telemetry.Condition{
		Kind:     telemetry.ConditionDCGMHealth,
		Target:   t,
		Severity: sev,
		Message:  msg,
		Since:    i.Since,
		Observed: i.Observed,
		Evidence: map[string]string{
			"dcgm_fr":       i.CodeName,
			"dcgm_fr_code":  strconv.FormatUint(uint64(i.Code), 10),
			"health_system": i.System,
			"dcgm_entity":   i.Entity,
		},
	}
}

// systemNames are the health systems in lower_snake.
var systemNames = map[godcgm.HealthSystem]string{
	godcgm.DCGM_HEALTH_WATCH_PCIE:              "pcie",
	godcgm.DCGM_HEALTH_WATCH_NVLINK:            "nvlink",
	godcgm.DCGM_HEALTH_WATCH_PMU:               "pmu",
	godcgm.DCGM_HEALTH_WATCH_MCU:               "mcu",
	godcgm.DCGM_HEALTH_WATCH_MEM:               "mem",
	godcgm.DCGM_HEALTH_WATCH_SM:                "sm",
	godcgm.DCGM_HEALTH_WATCH_INFOROM:           "inforom",
	godcgm.DCGM_HEALTH_WATCH_THERMAL:           "thermal",
	godcgm.DCGM_HEALTH_WATCH_POWER:             "power",
	godcgm.DCGM_HEALTH_WATCH_DRIVER:            "driver",
	godcgm.DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL: "nvswitch_nonfatal",
	godcgm.DCGM_HEALTH_WATCH_NVSWITCH_FATAL:    "nvswitch_fatal",
	godcgm.DCGM_HEALTH_WATCH_CONNECTX:          "connectx",
	godcgm.DCGM_HEALTH_WATCH_IMEX:              "imex",
}

// systemName names a health system; an unknown bit reads "system_0x…".
func systemName(s godcgm.HealthSystem) string {
	if n, ok := systemNames[s]; ok {
		return n
	}
	return "system_0x" + strconv.FormatUint(uint64(s), 16)
}

// frName names a DCGM_FR_* code; an unknown one reads "DCGM_FR_<n>".
func frName(code uint) string {
	if n, ok := frNames[code]; ok {
		return n
	}
	return "DCGM_FR_" + strconv.FormatUint(uint64(code), 10)
}

// incidents converts a health response. prev holds the incidents of the previous
// check by key, so an incident that persists keeps its Since. Passing incidents
// (DCGM_HEALTH_RESULT_PASS) are dropped.
func incidents(resp godcgm.HealthResponse, gpus gpuMap, prev map[string]Incident, now time.Time) []Incident {
	var out []Incident
	for _, in := range resp.Incidents {
		var result string
		switch {
		case in.Health >= godcgm.DCGM_HEALTH_RESULT_FAIL:
			result = "fail"
		case in.Health >= godcgm.DCGM_HEALTH_RESULT_WARN:
			result = "warn"
		default:
			continue
		}
		i := Incident{
			GPUIndex: -1,
			nvswitch: -1,
			Entity:   in.EntityInfo.EntityGroupId.String() + " " + strconv.FormatUint(uint64(in.EntityInfo.EntityId), 10),
			System:   systemName(in.System),
			Result:   result,
			Code:     uint(in.Error.Code),
			CodeName: frName(uint(in.Error.Code)),
			Message:  in.Error.Message,
			Since:    now,
			Observed: now,
		}
		switch in.EntityInfo.EntityGroupId {
		case godcgm.FE_GPU:
			if idx, ok := gpus[in.EntityInfo.EntityId]; ok {
				i.GPUIndex = idx
			}
		case godcgm.FE_SWITCH:
			i.nvswitch = int(in.EntityInfo.EntityId)
		}
		if p, ok := prev[i.key()]; ok {
			i.Since = p.Since
		}
		out = append(out, i)
	}
	return out
}
