package jobstats

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers/stragglerstest"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// TestJobStragglers: job stats name a job's stragglers over its span, with
// analyzer/stragglers' simulated jobs (stragglerstest.Fleet, ten minutes):
//
//   - train-a, 8 GPUs on node-1, GPU 3 thermally throttled (SM clock and
//     power 30 % down): one straggler, GPU 3, on sm_clock and power with
//     hw_thermal_slowdown, in the verdict by its worse signal;
//   - train-b, 16 GPUs on node-2 and node-3, node-3 power capped (power 30 %,
//     clock 15 % down): node-3's 8 GPUs, said once in the verdict;
//   - ml/healthy, 8 GPUs differing by per-GPU offsets up to ±4 % and ±8 %
//     noise: none, and no straggler in the verdict (the control: a lower gap
//     and margin do name one of its GPUs, in analyzer/stragglers' tests);
//   - solo, 1 GPU: never compared.
func TestJobStragglers(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := time.Now().Add(-11 * time.Minute).Truncate(stragglerstest.Every)
	samples := stragglerstest.Fleet(t0)
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	if err := st.Append(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	compute := func(job string) *Result {
		t.Helper()
		r, err := Compute(context.Background(), st, Options{Job: job, From: t0.Add(-time.Hour), To: t0.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	a := compute("train-a")
	if len(a.GPUs) != 8 || len(a.Stragglers) != 1 {
		t.Fatalf("train-a: %d GPUs, stragglers %s; want 8 and GPU-a3", len(a.GPUs), js(a.Stragglers))
	}
	s := a.Stragglers[0]
	var sig []string
	for _, e := range s.Evidence {
		sig = append(sig, e.Signal)
		if e.Lag < 0.27 || e.Lag > 0.33 || e.BehindSeconds < 120 {
			t.Errorf("GPU-a3 %s lag %.3f behind %gs, want about 0.30 for 2 minutes or more", e.Signal, e.Lag, e.BehindSeconds)
		}
	}
	if s.UUID != "GPU-a3" || s.Node != "node-1" || s.Index != "3" || strings.Join(sig, ",") != "sm_clock,power" ||
		strings.Join(s.ThrottleReasons, ",") != "hw_thermal_slowdown" {
		t.Errorf("train-a straggler %s, want GPU-a3 (node-1 GPU 3) on sm_clock,power with hw_thermal_slowdown", js(s))
	}
	w := s.Worst()
	want := fmt.Sprintf("8 GPUs allocated; mean activity 90%%; 1 straggler (GPU 3: %s %.0f%% behind, hw_thermal_slowdown)", signalNames[w.Signal], 100*w.Lag)
	if a.Verdict != want || (w.Signal != stragglers.SignalSMClock && w.Signal != stragglers.SignalPower) {
		t.Errorf("train-a verdict %q, want %q", a.Verdict, want)
	}

	b := compute("train-b")
	var named []string
	for _, s := range b.Stragglers {
		if s.Node != "node-3" {
			t.Errorf("train-b straggler on %s: %s", s.Node, js(s))
		}
		named = append(named, s.Index)
	}
	if strings.Join(named, ",") != "0,1,2,3,4,5,6,7" || !strings.Contains(b.Verdict, "; 8 stragglers (node-3, 8 GPUs: power 3") ||
		!strings.HasSuffix(b.Verdict, "% behind, sw_power_cap)") {
		t.Errorf("train-b: stragglers at node-3 GPUs %v, verdict %q; want node-3's 8 GPUs, power ~30%% behind, sw_power_cap", named, b.Verdict)
	}

	h := compute("ml/healthy")
	if len(h.GPUs) != 8 || len(h.Stragglers) != 0 || strings.Contains(h.Verdict, "straggler") {
		t.Errorf("ml/healthy: %d GPUs, stragglers %s, verdict %q; want none", len(h.GPUs), js(h.Stragglers), h.Verdict)
	}
	if solo := compute("solo"); len(solo.Stragglers) != 0 || solo.Stragglers == nil {
		t.Errorf("solo: stragglers %v, want an empty list", solo.Stragglers)
	}

	// Table and JSON carry them.
	var buf bytes.Buffer
	if err := Render(&buf, a, report.FormatTable); err != nil {
		t.Fatal(err)
	}
	t.Logf("train-a:\n%s", buf.String())
	for _, want := range []string{"Stragglers (behind the job's other GPUs):", "node-1/3  GPU-a3  sm_clock", "hw_thermal_slowdown", a.Verdict} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := Render(&buf, h, report.FormatTable); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Stragglers") {
		t.Errorf("a healthy job's table has a stragglers section:\n%s", buf.String())
	}
	buf.Reset()
	if err := Render(&buf, a, report.FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Stragglers) != 1 || back.Stragglers[0].Index != "3" ||
		!strings.Contains(buf.String(), `"stragglers": [`) || !strings.Contains(buf.String(), `"signal": "sm_clock"`) {
		t.Errorf("json: %v\n%s", err, buf.String())
	}
}
