package attribution

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"google.golang.org/grpc"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

var (
	_ collector.Source     = (*Source)(nil)
	_ collector.Attributor = (*Source)(nil)
)

// simNode is one simulated HGX H100 node, with its files under a temporary root
// when files is set (StartJob then writes /proc/<pid>/cgroup), NVML initialized and
// the inventory read from it.
func simNode(t testing.TB, files bool) (*simhw.Fleet, *simhw.Node, *collector.Inventory) {
	t.Helper()
	spec := simhw.FleetSpec{Nodes: 1, Seed: 7}
	if files {
		spec.Root = t.TempDir()
	}
	f, err := simhw.NewFleet(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	lib := n.NVML()
	if r := lib.Init(); r != nvml.SUCCESS {
		t.Fatalf("NVML Init: %v", r)
	}
	t.Cleanup(func() { lib.Shutdown() })
	count, r := lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		t.Fatalf("DeviceGetCount: %v", r)
	}
	inv := &collector.Inventory{Node: n.Name()}
	for i := range count {
		d, r := lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			t.Fatalf("GPU %d: %v", i, r)
		}
		uuid, r := d.GetUUID()
		if r != nvml.SUCCESS {
			t.Fatalf("GPU %d UUID: %v", i, r)
		}
		inv.GPUs = append(inv.GPUs, collector.GPUInfo{Index: i, UUID: uuid})
	}
	return f, n, inv
}

var testUsers = map[string]string{"1000": "alice", "1001": "bob"}

func lookupUser(uid string) (string, error) {
	if n, ok := testUsers[uid]; ok {
		return n, nil
	}
	return "", fmt.Errorf("unknown uid %s", uid)
}

// collectAll runs Collect and returns the samples by name+labels.
func collectAll(t testing.TB, s *Source) (map[string]float64, error) {
	t.Helper()
	out := map[string]float64{}
	err := s.Collect(context.Background(), func(x telemetry.Sample) {
		d, ok := telemetry.LookupMetric(x.Name)
		if !ok || d.Source != telemetry.SourceAttribution {
			t.Errorf("%s is not an attribution series of the catalog", x.Name)
		}
		for _, l := range x.Labels {
			if !slices.Contains(d.Labels, l.Name) {
				t.Errorf("%s has label %s the catalog does not declare", x.Name, l.Name)
			}
		}
		if x.Time.IsZero() {
			t.Errorf("%s has no time", x.Name)
		}
		out[x.Name+x.Labels.String()] = x.Value
	})
	return out, err
}

func alloc(gpu int, job, user, account, partition string) string {
	return fmt.Sprintf(`gpuwatch_gpu_allocation_info{account="%s",container="",gpu_index="%d",job_id="%s",namespace="",partition="%s",pod="",user="%s"}`,
		account, gpu, job, partition, user)
}

func procs(gpu int) string { return fmt.Sprintf(`gpuwatch_gpu_processes{gpu_index="%d"}`, gpu) }

// TestSlurmOnSimulatedNode: NVML processes → /proc/<pid>/cgroup, status and environ
// → job, user, account and partition, on the simulated node's files.
func TestSlurmOnSimulatedNode(t *testing.T) {
	f, n, inv := simNode(t, true)
	if err := n.StartJob(simhw.Job{ID: "4242", Account: "ml-research", User: "alice", Kind: simhw.JobTraining}, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteJobProcDetails("4242", 1000, "gpu-long"); err != nil {
		t.Fatal(err)
	}
	// Job 77 shows only its cgroup: no status, no environ (a non-root agent).
	if err := n.StartJob(simhw.Job{ID: "77", Kind: simhw.JobInference}, 5); err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(time.Minute); err != nil {
		t.Fatal(err)
	}
	s := New(Options{NVML: n.NVML(), Inventory: inv, ProcRoot: n.ProcRoot(), KubeletSocket: "-", LookupUser: lookupUser})
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := collectAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		alloc(0, "4242", "alice", "ml-research", "gpu-long"): 1,
		alloc(1, "4242", "alice", "ml-research", "gpu-long"): 1,
		alloc(5, "77", "", "", ""):                           1,
	}
	for g := range 8 {
		want[procs(g)] = 0
	}
	want[procs(0)], want[procs(1)], want[procs(5)] = 1, 1, 1
	if !mapsEqual(got, want) {
		t.Errorf("samples:\n got %v\nwant %v", got, want)
	}
	jobs := n.Jobs()
	as := s.Allocations()
	if len(as) != 3 || as[0].PIDs[0] != uint32(jobs[0].PIDs[0]) && as[0].PIDs[0] != uint32(jobs[1].PIDs[0]) {
		t.Errorf("allocations = %+v (jobs %+v)", as, jobs)
	}

	// The job ends: its GPUs are free again at the next refresh.
	if err := n.StopJob("4242"); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	as = s.Allocations()
	if len(as) != 1 || as[0].GPUIndex != 5 || as[0].JobID != "77" {
		t.Errorf("allocations after job 4242 ended: %+v", as)
	}
}

// TestUserFromStatus: without SLURM_JOB_USER the owner's uid names the user, and a
// process outside Slurm is attributed to its owner alone.
func TestUserFromStatus(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, 100, "0::/system.slice/slurmstepd.scope/job_9/step_0/user/task_0\n", "Name:\tx\nUid:\t1001\t1001\t1001\t1001\n", "")
	writeProc(t, root, 200, "0::/user.slice/user-1000.slice/session-3.scope\n", "Uid:\t1000\t1000\t1000\t1000\n", "")
	writeProc(t, root, 300, "0::/user.slice\n", "Uid:\t4242\t4242\t4242\t4242\n", "")
	lib := &fakeNVML{pids: map[int][]uint32{0: {100}, 1: {200, 300}, 2: {999}}}
	inv := &collector.Inventory{GPUs: []collector.GPUInfo{{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"}, {Index: 2, UUID: "GPU-2"}}}
	calls := 0
	s := New(Options{NVML: lib, Inventory: inv, ProcRoot: root, KubeletSocket: "-",
		LookupUser: func(uid string) (string, error) { calls++; return lookupUser(uid) }})
	for range 3 {
		if err := s.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	as := s.Allocations()
	var got []string
	for _, a := range as {
		got = append(got, fmt.Sprintf("%d/%s/%s/%v", a.GPUIndex, a.JobID, a.User, a.PIDs))
	}
	want := []string{"0/9/bob/[100]", "1//4242/[300]", "1//alice/[200]"}
	if !slices.Equal(got, want) {
		t.Errorf("allocations = %q, want %q", got, want)
	}
	if calls != 3 {
		t.Errorf("user lookups = %d, want 3 (one per uid, cached)", calls)
	}
	// GPU 2's process 999 has exited: the GPU still counts it (NVML does) but has no
	// allocation.
	c, _ := collectAll(t, s)
	if c[procs(2)] != 1 || c[procs(1)] != 2 {
		t.Errorf("process counts = %v", c)
	}
}

// TestOneGPUFailingLosesOnlyItsValues: NVML failing for one GPU drops that GPU's
// count and allocations; the others stay, and the error names the GPU.
func TestOneGPUFailingLosesOnlyItsValues(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, 100, "0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0\n", "", "")
	writeProc(t, root, 101, "0::/system.slice/slurmstepd.scope/job_2/step_0/user/task_0\n", "", "")
	lib := &fakeNVML{pids: map[int][]uint32{0: {100}, 1: {101}}, fail: map[int]bool{1: true}}
	inv := &collector.Inventory{GPUs: []collector.GPUInfo{{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"}}}
	s := New(Options{NVML: lib, Inventory: inv, ProcRoot: root, KubeletSocket: "-", LookupUser: lookupUser})
	err := s.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GPU 1") {
		t.Errorf("err = %v; want one naming GPU 1", err)
	}
	got, cerr := collectAll(t, s)
	if !errors.Is(cerr, err) && (cerr == nil || cerr.Error() != err.Error()) {
		t.Errorf("Collect error %v, want the refresh's %v", cerr, err)
	}
	if _, ok := got[procs(1)]; ok || got[procs(0)] != 1 || len(got) != 2 {
		t.Errorf("samples = %v", got)
	}
}

// TestLostGPUIsNotAnError: a GPU lost after discovery loses its count, as a
// failing one does, but the refresh does not fail: the NVML source reports the GPU
// lost, and a source error would make the health engine call attribution stale.
func TestLostGPUIsNotAnError(t *testing.T) {
	_, n, inv := simNode(t, true)
	if err := n.Inject(simhw.Fault{Kind: simhw.FaultGPULost, GPU: 3}); err != nil {
		t.Fatal(err)
	}
	s := New(Options{NVML: n.NVML(), Inventory: inv, ProcRoot: n.ProcRoot(), KubeletSocket: "-", LookupUser: lookupUser})
	if err := s.Refresh(context.Background()); err != nil {
		t.Errorf("Refresh with GPU 3 lost: %v", err)
	}
	got, err := collectAll(t, s)
	if err != nil {
		t.Errorf("Collect: %v", err)
	}
	if _, ok := got[procs(3)]; ok {
		t.Errorf("lost GPU 3 still has a process count: %v", got)
	}
	if _, ok := got[procs(2)]; !ok || len(got) != 7 {
		t.Errorf("samples = %v; want the seven GPUs that answer", got)
	}
}

func writeProc(t testing.TB, root string, pid int, cgroup, status, environ string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"cgroup": cgroup, "status": status, "environ": environ} {
		if data == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeNVML answers device handles and compute processes from a table; GPUs in fail
// answer ERROR_UNKNOWN.
type fakeNVML struct {
	nvml.Interface
	pids map[int][]uint32
	fail map[int]bool
}

type fakeDevice struct {
	nvml.Device
	lib *fakeNVML
	idx int
}

func (f *fakeNVML) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	return &fakeDevice{lib: f, idx: i}, nvml.SUCCESS
}

func (d *fakeDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	if d.lib.fail[d.idx] {
		return nil, nvml.ERROR_UNKNOWN
	}
	var out []nvml.ProcessInfo
	for _, p := range d.lib.pids[d.idx] {
		out = append(out, nvml.ProcessInfo{Pid: p})
	}
	return out, nvml.SUCCESS
}

func (d *fakeDevice) GetGraphicsRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return nil, nvml.ERROR_NOT_SUPPORTED
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// kubeletServer is a pod-resources server on a unix socket. When gate is set,
// List signals entered and waits for gate.
type kubeletServer struct {
	podresources.UnimplementedPodResourcesListerServer
	mu      sync.Mutex
	resp    *podresources.ListPodResourcesResponse
	gate    chan struct{}
	entered chan struct{}
	calls   int
}

func (k *kubeletServer) List(ctx context.Context, _ *podresources.ListPodResourcesRequest) (*podresources.ListPodResourcesResponse, error) {
	k.mu.Lock()
	k.calls++
	gate, entered, resp := k.gate, k.entered, k.resp
	k.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return resp, nil
}

// serveKubelet starts the server on sock; stop stops it and removes the socket.
func serveKubelet(t testing.TB, sock string, srv *kubeletServer) (stop func()) {
	t.Helper()
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	podresources.RegisterPodResourcesListerServer(g, srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(l) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			g.Stop()
			<-done
			_ = os.Remove(sock)
		})
	}
	t.Cleanup(stop)
	return stop
}

func pods(inv *collector.Inventory) *podresources.ListPodResourcesResponse {
	dev := func(res string, ids ...string) *podresources.ContainerDevices {
		return &podresources.ContainerDevices{ResourceName: res, DeviceIds: ids}
	}
	return &podresources.ListPodResourcesResponse{PodResources: []*podresources.PodResources{
		{Name: "train-0", Namespace: "ml", Containers: []*podresources.ContainerResources{
			{Name: "trainer", Devices: []*podresources.ContainerDevices{
				dev("nvidia.com/gpu", inv.GPUs[0].UUID, inv.GPUs[3].UUID),
				dev("example.com/fpga", "fpga-0"),
			}},
			{Name: "sidecar"},
		}},
		{Name: "notebook", Namespace: "team-a", Containers: []*podresources.ContainerResources{
			{Name: "jupyter", Devices: []*podresources.ContainerDevices{dev("nvidia.com/gpu.shared", inv.GPUs[5].UUID+"::2")}},
		}},
		{Name: "cpu-only", Namespace: "default", Containers: []*podresources.ContainerResources{{Name: "app"}}},
	}}
}

func podAlloc(gpu int, ns, pod, ctr string) string {
	return fmt.Sprintf(`gpuwatch_gpu_allocation_info{account="",container="%s",gpu_index="%d",job_id="",namespace="%s",partition="",pod="%s",user=""}`,
		ctr, gpu, ns, pod)
}

// TestKubernetesPodResources: a real gRPC server on a unix socket; then the socket
// goes away: the last good answer stays and the error is reported.
func TestKubernetesPodResources(t *testing.T) {
	_, _, inv := simNode(t, false)
	sock := filepath.Join(t.TempDir(), "kubelet.sock")
	srv := &kubeletServer{resp: pods(inv)}
	stop := serveKubelet(t, sock, srv)
	s := New(Options{Inventory: inv, KubeletSocket: sock, Timeout: 5 * time.Second})
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		podAlloc(0, "ml", "train-0", "trainer"):      1,
		podAlloc(3, "ml", "train-0", "trainer"):      1,
		podAlloc(5, "team-a", "notebook", "jupyter"): 1,
	}
	got, err := collectAll(t, s)
	if err != nil || !mapsEqual(got, want) {
		t.Errorf("samples = %v, %v\nwant %v", got, err, want)
	}

	stop()
	err = s.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), sock) {
		t.Errorf("refresh without the socket: %v; want an error naming it", err)
	}
	got, cerr := collectAll(t, s)
	if cerr == nil || !mapsEqual(got, want) {
		t.Errorf("after the kubelet went away: %v, %v; want the last answer and an error", got, cerr)
	}
	if as := s.Allocations(); len(as) != 3 || as[0].Pod != "train-0" {
		t.Errorf("allocations = %+v", as)
	}

	// The kubelet comes back on the same socket (a restart): the source reconnects.
	srv2 := &kubeletServer{resp: &podresources.ListPodResourcesResponse{}}
	serveKubelet(t, sock, srv2)
	if err := s.Refresh(context.Background()); err != nil {
		t.Errorf("refresh after the kubelet came back: %v", err)
	}
	if as := s.Allocations(); len(as) != 0 {
		t.Errorf("allocations after all pods left: %+v", as)
	}
}

// TestKubernetesUnknownDevice: a device on no GPU of the inventory is reported and
// left out; the others count.
func TestKubernetesUnknownDevice(t *testing.T) {
	inv := &collector.Inventory{GPUs: []collector.GPUInfo{{Index: 0, UUID: "GPU-a"}}}
	sock := filepath.Join(t.TempDir(), "k.sock")
	serveKubelet(t, sock, &kubeletServer{resp: &podresources.ListPodResourcesResponse{PodResources: []*podresources.PodResources{
		{Name: "p", Namespace: "n", Containers: []*podresources.ContainerResources{{Name: "c", Devices: []*podresources.ContainerDevices{
			{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-a", "GPU-elsewhere"}},
			{ResourceName: "nvidia.com/mig-1g.10gb", DeviceIds: []string{"MIG-unknown"}},
		}}}},
	}}})
	s := New(Options{Inventory: inv, KubeletSocket: sock})
	err := s.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GPU-elsewhere") || !strings.Contains(err.Error(), "MIG-unknown") {
		t.Errorf("err = %v", err)
	}
	if as := s.Allocations(); len(as) != 1 || as[0].GPUIndex != 0 || as[0].Pod != "p" {
		t.Errorf("allocations = %+v", as)
	}
}

// TestNoKubeletAtDefaultPath: a node without a kubelet is not an error.
func TestNoKubeletAtDefaultPath(t *testing.T) {
	if _, err := os.Stat(DefaultKubeletSocket); err == nil {
		t.Skip("this machine runs a kubelet")
	}
	s := New(Options{Inventory: &collector.Inventory{}})
	if err := s.Refresh(context.Background()); err != nil {
		t.Errorf("refresh on a node without a kubelet: %v", err)
	}
}

// TestSlowKubeletDoesNotSlowCollect: while a refresh waits on a kubelet that does
// not answer, Collect and Allocations return the previous answer at once. The
// order is forced: the kubelet answers only after they returned.
func TestSlowKubeletDoesNotSlowCollect(t *testing.T) {
	inv := &collector.Inventory{GPUs: []collector.GPUInfo{{Index: 0, UUID: "GPU-a"}}}
	sock := filepath.Join(t.TempDir(), "k.sock")
	srv := &kubeletServer{resp: &podresources.ListPodResourcesResponse{PodResources: []*podresources.PodResources{
		{Name: "p", Namespace: "n", Containers: []*podresources.ContainerResources{{Name: "c", Devices: []*podresources.ContainerDevices{
			{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-a"}}}}}},
	}}}
	serveKubelet(t, sock, srv)
	s := New(Options{Inventory: inv, KubeletSocket: sock, Timeout: time.Minute})
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	srv.mu.Lock()
	srv.gate, srv.entered = gate, entered
	srv.mu.Unlock()
	refreshed := make(chan error, 1)
	go func() { refreshed <- s.Refresh(context.Background()) }()
	<-entered // the refresh is inside the kubelet call now
	for i := range 100 {
		got, err := collectAll(t, s)
		if err != nil || len(got) != 1 || len(s.Allocations()) != 1 {
			t.Fatalf("collect %d during the refresh: %v, %v", i, got, err)
		}
	}
	select {
	case err := <-refreshed:
		t.Fatalf("the refresh finished before the kubelet answered: %v", err)
	default:
	}
	close(gate)
	if err := <-refreshed; err != nil {
		t.Fatal(err)
	}
}

// TestSlowProcDoesNotSlowCollect: a /proc read that blocks (a FIFO standing in for
// a hung file system) holds the refresh, not Collect.
func TestSlowProcDoesNotSlowCollect(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, 100, "0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0\n", "", "")
	lib := &fakeNVML{pids: map[int][]uint32{0: {100}}}
	inv := &collector.Inventory{GPUs: []collector.GPUInfo{{Index: 0, UUID: "GPU-0"}}}
	s := New(Options{NVML: lib, Inventory: inv, ProcRoot: root, KubeletSocket: "-"})
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Process 100 is replaced by process 200 whose cgroup read blocks until written.
	lib.pids[0] = []uint32{200}
	dir := filepath.Join(root, "200")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "cgroup")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	refreshed := make(chan error, 1)
	go func() { refreshed <- s.Refresh(context.Background()) }()
	for i := range 100 {
		got, err := collectAll(t, s)
		if err != nil || got[alloc(0, "1", "", "", "")] != 1 {
			t.Fatalf("collect %d during the refresh: %v, %v", i, got, err)
		}
	}
	select {
	case err := <-refreshed:
		t.Fatalf("the refresh finished before /proc answered: %v", err)
	default:
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("0::/system.slice/slurmstepd.scope/job_2/step_0/user/task_0\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-refreshed; err != nil {
		t.Fatal(err)
	}
	if as := s.Allocations(); len(as) != 1 || as[0].JobID != "2" {
		t.Errorf("allocations after the refresh = %+v", as)
	}
}

// TestRun: Run refreshes at once and stops with its context.
func TestRun(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, 100, "0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0\n", "", "")
	lib := &fakeNVML{pids: map[int][]uint32{0: {100}}}
	inv := &collector.Inventory{GPUs: []collector.GPUInfo{{Index: 0, UUID: "GPU-0"}}}
	s := New(Options{NVML: lib, Inventory: inv, ProcRoot: root, KubeletSocket: "-", RefreshEvery: time.Hour})
	if got, err := collectAll(t, s); len(got) != 0 || err != nil || s.Allocations() != nil {
		t.Errorf("before the first refresh: %v, %v", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.Allocations() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Run did not refresh")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
}

// BenchmarkCollect: Collect on a simulated HGX H100 node with all 8 GPUs allocated.
func BenchmarkCollect(b *testing.B) {
	f, n, inv := simNode(b, true)
	for g := range 8 {
		id := fmt.Sprint(1000 + g)
		if err := n.StartJob(simhw.Job{ID: id, Account: "acct", User: "alice", Kind: simhw.JobTraining}, g); err != nil {
			b.Fatal(err)
		}
		if err := n.WriteJobProcDetails(id, 1000, "gpu"); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Advance(time.Second); err != nil {
		b.Fatal(err)
	}
	s := New(Options{NVML: n.NVML(), Inventory: inv, ProcRoot: n.ProcRoot(), KubeletSocket: "-", LookupUser: lookupUser})
	if err := s.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	if len(s.Allocations()) != 8 {
		b.Fatalf("allocations = %+v", s.Allocations())
	}
	samples := 0
	emit := func(telemetry.Sample) { samples++ }
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Collect(context.Background(), emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(samples)/float64(b.N), "samples/op")
}

// BenchmarkRefresh: one background refresh of the same node (NVML and /proc).
func BenchmarkRefresh(b *testing.B) {
	f, n, inv := simNode(b, true)
	for g := range 8 {
		id := fmt.Sprint(1000 + g)
		if err := n.StartJob(simhw.Job{ID: id, Account: "acct", User: "alice", Kind: simhw.JobTraining}, g); err != nil {
			b.Fatal(err)
		}
		if err := n.WriteJobProcDetails(id, 1000, "gpu"); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Advance(time.Second); err != nil {
		b.Fatal(err)
	}
	s := New(Options{NVML: n.NVML(), Inventory: inv, ProcRoot: n.ProcRoot(), KubeletSocket: "-", LookupUser: lookupUser})
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Refresh(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
