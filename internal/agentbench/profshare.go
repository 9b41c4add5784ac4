package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// runProfShare reads `go tool pprof -traces` output and splits the CPU samples by
// where they were spent: inside a collection cycle (Runner.Cycle and the source
// goroutines it starts), split into the simulated NVML library the sources call,
// the exporter's render, the health engine and each source's own code; or outside
// it (the simulated hardware advancing between cycles, background readers, GC).
func runProfShare(r io.Reader, w io.Writer) error {
	shares := map[string]time.Duration{}
	var total, inCycle time.Duration
	var value time.Duration
	var frames []string
	flush := func() {
		if value == 0 {
			return
		}
		c, cyc := classify(frames)
		shares[c] += value
		total += value
		if cyc {
			inCycle += value
		}
		value, frames = 0, frames[:0]
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			flush()
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) == 2 && value == 0 && len(frames) == 0 {
			if d, err := time.ParseDuration(fields[0]); err == nil {
				value = d
				frames = append(frames, fields[1])
				continue
			}
		}
		if value != 0 && len(fields) >= 1 {
			frames = append(frames, fields[0])
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return err
	}
	if total == 0 {
		return fmt.Errorf("no samples: feed it `go tool pprof -traces BINARY PROFILE`")
	}
	names := make([]string, 0, len(shares))
	for n := range shares {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool { return shares[names[a]] > shares[names[b]] })
	fmt.Fprintf(w, "%-58s %9s %8s %9s\n", "where", "CPU", "% all", "% cycle")
	for _, n := range names {
		pc := ""
		if strings.HasPrefix(n, "cycle: ") {
			pc = fmt.Sprintf("%8.1f%%", 100*shares[n].Seconds()/inCycle.Seconds())
		}
		fmt.Fprintf(w, "%-58s %9s %7.1f%% %9s\n", n, shares[n], 100*shares[n].Seconds()/total.Seconds(), pc)
	}
	fmt.Fprintf(w, "%-58s %9s %7.1f%%\n", "total in cycle", inCycle, 100*inCycle.Seconds()/total.Seconds())
	return nil
}

const mod = "github.com/gpuwatch/gpuwatch/"

func has(frames []string, s string) bool {
	for _, f := range frames {
		if strings.Contains(f, s) {
			return true
		}
	}
	return false
}

// classify names where one stack was spent and whether it is inside a cycle.
func classify(frames []string) (string, bool) {
	if has(frames, mod+"collector.(*Runner).Cycle") || has(frames, mod+"collector.(*Runner).collect") {
		switch {
		case has(frames, mod+"collector/simhw"):
			return "cycle: simulated NVML library (simhw, not agent code)", true
		case has(frames, mod+"collector.(*Exporter).Render"):
			return "cycle: exporter render (OnPublish)", true
		case has(frames, mod+"collector/health."):
			return "cycle: health engine", true
		}
		// The deepest gpuwatch frame below the runner names the source.
		for _, f := range frames {
			if strings.HasPrefix(f, mod+"collector.(*Runner)") {
				break
			}
			if rest, ok := strings.CutPrefix(f, mod+"collector/"); ok {
				pkg, _, _ := strings.Cut(rest, ".")
				return "cycle: source " + pkg, true
			}
		}
		return "cycle: runner and runtime", true
	}
	switch {
	case has(frames, mod+"collector/simhw"), has(frames, "main.(*simNode)"):
		return "outside: simulated hardware advancing", false
	case has(frames, "runtime.gcBgMarkWorker"):
		return "outside: GC background marking (all allocations)", false
	case has(frames, "promhttp."):
		return "outside: /metrics scrapes", false
	case has(frames, "runtime/pprof."):
		return "outside: the profiler itself", false
	case has(frames, mod+"collector/xid."):
		return "outside: kernel-log reader (agent)", false
	case has(frames, mod+"collector/attribution."):
		return "outside: attribution refresh (agent)", false
	case has(frames, mod+"collector/nvml."):
		return "outside: NVML event watcher (agent)", false
	case has(frames, mod):
		return "outside: other gpuwatch code", false
	}
	return "outside: scheduler, syscalls, runtime, harness", false
}
