package collector

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// fakeSource emits fixed samples; health ones when it has a health tier.
type fakeSource struct {
	name    string
	full    []telemetry.Sample
	health  []telemetry.Sample
	err     error
	block   chan struct{} // Collect waits on it when non-nil
	fullN   atomic.Int32
	healthN atomic.Int32
}

func (f *fakeSource) Name() string { return f.name }

func (f *fakeSource) Collect(ctx context.Context, emit func(telemetry.Sample)) error {
	f.fullN.Add(1)
	if f.block != nil {
		<-f.block
	}
	for _, s := range f.full {
		emit(s)
	}
	return f.err
}

type fakeHealthSource struct{ *fakeSource }

func (f fakeHealthSource) CollectHealth(ctx context.Context, emit func(telemetry.Sample)) error {
	f.healthN.Add(1)
	for _, s := range f.health {
		emit(s)
	}
	return nil
}

func gpuSample(name string, gpu string, v float64) telemetry.Sample {
	return telemetry.Sample{Name: name, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, gpu), Value: v}
}

func TestRunnerSchedulesAndStamps(t *testing.T) {
	a := fakeHealthSource{&fakeSource{name: "a",
		full:   []telemetry.Sample{gpuSample(telemetry.DCGMGPUTemp, "0", 40)},
		health: []telemetry.Sample{gpuSample(telemetry.DCGMECCDBEVolTotal, "0", 0)}}}
	b := &fakeSource{name: "b", full: []telemetry.Sample{gpuSample(telemetry.DCGMPowerUsage, "0", 300)}}
	var derivedSaw int
	r, err := NewRunner(RunnerOptions{Sources: []Source{a, b}, Interval: 10 * time.Second, HealthInterval: time.Second,
		Derivers: []Deriver{deriverFunc{"d", func(s *Snapshot, emit func(telemetry.Sample)) error {
			derivedSaw = len(s.Samples)
			emit(telemetry.Sample{Name: telemetry.MetricNodeHealthState, Value: 0})
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ticksPerFull() != 10 {
		t.Fatalf("ticks per full = %d, want 10", r.ticksPerFull())
	}
	snap := r.Cycle(context.Background(), true)
	if len(snap.Samples) != 4 || derivedSaw != 3 {
		t.Fatalf("full cycle: %d samples (deriver saw %d), want 4 (3)", len(snap.Samples), derivedSaw)
	}
	for _, s := range snap.Samples {
		if s.Time.IsZero() {
			t.Errorf("%s has no collection time", s.Name)
		}
	}
	snap = r.Cycle(context.Background(), false)
	if got := a.fullN.Load(); got != 1 {
		t.Errorf("health cycle called Collect: %d calls", got)
	}
	if a.healthN.Load() != 2 || b.fullN.Load() != 1 {
		t.Errorf("calls: a.health=%d b.full=%d, want 2 and 1", a.healthN.Load(), b.fullN.Load())
	}
	// The health cycle keeps the full samples of the previous full cycle.
	if len(snap.Samples) != 4 {
		t.Errorf("health cycle snapshot has %d samples, want 4", len(snap.Samples))
	}
	if len(snap.Sources) != 3 || !snap.Sources[0].Up || snap.Sources[2].Name != "d" {
		t.Errorf("sources = %+v", snap.Sources)
	}
	if r.Snapshot() != snap || r.Cycles() != 2 {
		t.Errorf("Snapshot/Cycles not updated")
	}
}

type deriverFunc struct {
	name string
	f    func(*Snapshot, func(telemetry.Sample)) error
}

func (d deriverFunc) Name() string { return d.name }
func (d deriverFunc) Derive(_ context.Context, s *Snapshot, emit func(telemetry.Sample)) error {
	return d.f(s, emit)
}

func TestRunnerSlowSourceStaysLocal(t *testing.T) {
	slow := &fakeSource{name: "slow", block: make(chan struct{}), full: []telemetry.Sample{gpuSample(telemetry.DCGMGPUTemp, "0", 1)}}
	fast := &fakeSource{name: "fast", full: []telemetry.Sample{gpuSample(telemetry.DCGMPowerUsage, "0", 2)}}
	r, err := NewRunner(RunnerOptions{Sources: []Source{slow, fast}, Interval: time.Second, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	snap := r.Cycle(context.Background(), true)
	if snap.Sources[0].Up || snap.Sources[0].Err == "" || !snap.Sources[1].Up {
		t.Fatalf("statuses = %+v", snap.Sources)
	}
	if len(snap.Samples) != 1 || snap.Samples[0].Name != telemetry.DCGMPowerUsage {
		t.Fatalf("samples = %+v", snap.Samples)
	}
	// Still running: the next cycle does not call it again.
	snap = r.Cycle(context.Background(), true)
	if slow.fullN.Load() != 1 || snap.Sources[0].Errors != 2 {
		t.Fatalf("slow source called %d times, errors %d", slow.fullN.Load(), snap.Sources[0].Errors)
	}
	close(slow.block)
	for deadline := time.Now().Add(5 * time.Second); ; {
		snap = r.Cycle(context.Background(), true)
		if snap.Sources[0].Up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("slow source never recovered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(snap.Samples) != 2 {
		t.Fatalf("after recovery: %d samples", len(snap.Samples))
	}
}

func TestRunnerErrorKeepsPartialSamples(t *testing.T) {
	s := &fakeSource{name: "s", full: []telemetry.Sample{gpuSample(telemetry.DCGMGPUTemp, "0", 1)}, err: errors.New("gpu 1: boom")}
	none := &fakeSource{name: "none", err: ErrNoDevices}
	r, err := NewRunner(RunnerOptions{Sources: []Source{s, none}, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	snap := r.Cycle(context.Background(), true)
	if snap.Sources[0].Up || snap.Sources[0].Err != "gpu 1: boom" || len(snap.Samples) != 1 {
		t.Fatalf("partial: %+v %d samples", snap.Sources[0], len(snap.Samples))
	}
	if !snap.Sources[1].Up {
		t.Errorf("ErrNoDevices should leave the source up: %+v", snap.Sources[1])
	}
}

func TestRunnerRejectsBadOptions(t *testing.T) {
	if _, err := NewRunner(RunnerOptions{}); err == nil {
		t.Error("zero interval accepted")
	}
	a := &fakeSource{name: "x"}
	if _, err := NewRunner(RunnerOptions{Sources: []Source{a, a}, Interval: time.Second}); err == nil {
		t.Error("duplicate source accepted")
	}
}

// TestRunnerParts: a snapshot's parts cover its samples source by source; a
// health cycle keeps the full collections' parts (same Gen, same samples) and
// numbers its new collections and the derivers' output afresh.
func TestRunnerParts(t *testing.T) {
	a := fakeHealthSource{&fakeSource{name: "a",
		full:   []telemetry.Sample{gpuSample(telemetry.DCGMGPUTemp, "0", 40), gpuSample(telemetry.DCGMGPUTemp, "1", 41)},
		health: []telemetry.Sample{gpuSample(telemetry.DCGMECCDBEVolTotal, "0", 0)}}}
	b := &fakeSource{name: "b", full: []telemetry.Sample{gpuSample(telemetry.DCGMPowerUsage, "0", 300)}}
	empty := &fakeSource{name: "empty"}
	r, err := NewRunner(RunnerOptions{Sources: []Source{a, empty, b}, Interval: 10 * time.Second, HealthInterval: time.Second,
		Derivers: []Deriver{deriverFunc{"d", func(s *Snapshot, emit func(telemetry.Sample)) error {
			emit(telemetry.Sample{Name: telemetry.MetricNodeHealthState, Value: 0})
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	full := r.Cycle(context.Background(), true)
	health := r.Cycle(context.Background(), false)
	for _, s := range []*Snapshot{full, health} {
		ends := []int{}
		for _, p := range s.Parts {
			ends = append(ends, p.End)
			if p.Gen == 0 {
				t.Errorf("part ending at %d has Gen 0", p.End)
			}
		}
		// a's full, a's health, b's full, the deriver's: the empty source has none.
		if want := []int{2, 3, 4, 5}; !slices.Equal(ends, want) {
			t.Fatalf("part ends %v, want %v", ends, want)
		}
	}
	if full.Parts[0].Gen != health.Parts[0].Gen || full.Parts[2].Gen != health.Parts[2].Gen {
		t.Errorf("full collections renumbered in a health cycle: %v then %v", full.Parts, health.Parts)
	}
	if full.Parts[1].Gen == health.Parts[1].Gen || full.Parts[3].Gen == health.Parts[3].Gen {
		t.Errorf("health collection or derived samples kept their number: %v then %v", full.Parts, health.Parts)
	}
}
