package collector

import (
	"context"
	"errors"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// ErrNoDevices means the hardware a Source reads is absent on this node (no GPU, no
// InfiniBand HCA). It is an expected condition: the run loop logs it at debug level
// and reports the source as up with nothing to say.
var ErrNoDevices = errors.New("no devices")

// Source is one family of node telemetry (NVML, DCGM, InfiniBand, ...).
//
// Collect emits the family's current samples through emit. ctx carries the
// per-source deadline. An error fails this source only, never the whole scrape; a
// source that emitted some samples before failing keeps them. Collect may be called
// concurrently with other sources but never concurrently with itself.
type Source interface {
	Name() string
	Collect(ctx context.Context, emit func(telemetry.Sample)) error
}
