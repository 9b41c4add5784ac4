package main

import (
	"github.com/gpuwatch/gpuwatch/internal/procstat"

	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runProcess runs `gpuwatch agent --simulate hgx-h100` as its own process for a
// while, scraping /metrics on a schedule, and reports its CPU and memory.
func runProcess(args []string) error {
	fs := flag.NewFlagSet("agentbench process", flag.ContinueOnError)
	bin := fs.String("bin", "bin/gpuwatch", "the gpuwatch binary (make build)")
	duration := fs.Duration("duration", 60*time.Second, "measured wall time")
	warmup := fs.Duration("warmup", 5*time.Second, "wall time before measuring (start-up: building the simulated node, the first full cycle)")
	scrape := fs.Duration("scrape", 15*time.Second, "interval between GET /metrics (0: none)")
	profile := fs.String("profile", "", "also write a CPU profile of the agent over the measured time (from its /debug/pprof/profile) to this file")
	remoteWrite := fs.Bool("remote-write", false, "run a remote-write sink on loopback in this process and pass the agent --remote-write to it, as in production")
	if err := fs.Parse(args); err != nil {
		return err
	}
	state, err := os.MkdirTemp("", "gpuwatch-agentbench-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
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
	cmd := exec.Command(*bin, argv...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", *bin, err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
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
	time.Sleep(*warmup)

	get := func() (time.Duration, int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
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
	if *profile != "" {
		go func() {
			purl := strings.TrimSuffix(url, "/metrics") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(duration.Seconds()))
			profDone <- fetch(purl, *profile, *duration+30*time.Second)
		}()
	} else {
		profDone <- nil
	}
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
	rss, hwm, err := procstat.Mem(strconv.Itoa(pid))
	if err != nil {
		return err
	}
	if err := <-profDone; err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	cpu := cpu1 - cpu0
	fmt.Printf("CPU %s in %s wall = %.2f%% of one core (%s before the warm-up ended)\n",
		cpu, wall.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds(), cpu0)
	fmt.Printf("VmRSS %.1f MiB (%.1f MiB after warm-up), VmHWM %.1f MiB\n", float64(rss)/mib, float64(rss0)/mib, float64(hwm)/mib)
	if rw != nil {
		st := rw.stats()
		fmt.Printf("remote write: %d requests, %d samples, %d bytes (snappy) in the measured time; %d requests in all, none refused\n",
			st.requests-rw0.requests, st.samples-rw0.samples, st.bytes-rw0.bytes, st.requests)
		if st.errors > 0 {
			return fmt.Errorf("remote-write sink: %d requests could not be decoded", st.errors)
		}
	}
	if len(scrapes) > 0 {
		var sum, worst time.Duration
		for _, d := range scrapes {
			sum += d
			worst = max(worst, d)
		}
		fmt.Printf("%d scrapes of %d bytes: mean %s, worst %s (client side, loopback)\n", len(scrapes), size,
			(sum / time.Duration(len(scrapes))).Round(time.Microsecond), worst.Round(time.Microsecond))
	}
	return nil
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
