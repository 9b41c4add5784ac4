package main

import (
	"github.com/gpuwatch/gpuwatch/internal/procstat"

	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/snappy"
)

// payload is every replica's remote-write request body for a run of cycles,
// encoded before any timing starts.
type payload struct {
	nodes, cycles int
	series        int        // samples in one body (the template's series)
	bodies        [][][]byte // [cycle][node]
	bytes         int64
	start         time.Time // cycle 0's timestamp; cycle c is 10 s × c later
}

// buildPayload encodes nodes × cycles request bodies (snappy prompb, one
// sample per series, timestamps 10 s apart per cycle) on every core.
func buildPayload(t *template, nodes, cycles int, start time.Time) *payload {
	p := &payload{nodes: nodes, cycles: cycles, series: len(t.series), start: start, bodies: make([][][]byte, cycles)}
	for c := range p.bodies {
		p.bodies[c] = make([][]byte, nodes)
	}
	var total atomic.Int64
	jobs := make(chan [2]int, 64)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for j := range jobs {
				c, n := j[0], j[1]
				wr := t.writeRequest(n, c, start.Add(time.Duration(c)*10*time.Second).UnixMilli())
				size := wr.Size()
				if cap(buf) < size {
					buf = make([]byte, size)
				}
				m, err := wr.MarshalToSizedBuffer(buf[:size])
				if err != nil {
					panic(err) // cannot happen with a sized buffer
				}
				body := snappy.Encode(nil, buf[size-m:size])
				p.bodies[c][n] = body
				total.Add(int64(len(body)))
			}
		}()
	}
	for c := range cycles {
		for n := range nodes {
			jobs <- [2]int{c, n}
		}
	}
	close(jobs)
	wg.Wait()
	p.bytes = total.Load()
	return p
}

// post sends one remote-write 1.0 body.
func post(ctx context.Context, client *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

func newClient(concurrency int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency
	tr.DisableCompression = true
	return &http.Client{Transport: tr, Timeout: 5 * time.Minute}
}

// sendCycles posts the bodies of cycles [from, to) for every node, in cycle
// then node order, with concurrency requests in flight, as fast as the server
// answers. It returns the wall time from the first send to the last answer.
func sendCycles(ctx context.Context, client *http.Client, url string, p *payload, from, to, concurrency int) (time.Duration, error) {
	jobs := make(chan []byte, concurrency)
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range jobs {
				if err := post(ctx, client, url, body); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for c := from; c < to; c++ {
		for n := range p.nodes {
			jobs <- p.bodies[c][n]
		}
	}
	close(jobs)
	wg.Wait()
	return time.Since(start), first
}

// phase is one timed part of an ingest run on one store.
type phase struct {
	samples  int
	wall     time.Duration
	cpu      time.Duration // the store process's utime+stime
	selfCPU  time.Duration // this process's (the client's)
	otherCPU float64       // cores busy outside this process and the store's (machine minus both)
}

func (ph phase) rate() float64 { return float64(ph.samples) / ph.wall.Seconds() }

// cpuPerMillion is the store's CPU seconds per million samples.
func (ph phase) cpuPerMillion() float64 { return ph.cpu.Seconds() / (float64(ph.samples) / 1e6) }

type ingestResult struct {
	store         string
	first, steady phase
	rss, hwm      uint64
}

// timePhase runs fn and measures the store's CPU, ours and the machine's.
func timePhase(pid int, samples int, fn func() (time.Duration, error)) (phase, error) {
	cpu0, err := procstat.CPU(pid)
	if err != nil {
		return phase{}, err
	}
	self0 := selfCPU()
	m0 := machineCPU()
	wall, err := fn()
	if err != nil {
		return phase{}, err
	}
	m1 := machineCPU()
	cpu1, err := procstat.CPU(pid)
	if err != nil {
		return phase{}, err
	}
	ph := phase{samples: samples, wall: wall, cpu: cpu1 - cpu0, selfCPU: selfCPU() - self0}
	machineBusy := time.Duration(m1.busy-m0.busy) * time.Second / procstat.UserHZ
	ph.otherCPU = (machineBusy - ph.cpu - ph.selfCPU).Seconds() / wall.Seconds()
	if ph.otherCPU < 0 {
		ph.otherCPU = 0
	}
	return ph, nil
}

func selfCPU() time.Duration {
	c, _ := procstat.CPU(os.Getpid())
	return c
}

// runIngest sends the same payload to each store in turn, one store running
// at a time: the first cycle (series creation), then the steady cycles.
func runIngest(args []string) error {
	fs := flag.NewFlagSet("storebench ingest", flag.ContinueOnError)
	bin := fs.String("bin", "bin/gpuwatch", "the gpuwatch binary (make build)")
	nodes := fs.Int("nodes", 1000, "simulated HGX H100 nodes (replicas of one real agent's series)")
	cycles := fs.Int("cycles", 6, "collection cycles sent: the first creates the series, the others are the steady state")
	concurrency := fs.Int("concurrency", 4, "requests in flight, as a few agents sending at once")
	stores := fs.String("stores", "gpuwatch,prometheus,victoriametrics", "stores to compare, in order")
	tmplCycles := fs.Int("template-cycles", 60, "full cycles of the simulated agent the values are taken from")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cycles < 2 || *nodes < 1 || *concurrency < 1 {
		return fmt.Errorf("storebench ingest: -cycles %d, -nodes %d, -concurrency %d: need at least 2, 1 and 1", *cycles, *nodes, *concurrency)
	}
	t0 := time.Now()
	t, err := simulateTemplate(*tmplCycles, 1)
	if err != nil {
		return fmt.Errorf("simulating the template node: %w", err)
	}
	start := time.Now().Add(-time.Duration(*cycles)*10*time.Second - time.Minute).Truncate(10 * time.Second)
	p := buildPayload(t, *nodes, *cycles, start)
	fmt.Printf("storebench ingest: %d nodes × %d series (one real agent's shipped series on a simulated HGX H100, replicated), %d cycles 10 s apart, %d requests in flight; %s %d CPUs\n",
		*nodes, len(t.series), *cycles, *concurrency, runtime.Version(), runtime.NumCPU())
	fmt.Printf("payload: %d request bodies, %.1f MiB snappy, %.1f KiB per node and cycle; built in %s; load average %s\n",
		*nodes**cycles, float64(p.bytes)/(1<<20), float64(p.bytes)/float64(*nodes**cycles)/1024, time.Since(t0).Round(time.Millisecond), loadavg())

	var results []ingestResult
	for _, kind := range strings.Split(*stores, ",") {
		r, err := ingestOne(strings.TrimSpace(kind), *bin, p, *concurrency)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		results = append(results, r)
		runtime.GC()
	}
	fmt.Println()
	fmt.Printf("%-16s %12s %12s %10s %10s %12s %10s %10s %10s %9s\n", "store", "first s/s", "steady s/s", "first CPU", "steady CPU", "CPU s/Msmp", "client CPU", "other", "RSS MiB", "HWM MiB")
	for _, r := range results {
		fmt.Printf("%-16s %12.0f %12.0f %9.2fs %9.2fs %12.2f %9.2fs %9.2f %10.0f %9.0f\n", r.store, r.first.rate(), r.steady.rate(),
			r.first.cpu.Seconds(), r.steady.cpu.Seconds(), r.steady.cpuPerMillion(), r.steady.selfCPU.Seconds(), r.steady.otherCPU,
			float64(r.rss)/(1<<20), float64(r.hwm)/(1<<20))
	}
	var gw *ingestResult
	for i := range results {
		if results[i].store == "gpuwatch" {
			gw = &results[i]
		}
	}
	if gw != nil {
		for _, r := range results {
			if r.store == "gpuwatch" {
				continue
			}
			fmt.Printf("gpuwatch/%s: first cycle %.2f×, steady %.2f×, steady CPU per sample %.2f× theirs\n", r.store,
				gw.first.rate()/r.first.rate(), gw.steady.rate()/r.steady.rate(), gw.steady.cpuPerMillion()/r.steady.cpuPerMillion())
		}
	}
	fmt.Println("(s/s: samples per second acknowledged with 2xx; CPU: the store process's utime+stime; client CPU: this program's; other: cores busy outside both, from /proc/stat)")
	return nil
}

func ingestOne(kind, bin string, p *payload, concurrency int) (ingestResult, error) {
	r := ingestResult{store: kind}
	tg, err := startTarget(kind, bin)
	if err != nil {
		return r, err
	}
	defer tg.stop()
	ctx := context.Background()
	client := newClient(concurrency)
	defer client.CloseIdleConnections()
	per := p.nodes * p.series
	r.first, err = timePhase(tg.pid, per, func() (time.Duration, error) {
		return sendCycles(ctx, client, tg.writeURL, p, 0, 1, concurrency)
	})
	if err != nil {
		return r, fmt.Errorf("first cycle: %w", err)
	}
	fmt.Printf("%-16s first cycle (creates %d series): %6.2f s, %9.0f samples/s, store CPU %.2f s, load %s\n", kind, per,
		r.first.wall.Seconds(), r.first.rate(), r.first.cpu.Seconds(), loadavg())
	r.steady, err = timePhase(tg.pid, per*(p.cycles-1), func() (time.Duration, error) {
		return sendCycles(ctx, client, tg.writeURL, p, 1, p.cycles, concurrency)
	})
	if err != nil {
		return r, fmt.Errorf("steady cycles: %w", err)
	}
	r.rss, r.hwm, _ = procstat.Mem(strconv.Itoa(tg.pid))
	fmt.Printf("%-16s steady, %d cycles:        %6.2f s, %9.0f samples/s, store CPU %.2f s (%.2f s per million samples), RSS %.0f MiB, load %s\n", kind, p.cycles-1,
		r.steady.wall.Seconds(), r.steady.rate(), r.steady.cpu.Seconds(), r.steady.cpuPerMillion(), float64(r.rss)/(1<<20), loadavg())

	// Check that what was acknowledged is there: every GPU's utilisation series,
	// and one node's samples of it over the run.
	tg.flush()
	end := p.start.Add(time.Duration(p.cycles-1) * 10 * time.Second)
	at := strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)
	rng := strconv.Itoa(p.cycles*10) + "s"
	wantSeries := 8 * p.nodes
	var n int
	var got float64
	for try := 0; try < 50; try++ {
		_, n, err = queryValueAt(ctx, tg.url, `DCGM_FI_DEV_GPU_UTIL`, at)
		if err == nil && n == wantSeries {
			got, _, err = queryValueAt(ctx, tg.url, `sum(count_over_time(DCGM_FI_DEV_GPU_UTIL{node="`+nodeName(p.nodes-1)+`"}[`+rng+`]))`, at)
			if err == nil && got == float64(8*p.cycles) {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return r, fmt.Errorf("read back: %w", err)
	}
	if n != wantSeries || got != float64(8*p.cycles) {
		return r, fmt.Errorf("read back: %d DCGM_FI_DEV_GPU_UTIL series (want %d), %v samples of node %s's (want %d)", n, wantSeries, got, nodeName(p.nodes-1), 8*p.cycles)
	}
	fmt.Printf("%-16s read back: %d GPU_UTIL series, %v samples of the last node's over the run (as sent)\n", kind, n, got)
	return r, nil
}

// sortedDurations returns ds sorted.
func sortedDurations(ds []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// quantile is the q-quantile (nearest rank) of sorted ds.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
