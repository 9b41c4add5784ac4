package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
)

// benchEnv reads a positive integer from the environment (def without it).
func benchEnv(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// benchFleet is a simulated fleet of HGX H100 nodes (8 GPUs each) and its
// jobs over time, in five-minute units: every node runs one job after
// another on all 8 GPUs, each of one of 300 accounts and 1,000 users, lasting
// 1 to 24 hours, with up to 30 minutes free between them; one job in ten
// does nothing (1 % SM activity) all along, one in five idles its first 45
// minutes, the rest are busy at 20–95 %, varying every five minutes.
type benchFleet struct {
	nodes int
	start time.Time // the first unit's start
	jobs  [][]benchJob
}

type benchJob struct {
	id, account, user string
	from, to          int // units [from, to)
	profile           int // 0 busy, 1 idle throughout, 2 idle first 45 minutes
}

const unit = 5 * time.Minute

func newBenchFleet(nodes int, start time.Time, units int) *benchFleet {
	f := &benchFleet{nodes: nodes, start: start, jobs: make([][]benchJob, nodes)}
	id := 100000
	for n := range nodes {
		h := uint64(n)*0x9e3779b97f4a7c15 + 1
		next := func(m int) int {
			h ^= h << 13
			h ^= h >> 7
			h ^= h << 17
			return int(h % uint64(m))
		}
		u := -next(288) // the first job started before the week
		for u < units {
			u += next(7) // free between jobs: 0 to 30 minutes
			d := 12 + next(277)
			prof := 0
			switch r := next(10); {
			case r == 0:
				prof = 1
			case r <= 2:
				prof = 2
			}
			id++
			acct := next(300)
			f.jobs[n] = append(f.jobs[n], benchJob{id: strconv.Itoa(id), account: fmt.Sprintf("acct-%03d", acct),
				user: fmt.Sprintf("user-%04d", (acct*7+next(40))%1000), from: u, to: u + d, profile: prof})
			u += d
		}
	}
	return f
}

// job is node n's job in unit u, or nil.
func (f *benchFleet) job(n, u int) *benchJob {
	for i := range f.jobs[n] {
		if j := &f.jobs[n][i]; j.from <= u && u < j.to {
			return j
		}
	}
	return nil
}

// activity is GPU g of node n's SM activity in unit u under job j.
func (f *benchFleet) activity(n, g, u int, j *benchJob) float64 {
	switch {
	case j.profile == 1, j.profile == 2 && u-j.from < 9:
		return 0.01
	}
	x := uint64(n*8+g)*2654435761 + uint64(u)*40503
	return 0.2 + 0.75*float64(x%1000)/1000
}

func (f *benchFleet) uuid(n, g int) string { return fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", n, g) }
func (f *benchFleet) node(n int) string    { return fmt.Sprintf("node-%04d", n) }

func (f *benchFleet) allocLabels(n, g int, j *benchJob) telemetry.Labels {
	return telemetry.NewLabels(telemetry.LabelNode, f.node(n), telemetry.LabelGPUUUID, f.uuid(n, g), telemetry.LabelGPUIndex, strconv.Itoa(g),
		telemetry.LabelJobID, j.id, telemetry.LabelAccount, j.account, telemetry.LabelUser, j.user)
}

// unitSummary is the Summary of unit u of GPU g on node n, held by j all
// along, as the server's Downsampler computes it from the agents' samples.
func (f *benchFleet) unitSummary(n, g, u int, j *benchJob) report.Summary {
	end := f.start.Add(time.Duration(u+1) * unit)
	act := f.activity(n, g, u, j)
	s := report.Summary{First: end.Add(10*time.Second - unit), Last: end, Allocated: 300, Measured: 300 * act, SMActive: 300,
		FBPeakMiB: 20000 + 50000*act, FBTotalMiB: 81559}
	if act < 0.05 {
		s.Head = report.IdleRun{Held: 300, Wall: unit}
		s.Tail, s.Unbroken = s.Head, true
	}
	return s
}

// summaries appends the summaries of resolution res ending at end (a unit
// boundary) for every GPU, and the interval's marker; it returns the
// allocated seconds in them.
func (f *benchFleet) summaries(dst []telemetry.Sample, res time.Duration, end time.Time) ([]telemetry.Sample, float64) {
	last := int(end.Sub(f.start)/unit) - 1
	first := last - int(res/unit) + 1
	var allocs []report.AllocSummary
	for n := range f.nodes {
		for g := range 8 {
			var cur *benchJob
			var sum report.Summary
			flush := func() {
				if cur != nil {
					allocs = append(allocs, report.AllocSummary{Labels: report.SummaryLabels(f.allocLabels(n, g, cur), res),
						Node: f.node(n), Model: "NVIDIA H100 80GB HBM3", Summary: sum})
				}
				cur, sum = nil, report.Summary{}
			}
			for u := first; u <= last; u++ {
				j := f.job(n, u)
				if j != cur {
					flush()
				}
				if j == nil {
					continue
				}
				cur = j
				sum.Add(f.unitSummary(n, g, u, j), 10*time.Second, 30*time.Minute)
			}
			flush()
		}
	}
	allocated := 0.0
	for _, a := range allocs {
		allocated += a.Allocated
	}
	dst = report.AppendSummaries(dst, allocs, res, 10*time.Second, end)
	return append(dst, report.SummariesMarker(res, 10*time.Second, 0.05, 30*time.Minute, end, len(allocs))), allocated
}

// raw appends what the agents ship for steps (from, to] (10 s steps): per
// GPU the allocation, SM activity, utilization, framebuffer used and total;
// it returns the allocated seconds in them.
func (f *benchFleet) raw(dst []telemetry.Sample, from, to time.Time) ([]telemetry.Sample, float64) {
	allocated := 0.0
	for t := from; t.Before(to); t = t.Add(10 * time.Second) {
		at := t.Add(3 * time.Second)
		u := int(t.Sub(f.start) / unit)
		for n := range f.nodes {
			j := f.job(n, u)
			if j == nil {
				continue
			}
			for g := range 8 {
				act := f.activity(n, g, u, j)
				dcgm := telemetry.NewLabels(telemetry.DCGMLabelUUID, f.uuid(n, g), telemetry.DCGMLabelGPU, strconv.Itoa(g),
					telemetry.DCGMLabelHostname, f.node(n), telemetry.DCGMLabelModelName, "NVIDIA H100 80GB HBM3")
				dst = append(dst,
					telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Labels: f.allocLabels(n, g, j), Value: 1, Time: at},
					telemetry.Sample{Name: telemetry.DCGMProfSMActive, Labels: dcgm, Value: act, Time: at},
					telemetry.Sample{Name: telemetry.DCGMGPUUtil, Labels: dcgm, Value: 100, Time: at},
					telemetry.Sample{Name: telemetry.DCGMFBUsed, Labels: dcgm, Value: 20000 + 50000*act, Time: at},
					telemetry.Sample{Name: telemetry.DCGMFBTotal, Labels: dcgm, Value: 81559, Time: at})
				allocated += 10
			}
		}
	}
	return dst, allocated
}

// BenchmarkReportWeek is issue 16's speed goal: `report --by account --last
// 7d` through the server's API over GPUWATCH_REPORT_BENCH_NODES simulated HGX
// H100 nodes (default 16; `make bench` runs 1,000) and GPUWATCH_REPORT_BENCH_DAYS
// days (default 7), the store holding what a server that ran the Downsampler
// all along holds for the window and the previous period before it (which the
// report reads too): hourly summaries for the whole hours, five-minute
// summaries for the hour around the window's start and for the last two (the
// last hour not yet added up), and the agents' raw samples for the five
// minutes around the window's start and the last nine (the newest five
// minutes not summarized yet). Everything goes in through remote write, in
// time order (give or take the five minutes around the window's start), as
// agents and the Downsampler would write it. After the
// timed reports it also times the Downsampler's two evaluations at this
// fleet size: five minutes from the raw samples, and the last hour from its
// five-minute summaries.
func BenchmarkReportWeek(b *testing.B) {
	nodes := benchEnv(b, "GPUWATCH_REPORT_BENCH_NODES", 16)
	days := benchEnv(b, "GPUWATCH_REPORT_BENCH_DAYS", 7)
	base := time.Now().Truncate(unit)
	now := base.Add(4 * time.Minute)
	window := time.Duration(days) * 24 * time.Hour
	from := now.Add(-window)
	s, err := New(Options{DataDir: b.TempDir(), Clock: func() time.Time { return now }, SelfInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	f := newBenchFleet(nodes, from.Add(-window).Truncate(time.Hour).Add(-time.Hour), int(2*window/unit)+48)
	lastSum := base.Add(-unit)              // summaries end here; raw samples after
	lastHour := lastSum.Truncate(time.Hour) // its hour is in five-minute summaries
	firstFive := from.Truncate(unit).Add(unit)
	firstHour := from.Truncate(time.Hour).Add(time.Hour)
	if lastHour.Sub(firstHour) < 2*time.Hour {
		b.Fatal("GPUWATCH_REPORT_BENCH_DAYS: the window is too short")
	}

	t0, cpu0 := time.Now(), cpuTime()
	var written, requests int
	var want float64 // allocated seconds in the window
	var batch []telemetry.Sample
	send := func() {
		for len(batch) > 0 {
			n := min(len(batch), 50_000) // well under the ingest's limits (100,000 series, 32 MiB decoded)
			body, err := remote.EncodeWriteRequest(batch[:n])
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, ts.URL+remote.WritePath, bytes.NewReader(body))
			req.Header.Set("Content-Encoding", "snappy")
			req.Header.Set("Content-Type", "application/x-protobuf")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				b.Fatalf("remote write: HTTP %d: %s", resp.StatusCode, msg)
			}
			written += n
			requests++
			batch = batch[n:]
		}
		batch = batch[:0]
	}
	// In time order: the previous period from its start, the hour around
	// the window's start in five-minute summaries and the raw samples of its
	// partial five minutes, whole hours, the last hour and the partial one in
	// five-minute summaries, the newest minutes raw. want counts what lies in
	// the window.
	var a float64
	inWindow := func(intervalStart time.Time) bool { return !intervalStart.Before(from) }
	pf := from.Add(-window)
	batch, _ = f.raw(batch, pf, pf.Truncate(unit).Add(unit))
	send()
	for end := pf.Truncate(unit).Add(2 * unit); !end.After(pf.Truncate(time.Hour).Add(time.Hour)); end = end.Add(unit) {
		batch, _ = f.summaries(batch, unit, end)
	}
	send()
	for end := pf.Truncate(time.Hour).Add(2 * time.Hour); !end.After(firstHour.Add(-time.Hour)); end = end.Add(time.Hour) {
		batch, _ = f.summaries(batch, time.Hour, end)
		send()
	}
	for end := firstHour.Add(unit - time.Hour); !end.After(firstHour); end = end.Add(unit) {
		batch, a = f.summaries(batch, unit, end)
		if inWindow(end.Add(-unit)) {
			want += a
		}
		if end.Equal(firstFive) {
			var before []telemetry.Sample
			before, _ = f.raw(nil, firstFive.Add(-unit), from)
			batch = append(batch, before...)
			batch, a = f.raw(batch, from, firstFive)
			want += a
		}
	}
	send()
	for end := firstHour.Add(time.Hour); !end.After(lastHour.Add(-time.Hour)); end = end.Add(time.Hour) {
		batch, a = f.summaries(batch, time.Hour, end)
		want += a
		send()
	}
	for end := lastHour.Add(-time.Hour).Add(unit); !end.After(lastSum); end = end.Add(unit) {
		batch, a = f.summaries(batch, unit, end)
		want += a
		send()
	}
	for t := lastSum; t.Before(now); t = t.Add(time.Minute) {
		batch, a = f.raw(batch, t, t.Add(time.Minute))
		want += a
		send()
	}
	if err := s.embedded.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d nodes × %d days: %d samples in %d remote-write requests, %d series, written in %s (%.1f s CPU); %.0f GPU-hours allocated",
		nodes, days, written, requests, s.embedded.ActiveSeries(), time.Since(t0).Round(time.Second), (cpuTime() - cpu0).Seconds(), want/3600)

	q := report.Options{By: report.ByAccount}.Query()
	q.Del("from")
	q.Del("to")
	q.Set("last", window.String())
	var r report.Report
	b.Logf("load average before: %s", loadavg())
	defer func() { b.Logf("load average after: %s", loadavg()) }()
	b.Run(fmt.Sprintf("nodes=%d/days=%d", nodes, days), func(b *testing.B) {
		// GPUWATCH_REPORT_BENCH_PROFILE: a CPU profile of the reports alone.
		if path := os.Getenv("GPUWATCH_REPORT_BENCH_PROFILE"); path != "" {
			pf, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.StartCPUProfile(pf); err != nil {
				b.Fatal(err)
			}
			defer func() { pprof.StopCPUProfile(); pf.Close() }()
		}
		cpu0 := cpuTime()
		for b.Loop() {
			resp, err := http.Get(ts.URL + APIPrefix + "/report?" + q.Encode())
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("report: HTTP %d: %s", resp.StatusCode, body)
			}
			if err := json.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
		cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
		b.ReportMetric(cpu, "cpu-s/op")
		b.ReportMetric(r.Total.Allocated/cpu, "gpu-h/cpu-s")
		if got := r.Total.Allocated * 3600; math.Abs(got-want) > 1e-6*want {
			b.Fatalf("the report has %.3f GPU-hours allocated, the fleet %.3f", got/3600, want/3600)
		}
		if p := r.Total.Previous; p == nil || p.Allocated < 0.9*r.Total.Allocated {
			b.Fatalf("the previous period: %+v, want about %.0f GPU-hours allocated", p, r.Total.Allocated)
		}
	})
	b.Logf("%d groups; %.0f GPU-hours allocated, %.0f measured, %.0f idle; previous period %.0f allocated", len(r.Groups), r.Total.Allocated, r.Total.Measured, r.Total.Idle, r.Total.Previous.Allocated)

	// For the ratio: the same report from the raw samples alone, over the
	// last minutes, which only the agents' samples cover.
	b.Run(fmt.Sprintf("nodes=%d/raw=%s", nodes, now.Sub(lastSum)), func(b *testing.B) {
		cpu0 := cpuTime()
		var rr *report.Report
		for b.Loop() {
			var err error
			rr, err = report.Compute(context.Background(), s.Querier(), report.Options{From: lastSum, To: now, By: report.ByAccount, NoPrevious: true, RawOnly: true})
			if err != nil {
				b.Fatal(err)
			}
		}
		cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
		b.ReportMetric(cpu, "cpu-s/op")
		b.ReportMetric(rr.Total.Allocated/cpu, "gpu-h/cpu-s")
	})

	// The Downsampler's evaluations at this size (what the server spends
	// every five minutes and every hour).
	d, err := report.NewDownsampler(s.Querier(), s.Appender(), report.DownsampleOptions{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		res time.Duration
		end time.Time
	}{{unit, base}, {time.Hour, lastHour}} {
		cpu0 := cpuTime()
		st, err := d.Downsample(context.Background(), c.res, c.end)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("downsampling %s ending %s: %d allocations, %d samples written, %s wall, %.2f s CPU",
			c.res, c.end.Format(time.TimeOnly), st.Allocations, st.Samples, st.Took.Round(time.Millisecond), (cpuTime() - cpu0).Seconds())
	}
}

// loadavg is the machine's 1, 5 and 15-minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
