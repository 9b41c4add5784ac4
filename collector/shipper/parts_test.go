package shipper

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// partsSource has a full schedule (a temperature and an SM clock per GPU that
// move every collection) and a health schedule (a power reading per GPU that
// moves now and then, an Xid counter whose xid label churns, so its series come
// and go across the forgetting window, and nothing at all some seconds).
type partsSource struct{ cycle *int }

func (p partsSource) Name() string { return "parts" }

func (p partsSource) Collect(_ context.Context, emit func(telemetry.Sample)) error {
	c := *p.cycle
	for g := range 4 {
		gpu := telemetry.NewLabels(telemetry.LabelGPUIndex, fmt.Sprint(g))
		emit(telemetry.Sample{Name: telemetry.DCGMGPUTemp, Labels: gpu, Value: float64(40 + (c+g)%7)})
		emit(telemetry.Sample{Name: telemetry.DCGMSMClock, Labels: gpu, Value: 1980})
	}
	return nil
}

func (p partsSource) CollectHealth(_ context.Context, emit func(telemetry.Sample)) error {
	c := *p.cycle
	if c%23 == 5 {
		return nil // a second with nothing to say
	}
	for g := range 4 {
		gpu := telemetry.NewLabels(telemetry.LabelGPUIndex, fmt.Sprint(g))
		emit(telemetry.Sample{Name: telemetry.DCGMPowerUsage, Labels: gpu, Value: float64(300 + (c/13+g)%3)})
	}
	// A series that lives for 90 cycles, then gives way to another: the
	// encoder forgets the old one after 64 snapshots without it.
	emit(telemetry.Sample{Name: telemetry.MetricXidErrorsTotal, Value: float64(c / 90),
		Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, "0", telemetry.LabelXid, fmt.Sprint(79+c/90%2))})
	return nil
}

// partsDeriver emits a node-scoped series every cycle, as the health engine does.
type partsDeriver struct{}

func (partsDeriver) Name() string { return "derived" }

func (partsDeriver) Derive(_ context.Context, snap *collector.Snapshot, emit func(telemetry.Sample)) error {
	emit(telemetry.Sample{Name: telemetry.MetricNodeGPUs, Value: float64(len(snap.Samples) % 5)})
	return nil
}

// pods is an attributor whose answer changes at a given cycle.
type pods struct{ cycle *int }

func (p pods) Allocations() []collector.Allocation {
	pod := "train-0"
	if *p.cycle >= 137 && *p.cycle < 151 {
		pod = "train-1" // between two full collections: the full samples ride along re-labelled
	}
	return []collector.Allocation{{GPUIndex: 1, Pod: pod, Namespace: "ml", Container: "main"}}
}

// TestSkippedPartsShipWhatAFullWalkShips drives a real Runner through 400
// one-second cycles (full every tenth, or every hundredth) and encodes every snapshot twice: as
// published, where the encoder skips the parts it has already seen, and with
// Parts removed, where it walks every series as it did before parts existed.
// What they ship must be identical, sample for sample and in order, with and
// without the unchanged interval, across pod changes and series that come and go.
func TestSkippedPartsShipWhatAFullWalkShips(t *testing.T) {
	for _, tc := range []struct{ full, unchanged time.Duration }{
		{10 * time.Second, 0}, {10 * time.Second, 10 * time.Second},
		// Full samples riding along for longer than the forgetting window.
		{100 * time.Second, 0}, {100 * time.Second, 100 * time.Second},
	} {
		unchanged := tc.unchanged
		t.Run(fmt.Sprint(tc.full, "/", unchanged), func(t *testing.T) {
			cycle := 0
			clock := t0
			r, err := collector.NewRunner(collector.RunnerOptions{
				Sources: []collector.Source{partsSource{&cycle}}, Derivers: []collector.Deriver{partsDeriver{}},
				Inventory: testInventory(), Interval: tc.full, HealthInterval: time.Second,
				Now: func() time.Time { return clock },
			})
			if err != nil {
				t.Fatal(err)
			}
			opts := collector.ExporterOptions{Node: testNode, Attributor: pods{&cycle}, Version: "test"}
			withParts, walked := collector.NewExporter(opts), collector.NewExporter(opts)
			encA := newEncoder(telemetry.NewLabels(telemetry.LabelNode, testNode), 7, unchanged)
			encB := newEncoder(telemetry.NewLabels(telemetry.LabelNode, testNode), 7, unchanged)
			total := 0
			for ; cycle < 400; cycle++ {
				clock = t0.Add(time.Duration(cycle) * time.Second)
				snap := r.Cycle(t.Context(), cycle%int(tc.full/time.Second) == 0)
				if len(snap.Parts) == 0 {
					t.Fatal("the runner published a snapshot without parts")
				}
				bare := *snap
				bare.Parts = nil
				a := decodeAll(t, encA, withParts.Publish(snap))
				b := decodeAll(t, encB, walked.Publish(&bare))
				if !slices.Equal(a, b) {
					t.Fatalf("cycle %d: skipping parts shipped\n%v\nwalking every series shipped\n%v", cycle, a, b)
				}
				if len(encA.last) != len(encB.last) {
					t.Fatalf("cycle %d: the encoders remember %d and %d series", cycle, len(encA.last), len(encB.last))
				}
				total += len(snap.Samples)
			}
			// Most health snapshots carry the full samples unchanged: skipped.
			if encB.walked < uint64(total) || encA.walked > encB.walked*3/4 {
				t.Errorf("walked %d samples skipping parts, %d without, of %d", encA.walked, encB.walked, total)
			}
		})
	}
}

// decodeAll encodes one exposition and returns what it ships, in order.
func decodeAll(t *testing.T, enc *encoder, x *collector.Exposition) []got {
	t.Helper()
	var out []got
	enc.encode(x, func(data []byte, n int) {
		raw, err := snappy.Decode(nil, data)
		if err != nil {
			t.Fatal(err)
		}
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		if len(wr.Timeseries) != n || n > 7 {
			t.Fatalf("record of %d series says %d, batch 7", len(wr.Timeseries), n)
		}
		for _, ts := range wr.Timeseries {
			for _, s := range ts.Samples {
				out = append(out, got{series: seriesString(ts.Labels), ts: s.Timestamp, value: s.Value})
			}
		}
	})
	return out
}
