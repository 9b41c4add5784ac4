package embedded_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/storage"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

var base = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func open(t *testing.T, opts embedded.Options) *embedded.Store {
	t.Helper()
	return embeddedtest.Open(t, opts)
}

func TestRoundTrip(t *testing.T) {
	s := open(t, embedded.Options{})
	ctx := context.Background()
	const nodes, steps = 2, 240 // one hour at 15 s
	if err := s.Append(ctx, embeddedtest.GPUUtil(nodes, base, steps, 15*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := s.ActiveSeries(); got != nodes*embeddedtest.GPUsPerNode {
		t.Errorf("ActiveSeries = %d, want %d", got, nodes*embeddedtest.GPUsPerNode)
	}

	// Instant: one series, its name and labels and the time of its value.
	at := base.Add(100*15*time.Second + 5*time.Second)
	v, err := s.Instant(ctx, `DCGM_FI_DEV_GPU_UTIL{Hostname="node-01",gpu="3"}`, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 {
		t.Fatalf("instant: %d samples, want 1: %v", len(v), v)
	}
	want := embeddedtest.GPULabels(1, 3)
	if v[0].Name != telemetry.DCGMGPUUtil || v[0].Value != embeddedtest.Util(1, 3, 100) || !v[0].Time.Equal(at) {
		t.Errorf("instant sample = %+v, want name %s value %v at %s", v[0], telemetry.DCGMGPUUtil, embeddedtest.Util(1, 3, 100), at)
	}
	if v[0].Labels.Get("__name__") != telemetry.DCGMGPUUtil || v[0].Labels.Get("UUID") != want.Get("UUID") || len(v[0].Labels) != len(want)+1 {
		t.Errorf("instant labels = %s, want %s plus __name__", v[0].Labels, want)
	}

	// Range: the dashboard's per-node average, every point recomputed.
	m, err := s.Range(ctx, `avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)`, store.Range{Start: base, End: base.Add(59 * time.Minute), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != nodes {
		t.Fatalf("range: %d series, want %d", len(m), nodes)
	}
	for n, ser := range m {
		if len(ser.Labels) != 1 || ser.Labels.Get("Hostname") != embeddedtest.Hostname(n) {
			t.Errorf("series %d labels %s, want only Hostname=%s", n, ser.Labels, embeddedtest.Hostname(n))
		}
		if len(ser.Points) != 60 {
			t.Fatalf("series %d: %d points, want 60", n, len(ser.Points))
		}
		for k, p := range ser.Points {
			i := k * 4 // a minute is four 15 s steps
			var sum float64
			for g := 0; g < embeddedtest.GPUsPerNode; g++ {
				sum += embeddedtest.Util(n, g, i)
			}
			if want := sum / embeddedtest.GPUsPerNode; p.V != want || !p.T.Equal(base.Add(time.Duration(k)*time.Minute)) {
				t.Fatalf("node %d point %d = %v at %s, want %v at %s", n, k, p.V, p.T, want, base.Add(time.Duration(k)*time.Minute))
			}
		}
	}

	// A scalar answers as one unlabelled sample.
	v, err = s.Instant(ctx, `1+1`, at)
	if err != nil || len(v) != 1 || v[0].Value != 2 || len(v[0].Labels) != 0 {
		t.Errorf("1+1 = %v, %v; want one sample of 2", v, err)
	}
}

func TestQueryErrors(t *testing.T) {
	s := open(t, embedded.Options{})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"parse", func() error { _, err := s.Instant(ctx, `sum(`, base); return err }, `"sum("`},
		{"range vector in instant", func() error { _, err := s.Instant(ctx, `up[5m]`, base); return err }, "range query"},
		{"zero time", func() error { _, err := s.Instant(ctx, `up`, time.Time{}); return err }, "zero"},
		{"zero step", func() error {
			_, err := s.Range(ctx, `up`, store.Range{Start: base, End: base.Add(time.Hour)})
			return err
		}, "step"},
		{"end before start", func() error {
			_, err := s.Range(ctx, `up`, store.Range{Start: base, End: base.Add(-time.Hour), Step: time.Second})
			return err
		}, "before start"},
		{"too many points", func() error {
			_, err := s.Range(ctx, `up`, store.Range{Start: base, End: base.Add(24 * time.Hour), Step: time.Second})
			return err
		}, "points per series"},
	} {
		err := c.run()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// count returns how many samples of DCGM_FI_DEV_GPU_UTIL the store holds.
func count(t *testing.T, s *embedded.Store, at time.Time) float64 {
	t.Helper()
	v, err := s.Instant(context.Background(), `count_over_time(DCGM_FI_DEV_GPU_UTIL[1d])`, at)
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, sm := range v {
		n += sm.Value
	}
	return n
}

func TestAppendAllOrNothing(t *testing.T) {
	s := open(t, embedded.Options{})
	ctx := context.Background()
	good := embeddedtest.GPUUtil(1, base, 4, 15*time.Second)
	if err := s.Append(ctx, good); err != nil {
		t.Fatal(err)
	}
	end := base.Add(time.Hour)
	if n := count(t, s, end); n != float64(len(good)) {
		t.Fatalf("before: %v samples, want %d", n, len(good))
	}
	next := func() []telemetry.Sample { return embeddedtest.GPUUtil(1, base.Add(time.Minute), 4, 15*time.Second) }
	for _, c := range []struct {
		name string
		bad  func(*telemetry.Sample)
		want string
	}{
		{"zero time", func(sm *telemetry.Sample) { sm.Time = time.Time{} }, "Time is zero"},
		{"empty name", func(sm *telemetry.Sample) { sm.Name = "" }, "metric name is empty"},
		{"bad name", func(sm *telemetry.Sample) { sm.Name = "gpu-util" }, `"gpu-util"`},
		{"bad label name", func(sm *telemetry.Sample) {
			sm.Labels = append(telemetry.Labels{{Name: "1bad", Value: "x"}}, sm.Labels...)
		}, `"1bad"`},
		{"reserved label", func(sm *telemetry.Sample) {
			sm.Labels = append(telemetry.Labels{{Name: "__name__", Value: "x"}}, sm.Labels...)
		}, "reserved"},
		{"duplicate label", func(sm *telemetry.Sample) {
			sm.Labels = telemetry.NewLabels("gpu", "1", "gpu", "2")
		}, `"gpu" appears twice`},
		{"invalid utf8", func(sm *telemetry.Sample) { sm.Labels = telemetry.NewLabels("gpu", "\xff") }, "UTF-8"},
		// Found by the TSDB itself, after earlier samples went into the appender:
		// the rollback is what keeps them out.
		{"older than the out-of-order window", func(sm *telemetry.Sample) { sm.Time = base.Add(-3 * time.Hour) }, "too old sample"},
	} {
		batch := next()
		c.bad(&batch[len(batch)-2])
		err := s.Append(ctx, batch)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), "sample 30 of 32") {
			t.Errorf("%s: error %q does not name the sample", c.name, err)
		}
		if n := count(t, s, end); n != float64(len(good)) {
			t.Errorf("%s: store holds %v samples after a refused batch, want the %d from before", c.name, n, len(good))
		}
	}
	if err := s.Append(ctx, next()); err != nil {
		t.Fatalf("a good batch after the refused ones: %v", err)
	}
	if n := count(t, s, end); n != float64(2*len(good)) {
		t.Errorf("after a good batch: %v samples, want %d", n, 2*len(good))
	}
}

func TestAppendCanceled(t *testing.T) {
	s := open(t, embedded.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Append(ctx, embeddedtest.GPUUtil(1, base, 1, time.Second)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	batch := embeddedtest.GPUUtil(2, base, 20, 15*time.Second)
	if err := s.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = embedded.Open(embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := count(t, s, base.Add(time.Hour)); n != float64(len(batch)) {
		t.Errorf("after reopen: %v samples, want %d", n, len(batch))
	}
	if got := s.ActiveSeries(); got != 16 {
		t.Errorf("after reopen: %d active series, want 16", got)
	}
}

func TestOutOfOrderWindow(t *testing.T) {
	s := open(t, embedded.Options{OutOfOrderWindow: time.Hour})
	ctx := context.Background()
	now := base.Add(2 * time.Hour)
	if err := s.Append(ctx, embeddedtest.GPUUtil(1, now, 1, time.Second)); err != nil {
		t.Fatal(err)
	}
	// An agent replays what it buffered during a 40-minute outage, oldest first.
	replay := embeddedtest.GPUUtil(1, now.Add(-40*time.Minute), 160, 15*time.Second)
	if err := s.Append(ctx, replay); err != nil {
		t.Fatalf("replay inside the window: %v", err)
	}
	if n := count(t, s, now); n != float64(len(replay)+8) {
		t.Errorf("after replay: %v samples, want %d", n, len(replay)+8)
	}
	v, err := s.Instant(ctx, `DCGM_FI_DEV_GPU_UTIL{gpu="2"}`, now.Add(-30*time.Minute))
	if err != nil || len(v) != 1 || v[0].Value != embeddedtest.Util(0, 2, 40) {
		t.Errorf("replayed value = %v, %v; want %v", v, err, embeddedtest.Util(0, 2, 40))
	}
	err = s.Append(ctx, embeddedtest.GPUUtil(1, now.Add(-90*time.Minute), 1, time.Second))
	if !errors.Is(err, storage.ErrTooOldSample) && !errors.Is(err, storage.ErrOutOfBounds) {
		t.Errorf("sample 90 min behind with a 1 h window: err = %v, want too old / out of bounds", err)
	}
}

func TestRetention(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(embedded.Options{Dir: dir, Retention: 6 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Options().Retention; got != 6*time.Hour {
		t.Errorf("Retention = %s, want 6h", got)
	}
	// One series over 24 hours, a sample a minute; the head compacts it into 2-hour
	// blocks and retention drops the blocks wholly older than 6 hours.
	var batch []telemetry.Sample
	for i := 0; i < 24*60; i++ {
		batch = append(batch, telemetry.Sample{Name: "gpuwatch_test", Labels: telemetry.NewLabels("node", "a"), Value: float64(i), Time: base.Add(time.Duration(i) * time.Minute)})
	}
	if err := s.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	end := base.Add(24 * time.Hour)
	m, err := s.Range(context.Background(), `gpuwatch_test`, store.Range{Start: base, End: end, Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 {
		t.Fatalf("%d series, want 1", len(m))
	}
	first := m[0].Points[0].T
	if age := end.Sub(first); age > 9*time.Hour || age < 6*time.Hour {
		t.Errorf("oldest point kept is %s old (at %s), want between 6 h (retention) and 9 h (retention plus a block and the head)", age, first)
	}
	if last := m[0].Points[len(m[0].Points)-1]; last.V != 24*60-1 {
		t.Errorf("newest point = %v, want %v", last.V, 24*60-1)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := embedded.Open(embedded.Options{}); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Errorf("empty Dir: err = %v", err)
	}
	if _, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Retention: -time.Hour}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative retention: err = %v", err)
	}
	// A second store on the same directory is refused by the TSDB's lock file.
	dir := t.TempDir()
	s, err := embedded.Open(embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := embedded.Open(embedded.Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("second open of %s: err = %v, want a lock error naming the directory", dir, err)
	}
}

func TestNaNAndInfRoundTrip(t *testing.T) {
	s := open(t, embedded.Options{})
	ctx := context.Background()
	batch := []telemetry.Sample{
		{Name: "gpuwatch_x", Labels: telemetry.NewLabels("k", "nan"), Value: math.NaN(), Time: base},
		{Name: "gpuwatch_x", Labels: telemetry.NewLabels("k", "inf"), Value: math.Inf(1), Time: base},
		{Name: "gpuwatch_x", Labels: telemetry.NewLabels("k", "empty", "drop", ""), Value: 1, Time: base},
	}
	if err := s.Append(ctx, batch); err != nil {
		t.Fatal(err)
	}
	v, err := s.Instant(ctx, `gpuwatch_x`, base)
	if err != nil || len(v) != 3 {
		t.Fatalf("got %v, %v", v, err)
	}
	for _, sm := range v {
		switch sm.Labels.Get("k") {
		case "nan":
			if !math.IsNaN(sm.Value) {
				t.Errorf("nan series = %v", sm.Value)
			}
		case "inf":
			if !math.IsInf(sm.Value, 1) {
				t.Errorf("inf series = %v", sm.Value)
			}
		case "empty":
			if len(sm.Labels) != 2 {
				t.Errorf("empty-valued label kept: %s", sm.Labels)
			}
		}
	}
}
