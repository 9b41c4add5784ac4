package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/procstat"
)

// The agent's own cost at the default schedule, counted without the simulated
// hardware it runs on (issue 12).
const (
	goalCPU = 0.5      // % of one core
	goalRSS = 30 * mib // resident bytes
)

// runProcess runs `gpuwatch agent --simulate hgx-h100` as its own process for a
// while, scraping /metrics on a schedule (and receiving its remote write), and
// reports its CPU and memory: the whole process's, and the agent's alone, without
// the simulated hardware, against the goals.
func runProcess(args []string) error {
	fs := flag.NewFlagSet("agentbench process", flag.ContinueOnError)
	bin := fs.String("bin", "bin/gpuwatch", "the gpuwatch binary (make build)")
	duration := fs.Duration("duration", 60*time.Second, "measured wall time")
	warmup := fs.Duration("warmup", 5*time.Second, "wall time before measuring (start-up: building the simulated node, the first full cycle)")
	scrape := fs.Duration("scrape", 15*time.Second, "interval between GET /metrics (0: none)")
	profile := fs.String("profile", "", "keep the CPU profile of the measured time (from the agent's /debug/pprof/profile) in this file (default: a temporary file)")
	remoteWrite := fs.Bool("remote-write", false, "run a remote-write sink on loopback in this process and pass the agent --remote-write to it, as in production")
	check := fs.Bool("check", true, "exit non-zero when the agent alone misses a goal (0.5% of one core, 30 MiB resident)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *duration < 10*time.Second {
		return fmt.Errorf("-duration %s: the CPU profile needs at least 10s", *duration)
	}
	state, err := os.MkdirTemp("", "gpuwatch-agentbench-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	profFile := *profile
	if profFile == "" {
		profFile = state + ".prof"
		defer os.Remove(profFile)
	}
	argv := []string{"agent", "--simulate", "hgx-h100", "--listen", "127.0.0.1:0", "--state-dir", state, "--log.level", "warn"}
	var rw *sink
	if *remoteWrite {
		if rw, err = startSink(); err != nil {
			return err
		}
		defer rw.close()
		argv = append(argv, "--remote-write", rw.url)
	}
	argv = append(argv, fs.Args()...)
	load0 := loadAvg()
	started := time.Now()
	cmd := exec.Command(*bin, argv...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", *bin, err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
	}
	defer stop()
	pid := cmd.Process.Pid
	// "gpuwatch agent on NODE: 8 GPUs, serving http://ADDR/metrics"
	url := ""
	br := bufio.NewReader(out)
	for url == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%s exited before serving: %w", *bin, err)
		}
		if _, after, ok := strings.Cut(line, "serving "); ok {
			url = strings.TrimSpace(after)
		}
	}
	go io.Copy(io.Discard, br)
	fmt.Printf("agentbench process: %s %s (pid %d), %s warm-up, %s measured, GET %s every %s\n",
		*bin, strings.Join(argv, " "), pid, *warmup, *duration, url, *scrape)
	fmt.Printf("machine: %d CPUs, load average %s at the start\n", runtime.NumCPU(), load0)
	time.Sleep(*warmup)

	get := func() (time.Duration, int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Accept-Encoding", "gzip") // as Prometheus asks
		t0 := time.Now()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return 0, 0, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, 0, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return time.Since(t0), int(n), err
	}
	var rw0 sinkStats
	if rw != nil {
		rw0 = rw.stats()
	}
	cpu0, err := procstat.CPU(pid)
	if err != nil {
		return err
	}
	rss0, _, err := procstat.Mem(strconv.Itoa(pid))
	if err != nil {
		return err
	}
	wall0 := time.Now()
	end := wall0.Add(*duration)
	profDone := make(chan error, 1)
	go func() {
		purl := strings.TrimSuffix(url, "/metrics") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(duration.Seconds()))
		profDone <- fetch(purl, profFile, *duration+30*time.Second)
	}()
	var scrapes []time.Duration
	size := 0
	for {
		if *scrape > 0 {
			d, n, err := get()
			if err != nil {
				return err
			}
			scrapes = append(scrapes, d)
			size = n
		}
		next := end
		if *scrape > 0 {
			next = time.Now().Add(*scrape)
		}
		if !next.Before(end) {
			time.Sleep(time.Until(end))
			break
		}
		time.Sleep(time.Until(next))
	}
	wall := time.Since(wall0)
	cpu1, err := procstat.CPU(pid)
	if err != nil {
		return err
	}
	mem, err := procstat.Status(strconv.Itoa(pid), "VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")
	if err != nil {
		return err
	}
	simulated := time.Since(started) // the simulated node advances with the wall clock from its start
	if err := <-profDone; err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	load1 := loadAvg()
	stop()

	cpu := cpu1 - cpu0
	fmt.Printf("load average %s at the end\n", load1)
	fmt.Printf("process CPU %s in %s wall = %.2f%% of one core (utime+stime, every thread; %s before the warm-up ended)\n",
		cpu, wall.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds(), cpu0)
	fmt.Printf("process VmRSS %.1f MiB (%.1f MiB after warm-up): anonymous %.1f MiB, file-backed %.1f MiB (the binary's pages), shared memory %.1f MiB; VmHWM %.1f MiB\n",
		float64(mem["VmRSS"])/mib, float64(rss0)/mib, float64(mem["RssAnon"])/mib, float64(mem["RssFile"])/mib, float64(mem["RssShmem"])/mib, float64(mem["VmHWM"])/mib)
	if len(scrapes) > 0 {
		var sum, worst time.Duration
		for _, d := range scrapes {
			sum += d
			worst = max(worst, d)
		}
		fmt.Printf("%d scrapes (gzip) of %d bytes: mean %s, worst %s (client side, loopback)\n", len(scrapes), size,
			(sum / time.Duration(len(scrapes))).Round(time.Microsecond), worst.Round(time.Microsecond))
	}
	if rw != nil {
		st := rw.stats()
		fmt.Printf("remote write: %d requests, %d samples, %d bytes (snappy) in the measured time; %d requests in all\n",
			st.requests-rw0.requests, st.samples-rw0.samples, st.bytes-rw0.bytes, st.requests)
		if st.errors > 0 {
			return fmt.Errorf("remote-write sink: %d requests could not be decoded", st.errors)
		}
		if st.samples == rw0.samples {
			return errors.New("remote write: nothing arrived in the measured time")
		}
	}

	// The agent alone: the CPU profile split by package, the simulated
	// hardware's samples taken out.
	var traces bytes.Buffer
	pp := exec.Command("go", "tool", "pprof", "-traces", *bin, profFile)
	pp.Stdout, pp.Stderr = &traces, os.Stderr
	if err := pp.Run(); err != nil {
		return fmt.Errorf("go tool pprof -traces: %w", err)
	}
	sp, err := splitProfile(&traces)
	if err != nil {
		return err
	}
	fmt.Printf("\nCPU profile of the measured time (%s of samples), split by package:\n", sp.total)
	sp.print(os.Stdout)
	share := sp.agent().Seconds() / sp.total.Seconds()
	agentCPU := share * 100 * cpu.Seconds() / wall.Seconds()
	// Binomial sampling error of the share, on 10 ms samples.
	n := sp.total.Seconds() / 0.01
	sigma := math.Sqrt(share*(1-share)/n) * 100 * cpu.Seconds() / wall.Seconds()

	simHeap, err := simulatedHeap(simulated)
	if err != nil {
		return fmt.Errorf("measuring the simulated node's heap: %w", err)
	}
	agentRSS := int64(mem["VmRSS"]) - int64(simHeap)
	floor, err := startupRSS(*bin)
	if err != nil {
		return fmt.Errorf("measuring the binary's start-up: %w", err)
	}

	runtimeShare := sp.sum(shared).Seconds() / sp.total.Seconds()
	fmt.Printf("\nthe agent alone, without the simulated hardware:\n")
	fmt.Printf("  CPU: %.1f%% of the profile × %.2f%% of one core = %.2f%% ± %.2f%% of one core (goal ≤ %.1f%%): %s\n",
		100*share, 100*cpu.Seconds()/wall.Seconds(), agentCPU, sigma, goalCPU, verdict(agentCPU <= goalCPU))
	fmt.Printf("    of which the Go runtime's scheduling and GC, which the simulated node causes too, charged whole\n"+
		"    to the agent: %.2f%%; the agent's own code: %.2f%%\n",
		runtimeShare*100*cpu.Seconds()/wall.Seconds(), (share-runtimeShare)*100*cpu.Seconds()/wall.Seconds())
	fmt.Printf("  resident: VmRSS %.1f MiB − the simulated node's Go heap %.1f MiB = %.1f MiB (goal ≤ %.0f MiB): %s\n",
		float64(mem["VmRSS"])/mib, float64(simHeap)/mib, float64(agentRSS)/mib, float64(goalRSS)/mib, verdict(agentRSS <= goalRSS))
	fmt.Printf("    of which the binary's start-up alone (`%s version`: package initialisation of every subcommand's\n"+
		"    dependencies, and the pages of the binary it touches): %.1f MiB resident at its peak\n", *bin, float64(floor)/mib)
	if *check && (agentCPU > goalCPU || agentRSS > goalRSS) {
		return errors.New("the agent alone misses a goal (above); -check=false reports without failing")
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "OVER"
}

// loadAvg is /proc/loadavg's three averages.
func loadAvg() string {
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

// simulatedHeap builds, in this process, the node `gpuwatch agent --simulate
// hgx-h100` builds (same shape, seed and workload), advances it as long as the
// agent's ran, in the same 250 ms steps, and returns the Go heap it keeps live: the
// simulated hardware's share of the agent process's memory.
func simulatedHeap(elapsed time.Duration) (uint64, error) {
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	root, err := os.MkdirTemp(base, "gpuwatch-agentbench-sim-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(root)
	runtime.GC()
	before, _ := heap()
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: simhw.ShapeHGXH100, Seed: 1, Root: root, Start: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return 0, err
	}
	gen := simhw.NewWorkloadGenerator(f, simhw.WorkloadOptions{Seed: 1})
	if err := gen.Step(); err != nil {
		return 0, err
	}
	const tick = 250 * time.Millisecond
	for t := time.Duration(0); t <= elapsed; t += tick {
		if t > 0 {
			if err := f.Advance(tick); err != nil {
				return 0, err
			}
			if err := gen.Step(); err != nil {
				return 0, err
			}
		} else if err := f.Advance(0); err != nil {
			return 0, err
		}
	}
	runtime.GC()
	after, _ := heap()
	runtime.KeepAlive(f)
	runtime.KeepAlive(gen)
	if after < before {
		return 0, nil
	}
	return after - before, nil
}

// startupRSS runs `bin version` and returns its peak resident memory.
func startupRSS(bin string) (uint64, error) {
	cmd := exec.Command(bin, "version")
	if err := cmd.Run(); err != nil {
		return 0, err
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, errors.New("no resource usage")
	}
	return uint64(ru.Maxrss) * 1024, nil // kB on Linux
}

// fetch writes what GET url answers to file.
func fetch(url, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
