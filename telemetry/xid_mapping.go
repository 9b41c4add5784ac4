package telemetry

import (
	_ "embed"
	"encoding/csv"
	"strconv"
	"strings"
	"sync"
)

// NVIDIA NVSentinel's Xid mapping (code, mnemonic, action, FATAL or
// NONFATAL), vendored byte for byte; TestXidNVSentinel compares it with the
// catalog and lists where the two disagree.
//
//go:embed testdata/nvsentinel/xiderrorsmapping.csv
var xidMappingCSV string

var xidMappingFatal = sync.OnceValue(func() map[int]bool {
	out := map[int]bool{}
	recs, err := csv.NewReader(strings.NewReader(xidMappingCSV)).ReadAll()
	if err != nil {
		panic("telemetry: the vendored NVSentinel Xid mapping does not parse: " + err.Error())
	}
	for _, r := range recs {
		if len(r) != 4 {
			continue
		}
		if code, err := strconv.Atoi(r[0]); err == nil && r[3] == "FATAL" {
			out[code] = true
		}
	}
	return out
})

// XidMappingFatal says whether NVIDIA's NVSentinel mapping classes the Xid
// FATAL.
func XidMappingFatal(code int) bool { return xidMappingFatal()[code] }

// DiscreteFatal says whether the condition comes from a discrete fatal
// event: something that happened once and leaves the GPU unusable until it
// is reset or the node rebooted, as opposed to a rate or a threshold
// crossed. Containment acts on the first report of such a condition; the
// drain controller's hysteresis is for the others.
//
// They are: a lost GPU, fewer GPUs than the node has (a GPU gone, or the
// driver not loaded), a new double-bit ECC error, a failed row remap, a
// fatal NVSwitch error (an SXid the driver prints as Fatal), a driver
// recovery action of reset or reboot, an InfiniBand port that was
// ACTIVE at baseline and is down now (a port that bounces within a health
// cycle is an ib-flap, which waits), and an Xid whose resolved action
// (the catalog's, after its decode, workflow and Xid 154 override) is beyond
// restarting the application, or which NVSentinel's mapping classes FATAL
// where the catalog does not (108, 160, 162 today: derived from the data, not
// listed here).
func (c Condition) DiscreteFatal() bool {
	switch c.Kind {
	case ConditionGPULost, ConditionGPUCount, ConditionECCDBE, ConditionRowRemapFailure, ConditionIBDown,
		ConditionNVSwitchFatal:
		return true
	case ConditionRecoveryAction:
		return c.Action.Rank() > ActionRestartApp.Rank()
	case ConditionXid:
		if c.Action.Rank() > ActionRestartApp.Rank() {
			return true
		}
		code, err := strconv.Atoi(c.Evidence["xid"])
		if err != nil {
			return false
		}
		info, known := LookupXid(code)
		return XidMappingFatal(code) && (!known || !info.Fatal)
	}
	return false
}
