package nvml

import (
	"context"
	"errors"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// healthFields are the health values, read in one nvmlDeviceGetFieldValues call
// per GPU per health cycle. Each field answers for itself: a GPU without page
// retirement (Ampere and later) or without the recovery-action field (drivers
// before R565) answers ERROR_NOT_SUPPORTED for those alone.
var healthFields = [...]struct {
	id   uint32
	name string
}{
	{gonvml.FI_DEV_ECC_SBE_VOL_TOTAL, telemetry.DCGMECCSBEVolTotal},
	{gonvml.FI_DEV_ECC_DBE_VOL_TOTAL, telemetry.DCGMECCDBEVolTotal},
	{gonvml.FI_DEV_ECC_SBE_AGG_TOTAL, telemetry.DCGMECCSBEAggTotal},
	{gonvml.FI_DEV_ECC_DBE_AGG_TOTAL, telemetry.DCGMECCDBEAggTotal},
	{gonvml.FI_DEV_RETIRED_SBE, telemetry.DCGMRetiredSBE},
	{gonvml.FI_DEV_RETIRED_DBE, telemetry.DCGMRetiredDBE},
	{gonvml.FI_DEV_RETIRED_PENDING, telemetry.DCGMRetiredPending},
	{gonvml.FI_DEV_REMAPPED_COR, telemetry.DCGMCorrectableRemappedRows},
	{gonvml.FI_DEV_REMAPPED_UNC, telemetry.DCGMUncorrectableRemappedRows},
	{gonvml.FI_DEV_REMAPPED_PENDING, telemetry.DCGMRowRemapPending},
	{gonvml.FI_DEV_REMAPPED_FAILURE, telemetry.DCGMRowRemapFailure},
	{gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION, telemetry.DCGMGPURecoveryAction},
}

// rdHealthBatch is the bit of gpuState.healthNS for the whole batch (a GPU whose
// driver has no field values at all).
const rdHealthBatch = 0

// CollectHealth emits the health series: ECC volatile and aggregate totals,
// retired pages, remapped rows, the recovery action, and gpuwatch_gpu_lost for
// every GPU of the inventory.
func (s *Source) CollectHealth(ctx context.Context, emit func(telemetry.Sample)) error {
	if len(s.gpus) == 0 {
		return collector.ErrNoDevices
	}
	s.healthCycles++
	reprobe := s.opts.Reprobe > 0 && s.healthCycles%s.opts.Reprobe == 0
	var errs []error
	for _, g := range s.gpus {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("nvml: GPU %d and later not read: %w", g.info.Index, err))
			break
		}
		if reprobe {
			g.healthNS = 0
		}
		t := s.opts.Now()
		dev, err := s.handle(g)
		if err != nil {
			errs = append(errs, err)
		}
		if dev != nil {
			p := pass{g: g, ns: &g.healthNS, t: t, emit: emit}
			healthGPU(&p, dev)
			g.lost.Store(p.lost)
			errs = append(errs, p.errs...)
		}
		emit(telemetry.Sample{Name: telemetry.MetricGPULost, Labels: g.labels, Value: enabled(g.lost.Load()), Time: t})
	}
	return errors.Join(errs...)
}

func healthGPU(p *pass, dev gonvml.Device) {
	if p.skip(rdHealthBatch) {
		return
	}
	fvs := p.g.health
	for i := range fvs {
		fvs[i] = gonvml.FieldValue{FieldId: healthFields[i].id}
	}
	if !p.ok(rdHealthBatch, "GetFieldValues(health)", dev.GetFieldValues(fvs)) {
		return
	}
	for i := range fvs {
		fv := &fvs[i]
		r := gonvml.Return(fv.NvmlReturn)
		if r == gonvml.ERROR_NOT_SUPPORTED {
			continue
		}
		if !p.ok(-1, fieldCalls[i], r) {
			if p.stop {
				return
			}
			continue
		}
		if v, ok := fieldValue(fv); ok {
			p.put(healthFields[i].name, v)
		}
	}
}

// fieldCalls names each health field for errors, built once.
var fieldCalls = func() []string {
	out := make([]string, len(healthFields))
	for i, f := range healthFields {
		out[i] = fmt.Sprintf("GetFieldValues(field %d, %s)", f.id, f.name)
	}
	return out
}()
