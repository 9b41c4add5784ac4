package collector

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// hungSource blocks forever, ignoring its context, in the tier hangFull says
// (Collect, else CollectHealth), from its second call of that tier on; release
// lets every blocked call return (at the end of the test).
type hungSource struct {
	name     string
	hangFull bool
	release  chan struct{}
	calls    atomic.Int32 // of the hanging tier
	inside   atomic.Int32 // calls blocked now
}

func (h *hungSource) Name() string { return h.name }

func (h *hungSource) hang(full bool, emit func(telemetry.Sample)) error {
	if full == h.hangFull && h.calls.Add(1) > 1 {
		h.inside.Add(1)
		defer h.inside.Add(-1)
		<-h.release // ctx is not looked at: a read stuck in the kernel
	}
	if full {
		emit(gpuSample(telemetry.DCGMGPUTemp, "7", 1))
	} else {
		emit(gpuSample(telemetry.DCGMECCDBEVolTotal, "7", 0))
	}
	return nil
}

func (h *hungSource) Collect(_ context.Context, emit func(telemetry.Sample)) error {
	return h.hang(true, emit)
}

func (h *hungSource) CollectHealth(_ context.Context, emit func(telemetry.Sample)) error {
	return h.hang(false, emit)
}

// metricValue is the value of name{source=src} in fams.
func metricValue(fams []*dto.MetricFamily, name, src string) (float64, bool) {
	for _, mf := range fams {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == telemetry.LabelSource && l.GetValue() == src {
					if m.Gauge != nil {
						return m.Gauge.GetValue(), true
					}
					return m.Counter.GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestRunnerHungSource runs the collection loop for about three full intervals
// with a source that blocks forever ignoring its context, in its full tier and
// in its health tier. The other sources keep their cadence (a health cycle
// every health interval, a full one every interval, never a cycle held up for a
// full interval), the hung source reads up=0 with a duration of at least its
// timeout and an error that says why, and only one call of it is ever stuck:
// goroutines do not grow with the cycles.
func TestRunnerHungSource(t *testing.T) {
	for _, hangFull := range []bool{true, false} {
		name := "health-tier"
		if hangFull {
			name = "full-tier"
		}
		t.Run(name, func(t *testing.T) {
			const (
				interval = 600 * time.Millisecond
				health   = 60 * time.Millisecond
				run      = 3*interval + interval/2
			)
			hung := &hungSource{name: "hung", hangFull: hangFull, release: make(chan struct{})}
			defer close(hung.release)
			fast := fakeHealthSource{&fakeSource{name: "fast",
				full:   []telemetry.Sample{gpuSample(telemetry.DCGMGPUTemp, "0", 40)},
				health: []telemetry.Sample{gpuSample(telemetry.DCGMECCDBEVolTotal, "0", 0)}}}
			plain := &fakeSource{name: "plain", full: []telemetry.Sample{gpuSample(telemetry.DCGMPowerUsage, "0", 300)}}
			exp := NewExporter(ExporterOptions{Node: "node-01"})
			var (
				mu    sync.Mutex
				times []time.Time // when each snapshot was published (wall clock)
				snaps []*Snapshot
				fams  [][]*dto.MetricFamily
				goros []int
			)
			inv := &Inventory{Node: "node-01", GPUs: []GPUInfo{{Index: 0, UUID: "GPU-0"}, {Index: 7, UUID: "GPU-7"}}}
			r, err := NewRunner(RunnerOptions{Sources: []Source{hung, fast, plain}, Inventory: inv, Interval: interval, HealthInterval: health,
				OnPublish: func(s *Snapshot) {
					f := exp.Render(s)
					mu.Lock()
					times = append(times, time.Now())
					snaps = append(snaps, s)
					fams = append(fams, f)
					goros = append(goros, runtime.NumGoroutine())
					mu.Unlock()
				}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), run)
			defer cancel()
			start := time.Now()
			if err := r.Run(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			// The last cycle may have been cut short by the end of Run.
			times, snaps, goros = times[:len(times)-1], snaps[:len(snaps)-1], goros[:len(goros)-1]
			last := fams[len(times)-1]

			// Cadence: no gap between snapshots near a full interval, and the
			// fast source's health tier read in every cycle.
			var gap time.Duration
			prev := start
			for _, at := range times {
				gap = max(gap, at.Sub(prev))
				prev = at
			}
			if gap > interval/2 {
				t.Errorf("the longest wait between snapshots was %s (health interval %s): a hung source held the cycle up", gap, health)
			}
			if want := int(run / health); len(times) < want/2 {
				t.Errorf("%d cycles in %s, want about %d", len(times), run, want)
			}
			if fastHealth := int(fast.healthN.Load()); fastHealth < len(times) {
				t.Errorf("the fast source's health tier was read %d times in %d cycles", fastHealth, len(times))
			}
			if n := plain.fullN.Load(); n < 3 || n > 5 {
				t.Errorf("the full-only source was collected %d times in %s at a %s interval", n, run, interval)
			}
			for i, s := range snaps[1:] {
				ok := false
				for _, x := range s.Samples {
					ok = ok || (x.Name == telemetry.DCGMECCDBEVolTotal && x.Labels.Get(telemetry.LabelGPUIndex) == "0")
				}
				if !ok {
					t.Fatalf("snapshot %d lacks the fast source's health sample", i+1)
				}
			}

			// The hung source: one stuck call, up=0, why, and how long.
			if got := hung.inside.Load(); got != 1 {
				t.Errorf("%d calls of the hung source are stuck, want exactly 1", got)
			}
			if got := hung.calls.Load(); got != 2 {
				t.Errorf("the hung source was called %d times in its hanging tier, want 2 (one that worked, one that hangs)", got)
			}
			st := snaps[len(snaps)-1].Sources[0]
			if st.Up || (!strings.Contains(st.Err, "timed out") && !strings.Contains(st.Err, "still running")) {
				t.Errorf("hung source status %+v", st)
			}
			if up, ok := metricValue(last, telemetry.MetricSourceUp, "hung"); !ok || up != 0 {
				t.Errorf("gpuwatch_source_up{source=hung} = %v (present %v)", up, ok)
			}
			timeout := health
			if hangFull {
				timeout = interval
			}
			if d, ok := metricValue(last, telemetry.MetricSourceDurationSeconds, "hung"); !ok || d < timeout.Seconds() {
				t.Errorf("gpuwatch_source_duration_seconds{source=hung} = %v, want at least the %s timeout", d, timeout)
			}
			if up, _ := metricValue(last, telemetry.MetricSourceUp, "fast"); up != 1 {
				t.Error("the fast source is not up")
			}
			for _, s := range snaps[len(snaps)-1].Samples {
				if s.Labels.Get(telemetry.LabelGPUIndex) == "7" && hangFull == (s.Name == telemetry.DCGMGPUTemp) {
					t.Errorf("the hung source's %s from before it hung is still served", s.Name)
				}
			}

			// Goroutines: flat from the second full interval on.
			third := len(goros) / 3
			lo, hi := goros[third], goros[third]
			for _, g := range goros[third:] {
				lo, hi = min(lo, g), max(hi, g)
			}
			if hi-lo > 4 {
				t.Errorf("goroutines grew from %d to %d over %d cycles with a source stuck", lo, hi, len(goros)-third)
			}
		})
	}
}
