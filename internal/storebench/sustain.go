package main

import (
	"github.com/gpuwatch/gpuwatch/internal/procstat"

	"context"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// runSustain offers `gpuwatch server` the load of a fleet in real time: every
// node sends one full cycle per interval, the nodes spread evenly over it, and
// measures whether the server keeps up.
func runSustain(args []string) error {
	fs := flag.NewFlagSet("storebench sustain", flag.ContinueOnError)
	bin := fs.String("bin", "bin/gpuwatch", "the gpuwatch binary (make build)")
	store := fs.String("store", "gpuwatch", "store to load: gpuwatch, prometheus or victoriametrics")
	nodes := fs.Int("nodes", 1000, "simulated HGX H100 nodes")
	duration := fs.Duration("duration", 60*time.Second, "paced time (after the first cycle has created the series)")
	interval := fs.Duration("interval", 10*time.Second, "each node's collection interval")
	concurrency := fs.Int("concurrency", 4, "requests in flight at most")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cycles := int(*duration / *interval)
	if cycles < 1 || *nodes < 1 || *concurrency < 1 {
		return fmt.Errorf("storebench sustain: -duration %s, -interval %s, -nodes %d, -concurrency %d: need at least one interval, one node, one request", *duration, *interval, *nodes, *concurrency)
	}
	t, err := simulateTemplate(60, 1)
	if err != nil {
		return fmt.Errorf("simulating the template node: %w", err)
	}
	// Timestamps 10 s apart ending about now: cycle c is stamped start + c×10 s.
	start := time.Now().Add(-time.Duration(cycles+1) * 10 * time.Second).Truncate(10 * time.Second)
	p := buildPayload(t, *nodes, cycles+1, start)
	offered := float64(*nodes*len(t.series)) / interval.Seconds()
	fmt.Printf("storebench sustain: %d nodes × %d series every %s = %.0f samples/s offered, %d paced cycles (%s), %d requests in flight at most; payload %.1f MiB; %s %d CPUs, load %s\n",
		*nodes, len(t.series), *interval, offered, cycles, *duration, *concurrency, float64(p.bytes)/mib, runtime.Version(), runtime.NumCPU(), loadavg())
	runtime.GC()

	tg, err := startTarget(*store, *bin)
	if err != nil {
		return err
	}
	defer tg.stop()
	ctx := context.Background()
	client := newClient(*concurrency)
	first, err := timePhase(tg.pid, *nodes*len(t.series), func() (time.Duration, error) {
		return sendCycles(ctx, client, tg.writeURL, p, 0, 1, *concurrency)
	})
	if err != nil {
		return fmt.Errorf("first cycle: %w", err)
	}
	rss0, _, _ := procstat.Mem(strconv.Itoa(tg.pid))
	fmt.Printf("first cycle (creates %d series) as fast as possible: %.2f s, %.0f samples/s, server CPU %.2f s, RSS after %.0f MiB\n",
		*nodes*len(t.series), first.wall.Seconds(), first.rate(), first.cpu.Seconds(), float64(rss0)/mib)

	type job struct {
		body  []byte
		sched time.Time
		cycle int
	}
	jobs := make(chan job, *nodes*cycles)
	lags := make([][]time.Duration, cycles)
	for c := range lags {
		lags[c] = make([]time.Duration, *nodes)
	}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	idx := make([]int, cycles)
	for range *concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				err := post(ctx, client, tg.writeURL, j.body)
				lag := time.Since(j.sched)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lags[j.cycle][idx[j.cycle]] = lag
				idx[j.cycle]++
				mu.Unlock()
			}
		}()
	}
	// Sample the server's memory every second while paced.
	stopMem := make(chan struct{})
	memDone := make(chan uint64)
	go func() {
		var peak uint64
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopMem:
				memDone <- peak
				return
			case <-tick.C:
				if rss, _, err := procstat.Mem(strconv.Itoa(tg.pid)); err == nil {
					peak = max(peak, rss)
				}
			}
		}
	}()
	paced, err := timePhase(tg.pid, *nodes*len(t.series)*cycles, func() (time.Duration, error) {
		t0 := time.Now().Add(100 * time.Millisecond)
		step := *interval / time.Duration(*nodes)
		for c := range cycles {
			for n := range *nodes {
				sched := t0.Add(time.Duration(c)**interval + time.Duration(n)*step)
				time.Sleep(time.Until(sched))
				jobs <- job{body: p.bodies[c+1][n], sched: sched, cycle: c}
			}
		}
		close(jobs)
		wg.Wait()
		return time.Since(t0), nil
	})
	close(stopMem)
	peak := <-memDone
	if err != nil {
		return err
	}
	if firstErr != nil {
		return fmt.Errorf("paced cycles: %w", firstErr)
	}
	rss, hwm, _ := procstat.Mem(strconv.Itoa(tg.pid))

	fmt.Printf("%6s %10s %10s %10s\n", "cycle", "lag p50", "lag p99", "lag max")
	var all []time.Duration
	var worst time.Duration
	for c := range cycles {
		s := sortedDurations(lags[c])
		all = append(all, s...)
		worst = max(worst, s[len(s)-1])
		fmt.Printf("%6d %10s %10s %10s\n", c+1, quantile(s, 0.5).Round(time.Millisecond), quantile(s, 0.99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	}
	s := sortedDurations(all)
	fmt.Printf("paced: %d samples in %.2f s = %.0f samples/s (offered %.0f); request lag behind schedule p50 %s, p99 %s, max %s\n",
		paced.samples, paced.wall.Seconds(), paced.rate(), offered, quantile(s, 0.5).Round(time.Millisecond), quantile(s, 0.99).Round(time.Millisecond), worst.Round(time.Millisecond))
	fmt.Printf("server: CPU %.2f s = %.2f cores of %d; VmRSS %.0f MiB now, peak sampled %.0f MiB, VmHWM %.0f MiB; client CPU %.2f s; other processes %.2f cores; load %s\n",
		paced.cpu.Seconds(), paced.cpu.Seconds()/paced.wall.Seconds(), runtime.NumCPU(), float64(rss)/mib, float64(peak)/mib, float64(hwm)/mib,
		paced.selfCPU.Seconds(), paced.otherCPU, loadavg())
	keeps := worst < *interval
	verdict := "keeps up: every request answered within one interval of its schedule"
	if !keeps {
		verdict = "FALLS BEHIND: some request waited longer than one interval"
	}
	fmt.Println(verdict)
	tg.flush()
	end := strconv.FormatFloat(float64(start.Add(time.Duration(cycles)*10*time.Second).UnixMilli())/1000, 'f', 3, 64)
	if _, n, err := queryValueAt(ctx, tg.url, `DCGM_FI_DEV_GPU_UTIL`, end); err != nil || n != 8**nodes {
		return fmt.Errorf("read back: %d DCGM_FI_DEV_GPU_UTIL series, want %d (%v)", n, 8**nodes, err)
	}
	return nil
}
