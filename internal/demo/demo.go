package demo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
)

// DefaultStory is the fault scenario the demo plays when none is given.
//
//go:embed story.yaml
var DefaultStory []byte

// Options configure a demo run. The zero value of each field takes the default
// named in its comment.
type Options struct {
	// Nodes is the number of simulated HGX H100 nodes (16).
	Nodes int
	// NodesPerLeaf is how many nodes share a leaf switch (8: 16 nodes under 2 leaves).
	NodesPerLeaf int
	// Duration is how much simulated time to run; 0 runs until ctx is done.
	Duration time.Duration
	// Speed is simulated seconds per wall-clock second (1); a negative speed runs
	// as fast as the machine can (tests).
	Speed float64
	// Interval is the simulated time between fleet summaries (1m).
	Interval time.Duration
	// Tick is the simulated step of the hardware model (5s).
	Tick time.Duration
	// Faults is the YAML fault scenario; nil plays DefaultStory.
	Faults []byte
	// FaultsName names Faults in error messages (a file path).
	FaultsName string
	// Seed makes the fleet and its workload reproducible (1).
	Seed int64
	// Dir holds each node's simulated files (sysfs tree, kernel log); "" uses a
	// temporary directory removed at the end.
	Dir string
	// Out receives the live summary.
	Out io.Writer

	builtin bool // Faults is DefaultStory
}

func (o *Options) fill() error {
	if o.Nodes == 0 {
		o.Nodes = 16
	}
	if o.NodesPerLeaf == 0 {
		o.NodesPerLeaf = 8
	}
	if o.Speed == 0 {
		o.Speed = 1
	}
	if o.Interval == 0 {
		o.Interval = time.Minute
	}
	if o.Tick == 0 {
		o.Tick = 5 * time.Second
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Faults == nil {
		o.Faults, o.FaultsName, o.builtin = DefaultStory, "the default demo story", true
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	switch {
	case o.Nodes < 1:
		return fmt.Errorf("nodes must be at least 1, got %d", o.Nodes)
	case o.Duration < 0:
		return fmt.Errorf("duration must not be negative, got %s", o.Duration)
	case o.Interval < 0 || o.Tick < 0:
		return fmt.Errorf("interval and tick must be positive, got %s and %s", o.Interval, o.Tick)
	case o.Tick > o.Interval:
		return fmt.Errorf("tick %s must not exceed the summary interval %s", o.Tick, o.Interval)
	}
	return nil
}

// Result is what a finished demo run observed, for tests and the final summary.
type Result struct {
	Simulated time.Duration
	Xids      []Event // every Xid read from the kernel logs, in order
	Events    []Event // everything else the observer noticed change
	Last      Snapshot
}

// Run builds the fleet, plays the story and prints the live summary until the
// simulated Duration has passed or ctx is done.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	sc, err := simhw.ParseScenario(o.Faults)
	if err != nil {
		return nil, fmt.Errorf("cannot read fault scenario from %s: %w", o.FaultsName, err)
	}
	dir := o.Dir
	if dir == "" {
		// Each tick rewrites a few thousand sysfs counter files atomically; on tmpfs
		// that costs microseconds per file instead of a millisecond on disk.
		base := ""
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			base = "/dev/shm"
		}
		if dir, err = os.MkdirTemp(base, "gpuwatch-demo-"); err != nil {
			return nil, fmt.Errorf("cannot create the demo's working directory: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	fleet, err := simhw.NewFleet(simhw.FleetSpec{
		Nodes:        o.Nodes,
		NodesPerLeaf: o.NodesPerLeaf,
		Seed:         o.Seed,
		Root:         dir,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot build the simulated fleet: %w", err)
	}
	skipped := 0
	if o.builtin {
		// The built-in story is written for 16 nodes; on a smaller fleet, play the
		// part of it that fits. A user's own scenario is never trimmed.
		sc, skipped = sc.Only(func(f simhw.Fault) bool { return f.Node == "" || fleet.Node(f.Node) != nil })
	}
	if err := fleet.Schedule(sc); err != nil {
		return nil, fmt.Errorf("cannot schedule the faults from %s: %w", o.FaultsName, err)
	}
	gen := simhw.NewWorkloadGenerator(fleet, simhw.WorkloadOptions{Seed: o.Seed})
	if err := gen.Step(); err != nil {
		return nil, fmt.Errorf("cannot start the simulated workload: %w", err)
	}
	if err := fleet.Advance(0); err != nil {
		return nil, fmt.Errorf("cannot materialize the simulated fleet: %w", err)
	}

	obs, err := newObserver(fleet)
	if err != nil {
		return nil, err
	}
	defer obs.close()
	p := newPrinter(o.Out, fleet.Start())
	p.header(fleet, sc, o)
	if skipped > 0 {
		fmt.Fprintf(o.Out, "(%d faults of the built-in story are on nodes beyond --nodes %d and are skipped)\n\n", skipped, o.Nodes)
	}

	res := &Result{}
	nextSummary := time.Duration(0)
	var wallStart = time.Now()
	for elapsed := time.Duration(0); ; {
		if elapsed >= nextSummary {
			snap := obs.snapshot(fleet.Now())
			res.Last = snap
			res.Events = append(res.Events, obs.changes...)
			p.events(obs.changes)
			obs.changes = nil
			if nextSummary == 0 {
				p.table(snap)
				fmt.Fprintln(o.Out)
			}
			p.summary(snap)
			nextSummary += o.Interval
		}
		if o.Duration > 0 && elapsed >= o.Duration {
			break
		}
		step := o.Tick
		if o.Duration > 0 && elapsed+step > o.Duration {
			step = o.Duration - elapsed
		}
		if o.Speed > 0 {
			// Keep simulated time in step with the wall clock at the chosen speed.
			due := wallStart.Add(time.Duration(float64(elapsed+step) / o.Speed))
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(due)):
			}
		}
		if ctx.Err() != nil {
			break
		}
		if err := fleet.Advance(step); err != nil {
			return res, fmt.Errorf("simulated hardware failed to advance: %w", err)
		}
		if err := gen.Step(); err != nil {
			return res, fmt.Errorf("simulated workload failed: %w", err)
		}
		elapsed += step
		xids, err := obs.readLogs(fleet.Now())
		if err != nil {
			return res, err
		}
		res.Xids = append(res.Xids, xids...)
		p.events(xids)
	}
	res.Simulated = fleet.Now().Sub(fleet.Start())
	p.final(res, obs)
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	return res, nil
}

// initNVML initialises one node's NVML the way the agent does.
func initNVML(lib nvml.Interface, node string) error {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("cannot initialise NVML on %s: %s", node, nvml.ErrorString(ret))
	}
	return nil
}
