package nvml

import (
	"context"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// testClock is a fixed wall clock for samples.
var testClock = time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)

// rig is one simulated node with its NVML library initialized.
type rig struct {
	fleet *simhw.Fleet
	node  *simhw.Node
	lib   gonvml.Interface
}

func newRig(t testing.TB, shape simhw.ShapeName) *rig {
	t.Helper()
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: shape, Seed: 7})
	if err != nil {
		t.Fatalf("NewFleet: %v", err)
	}
	n := f.Nodes()[0]
	lib := n.NVML()
	if r := lib.Init(); r != gonvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	t.Cleanup(func() { lib.Shutdown() })
	return &rig{fleet: f, node: n, lib: lib}
}

func (r *rig) advance(t testing.TB, d time.Duration) {
	t.Helper()
	if err := r.fleet.Advance(d); err != nil {
		t.Fatalf("Advance: %v", err)
	}
}

func (r *rig) inject(t testing.TB, f simhw.Fault) {
	t.Helper()
	if err := r.node.Inject(f); err != nil {
		t.Fatalf("Inject %+v: %v", f, err)
	}
}

// source discovers the node and builds the source.
func (r *rig) source(t testing.TB, opts Options) (*Source, *collector.Inventory) {
	t.Helper()
	inv, err := Discover(r.lib, r.node.Name())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return testClock }
	}
	return New(r.lib, inv, opts), inv
}

// samples is what one collection emitted.
type samples []telemetry.Sample

func collect(t testing.TB, f func(context.Context, func(telemetry.Sample)) error) (samples, error) {
	t.Helper()
	var out samples
	err := f(context.Background(), func(s telemetry.Sample) { out = append(out, s) })
	return out, err
}

func mustCollect(t testing.TB, f func(context.Context, func(telemetry.Sample)) error) samples {
	t.Helper()
	out, err := collect(t, f)
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	return out
}

// get returns the value of name on GPU gpu and whether it was emitted.
func (ss samples) get(name string, gpu string) (float64, bool) {
	for _, s := range ss {
		if s.Name == name && s.Labels.Get(telemetry.LabelGPUIndex) == gpu {
			return s.Value, true
		}
	}
	return 0, false
}

func (ss samples) must(t testing.TB, name, gpu string) float64 {
	t.Helper()
	v, ok := ss.get(name, gpu)
	if !ok {
		t.Fatalf("%s{gpu_index=%q} not emitted", name, gpu)
	}
	return v
}

// forGPU returns the samples of one GPU.
func (ss samples) forGPU(gpu string) samples {
	var out samples
	for _, s := range ss {
		if s.Labels.Get(telemetry.LabelGPUIndex) == gpu {
			out = append(out, s)
		}
	}
	return out
}

// recorder is an XidSink that records events.
type recorder struct {
	mu  sync.Mutex
	evs []collector.XidEvent
	ch  chan collector.XidEvent
}

func newRecorder() *recorder { return &recorder{ch: make(chan collector.XidEvent, 1024)} }

func (r *recorder) ObserveXid(e collector.XidEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
	select {
	case r.ch <- e:
	default:
	}
}

func (r *recorder) events() []collector.XidEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]collector.XidEvent(nil), r.evs...)
}

// waitFor waits for an event matching ok.
func (r *recorder) waitFor(t testing.TB, what string, ok func(collector.XidEvent) bool) collector.XidEvent {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-r.ch:
			if ok(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("no event %s; got %+v", what, r.events())
			return collector.XidEvent{}
		}
	}
}
