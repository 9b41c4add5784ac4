package main

import (
	"github.com/gpuwatch/gpuwatch/internal/procstat"

	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runHour drives one agent on one simulated HGX H100 node through an hour of
// collection in simulated time: before each cycle the node (and its workload)
// advances one second, then the runner runs a health cycle, or a full one every
// tenth, exactly as the run loop schedules them with the default intervals.
func runHour(args []string) error {
	fs := flag.NewFlagSet("agentbench hour", flag.ContinueOnError)
	cycles := fs.Int("cycles", 3600, "health-interval cycles to run (3600 = one hour at the default 1 s)")
	every := fs.Int("report", 600, "print memory every this many cycles")
	if err := fs.Parse(args); err != nil {
		return err
	}
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	root, err := os.MkdirTemp(base, "gpuwatch-agentbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: simhw.ShapeHGXH100, Seed: 1, Root: root})
	if err != nil {
		return err
	}
	gen := simhw.NewWorkloadGenerator(f, simhw.WorkloadOptions{Seed: 1})
	advance := func(d time.Duration) error {
		if err := f.Advance(d); err != nil {
			return err
		}
		return gen.Step()
	}
	if err := advance(0); err != nil {
		return err
	}
	runtime.GC()
	simLive, _ := heap()

	n := f.Nodes()[0]
	boot := n.Boot()
	a, err := agent.New(agent.Options{
		Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, BootTime: func() (time.Time, error) { return boot, nil }, BootID: "sim-boot",
		StateDir: root + "/state", DCGMDisable: true, KubeletSocket: "-", Now: f.Now,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	defer func() {
		cancel()
		wait()
		a.Close()
	}()
	a.Collect(ctx, true)

	fmt.Printf("agentbench hour: one agent (10 s full, 1 s health interval) on a simulated HGX H100 node, %s %s/%s, GOMAXPROCS %d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	fmt.Printf("simulated node alone: Go heap live %.1f MiB (in every figure below; a real node has none)\n", float64(simLive)/mib)
	fmt.Printf("%7s %9s %14s %14s %14s %9s %9s %7s\n", "cycles", "sim-time", "heap-live MiB", "agent-heap MiB", "go-total MiB", "RSS MiB", "HWM MiB", "series")
	report := func(i int) error {
		runtime.GC()
		live, total := heap()
		rss, hwm, err := procstat.Mem("self")
		if err != nil {
			return err
		}
		snap := a.Runner.Snapshot()
		fmt.Printf("%7d %9s %14.1f %14.1f %14.1f %9.1f %9.1f %7d\n", i, f.Now().Sub(f.Start()).Round(time.Second),
			float64(live)/mib, (float64(live)-float64(simLive))/mib, float64(total)/mib, float64(rss)/mib, float64(hwm)/mib, len(snap.Samples))
		return nil
	}
	if err := report(0); err != nil {
		return err
	}
	var cycleCPU, simCPU time.Duration
	wall0, cpu0 := time.Now(), cpuTime()
	for i := 1; i <= *cycles; i++ {
		c0 := cpuTime()
		if err := advance(time.Second); err != nil {
			return err
		}
		c1 := cpuTime()
		a.Runner.Cycle(ctx, i%10 == 0)
		c2 := cpuTime()
		simCPU += c1 - c0
		cycleCPU += c2 - c1
		if i%*every == 0 || i == *cycles {
			if err := report(i); err != nil {
				return err
			}
		}
	}
	wall, cpu := time.Since(wall0), cpuTime()-cpu0
	simulated := time.Duration(*cycles) * time.Second
	fmt.Printf("wall %s, process CPU %s: simulated hardware advancing %s, agent cycles %s, the rest (reports' forced GCs, background readers) %s\n",
		wall.Round(time.Millisecond), cpu.Round(time.Millisecond), simCPU.Round(time.Millisecond), cycleCPU.Round(time.Millisecond),
		(cpu - simCPU - cycleCPU).Round(time.Millisecond))
	fmt.Printf("agent cycle CPU per simulated second: %s = %.2f%% of one core at the 1 s health interval\n",
		(cycleCPU / time.Duration(*cycles)).Round(time.Microsecond), 100*cycleCPU.Seconds()/simulated.Seconds())
	return nil
}
