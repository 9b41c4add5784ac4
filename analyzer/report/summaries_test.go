package report

import (
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// TestSummariesOfTwoSeriesJoinInTimeOrder: one allocation stored under two
// label sets (a pod's account once left out, once written: both count to the
// namespace) has its hourly summaries added in time order across them:
// hours 1 and 3 from one series, hour 2 from the other, each idle all
// along, make one idle run of 3 hours and no gap (out of order, hour 2 would
// be counted as a gap of an hour and the runs would not join).
func TestSummariesOfTwoSeriesJoinInTimeOrder(t *testing.T) {
	start := time.Date(2026, 11, 2, 1, 0, 0, 0, time.UTC) // the end of the first hour
	pt := func(h int, v float64) store.Point {
		return store.Point{T: start.Add(time.Duration(h) * time.Hour), V: v}
	}
	one := telemetry.NewLabels(telemetry.LabelGPUUUID, "GPU-1", telemetry.LabelNamespace, "nlp", telemetry.LabelPod, "p0", LabelResolution, "1h")
	two := telemetry.NewLabels(telemetry.LabelGPUUUID, "GPU-1", telemetry.LabelNamespace, "nlp", telemetry.LabelPod, "p0", telemetry.LabelAccount, "nlp", LabelResolution, "1h")
	ms := make([]store.Matrix, len(summaryFields))
	ms[fieldMeasured] = store.Matrix{{Labels: one, Points: []store.Point{pt(0, 36), pt(2, 36)}}, {Labels: two, Points: []store.Point{pt(1, 36)}}}
	ms[fieldHead] = store.Matrix{{Labels: one, Points: []store.Point{pt(0, 3600), pt(2, 3600)}}, {Labels: two, Points: []store.Point{pt(1, 3600)}}}
	ms[fieldHeadWall] = ms[fieldHead]
	p := &period{allocs: map[string]*alloc{}}
	opts := Options{Step: 10 * time.Second, IdleFor: 2 * time.Hour}
	addSummaries(p, ms, start, time.Hour, 3, opts)
	if len(p.order) != 1 {
		t.Fatalf("%d allocations, want 1", len(p.order))
	}
	a := p.allocs[p.order[0]]
	a.finish(opts.IdleFor)
	if a.allocated != 3*3600 || a.gaps != 0 || a.idle != 3*3600 || a.measured != 108 {
		t.Errorf("allocated %g s, gaps %g s, idle %g s, measured %g s; want 10800, 0, 10800, 108", a.allocated, a.gaps, a.idle, a.measured)
	}
}
