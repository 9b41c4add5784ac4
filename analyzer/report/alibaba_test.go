package report_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

const (
	alibabaDir      = "testdata/alibaba-genai"
	alibabaShared   = "../../../shared/data/alibaba-genai-v2026"
	alibabaInterval = 57 * time.Second
	alibabaT0       = 1662858720 // the trace's first (anonymized) timestamp
)

// fbTotal is the GPUs' framebuffer in MiB (an 80 GB part).
const fbTotal = 81559

var alibabaTeams = []string{"search", "recommend", "llm", "vision"}

// traceRow is one sample of one container.
type traceRow struct {
	t         int64 // anonymized seconds
	v         float64
	container string
}

func readGz(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(alibabaDir, name+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readTrace reads a vendored file; valueCol and timeCol name its columns.
func readTrace(t *testing.T, name string) []traceRow {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(readGz(t, name))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	var out []traceRow
	for _, r := range recs[1:] {
		ts, err1 := strconv.ParseFloat(r[col["timestamp_anon"]], 64)
		v, err2 := strconv.ParseFloat(r[col["value"]], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad row %q", name, r)
		}
		out = append(out, traceRow{t: int64(ts), v: v, container: r[col["container_ip"]]})
	}
	return out
}

// TestAlibabaVendoredCopy: the vendored subset is what README.md says, taken
// from ../shared/ where that exists.
func TestAlibabaVendoredCopy(t *testing.T) {
	if _, err := os.Stat(alibabaShared); err != nil {
		t.Skip("../shared/data/alibaba-genai-v2026 is not here (a clean checkout)")
	}
	all, err := os.ReadFile(filepath.Join(alibabaShared, "pod_gpu_duty_cycle_anon.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(all)), "\n")[1:] {
		ids[l[strings.LastIndexByte(l, ',')+1:]] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	keep := map[string]bool{}
	for i := 0; i < len(sorted); i += 9 {
		keep[sorted[i]] = true
	}
	for _, name := range []string{"pod_gpu_duty_cycle_anon.csv", "pod_gpu_memory_used_bytes_anon.csv"} {
		src, err := os.ReadFile(filepath.Join(alibabaShared, name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(src)), "\n")
		want := []string{lines[0]}
		for _, l := range lines[1:] {
			if keep[l[strings.LastIndexByte(l, ',')+1:]] {
				want = append(want, l)
			}
		}
		if got := string(readGz(t, name)); got != strings.Join(want, "\n")+"\n" {
			t.Errorf("%s: the vendored copy differs from ../shared/ filtered as README.md says", name)
		}
	}
}

// alibabaFleet turns the trace into what agents would ship: each container
// a pod on its own GPU, in its team's namespace, from base on.
func alibabaFleet(duty, mem []traceRow, base time.Time) (samples []telemetry.Sample, team map[string]string) {
	var ids []string
	seen := map[string]bool{}
	for _, r := range duty {
		if !seen[r.container] {
			seen[r.container] = true
			ids = append(ids, r.container)
		}
	}
	sort.Strings(ids)
	team = map[string]string{}
	index := map[string]int{}
	for i, id := range ids {
		team[id], index[id] = alibabaTeams[i%len(alibabaTeams)], i
	}
	at := func(ts int64) time.Time { return base.Add(time.Duration(ts-alibabaT0) * time.Second) }
	gpu := func(id string) telemetry.Labels {
		return telemetry.NewLabels(telemetry.DCGMLabelUUID, "GPU-"+id, telemetry.DCGMLabelGPU, "0",
			telemetry.DCGMLabelHostname, fmt.Sprintf("genai-%02d", index[id]), telemetry.DCGMLabelModelName, "NVIDIA H800")
	}
	for _, r := range duty {
		ts := at(r.t)
		samples = append(samples,
			telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Time: ts, Value: 1, Labels: telemetry.NewLabels(
				telemetry.LabelNode, fmt.Sprintf("genai-%02d", index[r.container]), telemetry.LabelGPUUUID, "GPU-"+r.container,
				telemetry.LabelGPUIndex, "0", telemetry.LabelNamespace, team[r.container], telemetry.LabelPod, r.container[:12])},
			telemetry.Sample{Name: telemetry.DCGMGPUUtil, Time: ts, Value: r.v, Labels: gpu(r.container)},
			telemetry.Sample{Name: telemetry.DCGMFBTotal, Time: ts, Value: fbTotal, Labels: gpu(r.container)})
	}
	for _, r := range mem {
		if _, ok := team[r.container]; ok {
			samples = append(samples, telemetry.Sample{Name: telemetry.DCGMFBUsed, Time: at(r.t), Value: r.v / (1 << 20), Labels: gpu(r.container)})
		}
	}
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	return samples, team
}

// expected computes the report's numbers per team straight from the trace,
// without the store or PromQL: each sample is 57 s held; measured is the
// duty cycle ÷ 100 of it; a missing sample between two of a container's is a
// gap; idle is a run of consecutive samples (57 s apart) under 5 % lasting
// at least 30 minutes; the memory peak is the highest memory sample taken at
// one of the container's duty-cycle times.
func expected(duty, mem []traceRow, team map[string]string) map[string]*report.Group {
	const h = 3600.0
	iv := alibabaInterval.Seconds()
	byC := map[string][]traceRow{}
	for _, r := range duty {
		byC[r.container] = append(byC[r.container], r)
	}
	memAt := map[string]map[int64]float64{}
	for _, r := range mem {
		if memAt[r.container] == nil {
			memAt[r.container] = map[int64]float64{}
		}
		memAt[r.container][r.t] = r.v / (1 << 20)
	}
	out := map[string]*report.Group{}
	peak := map[string]float64{}
	for c, rows := range byC {
		sort.Slice(rows, func(i, j int) bool { return rows[i].t < rows[j].t })
		g := out[team[c]]
		if g == nil {
			g = &report.Group{Key: team[c]}
			out[team[c]] = g
		}
		g.GPUs++
		g.Jobs++
		run := 0
		closeRun := func() {
			if float64(run)*iv >= 30*60 {
				g.Idle += float64(run) * iv / h
			}
			run = 0
		}
		for i, r := range rows {
			if i > 0 {
				if missing := (r.t-rows[i-1].t)/57 - 1; missing > 0 {
					g.Gaps += float64(missing) * iv / h
					closeRun()
				}
			}
			g.Allocated += iv / h
			g.Measured += math.Min(100, math.Max(0, r.v)) / 100 * iv / h
			if r.v/100 < 0.05 {
				run++
			} else {
				closeRun()
			}
			if m, ok := memAt[c][r.t]; ok && m > peak[team[c]] {
				peak[team[c]] = m
			}
		}
		closeRun()
	}
	for k, g := range out {
		g.MemPeakMiB = peak[k]
		if g.MemPeakMiB > 0 {
			hr := 1 - g.MemPeakMiB/fbTotal
			g.MemHeadroom = &hr
		}
		e := g.Measured / g.Allocated
		g.Efficiency = &e
	}
	return out
}

// TestAlibabaGolden writes the Alibaba GenAI trace into a gpuwatch server's
// embedded store through remote write, and checks the report by team
// against expected, computed from the CSV alone.
func TestAlibabaGolden(t *testing.T) {
	duty := readTrace(t, "pod_gpu_duty_cycle_anon.csv")
	mem := readTrace(t, "pod_gpu_memory_used_bytes_anon.csv")
	// The trace's 22.8 hours end at least an hour ago; every sample sits in
	// the middle of its 57-second step (steps are whole multiples of 57 s of
	// Unix time).
	base := time.Now().Add(-25 * time.Hour).Truncate(alibabaInterval).Add(28 * time.Second)
	samples, team := alibabaFleet(duty, mem, base)

	srv, err := server.New(server.Options{DataDir: t.TempDir(), OutOfOrderWindow: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	realstore.RemoteWrite(t, ts.URL, samples, time.Hour) // an hour per request, as an agent's queue replays

	from := base.Add(-28 * time.Second)
	r, err := report.Compute(context.Background(), srv.Querier(), report.Options{From: from, To: from.Add(1441 * alibabaInterval),
		By: report.ByNamespace, Step: alibabaInterval, SampleInterval: alibabaInterval, NoPrevious: true})
	if err != nil {
		t.Fatal(err)
	}
	want := expected(duty, mem, team)
	if len(r.Groups) != len(want) {
		t.Fatalf("%d teams, want %d", len(r.Groups), len(want))
	}
	for _, g := range r.Groups {
		w := want[g.Key]
		if w == nil {
			t.Errorf("unexpected team %q", g.Key)
			continue
		}
		t.Logf("%-9s %2d GPUs  allocated %6.2f  measured %6.2f  efficiency %5.1f%%  idle %6.2f  gaps %5.2f GPU-h  peak %5.0f MiB",
			g.Key, g.GPUs, g.Allocated, g.Measured, deref(g.Efficiency)*100, g.Idle, g.Gaps, g.MemPeakMiB)
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"allocated", g.Allocated, w.Allocated}, {"measured", g.Measured, w.Measured}, {"efficiency", deref(g.Efficiency), deref(w.Efficiency)},
			{"idle", g.Idle, w.Idle}, {"gaps", g.Gaps, w.Gaps}, {"memory peak", g.MemPeakMiB, w.MemPeakMiB}, {"headroom", deref(g.MemHeadroom), deref(w.MemHeadroom)},
			{"GPUs", float64(g.GPUs), float64(w.GPUs)}, {"pods", float64(g.Jobs), float64(w.Jobs)},
		} {
			if math.Abs(c.got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
				t.Errorf("%s: %s %.9f, from the CSV %.9f", g.Key, c.what, c.got, c.want)
			}
		}
		if g.MeasuredBy != report.SourceGPUUtil || g.Unmeasured != 0 {
			t.Errorf("%s: measured by %s, %.3f unmeasured", g.Key, g.MeasuredBy, g.Unmeasured)
		}
	}
	// With --idle-for one step, every sample under 5 % is idle: the trace's
	// well-known idleness (two thirds zeros over all 143 containers).
	r1, err := report.Compute(context.Background(), srv.Querier(), report.Options{From: from, To: from.Add(1441 * alibabaInterval),
		By: report.ByNamespace, Step: alibabaInterval, SampleInterval: alibabaInterval, IdleFor: alibabaInterval, NoPrevious: true})
	if err != nil {
		t.Fatal(err)
	}
	under := 0
	for _, row := range duty {
		if row.v < 5 {
			under++
		}
	}
	if want := float64(under) * alibabaInterval.Hours(); math.Abs(r1.Total.Idle-want) > 1e-9*want {
		t.Errorf("idle for one step: %.6f GPU-hours, the CSV has %d samples under 5%% = %.6f", r1.Total.Idle, under, want)
	}
	t.Logf("samples under 5%%: %.0f%% of the allocated time", 100*r1.Total.Idle/r1.Total.Allocated)
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
