package fairshare

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// On one GPU shared by several consumers (MIG slices, time-slices, milli
// shares) with fractions summing to at most 1, whatever their activity, source,
// the idle floor and the policy: the charges never exceed the GPU-seconds of
// the span, measured never exceeds allocated, and replaying every batch
// charges nothing more.
func TestPropSharedGPUNeverDoubleCounted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		floor := rapid.Float64Range(0, 1).Draw(t, "idle_floor")
		l, err := NewLedger(LedgerOptions{Policy: Policy{Charge: ChargeMeasured, IdleFloor: floor}, HalfLife: 2e6 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		consumers := rapid.IntRange(1, 6).Draw(t, "consumers")
		weights := make([]float64, consumers)
		var sum float64
		for i := range weights {
			weights[i] = rapid.Float64Range(0.01, 1).Draw(t, "weight")
			sum += weights[i]
		}
		scale := 1.0
		if sum > 1 || rapid.Bool().Draw(t, "fill") {
			scale = 1 / sum
		}
		const span = 600 // seconds
		var batches [][]Sample
		for range rapid.IntRange(1, 4).Draw(t, "batches") {
			var batch []Sample
			for c := range consumers {
				start := rapid.IntRange(0, span-1).Draw(t, "start")
				d := rapid.IntRange(1, span-start).Draw(t, "duration")
				src := rapid.SampledFrom([]ActivitySource{SourceNone, SourceDCGMSMActive, SourceNVMLGPUUtil}).Draw(t, "source")
				act := 0.0
				switch src {
				case SourceDCGMSMActive:
					act = rapid.Float64Range(0, 1).Draw(t, "sm_active")
				case SourceNVMLGPUUtil:
					act = rapid.Float64Range(0, 100).Draw(t, "gpu_util")
				}
				batch = append(batch, Sample{
					Time: t0.Add(time.Duration(start) * time.Second), Duration: time.Duration(d) * time.Second,
					Job: fmt.Sprintf("job%d", c), Account: "acct", User: fmt.Sprintf("user%d", c%3),
					GPU: "GPU-0", Slice: fmt.Sprintf("slice%d", c), Fraction: weights[c] * scale,
					Activity: act, ActivitySource: src,
				})
			}
			batches = append(batches, batch)
		}
		through := t0.Add(span * time.Second)
		for _, batch := range batches {
			if _, err := l.Record(through, batch); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := l.Usage(through)
		var measured, allocated float64
		for a, e := range before.Entries {
			if e.Measured > e.Allocated*(1+1e-12) {
				t.Fatalf("%v: measured %v > allocated %v", a, e.Measured, e.Allocated)
			}
			measured += e.Measured
			allocated += e.Allocated
		}
		if allocated > span*(1+1e-9) || measured > span*(1+1e-9) {
			t.Fatalf("charges on one GPU over %d s: allocated %v, measured %v exceed its GPU-seconds", span, allocated, measured)
		}
		for _, batch := range batches {
			if _, err := l.Record(through, batch); err != nil {
				t.Fatal(err)
			}
		}
		after, _ := l.Usage(through)
		for a, e := range after.Entries {
			if e != before.Entries[a] {
				t.Fatalf("%v: replay changed usage from %+v to %+v", a, before.Entries[a], e)
			}
		}
	})
}
