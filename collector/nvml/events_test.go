package nvml

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
)

// watch runs WatchEvents in the background; stop cancels it and returns its
// result (once; later calls return the same).
func watch(t *testing.T, src *Source, sink collector.XidSink) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	src.registered = func() { close(ready) }
	done := make(chan error, 1)
	go func() { done <- src.WatchEvents(ctx, sink) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("WatchEvents = %v before registering", err)
	}
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(5 * time.Second):
				result = errors.New("WatchEvents did not return after cancel")
			}
		})
		return result
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return stop
}

func TestWatchEvents(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	src, inv := r.source(t, Options{EventWait: 20 * time.Millisecond})
	rec := newRecorder()
	stop := watch(t, src, rec)

	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 13, GPU: 1})
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 31, GPU: 5})
	for _, want := range []struct{ gpu, xid int }{{1, 13}, {5, 31}} {
		e := rec.waitFor(t, "Xid", func(e collector.XidEvent) bool { return e.Xid == want.xid })
		g := inv.GPUs[want.gpu]
		if e.GPUIndex != want.gpu || e.UUID != g.UUID || e.PCIBusID != g.PCIBusID ||
			e.Origin != collector.OriginNVML || !e.Time.Equal(testClock) || e.Message != "" {
			t.Errorf("event %+v, want GPU %d (%s, %s) Xid %d from NVML", e, want.gpu, g.UUID, g.PCIBusID, want.xid)
		}
	}

	// Xids the driver only logs never arrive as events; a sentinel Xid injected
	// after them proves the loop went past them.
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 62, GPU: 0})
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 79, GPU: 2})
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 119, GPU: 3})
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 120, GPU: 4})
	r.inject(t, simhw.Fault{Kind: simhw.FaultECCDBE, GPU: 6})
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 43, GPU: 7})
	rec.waitFor(t, "sentinel Xid 43", func(e collector.XidEvent) bool { return e.Xid == 43 && e.GPUIndex == 7 })
	seen := map[int]bool{}
	for _, e := range rec.events() {
		seen[e.Xid] = true
		switch e.Xid {
		case 62, 79, 119, 120:
			t.Errorf("Xid %d delivered as an NVML event: %+v", e.Xid, e)
		}
	}
	if !seen[48] || !seen[154] {
		t.Errorf("Xids seen %v, want 48 (the DBE) and 154 (recovery action)", seen)
	}
	deadline := time.Now().Add(2 * time.Second)
	for src.EventStats().Lost == 0 || src.EventStats().ECC == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want the lost GPU and the DBE event counted", src.EventStats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := src.EventStats(); st.Xids != uint64(len(rec.events())) {
		t.Errorf("stats %+v, sink got %d", st, len(rec.events()))
	}

	// The other GPUs keep delivering after one is lost.
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 31, GPU: 0})
	rec.waitFor(t, "Xid 31 on GPU 0 after GPU 2 was lost", func(e collector.XidEvent) bool { return e.Xid == 31 && e.GPUIndex == 0 })

	if err := stop(); err != nil {
		t.Fatalf("WatchEvents = %v after cancel, want nil", err)
	}
	// The set is freed: new Xids go nowhere.
	n := len(rec.events())
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 13, GPU: 0})
	time.Sleep(30 * time.Millisecond)
	if len(rec.events()) != n {
		t.Error("an event arrived after WatchEvents returned")
	}
}

func TestWatchEventsSkipsLostGPU(t *testing.T) {
	r := newRig(t, simhw.ShapeDGXA100)
	r.inject(t, simhw.Fault{Kind: simhw.FaultGPULost, GPU: 0})
	src, _ := r.source(t, Options{EventWait: 20 * time.Millisecond})
	rec := newRecorder()
	watch(t, src, rec)
	r.inject(t, simhw.Fault{Kind: simhw.FaultXid, Xid: 45, GPU: 1})
	e := rec.waitFor(t, "Xid 45", func(e collector.XidEvent) bool { return e.Xid == 45 })
	if e.GPUIndex != 1 {
		t.Errorf("event %+v, want GPU 1", e)
	}
}

func TestWatchEventsNoGPU(t *testing.T) {
	r := newRig(t, simhw.ShapeHGXH100)
	for g := range 8 {
		r.inject(t, simhw.Fault{Kind: simhw.FaultGPULost, GPU: g})
	}
	src, _ := r.source(t, Options{})
	err := src.WatchEvents(context.Background(), newRecorder())
	if err == nil {
		t.Fatal("WatchEvents with every GPU lost: no error")
	}
	if err := New(nil, nil, Options{}).WatchEvents(context.Background(), newRecorder()); !errors.Is(err, collector.ErrNoDevices) {
		t.Errorf("WatchEvents without GPUs = %v, want ErrNoDevices", err)
	}
}
