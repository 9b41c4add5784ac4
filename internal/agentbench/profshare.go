package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// runProfShare reads `go tool pprof -traces` output and prints where the CPU
// samples were spent (see splitProfile).
func runProfShare(r io.Reader, w io.Writer) error {
	sp, err := splitProfile(r)
	if err != nil {
		return err
	}
	sp.print(w)
	return nil
}

// profSplit is a CPU profile's samples by where they were spent.
type profSplit struct {
	shares         map[string]time.Duration
	total, inCycle time.Duration
}

// The categories that are not the agent's own work: the simulated hardware
// (advancing between cycles, and answering the NVML calls the sources make, which
// a real driver would answer at its own cost) and the profiler measuring.
const (
	catSimulator = "outside: simulated hardware advancing"
	catSimNVML   = "cycle: simulated NVML library (simhw, not agent code)"
	catProfiler  = "outside: the profiler itself"
	catRuntime   = "outside: scheduler, syscalls, runtime, harness"
	catGC        = "outside: GC background marking (all allocations)"
)

// shared reports whether category c is Go runtime work the agent and the
// simulated node cause together (scheduling, GC), charged to the agent whole.
func shared(c string) bool { return c == catRuntime || c == catGC }

// simulated reports whether category c is the simulated hardware's work.
func simulated(c string) bool { return c == catSimulator || c == catSimNVML }

// sum adds the samples of the categories keep accepts.
func (sp *profSplit) sum(keep func(string) bool) time.Duration {
	var d time.Duration
	for c, v := range sp.shares {
		if keep(c) {
			d += v
		}
	}
	return d
}

// agent is the agent's own share of the samples: everything but the simulated
// hardware and the profiler, the Go runtime and GC included (they serve both the
// agent and the simulator; all of it is charged to the agent).
func (sp *profSplit) agent() time.Duration {
	return sp.sum(func(c string) bool { return !simulated(c) && c != catProfiler })
}

// splitProfile reads `go tool pprof -traces` output and splits the CPU samples by
// where they were spent: inside a collection cycle (Runner.Cycle and the source
// goroutines it starts), split into the simulated NVML library the sources call,
// the exporter, the health engine and each source's own code; or outside it (the
// simulated hardware advancing between cycles, scrapes, the shipper, background
// readers, GC).
func splitProfile(r io.Reader) (*profSplit, error) {
	sp := &profSplit{shares: map[string]time.Duration{}}
	var value time.Duration
	var frames []string
	flush := func() {
		if value == 0 {
			return
		}
		c, cyc := classify(frames)
		sp.shares[c] += value
		sp.total += value
		if cyc {
			sp.inCycle += value
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
		return nil, err
	}
	if sp.total == 0 {
		return nil, fmt.Errorf("no samples: feed it `go tool pprof -traces BINARY PROFILE`")
	}
	return sp, nil
}

// print writes the split as a table, largest first.
func (sp *profSplit) print(w io.Writer) {
	names := make([]string, 0, len(sp.shares))
	for n := range sp.shares {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		if sp.shares[names[a]] != sp.shares[names[b]] {
			return sp.shares[names[a]] > sp.shares[names[b]]
		}
		return names[a] < names[b]
	})
	fmt.Fprintf(w, "%-58s %9s %8s %9s\n", "where", "CPU", "% all", "% cycle")
	for _, n := range names {
		pc := ""
		if strings.HasPrefix(n, "cycle: ") {
			pc = fmt.Sprintf("%8.1f%%", 100*sp.shares[n].Seconds()/sp.inCycle.Seconds())
		}
		fmt.Fprintf(w, "%-58s %9s %7.1f%% %9s\n", n, sp.shares[n], 100*sp.shares[n].Seconds()/sp.total.Seconds(), pc)
	}
	fmt.Fprintf(w, "%-58s %9s %7.1f%%\n", "total in cycle", sp.inCycle, 100*sp.inCycle.Seconds()/sp.total.Seconds())
	a := sp.agent()
	fmt.Fprintf(w, "%-58s %9s %7.1f%%\n", "agent alone (all but simulated hardware and profiler)", a, 100*a.Seconds()/sp.total.Seconds())
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
			return catSimNVML, true
		case has(frames, mod+"collector.(*Exporter)"), has(frames, mod+"collector.(*Exposition)"):
			return "cycle: exporter (OnPublish)", true
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
		return catSimulator, false
	case has(frames, "runtime.gcBgMarkWorker"):
		return catGC, false
	case has(frames, "promhttp."):
		return "outside: /metrics scrapes (render, encode, compress)", false
	case has(frames, "runtime/pprof."):
		return catProfiler, false
	case has(frames, mod+"collector/shipper."):
		return "outside: remote-write shipper (agent)", false
	case has(frames, mod+"collector/xid."):
		return "outside: kernel-log reader (agent)", false
	case has(frames, mod+"collector/attribution."):
		return "outside: attribution refresh (agent)", false
	case has(frames, mod+"collector/nvml."):
		return "outside: NVML event watcher (agent)", false
	case has(frames, mod):
		return "outside: other gpuwatch code", false
	}
	return catRuntime, false
}
