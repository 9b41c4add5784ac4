package report

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// benchSize reads GPUWATCH_REPORT_BENCH_NODES and _HOURS (default 4 nodes,
// 24 hours): `make bench` runs a larger size (docs/BENCHMARKS.md).
func benchSize(b *testing.B) (nodes, hours int) {
	nodes, hours = 4, 24
	for _, e := range []struct {
		name string
		into *int
	}{{"GPUWATCH_REPORT_BENCH_NODES", &nodes}, {"GPUWATCH_REPORT_BENCH_HOURS", &hours}} {
		if s := os.Getenv(e.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive integer", e.name, s)
			}
			*e.into = n
		}
	}
	return nodes, hours
}

// benchFleet appends what nodes HGX H100 nodes' agents ship for the report
// over hours, every 10 s: per GPU the allocation (a job of one of 20
// accounts, a new job every 4 hours, an idle hour in eight), SM activity,
// utilization, framebuffer used and total. It returns the samples written.
func benchFleet(b testing.TB, st *embedded.Store, nodes, hours int, start time.Time) int {
	type gpu struct {
		node, uuid string
		dcgm       telemetry.Labels
	}
	var gpus []gpu
	for n := range nodes {
		for g := range 8 {
			uuid := fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", n, g)
			node := fmt.Sprintf("node-%04d", n)
			gpus = append(gpus, gpu{node, uuid, telemetry.NewLabels(telemetry.DCGMLabelUUID, uuid, telemetry.DCGMLabelGPU, strconv.Itoa(g),
				telemetry.DCGMLabelHostname, node, telemetry.DCGMLabelModelName, "NVIDIA H100 80GB HBM3")})
		}
	}
	allocLabels := map[string]telemetry.Labels{}
	alloc := func(i int, g gpu, slot int) telemetry.Labels {
		job := (i*7 + slot*13) % 5000
		key := g.uuid + strconv.Itoa(job)
		ls, ok := allocLabels[key]
		if !ok {
			ls = telemetry.NewLabels(telemetry.LabelNode, g.node, telemetry.LabelGPUUUID, g.uuid, telemetry.LabelGPUIndex, g.dcgm.Get(telemetry.DCGMLabelGPU),
				telemetry.LabelJobID, strconv.Itoa(100000+job), telemetry.LabelAccount, fmt.Sprintf("account-%02d", job%20),
				telemetry.LabelUser, fmt.Sprintf("user-%03d", job%200))
			allocLabels[key] = ls
		}
		return ls
	}
	steps := hours * 360
	written := 0
	batch := make([]telemetry.Sample, 0, len(gpus)*5*6)
	for s := range steps {
		at := start.Add(time.Duration(s)*10*time.Second + 5*time.Second)
		slot := s / (4 * 360)
		for i, g := range gpus {
			act := float64((i*31+s)%100) / 100
			if (s/360+i)%8 == 0 {
				act = 0.01 // an idle hour
			}
			batch = append(batch,
				telemetry.Sample{Name: metricAllocation, Labels: alloc(i, g, slot), Value: 1, Time: at},
				telemetry.Sample{Name: metricSMActive, Labels: g.dcgm, Value: act, Time: at},
				telemetry.Sample{Name: metricGPUUtil, Labels: g.dcgm, Value: act * 100, Time: at},
				telemetry.Sample{Name: metricFBUsed, Labels: g.dcgm, Value: 20000 + act*50000, Time: at},
				telemetry.Sample{Name: metricFBTotal, Labels: g.dcgm, Value: 81559, Time: at})
		}
		if s%6 == 5 || s == steps-1 {
			if err := st.Append(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			written += len(batch)
			batch = batch[:0]
		}
	}
	return written
}

// BenchmarkReport: a report by account over the whole generated window,
// read from the embedded store, at the default 10 s step and at 5 minutes.
// The window's previous period holds no data (it is not in the timing).
func BenchmarkReport(b *testing.B) {
	nodes, hours := benchSize(b)
	st := embeddedtest.Open(b, embedded.Options{Retention: 30 * 24 * time.Hour})
	start := time.Now().Add(-time.Duration(hours+1) * time.Hour).Truncate(time.Hour)
	t0 := time.Now()
	n := benchFleet(b, st, nodes, hours, start)
	b.Logf("%d nodes × %d h: %d samples written in %s", nodes, hours, n, time.Since(t0).Round(time.Second))
	for _, step := range []time.Duration{10 * time.Second, 5 * time.Minute} {
		b.Run(fmt.Sprintf("nodes=%d/hours=%d/step=%s", nodes, hours, step), func(b *testing.B) {
			var r *Report
			cpu0 := cpuTime()
			for b.Loop() {
				var err error
				r, err = Compute(context.Background(), st, Options{From: start, To: start.Add(time.Duration(hours) * time.Hour),
					By: ByAccount, Step: step, NoPrevious: true})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/(float64(b.Elapsed().Nanoseconds())/float64(b.N))*1e9, "samples/s")
			// CPU time says more than wall time on a shared machine.
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			if want := float64(nodes*8*hours) * 0.999; r.Total.Allocated < want {
				b.Fatalf("allocated %.1f GPU-hours, want %d", r.Total.Allocated, nodes*8*hours)
			}
		})
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
