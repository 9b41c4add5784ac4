package simhw

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestFleetSpecValidation(t *testing.T) {
	tests := []struct {
		name string
		spec FleetSpec
		want string
	}{
		{"no nodes", FleetSpec{}, "fleet spec: Nodes: want at least 1, got 0"},
		{"unknown shape", FleetSpec{Nodes: 1, Shape: "dgx-b200"}, `fleet spec: Shape: unknown shape "dgx-b200"`},
		{"negative leaf size", FleetSpec{Nodes: 4, NodesPerLeaf: -1}, "fleet spec: NodesPerLeaf: want 0 (default) or more, got -1"},
		{"negative domain", FleetSpec{Nodes: 4, NVLinkDomainNodes: -9}, "fleet spec: NVLinkDomainNodes"},
		{"too many blocks", FleetSpec{Nodes: 8, NodesPerLeaf: 4, LeavesPerSpine: 2, Blocks: 2}, "fleet spec: Blocks: 2 blocks but only 1 spine groups"},
		{"bad custom shape", FleetSpec{Nodes: 1, CustomShape: &Shape{}}, "fleet spec: CustomShape: GPUBus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFleet(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestTopology(t *testing.T) {
	f, err := NewFleet(FleetSpec{Nodes: 18, NodesPerLeaf: 4, LeavesPerSpine: 2, Blocks: 3, NVLinkDomainNodes: 9})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		node                       string
		leaf, spine, block, domain string
	}{
		// node i (0-based): leaf i/4, spine leaf/2, 3 spine groups over 3 blocks, domain i/9.
		{"node-01", "leaf-01", "spine-01", "block-01", "nvl-01"},
		{"node-04", "leaf-01", "spine-01", "block-01", "nvl-01"},
		{"node-05", "leaf-02", "spine-01", "block-01", "nvl-01"},
		{"node-09", "leaf-03", "spine-02", "block-02", "nvl-01"},
		{"node-10", "leaf-03", "spine-02", "block-02", "nvl-02"},
		{"node-18", "leaf-05", "spine-03", "block-03", "nvl-02"},
	}
	for _, tt := range tests {
		n := f.Node(tt.node)
		if n == nil {
			t.Fatalf("no %s", tt.node)
		}
		got := []string{n.Leaf(), n.Spine(), n.Block(), n.NVLinkDomain()}
		if want := []string{tt.leaf, tt.spine, tt.block, tt.domain}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", tt.node, got, want)
		}
	}
	if got := f.Node("node-05").HCALeaf(3); got != "leaf-02-rail3" {
		t.Errorf("HCALeaf = %q", got)
	}
	// Nodes of one NVLink domain share the fabric's cluster UUID.
	fab := func(name string) nvml.GpuFabricInfo {
		lib := initNVML(t, f.Node(name))
		return get(device(t, lib, 0).GetGpuFabricInfo()).must(t, "fabric")
	}
	if a, b, c := fab("node-01"), fab("node-09"), fab("node-10"); a.ClusterUuid != b.ClusterUuid || a.ClusterUuid == c.ClusterUuid ||
		a.State != nvml.GPU_FABRIC_STATE_COMPLETED {
		t.Errorf("fabric info: %+v %+v %+v", a, b, c)
	}
}

// TestDeterministic runs the same fleet twice and compares what it shows.
func TestDeterministic(t *testing.T) {
	run := func() ([]GPUState, []string, []JobInfo) {
		f, err := NewFleet(FleetSpec{Nodes: 4, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		w := NewWorkloadGenerator(f, WorkloadOptions{Seed: 3})
		sc, err := ParseScenario([]byte(goodScenario))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Schedule(sc); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 60; i++ {
			if err := w.Step(); err != nil {
				t.Fatal(err)
			}
			if err := f.Advance(17 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
		var log []string
		for _, r := range f.Node("node-03").KernelLog().Since(0) {
			log = append(log, r.Time.String()+r.Message)
		}
		return f.Node("node-02").GPUs(), log, f.Node("node-01").Jobs()
	}
	g1, l1, j1 := run()
	g2, l2, j2 := run()
	if !reflect.DeepEqual(g1, g2) || !reflect.DeepEqual(l1, l2) || !reflect.DeepEqual(j1, j2) {
		t.Errorf("two runs differ:\n%+v\n%+v", g1[0], g2[0])
	}
}

// TestRootFiles checks the files a fleet with a Root materializes.
func TestRootFiles(t *testing.T) {
	root := t.TempDir()
	f, err := NewFleet(FleetSpec{Nodes: 2, Root: root, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := f.Node("node-02")
	if n.SysRoot() != filepath.Join(root, "node-02", "sys") || n.KmsgPath() != filepath.Join(root, "node-02", "kmsg.log") {
		t.Fatalf("paths: %s %s", n.SysRoot(), n.KmsgPath())
	}
	if err := n.StartJob(Job{ID: "4242", Kind: JobTraining, PIDs: []int{9001, 9002}, MultiNode: true}, 0, 1); err != nil {
		t.Fatal(err)
	}
	cg, err := os.ReadFile(filepath.Join(n.ProcRoot(), "9002", "cgroup"))
	if err != nil || string(cg) != "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n" {
		t.Errorf("cgroup = %q (%v)", cg, err)
	}
	readData := func() uint64 {
		b, err := os.ReadFile(filepath.Join(n.SysRoot(), "class", "infiniband", "mlx5_1", "ports", "1", "counters", "port_xmit_data"))
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := readData()
	if err := f.Advance(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	// GPU 1's rail carries the multi-node job's traffic: at least 10 GB in 10 s.
	if got := (readData() - before) * 4; got < 10e9 {
		t.Errorf("mlx5_1 sent %d bytes in 10 s", got)
	}
	if err := n.Inject(Fault{GPU: 1, Kind: FaultXid, Xid: 31}); err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(n.KmsgPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "NVRM: Xid (PCI:0000:2a:00): 31, pid=9002, name=python3, ") ||
		!strings.Contains(string(log), ";NVRM: loading NVIDIA UNIX x86_64 Kernel Module") {
		t.Errorf("kmsg.log:\n%s", log)
	}
	if err := n.StopJob("4242"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(n.ProcRoot(), "9001")); !os.IsNotExist(err) {
		t.Errorf("process dir survives StopJob: %v", err)
	}
}

func TestJobs(t *testing.T) {
	f := newTestFleet(t, ShapeHGXH100, 1)
	n := f.Nodes()[0]
	tests := []struct {
		name string
		job  Job
		gpus []int
		want string
	}{
		{"no id", Job{Kind: JobTraining}, []int{0}, "empty ID"},
		{"bad kind", Job{ID: "1", Kind: "batch"}, []int{0}, `unknown kind "batch"`},
		{"no gpus", Job{ID: "1", Kind: JobTraining}, nil, "no GPUs"},
		{"out of range", Job{ID: "1", Kind: JobTraining}, []int{8}, "GPU 8 out of range"},
		{"twice", Job{ID: "1", Kind: JobTraining}, []int{1, 1}, "GPU 1 given twice"},
	}
	for _, tt := range tests {
		if err := n.StartJob(tt.job, tt.gpus...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if err := n.StartJob(Job{ID: "1", Kind: JobIdleHold}, 6); err != nil {
		t.Fatal(err)
	}
	if err := n.StartJob(Job{ID: "2", Kind: JobInference}, 6); err == nil || !strings.Contains(err.Error(), "busy with job 1") {
		t.Errorf("double booking: %v", err)
	}
	if err := f.Advance(time.Minute); err != nil {
		t.Fatal(err)
	}
	lib := initNVML(t, n)
	d := device(t, lib, 6)
	u := get(d.GetUtilizationRates()).must(t, "util")
	p := get(d.GetPowerUsage()).must(t, "power")
	m := get(d.GetMemoryInfo_v2()).must(t, "mem")
	procs := get(d.GetComputeRunningProcesses()).must(t, "procs")
	// An idle-held GPU: a context and ~500 MiB, no work, near idle power.
	if u.Gpu != 0 || p > 90000 || m.Used == 0 || m.Used > 1<<30 || len(procs) != 1 {
		t.Errorf("idle hold: util %d, power %d mW, used %d, procs %v", u.Gpu, p, m.Used, procs)
	}
	idle := device(t, lib, 7)
	if p := get(idle.GetPowerUsage()).must(t, "power"); p < 70000 || p > 75000 {
		t.Errorf("idle H100 draws %d mW, want about 70 W", p)
	}
	if tc := get(idle.GetTemperature(nvml.TEMPERATURE_GPU)).must(t, "temp"); tc < 30 || tc > 40 {
		t.Errorf("idle H100 at %d °C", tc)
	}
	if r := get(idle.GetCurrentClocksEventReasons()).must(t, "reasons"); r != nvml.ClocksEventReasonGpuIdle {
		t.Errorf("idle reasons = %#x", r)
	}
	if err := n.StopJob("1"); err != nil {
		t.Fatal(err)
	}
	if err := n.StopJob("1"); err == nil {
		t.Error("stopping a stopped job")
	}
	if procs := get(d.GetComputeRunningProcesses()).must(t, "procs"); len(procs) != 0 {
		t.Errorf("processes after stop: %v", procs)
	}
}

func TestWorkloadGenerator(t *testing.T) {
	f := newTestFleet(t, ShapeHGXH100, 16)
	w := NewWorkloadGenerator(f, WorkloadOptions{Seed: 11})
	kinds := map[JobKind]int{}
	multi := 0
	ids := map[string]bool{}
	for h := 0; h < 24; h++ {
		if err := w.Step(); err != nil {
			t.Fatal(err)
		}
		busy, total := 0, 0
		for _, n := range f.Nodes() {
			for _, j := range n.Jobs() {
				if !ids[j.ID] {
					ids[j.ID] = true
					kinds[j.Kind]++
					if j.MultiNode {
						multi++
					}
				}
				busy += len(j.GPUs)
			}
			total += 8
		}
		if occ := float64(busy) / float64(total); occ < 0.6 || occ > 0.9 {
			t.Errorf("hour %d: occupancy %.2f, want about 0.8", h, occ)
		}
		if err := f.Advance(time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if kinds[JobTraining] == 0 || kinds[JobInference] == 0 || kinds[JobIdleHold] == 0 || multi == 0 {
		t.Errorf("job mix over a day: %v, %d multi-node", kinds, multi)
	}
	// Multi-node jobs stay within one leaf group.
	leaves := map[string]map[string]bool{}
	for _, n := range f.Nodes() {
		for _, j := range n.Jobs() {
			if j.MultiNode {
				if leaves[j.ID] == nil {
					leaves[j.ID] = map[string]bool{}
				}
				leaves[j.ID][n.Leaf()] = true
			}
		}
	}
	for id, l := range leaves {
		if len(l) != 1 {
			t.Errorf("job %s spans leaves %v", id, l)
		}
	}
}

// BenchmarkFleetAdvance measures one simulated second of a 16-node HGX H100 fleet
// at 80% occupancy.
func BenchmarkFleetAdvance(b *testing.B) {
	f, err := NewFleet(FleetSpec{Nodes: 16, Shape: ShapeHGXH100, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := NewWorkloadGenerator(f, WorkloadOptions{Seed: 1}).Step(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Advance(time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConcurrentReaders reads NVML and waits for events from other goroutines
// while the fleet advances with faults and jobs (run with -race).
func TestConcurrentReaders(t *testing.T) {
	f := newTestFleet(t, ShapeHGXH100, 2)
	w := NewWorkloadGenerator(f, WorkloadOptions{Seed: 5})
	n := f.Node("node-01")
	lib := initNVML(t, n)
	set := get(lib.EventSetCreate()).must(t, "set")
	for i := 0; i < 8; i++ {
		device(t, lib, i).RegisterEvents(nvml.EventTypeAll, set)
	}
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := 0; i < 8; i++ {
				d, _ := lib.DeviceGetHandleByIndex(i)
				d.GetPowerUsage()
				d.GetComputeRunningProcesses()
				d.GetFieldValues([]nvml.FieldValue{{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: aggregateScope}})
			}
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			set.Wait(1000)
		}
	}()
	for i := 0; i < 200; i++ {
		if i%20 == 0 {
			if err := n.Inject(Fault{GPU: i / 20 % 8, Kind: FaultXid, Xid: 13}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Step(); err != nil {
			t.Fatal(err)
		}
		if err := f.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	// Freeing the set wakes a waiter blocked in Wait.
	if set.Free() != nvml.SUCCESS {
		t.Error("Free")
	}
	<-done
	<-done
}

// BenchmarkFleetAdvanceRoot is BenchmarkFleetAdvance with the files written:
// each node's InfiniBand sysfs tree and kernel log on every step.
func BenchmarkFleetAdvanceRoot(b *testing.B) {
	f, err := NewFleet(FleetSpec{Nodes: 16, Shape: ShapeHGXH100, Seed: 1, Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if err := NewWorkloadGenerator(f, WorkloadOptions{Seed: 1}).Step(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := f.Advance(time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSysfsEvery(t *testing.T) {
	f, err := NewFleet(FleetSpec{Nodes: 1, Root: t.TempDir(), SysfsEvery: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	file := filepath.Join(n.SysRoot(), "class", "infiniband", "mlx5_0", "ports", "1", "counters", "port_xmit_data")
	read := func() string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first := read()
	for i, want := range []bool{false, false, true} { // at 4 s, 8 s, 12 s
		if err := f.Advance(4 * time.Second); err != nil {
			t.Fatal(err)
		}
		if changed := read() != first; changed != want {
			t.Errorf("step %d: changed = %v, want %v", i, changed, want)
		}
	}
}
