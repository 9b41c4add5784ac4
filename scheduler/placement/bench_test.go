package placement

import (
	"context"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// benchFleet is 4,096 nodes × 8 GPUs under 64 leaf switches and 8 spines, with
// mixed background load: 40% of nodes idle, 30% full, 30% partly used.
func benchFleet(b *testing.B, nodes int) *snapshot.Snapshot {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	spec := snapshot.SyntheticSpec{Nodes: nodes, GPUsPerNode: 8, Leaves: 64, Spines: 8}
	return fleet(b, spec, mixedLoad(r, nodes, 8, 0.4, 0.3))
}

// latencies records each operation's duration and reports the p99, the wall-clock
// rate, and the process CPU time per operation (robust to other load on the box).
type latencies []time.Duration

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (l *latencies) time(f func()) {
	s := time.Now()
	f()
	*l = append(*l, time.Since(s))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	p99 := l[min(len(l)-1, len(l)*99/100)]
	var sum time.Duration
	for _, d := range l {
		sum += d
	}
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(l))/sum.Seconds(), "decisions/s")
}

// cpuPerOp reports the process CPU time per operation since start.
func cpuPerOp(b *testing.B, start time.Duration, ops int) {
	if ops > 0 {
		b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(ops), "cpu-µs/op")
	}
}

// BenchmarkReserveSingleNode8GPU reserves 8-GPU single-node jobs on the 4,096-node
// fleet in steady state: once 400 reservations are live, the oldest is released
// before each new one (release not timed).
func BenchmarkReserveSingleNode8GPU(b *testing.B) {
	e := engine(b, benchFleet(b, 4096), nil)
	ctx := context.Background()
	req := framework.Request{GPUs: 8}
	var live []string
	var lat latencies
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if len(live) >= 400 {
			if err := e.Release(live[0]); err != nil {
				b.Fatal(err)
			}
			live = live[1:]
		}
		var d *framework.Decision
		lat.time(func() { d, _ = e.Reserve(ctx, req) })
		if d.Outcome != framework.OutcomePlaced {
			b.Fatalf("not placed: %s", d.Reason)
		}
		live = append(live, d.ID)
	}
	lat.report(b)
	cpuPerOp(b, cpu0, len(lat))
}

// BenchmarkDryRunSingleNode8GPU is the same request without holding anything.
func BenchmarkDryRunSingleNode8GPU(b *testing.B) {
	e := engine(b, benchFleet(b, 4096), nil)
	ctx := context.Background()
	var lat latencies
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		var d *framework.Decision
		lat.time(func() { d, _ = e.DryRun(ctx, framework.Request{GPUs: 8}) })
		if d.Outcome != framework.OutcomePlaced {
			b.Fatalf("not placed: %s", d.Reason)
		}
	}
	lat.report(b)
	cpuPerOp(b, cpu0, len(lat))
}

// BenchmarkGang64x8 reserves a 64-node × 8-GPU gang (512 GPUs) on the 4,096-node
// fleet and releases it (release not timed).
func BenchmarkGang64x8(b *testing.B) {
	e := engine(b, benchFleet(b, 4096), nil)
	ctx := context.Background()
	var lat latencies
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		var d *framework.Decision
		lat.time(func() { d, _ = e.Reserve(ctx, framework.Request{Nodes: 64, GPUsPerNode: 8}) })
		if d.Outcome != framework.OutcomePlaced {
			b.Fatalf("not placed: %s", d.Reason)
		}
		if err := e.Release(d.ID); err != nil {
			b.Fatal(err)
		}
	}
	lat.report(b)
	cpuPerOp(b, cpu0, len(lat))
}

// BenchmarkExtender5000 filters and scores 5,000 candidate nodes for one 1-GPU pod:
// the kube-scheduler extender's filter + prioritize.
func BenchmarkExtender5000(b *testing.B) {
	snap := benchFleet(b, 5000)
	e := engine(b, snap, nil)
	names := make([]string, snap.Len())
	for i := range names {
		names[i] = snap.Node(i).Name
	}
	ctx := context.Background()
	var lat latencies
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		lat.time(func() {
			if _, err := e.Evaluate(ctx, framework.Request{GPUs: 1}, names); err != nil {
				b.Fatal(err)
			}
		})
	}
	lat.report(b)
	cpuPerOp(b, cpu0, len(lat))
}

// BenchmarkExtender5000Reuse is BenchmarkExtender5000 with the answers appended to
// one reused buffer (EvaluateAppend), as an extender serving many pods would.
func BenchmarkExtender5000Reuse(b *testing.B) {
	snap := benchFleet(b, 5000)
	e := engine(b, snap, nil)
	names := make([]string, snap.Len())
	for i := range names {
		names[i] = snap.Node(i).Name
	}
	ctx := context.Background()
	var lat latencies
	var buf []NodeScore
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		lat.time(func() {
			var err error
			if buf, err = e.EvaluateAppend(ctx, buf[:0], framework.Request{GPUs: 1}, names); err != nil {
				b.Fatal(err)
			}
		})
	}
	lat.report(b)
	cpuPerOp(b, cpu0, len(lat))
}

// BenchmarkSetSnapshot4096 moves an engine holding 400 reservations to a new
// 4,096-node snapshot: the reservations carry over and every node is classified
// again (the write lock is held throughout).
func BenchmarkSetSnapshot4096(b *testing.B) {
	snaps := [2]*snapshot.Snapshot{benchFleet(b, 4096), benchFleet(b, 4096)}
	e := engine(b, snaps[0], nil)
	ctx := context.Background()
	for range 400 {
		if d, _ := e.Reserve(ctx, framework.Request{GPUs: 8}); d.Outcome != framework.OutcomePlaced {
			b.Fatalf("not placed: %s", d.Reason)
		}
	}
	var lat latencies
	b.ReportAllocs()
	cpu0 := cpuTime()
	k := 0
	for b.Loop() {
		k++
		lat.time(func() { e.SetSnapshot(snaps[k%2]) })
	}
	lat.report(b)
	cpuPerOp(b, cpu0, len(lat))
}

// benchFleetDistinct is benchFleet with every node's GPUs at a utilization of its
// own, as measured telemetry makes a real fleet: no two nodes fall into one class.
func benchFleetDistinct(b *testing.B, nodes int) *snapshot.Snapshot {
	b.Helper()
	base := benchFleet(b, nodes)
	bl := snapshot.NewBuilder(base.Now(), base.Bound())
	for i := range base.Len() {
		n := base.Node(i)
		in := snapshot.NodeInput{Name: n.Name, Location: n.Location, Topology: n.Topology.Value, TopologyAt: n.Topology.At}
		for _, g := range n.GPUs {
			in.GPUs = append(in.GPUs, snapshot.GPUInput{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB,
				HealthAt: base.Now(), Utilization: float64(i) / float64(base.Len()), UtilizationAt: base.Now(),
				ThermalHeadroom: 1, PowerHeadroom: 1, HeadroomAt: base.Now()})
		}
		bl.AddNode(in)
	}
	for _, a := range base.Allocations() {
		bl.AddAllocation(a)
	}
	s, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkReserveSingleNode8GPUDistinct is BenchmarkReserveSingleNode8GPU on a
// fleet where every node is a class of its own: only remembered outcomes help
// (a reservation re-evaluates the nodes of its leaf).
func BenchmarkReserveSingleNode8GPUDistinct(b *testing.B) {
	e := engine(b, benchFleetDistinct(b, 4096), nil)
	ctx := context.Background()
	req := framework.Request{GPUs: 8}
	var live []string
	var lat latencies
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if len(live) >= 400 {
			if err := e.Release(live[0]); err != nil {
				b.Fatal(err)
			}
			live = live[1:]
		}
		var d *framework.Decision
		lat.time(func() { d, _ = e.Reserve(ctx, req) })
		if d.Outcome != framework.OutcomePlaced {
			b.Fatalf("not placed: %s", d.Reason)
		}
		live = append(live, d.ID)
	}
	lat.report(b)
	cpuPerOp(b, cpu0, len(lat))
}

// BenchmarkDryRunAfterSnapshotDistinct times the first decision on a new snapshot
// of the distinct fleet, when nothing is remembered and every node is evaluated
// (SetSnapshot not timed, but counted in cpu-µs/op).
func BenchmarkDryRunAfterSnapshotDistinct(b *testing.B) {
	snaps := [2]*snapshot.Snapshot{benchFleetDistinct(b, 4096), benchFleetDistinct(b, 4096)}
	e := engine(b, snaps[0], nil)
	ctx := context.Background()
	var lat latencies
	b.ReportAllocs()
	cpu0 := cpuTime()
	k := 0
	for b.Loop() {
		k++
		e.SetSnapshot(snaps[k%2])
		var d *framework.Decision
		lat.time(func() { d, _ = e.DryRun(ctx, framework.Request{GPUs: 8}) })
		if d.Outcome != framework.OutcomePlaced {
			b.Fatalf("not placed: %s", d.Reason)
		}
	}
	lat.report(b)
	cpuPerOp(b, cpu0, len(lat))
}
