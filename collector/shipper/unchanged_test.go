package shipper

import (
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestUnchangedValuesShipOncePerInterval: read every second, a steady counter is
// shipped once per unchanged interval, and a change ships at the second it
// happened (and restarts the interval).
func TestUnchangedValuesShipOncePerInterval(t *testing.T) {
	enc := newEncoder(nil, DefaultBatchSamples, 10*time.Second)
	exp := collector.NewExporter(collector.ExporterOptions{})
	start := time.Unix(1_700_000_000, 0)
	value := func(sec int) float64 {
		if sec >= 13 {
			return 2 // an Xid counter that moved at t=13 s
		}
		return 1
	}
	var shipped []int64
	for sec := 0; sec < 30; sec++ {
		now := start.Add(time.Duration(sec) * time.Second)
		x := exp.Publish(&collector.Snapshot{Time: now, Samples: []telemetry.Sample{
			{Name: telemetry.DCGMXidErrors, Value: value(sec), Time: now}}})
		enc.encode(x, func(data []byte, _ int) {
			raw, err := snappy.Decode(nil, data)
			if err != nil {
				t.Fatal(err)
			}
			var wr prompb.WriteRequest
			if err := wr.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
			for _, ts := range wr.Timeseries {
				if ts.Labels[0].Value != telemetry.DCGMXidErrors { // __name__; the build info ships too
					continue
				}
				for _, s := range ts.Samples {
					if s.Value != value(int((s.Timestamp-start.UnixMilli())/1000)) {
						t.Errorf("sample at %d ms has value %g", s.Timestamp, s.Value)
					}
					shipped = append(shipped, (s.Timestamp-start.UnixMilli())/1000)
				}
			}
		})
	}
	want := []int64{0, 10, 13, 23}
	if len(shipped) != len(want) {
		t.Fatalf("shipped at seconds %v, want %v", shipped, want)
	}
	for i := range want {
		if shipped[i] != want[i] {
			t.Fatalf("shipped at seconds %v, want %v", shipped, want)
		}
	}
}

// TestClockStepBackShipsAtOnce: the agent's clock steps back five minutes at
// second 20. The series read after the step are shipped at once, changed or
// not, each again once per interval: not held back until the clock has caught
// up with the last time shipped, five minutes in which the store would have
// had nothing (and lost the series from its five-minute lookback).
func TestClockStepBackShipsAtOnce(t *testing.T) {
	enc := newEncoder(nil, DefaultBatchSamples, 10*time.Second)
	exp := collector.NewExporter(collector.ExporterOptions{})
	start := time.Unix(1_700_000_000, 0)
	var shipped []int64 // seconds since start, on the stepped clock
	for sec := 0; sec < 45; sec++ {
		now := start.Add(time.Duration(sec) * time.Second)
		if sec >= 20 {
			now = now.Add(-5 * time.Minute)
		}
		x := exp.Publish(&collector.Snapshot{Time: now, Samples: []telemetry.Sample{
			{Name: telemetry.DCGMXidErrors, Value: 700, Time: now}}})
		enc.encode(x, func(data []byte, _ int) {
			raw, _ := snappy.Decode(nil, data)
			var wr prompb.WriteRequest
			if err := wr.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
			for _, ts := range wr.Timeseries {
				if ts.Labels[0].Value != telemetry.DCGMXidErrors { // __name__; the build info ships too
					continue
				}
				shipped = append(shipped, (ts.Samples[0].Timestamp-start.UnixMilli())/1000)
			}
		})
	}
	want := []int64{0, 10, -280, -270, -260}
	if len(shipped) != len(want) {
		t.Fatalf("shipped at seconds %v, want %v", shipped, want)
	}
	for i := range want {
		if shipped[i] != want[i] {
			t.Fatalf("shipped at seconds %v, want %v", shipped, want)
		}
	}
}
