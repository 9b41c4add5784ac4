package simhw

import (
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// maxQueuedEvents bounds an event set's queue; like the driver's, it drops new
// events when nobody drains it.
const maxQueuedEvents = 4096

// noInstance is the GPU/compute instance id NVML reports for non-MIG events.
const noInstance = 0xFFFFFFFF

// eventSet is an nvml.EventSet over one node's GPUs.
//
// Wait behaves like nvmlEventSetWait: it returns a queued event at once; with
// nothing queued it blocks until an event arrives or the timeout passes, where the
// timeout runs out on whichever clock reaches it first, wall time or simulated
// time (so an agent waiting 5 s returns after 5 simulated seconds when the fleet
// runs faster than real time). Wait(0) polls. When a registered GPU falls off the
// bus the next Wait answers ERROR_GPU_IS_LOST once, as the real call does; the Xid
// itself (79) is never delivered as an event.
type eventSet struct {
	node *Node

	mu     sync.Mutex
	regs   map[*gpu]uint64 // event mask per registered GPU
	dev    map[*gpu]*Device
	queue  []nvml.EventData
	lost   bool // a registered GPU was lost since the last Wait
	freed  bool
	notify chan struct{} // capacity 1: something was queued
}

var _ nvml.EventSet = (*eventSet)(nil)

// newEventSet creates an event set and attaches it to the node.
func (n *Node) newEventSet() *eventSet {
	es := &eventSet{
		node:   n,
		regs:   map[*gpu]uint64{},
		dev:    map[*gpu]*Device{},
		notify: make(chan struct{}, 1),
	}
	n.mu.Lock()
	n.sets = append(n.sets, es)
	n.mu.Unlock()
	return es
}

func (es *eventSet) register(d *Device, mask uint64) nvml.Return {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.freed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	es.regs[d.g] |= mask
	es.dev[d.g] = d
	return nvml.SUCCESS
}

// deliver queues an event for g if the set watches that type on g.
func (es *eventSet) deliver(g *gpu, typ, data uint64) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.freed || es.regs[g]&typ == 0 || len(es.queue) >= maxQueuedEvents {
		return
	}
	es.queue = append(es.queue, nvml.EventData{
		Device:            es.dev[g],
		EventType:         typ,
		EventData:         data,
		GpuInstanceId:     noInstance,
		ComputeInstanceId: noInstance,
	})
	es.wake()
}

// gpuLost tells the set that g fell off the bus.
func (es *eventSet) gpuLost(g *gpu) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.freed || es.regs[g] == 0 {
		return
	}
	es.lost = true
	es.wake()
}

func (es *eventSet) wake() {
	select {
	case es.notify <- struct{}{}:
	default:
	}
}

// Wait returns the next event, ERROR_TIMEOUT when none arrives within timeoutMs,
// or ERROR_GPU_IS_LOST once after a registered GPU fell off the bus.
func (es *eventSet) Wait(timeoutMs uint32) (nvml.EventData, nvml.Return) {
	n := es.node
	if n.server.ready() != nvml.SUCCESS {
		return nvml.EventData{}, nvml.ERROR_UNINITIALIZED
	}
	timeout := time.Duration(timeoutMs) * time.Millisecond
	var timer *time.Timer
	simDeadline := n.Now().Add(timeout)
	for {
		if ev, r, ok := es.take(); ok {
			if timer != nil {
				timer.Stop()
			}
			return ev, r
		}
		advanced, now := n.advancedChan()
		if timeout == 0 || !now.Before(simDeadline) {
			if timer != nil {
				timer.Stop()
			}
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
		if timer == nil {
			timer = time.NewTimer(timeout)
		}
		select {
		case <-es.notify:
		case <-advanced:
		case <-timer.C:
			if ev, r, ok := es.take(); ok {
				return ev, r
			}
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
	}
}

func (es *eventSet) take() (nvml.EventData, nvml.Return, bool) {
	es.mu.Lock()
	defer es.mu.Unlock()
	switch {
	case es.freed:
		return nvml.EventData{}, nvml.ERROR_INVALID_ARGUMENT, true
	case len(es.queue) > 0:
		ev := es.queue[0]
		es.queue[0] = nvml.EventData{}
		es.queue = es.queue[1:]
		return ev, nvml.SUCCESS, true
	case es.lost:
		es.lost = false
		return nvml.EventData{}, nvml.ERROR_GPU_IS_LOST, true
	}
	return nvml.EventData{}, nvml.SUCCESS, false
}

// Free releases the set.
func (es *eventSet) Free() nvml.Return {
	n := es.node
	n.mu.Lock()
	for i, s := range n.sets {
		if s == es {
			n.sets = append(n.sets[:i], n.sets[i+1:]...)
			break
		}
	}
	n.mu.Unlock()
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.freed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	es.freed = true
	es.queue = nil
	es.wake()
	return nvml.SUCCESS
}

// emit delivers an event about g to every set of the node. The caller holds the
// node lock.
func (n *Node) emit(g *gpu, typ, data uint64) {
	for _, es := range n.sets {
		es.deliver(g, typ, data)
	}
}

// emitLost tells every set that g fell off the bus. The caller holds the node lock.
func (n *Node) emitLost(g *gpu) {
	for _, es := range n.sets {
		es.gpuLost(g)
	}
}
