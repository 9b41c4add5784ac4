package simhw

import (
	"encoding/binary"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// aggregateScope asks a link-scoped field for the sum over all links.
const aggregateScope = math.MaxUint32

// GetFieldValues fills values in place, as nvmlDeviceGetFieldValues does: each
// value gets its own NvmlReturn, a Timestamp (simulated time, microseconds since
// the epoch) and a ValueType. Supported fields:
//
//   - ECC: FI_DEV_ECC_CURRENT/PENDING, the SBE/DBE volatile and aggregate totals
//     and their L1, L2, device-memory and register-file breakdowns.
//   - Row remapping: FI_DEV_REMAPPED_COR/UNC/PENDING/FAILURE.
//   - NVLink: per-link CRC flit, CRC data, replay, recovery and ECC data counters
//     for links 0–11 and their totals over all links; FI_DEV_NVLINK_ERROR_DL_*,
//     FI_DEV_NVLINK_GET_SPEED/STATE/VERSION, FI_DEV_NVLINK_REMOTE_NVLINK_ID and
//     FI_DEV_NVLINK_THROUGHPUT_DATA/RAW_TX/RX (KiB) with the link in ScopeId
//     (ScopeId 0xFFFFFFFF sums the throughput over all links);
//     FI_DEV_NVLINK_SPEED_MBPS_*, FI_DEV_NVLINK_LINK_COUNT.
//   - Power and thermal: FI_DEV_MEMORY_TEMP, FI_DEV_TOTAL_ENERGY_CONSUMPTION,
//     FI_DEV_ENERGY, FI_DEV_POWER_INSTANT, FI_DEV_POWER_AVERAGE (not on A100),
//     the power limits, FI_DEV_PERF_POLICY_* and the clocks event reason
//     durations (ns).
//   - PCIe: FI_DEV_PCIE_REPLAY_COUNTER (+ rollover), FI_DEV_PCIE_COUNT_TX/RX_BYTES.
//   - FI_DEV_GET_GPU_RECOVERY_ACTION (drivers R565 and newer).
//
// Page retirement fields answer ERROR_NOT_SUPPORTED (A100/H100 remap rows
// instead), as does any other valid field id; ids outside 1..FI_MAX-1 answer
// ERROR_INVALID_ARGUMENT.
func (d *Device) GetFieldValues(values []nvml.FieldValue) nvml.Return {
	defer d.rlock().mu.RUnlock()
	r := d.check(true)
	if r == nvml.SUCCESS && len(values) == 0 {
		r = nvml.ERROR_INVALID_ARGUMENT
	}
	ts := d.node().now.UnixMicro()
	for i := range values {
		fv := &values[i]
		fv.Timestamp, fv.LatencyUsec, fv.Value = ts, 0, [8]byte{}
		if r != nvml.SUCCESS {
			fv.NvmlReturn = uint32(r)
			continue
		}
		fv.NvmlReturn = uint32(d.field(fv))
	}
	return r
}

// field answers one field value. The caller holds the node lock.
func (d *Device) field(fv *nvml.FieldValue) nvml.Return {
	g, sh := d.g, d.shape()
	id := fv.FieldId
	switch {
	case id == nvml.FI_DEV_ECC_CURRENT || id == nvml.FI_DEV_ECC_PENDING:
		return putU32(fv, 1)
	case id >= nvml.FI_DEV_ECC_SBE_VOL_TOTAL && id <= nvml.FI_DEV_ECC_DBE_AGG_TOTAL:
		off := id - nvml.FI_DEV_ECC_SBE_VOL_TOTAL // SBE vol, DBE vol, SBE agg, DBE agg
		return putU64(fv, g.eccTotal(nvml.MemoryErrorType(off%2), nvml.EccCounterType(off/2)))
	case id >= nvml.FI_DEV_ECC_SBE_VOL_L1 && id <= nvml.FI_DEV_ECC_DBE_AGG_CBU:
		return eccLocationField(fv, g)
	case id >= nvml.FI_DEV_RETIRED_SBE && id <= nvml.FI_DEV_RETIRED_PENDING,
		id == nvml.FI_DEV_RETIRED_PENDING_SBE, id == nvml.FI_DEV_RETIRED_PENDING_DBE:
		return nvml.ERROR_NOT_SUPPORTED
	case id >= nvml.FI_DEV_PERF_POLICY_POWER && id <= nvml.FI_DEV_PERF_POLICY_RELIABILITY:
		return putU64(fv, g.viol[id-nvml.FI_DEV_PERF_POLICY_POWER])
	case id == nvml.FI_DEV_PERF_POLICY_TOTAL_APP_CLOCKS:
		return putU64(fv, g.viol[violTotalApp])
	case id == nvml.FI_DEV_PERF_POLICY_TOTAL_BASE_CLOCKS:
		return putU64(fv, g.viol[violTotalBase])
	case id == nvml.FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN:
		return putU64(fv, g.viol[violSwThermal])
	case id == nvml.FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN:
		return putU64(fv, g.viol[violHwThermal])
	case id == nvml.FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN:
		return putU64(fv, g.viol[violPowerBrake])
	case id == nvml.FI_DEV_MEMORY_TEMP:
		return putU32(fv, uint32(math.Round(g.memTempC)))
	case id == nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION || id == nvml.FI_DEV_ENERGY:
		return putU64(fv, uint64(g.energyMJ))
	case id == nvml.FI_DEV_PCIE_REPLAY_COUNTER:
		return putU64(fv, g.replay)
	case id == nvml.FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER:
		return putU64(fv, 0)
	case id == nvml.FI_DEV_PCIE_COUNT_TX_BYTES:
		return putU64(fv, g.pcieTx)
	case id == nvml.FI_DEV_PCIE_COUNT_RX_BYTES:
		return putU64(fv, g.pcieRx)
	case id == nvml.FI_DEV_REMAPPED_COR:
		return putU32(fv, g.remapCorr)
	case id == nvml.FI_DEV_REMAPPED_UNC:
		return putU32(fv, g.remapUnc)
	case id == nvml.FI_DEV_REMAPPED_PENDING:
		return putU32(fv, b2u(g.remapPending))
	case id == nvml.FI_DEV_REMAPPED_FAILURE:
		return putU32(fv, b2u(g.remapFailure))
	case id == nvml.FI_DEV_GET_GPU_RECOVERY_ACTION:
		if !sh.recoveryActionSupported() {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return putU32(fv, uint32(g.recovery))
	case id >= nvml.FI_DEV_POWER_AVERAGE && id <= nvml.FI_DEV_POWER_REQUESTED_LIMIT && id != nvml.FI_DEV_ENERGY:
		return d.powerField(fv)
	case id == nvml.FI_DEV_NVLINK_LINK_COUNT:
		return putU32(fv, uint32(len(g.links)))
	case id == nvml.FI_DEV_NVLINK_SPEED_MBPS_COMMON:
		return putU32(fv, sh.NVLinkMBps)
	}
	if r, ok := d.nvlinkField(fv); ok {
		return r
	}
	if id == 0 || id >= nvml.FI_MAX {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	return nvml.ERROR_NOT_SUPPORTED
}

// eccLocationField answers FI_DEV_ECC_{SBE,DBE}_{VOL,AGG}_{L1,L2,DEV,REG,TEX,CBU}.
// Within each of the volatile (7–17) and aggregate (18–28) blocks the ids go SBE,
// DBE per location in the order L1, L2, DEV, REG, TEX, then DBE CBU.
func eccLocationField(fv *nvml.FieldValue, g *gpu) nvml.Return {
	c, off := nvml.VOLATILE_ECC, fv.FieldId-nvml.FI_DEV_ECC_SBE_VOL_L1
	if fv.FieldId >= nvml.FI_DEV_ECC_SBE_AGG_L1 {
		c, off = nvml.AGGREGATE_ECC, fv.FieldId-nvml.FI_DEV_ECC_SBE_AGG_L1
	}
	locs := [...]nvml.MemoryLocation{nvml.MEMORY_LOCATION_L1_CACHE, nvml.MEMORY_LOCATION_L2_CACHE,
		nvml.MEMORY_LOCATION_DRAM, nvml.MEMORY_LOCATION_REGISTER_FILE}
	if int(off/2) >= len(locs) {
		return nvml.ERROR_NOT_SUPPORTED // texture memory and CBU: not on these GPUs
	}
	return putU64(fv, g.ecc[off%2][c][locs[off/2]])
}

// powerField answers FI_DEV_POWER_* for the GPU scope (ScopeId 0); the module
// and memory scopes are not supported on these boards.
func (d *Device) powerField(fv *nvml.FieldValue) nvml.Return {
	if fv.ScopeId != 0 {
		return nvml.ERROR_NOT_SUPPORTED
	}
	sh := d.shape()
	switch fv.FieldId {
	case nvml.FI_DEV_POWER_AVERAGE:
		if !sh.PowerAverage {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return putU32(fv, milliwatts(d.g.powerW))
	case nvml.FI_DEV_POWER_INSTANT:
		return putU32(fv, milliwatts(d.g.powerW))
	case nvml.FI_DEV_POWER_MIN_LIMIT:
		return putU32(fv, milliwatts(sh.MinPowerLimitW))
	case nvml.FI_DEV_POWER_MAX_LIMIT, nvml.FI_DEV_POWER_DEFAULT_LIMIT,
		nvml.FI_DEV_POWER_CURRENT_LIMIT, nvml.FI_DEV_POWER_REQUESTED_LIMIT:
		return putU32(fv, milliwatts(sh.PowerLimitW))
	}
	return nvml.ERROR_NOT_SUPPORTED
}

// Per-link NVLink counter fields: the first id of each run of six (links 0–5),
// its total, and the first id of the run for links 6–11.
type linkFieldRun struct {
	first, total, first6 uint32
	counter              nvml.NvLinkErrorCounter
}

var linkRuns = [...]linkFieldRun{
	{nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L0, nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L6, nvml.NVLINK_ERROR_DL_CRC_FLIT},
	{nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L0, nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L6, nvml.NVLINK_ERROR_DL_CRC_DATA},
	{nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0, nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L6, nvml.NVLINK_ERROR_DL_REPLAY},
	{nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L0, nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L6, nvml.NVLINK_ERROR_DL_RECOVERY},
}

// nvlinkField answers the NVLink fields; ok is false for ids it does not know.
func (d *Device) nvlinkField(fv *nvml.FieldValue) (nvml.Return, bool) {
	g, sh := d.g, d.shape()
	id := fv.FieldId
	for _, run := range linkRuns {
		switch {
		case id >= run.first && id < run.first+6:
			return d.linkCounter(fv, int(id-run.first), run.counter), true
		case id >= run.first6 && id < run.first6+6:
			return d.linkCounter(fv, 6+int(id-run.first6), run.counter), true
		case id == run.total:
			var s uint64
			for i := range g.links {
				v, _ := g.links[i].errorCounter(run.counter)
				s += v
			}
			return putU64(fv, s), true
		}
	}
	switch {
	case id >= nvml.FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_L0 && id <= nvml.FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_L11:
		return d.linkCounter(fv, int(id-nvml.FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_L0), nvml.NVLINK_ERROR_DL_ECC_DATA), true
	case id == nvml.FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL:
		var s uint64
		for i := range g.links {
			s += g.links[i].eccData
		}
		return putU64(fv, s), true
	case id >= nvml.FI_DEV_NVLINK_SPEED_MBPS_L0 && id <= nvml.FI_DEV_NVLINK_SPEED_MBPS_L5,
		id >= nvml.FI_DEV_NVLINK_SPEED_MBPS_L6 && id <= nvml.FI_DEV_NVLINK_SPEED_MBPS_L11:
		l := int(id - nvml.FI_DEV_NVLINK_SPEED_MBPS_L0)
		if id >= nvml.FI_DEV_NVLINK_SPEED_MBPS_L6 {
			l = 6 + int(id-nvml.FI_DEV_NVLINK_SPEED_MBPS_L6)
		}
		if l >= len(g.links) {
			return nvml.ERROR_NOT_SUPPORTED, true
		}
		return putU32(fv, sh.NVLinkMBps), true
	case id >= nvml.FI_DEV_NVLINK_BANDWIDTH_C0_L0 && id <= nvml.FI_DEV_NVLINK_BANDWIDTH_C1_TOTAL,
		id >= nvml.FI_DEV_NVLINK_BANDWIDTH_C0_L6 && id <= nvml.FI_DEV_NVLINK_BANDWIDTH_C1_L11:
		return nvml.ERROR_NOT_SUPPORTED, true // deprecated; use the throughput fields
	case id >= nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX && id <= nvml.FI_DEV_NVLINK_THROUGHPUT_RAW_RX:
		return d.throughputField(fv), true
	}

	// Fields with the link in ScopeId.
	var get func(k *nvlink) nvml.Return
	switch id {
	case nvml.FI_DEV_NVLINK_ERROR_DL_REPLAY:
		get = func(k *nvlink) nvml.Return { return putU64(fv, k.replay) }
	case nvml.FI_DEV_NVLINK_ERROR_DL_RECOVERY:
		get = func(k *nvlink) nvml.Return { return putU64(fv, k.recovery) }
	case nvml.FI_DEV_NVLINK_ERROR_DL_CRC:
		get = func(k *nvlink) nvml.Return { return putU64(fv, k.crcFlit) }
	case nvml.FI_DEV_NVLINK_GET_SPEED:
		get = func(k *nvlink) nvml.Return {
			if !k.active {
				return putU32(fv, 0)
			}
			return putU32(fv, sh.NVLinkMBps)
		}
	case nvml.FI_DEV_NVLINK_GET_STATE:
		get = func(k *nvlink) nvml.Return { return putU32(fv, b2u(k.active)) }
	case nvml.FI_DEV_NVLINK_GET_VERSION:
		get = func(*nvlink) nvml.Return { return putU32(fv, uint32(sh.NVLinkVersion)) }
	case nvml.FI_DEV_NVLINK_GET_POWER_STATE:
		get = func(*nvlink) nvml.Return { return putU32(fv, 0) } // high speed
	case nvml.FI_DEV_NVLINK_REMOTE_NVLINK_ID:
		get = func(k *nvlink) nvml.Return { return putU32(fv, k.port) }
	default:
		return 0, false
	}
	if int64(fv.ScopeId) >= int64(len(g.links)) {
		return nvml.ERROR_INVALID_ARGUMENT, true
	}
	return get(&g.links[fv.ScopeId]), true
}

func (d *Device) linkCounter(fv *nvml.FieldValue, l int, c nvml.NvLinkErrorCounter) nvml.Return {
	if l >= len(d.g.links) {
		return nvml.ERROR_NOT_SUPPORTED
	}
	v, r := d.g.links[l].errorCounter(c)
	if r != nvml.SUCCESS {
		return r
	}
	return putU64(fv, v)
}

// throughputField answers FI_DEV_NVLINK_THROUGHPUT_{DATA,RAW}_{TX,RX} in KiB. Raw
// counts protocol overhead on top of the payload.
func (d *Device) throughputField(fv *nvml.FieldValue) nvml.Return {
	g := d.g
	one := func(k *nvlink) float64 {
		switch fv.FieldId {
		case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
			return k.txKiB
		case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
			return k.rxKiB
		case nvml.FI_DEV_NVLINK_THROUGHPUT_RAW_TX:
			return k.txKiB * 1.08
		}
		return k.rxKiB * 1.08
	}
	if fv.ScopeId == aggregateScope {
		var s float64
		for i := range g.links {
			s += one(&g.links[i])
		}
		return putU64(fv, uint64(s))
	}
	if int64(fv.ScopeId) >= int64(len(g.links)) {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	return putU64(fv, uint64(one(&g.links[fv.ScopeId])))
}

func putU32(fv *nvml.FieldValue, v uint32) nvml.Return {
	fv.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
	binary.NativeEndian.PutUint32(fv.Value[:], v)
	return nvml.SUCCESS
}

func putU64(fv *nvml.FieldValue, v uint64) nvml.Return {
	fv.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
	binary.NativeEndian.PutUint64(fv.Value[:], v)
	return nvml.SUCCESS
}
