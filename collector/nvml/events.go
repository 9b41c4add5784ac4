package nvml

import (
	"context"
	"errors"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
)

// EventStats counts what WatchEvents has received.
type EventStats struct {
	Xids uint64 // XidCriticalError events handed to the sink
	ECC  uint64 // single- and double-bit ECC events (counted, not forwarded)
	Lost uint64 // waits that answered ERROR_GPU_IS_LOST
}

// EventStats returns the event counts so far.
func (s *Source) EventStats() EventStats {
	return EventStats{Xids: s.xidEvents.Load(), ECC: s.eccEvents.Load(), Lost: s.lostEvents.Load()}
}

const eccEvents = gonvml.EventTypeSingleBitEccError | gonvml.EventTypeDoubleBitEccError

// maxWaitErrors is how many unexpected nvmlEventSetWait answers in a row end
// WatchEvents with an error.
const maxWaitErrors = 10

// WatchEvents registers every GPU that is not lost for Xid critical-error events
// (and the ECC event types it supports) in one event set and hands each Xid to
// sink until ctx is done; it frees the set on return. A GPU that supports no Xid
// events is skipped. It returns nil when ctx ends, and an error when no GPU could
// be registered or the event set stopped working.
func (s *Source) WatchEvents(ctx context.Context, sink collector.XidSink) error {
	if len(s.gpus) == 0 {
		return collector.ErrNoDevices
	}
	set, r := s.lib.EventSetCreate()
	if r != gonvml.SUCCESS {
		return fmt.Errorf("nvml events: EventSetCreate: %s", r.Error())
	}
	defer set.Free()

	type watched struct {
		dev gonvml.Device
		g   *gpuState
	}
	var ws []watched
	var errs []error
	for _, g := range s.gpus {
		if g.lost.Load() {
			continue
		}
		dev, err := s.handle(g)
		if err != nil {
			errs = append(errs, err)
		}
		if dev == nil {
			continue
		}
		if err := register(dev, set, g.info.Index); err != nil {
			errs = append(errs, err)
			continue
		}
		ws = append(ws, watched{dev, g})
	}
	if len(ws) == 0 {
		return fmt.Errorf("nvml events: no GPU could be registered for Xid events: %w", errors.Join(errs...))
	}

	if s.registered != nil {
		s.registered()
	}
	ms := uint32(s.opts.EventWait / time.Millisecond)
	failures := 0
	for ctx.Err() == nil {
		ev, r := set.Wait(ms)
		switch r {
		case gonvml.SUCCESS:
			failures = 0
		case gonvml.ERROR_TIMEOUT:
			failures = 0
			continue
		case gonvml.ERROR_GPU_IS_LOST:
			// A registered GPU fell off the bus; CollectHealth reports which. The
			// set keeps serving the others.
			s.lostEvents.Add(1)
			failures = 0
			continue
		default:
			failures++
			if failures >= maxWaitErrors || r == gonvml.ERROR_UNINITIALIZED {
				return fmt.Errorf("nvml events: EventSetWait: %s", r.Error())
			}
			select {
			case <-ctx.Done():
			case <-time.After(s.opts.EventWait):
			}
			continue
		}
		if ev.EventType&eccEvents != 0 {
			s.eccEvents.Add(1)
		}
		if ev.EventType&gonvml.EventTypeXidCriticalError == 0 {
			continue
		}
		x := collector.XidEvent{
			Time:     s.opts.Now(),
			GPUIndex: -1,
			Xid:      int(ev.EventData),
			Origin:   collector.OriginNVML,
		}
		var g *gpuState
		for _, w := range ws {
			if w.dev == ev.Device {
				g = w.g
				break
			}
		}
		if g == nil && ev.Device != nil {
			g = s.byDevice(ev.Device)
		}
		if g != nil {
			x.GPUIndex, x.UUID, x.PCIBusID = g.info.Index, g.info.UUID, g.info.PCIBusID
		}
		s.xidEvents.Add(1)
		sink.ObserveXid(x)
	}
	return nil
}

// register adds dev to set for Xid events and, where supported, ECC events.
func register(dev gonvml.Device, set gonvml.EventSet, index int) error {
	mask := uint64(gonvml.EventTypeXidCriticalError | eccEvents)
	if sup, r := dev.GetSupportedEventTypes(); r == gonvml.SUCCESS {
		mask &= sup
	} else {
		mask = gonvml.EventTypeXidCriticalError
	}
	if mask&gonvml.EventTypeXidCriticalError == 0 {
		return fmt.Errorf("nvml events: GPU %d: GetSupportedEventTypes: no Xid critical-error events", index)
	}
	r := dev.RegisterEvents(mask, set)
	if r == gonvml.ERROR_NOT_SUPPORTED && mask != gonvml.EventTypeXidCriticalError {
		r = dev.RegisterEvents(gonvml.EventTypeXidCriticalError, set)
	}
	if r != gonvml.SUCCESS {
		return fmt.Errorf("nvml events: GPU %d: RegisterEvents: %s", index, r.Error())
	}
	return nil
}

// byDevice finds the GPU of an event whose handle does not compare equal to the
// one the source holds, by UUID.
func (s *Source) byDevice(dev gonvml.Device) *gpuState {
	uuid, r := dev.GetUUID()
	if r != gonvml.SUCCESS {
		return nil
	}
	for _, g := range s.gpus {
		if g.info.UUID == uuid {
			return g
		}
	}
	return nil
}
