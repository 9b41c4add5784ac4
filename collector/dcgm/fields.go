package dcgm

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// field is one DCGM field the source watches and the series it becomes.
type field struct {
	ID   godcgm.Short
	Name string // telemetry.LookupDCGMField(ID).Name
}

// profilingFields returns the fields the catalog assigns to the DCGM source, in
// field-id order. The catalog is the only list: a field added there with
// telemetry.SourceDCGM is watched and emitted with no change here.
func profilingFields() []field {
	var out []field
	for _, d := range telemetry.Metrics() {
		if d.Source != telemetry.SourceDCGM || d.DCGMFieldID == 0 {
			continue
		}
		out = append(out, field{ID: godcgm.Short(d.DCGMFieldID), Name: d.Name})
	}
	slices.SortFunc(out, func(a, b field) int { return int(a.ID) - int(b.ID) })
	return out
}

// fieldValue converts one DCGM field value to a sample value. ok is false when DCGM
// reports an error status or one of its sentinel values (blank, not found, not
// supported, not permissioned), or when the type is not numeric.
func fieldValue(fv *godcgm.FieldValue_v2) (v float64, ok bool) {
	if fv.Status != godcgm.DCGM_ST_OK {
		return 0, false
	}
	switch fv.FieldType {
	case godcgm.DCGM_FT_DOUBLE:
		f := fv.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) || f >= godcgm.DCGM_FT_FP64_BLANK {
			return 0, false
		}
		return f, true
	case godcgm.DCGM_FT_INT64:
		i := fv.Int64()
		if i >= godcgm.DCGM_FT_INT64_BLANK {
			return 0, false
		}
		// 32-bit fields travel as int64 with their own sentinels.
		if i >= godcgm.DCGM_FT_INT32_BLANK && i <= godcgm.DCGM_FT_INT32_NOT_PERMISSIONED {
			return 0, false
		}
		return float64(i), true
	}
	return 0, false
}

// fieldTime is when DCGM sampled the value (its timestamp is in microseconds since
// the epoch); the zero time when DCGM gave none, so the run loop stamps it.
func fieldTime(fv *godcgm.FieldValue_v2) time.Time {
	if fv.TS <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(fv.TS)
}

// gpuMap maps DCGM GPU ids to NVML indexes.
type gpuMap map[uint]int

// mapGPUs matches DCGM's GPUs with the inventory by UUID. A GPU the inventory does not
// know is left out and reported in the error (its values would carry the wrong
// identity); with no inventory the DCGM id is taken as the NVML index, which is what
// DCGM assigns on a node without GPU exclusions.
func mapGPUs(gpus []godcgm.Device, inv *collector.Inventory) (gpuMap, error) {
	m := make(gpuMap, len(gpus))
	var unknown []string
	for _, g := range gpus {
		if inv == nil {
			m[g.GPU] = int(g.GPU)
			continue
		}
		if info, ok := inv.ByUUID(g.UUID); ok {
			m[g.GPU] = info.Index
			continue
		}
		unknown = append(unknown, fmt.Sprintf("DCGM GPU %d (%q)", g.GPU, g.UUID))
	}
	if len(unknown) > 0 {
		return m, fmt.Errorf("not in the NVML inventory, left out: %v", unknown)
	}
	return m, nil
}

// labels returns each GPU's sample labels, built once and shared by its samples
// (samples are immutable once emitted).
func (m gpuMap) labels() map[uint]telemetry.Labels {
	out := make(map[uint]telemetry.Labels, len(m))
	for id, idx := range m {
		out[id] = telemetry.Labels{{Name: telemetry.LabelGPUIndex, Value: strconv.Itoa(idx)}}
	}
	return out
}

// ids returns the mapped DCGM GPU ids in order.
func (m gpuMap) ids() []uint {
	out := make([]uint, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// emitValues turns DCGM field values into samples. Values of GPUs or fields the
// source did not ask for, and values DCGM could not give (a profiling field the GPU
// does not support reads as blank), are skipped and counted.
func emitValues(values []godcgm.FieldValue_v2, gpus map[uint]telemetry.Labels, names map[godcgm.Short]string, emit func(telemetry.Sample)) (skipped int) {
	for i := range values {
		fv := &values[i]
		if fv.EntityGroupId != godcgm.FE_GPU {
			skipped++
			continue
		}
		ls, ok := gpus[fv.EntityID]
		name := names[fv.FieldID]
		if !ok || name == "" {
			skipped++
			continue
		}
		v, ok := fieldValue(fv)
		if !ok {
			skipped++
			continue
		}
		emit(telemetry.Sample{
			Name:   name,
			Labels: ls,
			Value:  v,
			Time:   fieldTime(fv),
		})
	}
	return skipped
}
