package attribution

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Defaults for Options fields left at zero.
const (
	DefaultRefreshEvery = 10 * time.Second
	DefaultTimeout      = 5 * time.Second
	DefaultProcRoot     = "/proc"
)

// Options configure the attribution source.
type Options struct {
	// NVML lists each GPU's processes; nil turns process (Slurm) attribution off.
	// The caller owns it (Init and Shutdown).
	NVML nvml.Interface
	// Inventory maps GPU UUIDs to NVML indexes and lists the GPUs to ask.
	Inventory *collector.Inventory
	// ProcRoot is where /proc is mounted (DefaultProcRoot); a containerized agent
	// needs the host's (hostPID, or /host/proc).
	ProcRoot string
	// KubeletSocket is the kubelet's pod-resources socket; "" means
	// DefaultKubeletSocket, "-" turns Kubernetes attribution off. An absent socket
	// at the default path means the node runs no kubelet and is not an error; at
	// an explicit path, or once it has answered, it is.
	KubeletSocket string
	// RefreshEvery is the cache's refresh period (DefaultRefreshEvery).
	RefreshEvery time.Duration
	// Timeout bounds one kubelet call (DefaultTimeout).
	Timeout time.Duration
	// Logger receives refresh failures (once per distinct error); nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// LookupUser resolves a uid to a user name; nil means os/user. Results are
	// cached for the life of the source.
	LookupUser func(uid string) (string, error)
}

// cache is one refresh's answer; immutable once published.
type cache struct {
	allocs  []collector.Allocation
	samples []telemetry.Sample
	err     error
}

// Source is the attribution source. It implements collector.Source and
// collector.Attributor.
type Source struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	cur atomic.Pointer[cache]

	refreshMu  sync.Mutex // serializes refreshes; guards everything below
	users      map[string]string
	kube       *kubelet
	kubeSeen   bool // the kubelet answered once
	lastProcs  procResult
	lastPods   []collector.Allocation
	lastLogged string
}

// procResult is the process side of a refresh.
type procResult struct {
	allocs []collector.Allocation
	counts map[int]int // processes per GPU index, for the GPUs NVML answered
}

// New returns the attribution source. Start Run in a goroutine; until its first
// refresh, Collect emits nothing.
func New(opts Options) *Source {
	if opts.ProcRoot == "" {
		opts.ProcRoot = DefaultProcRoot
	}
	if opts.KubeletSocket == "" {
		opts.KubeletSocket = DefaultKubeletSocket
	}
	if opts.RefreshEvery <= 0 {
		opts.RefreshEvery = DefaultRefreshEvery
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s := &Source{opts: opts, log: opts.Logger, now: opts.Now, users: map[string]string{}}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.opts.LookupUser == nil {
		s.opts.LookupUser = func(uid string) (string, error) {
			u, err := user.LookupId(uid)
			if err != nil {
				return "", err
			}
			return u.Username, nil
		}
	}
	return s
}

// Name returns "attribution".
func (s *Source) Name() string { return string(telemetry.SourceAttribution) }

// Collect emits the cached gpuwatch_gpu_allocation_info and gpuwatch_gpu_processes
// series and returns the last refresh's error. It never blocks.
func (s *Source) Collect(_ context.Context, emit func(telemetry.Sample)) error {
	c := s.cur.Load()
	if c == nil {
		return nil
	}
	for _, x := range c.samples {
		emit(x)
	}
	return c.err
}

// Allocations returns the cached allocations, by GPU index. It never blocks. The
// PIDs slices are shared and must not be modified.
func (s *Source) Allocations() []collector.Allocation {
	c := s.cur.Load()
	if c == nil {
		return nil
	}
	return slices.Clone(c.allocs)
}

// Run refreshes the cache at once and then every RefreshEvery until ctx ends.
func (s *Source) Run(ctx context.Context) error {
	t := time.NewTicker(s.opts.RefreshEvery)
	defer t.Stop()
	for {
		_ = s.Refresh(ctx)
		select {
		case <-ctx.Done():
			s.refreshMu.Lock()
			if s.kube != nil {
				_ = s.kube.close()
				s.kube = nil
			}
			s.refreshMu.Unlock()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Refresh rebuilds the cache now and returns its error (also what Collect
// returns until the next refresh). A part that fails keeps its last good answer.
func (s *Source) Refresh(ctx context.Context) error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	now := s.now()
	var errs []error
	if s.opts.NVML != nil {
		pr, err := s.refreshProcs(now)
		if pr.counts != nil {
			s.lastProcs = pr
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if s.opts.KubeletSocket != "-" {
		pods, answered, err := s.refreshPods(ctx, now)
		if answered {
			s.lastPods = pods
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		err = fmt.Errorf("attribution: %w", err)
		if msg := err.Error(); msg != s.lastLogged {
			s.log.Warn("attribution refresh failed; keeping the last good answer", "err", err)
			s.lastLogged = msg
		}
	} else {
		s.lastLogged = ""
	}
	s.publish(now, err)
	return err
}

// publish builds and stores the cache.
func (s *Source) publish(now time.Time, err error) {
	allocs := append(slices.Clone(s.lastProcs.allocs), s.lastPods...)
	slices.SortStableFunc(allocs, func(a, b collector.Allocation) int {
		return cmp.Or(cmp.Compare(a.GPUIndex, b.GPUIndex), cmp.Compare(a.JobID, b.JobID),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Container, b.Container))
	})
	c := &cache{allocs: allocs, err: err}
	idx := make([]int, 0, len(s.lastProcs.counts))
	for i := range s.lastProcs.counts {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		c.samples = append(c.samples, telemetry.Sample{
			Name:   telemetry.MetricGPUProcesses,
			Labels: telemetry.Labels{{Name: telemetry.LabelGPUIndex, Value: strconv.Itoa(i)}},
			Value:  float64(s.lastProcs.counts[i]),
			Time:   now,
		})
	}
	for _, a := range allocs {
		c.samples = append(c.samples, telemetry.Sample{
			Name: telemetry.MetricGPUAllocationInfo,
			Labels: telemetry.NewLabels(
				telemetry.LabelGPUIndex, strconv.Itoa(a.GPUIndex),
				telemetry.LabelJobID, a.JobID,
				telemetry.LabelAccount, a.Account,
				telemetry.LabelUser, a.User,
				telemetry.LabelPartition, a.Partition,
				telemetry.LabelPod, a.Pod,
				telemetry.LabelNamespace, a.Namespace,
				telemetry.LabelContainer, a.Container,
			),
			Value: 1,
			Time:  a.Observed,
		})
	}
	s.cur.Store(c)
}

// refreshProcs asks NVML for each GPU's processes and /proc for their jobs. A GPU
// NVML cannot answer for loses its count and allocations only.
func (s *Source) refreshProcs(now time.Time) (procResult, error) {
	res := procResult{counts: map[int]int{}}
	var errs []error
	procs := map[uint32]procInfo{}
	if s.opts.Inventory == nil {
		return procResult{}, errors.New("no GPU inventory")
	}
	for _, g := range s.opts.Inventory.GPUs {
		if g.Lost {
			continue
		}
		pids, err := s.gpuPIDs(g)
		if errors.Is(err, errGPULost) {
			// Lost since discovery: like the NVML source, not an error of this
			// source (gpuwatch_gpu_lost says it); the GPU has no count.
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res.counts[g.Index] = len(pids)
		// Group the GPU's processes by job (or, outside Slurm, by owner).
		byKey := map[string]*collector.Allocation{}
		var keys []string
		for _, pid := range pids {
			p, ok := procs[pid]
			if !ok {
				var err error
				p, err = readProc(s.opts.ProcRoot, pid)
				if err != nil {
					// The process may have exited since NVML listed it.
					s.log.Debug("attribution: process unreadable", "gpu_index", g.Index, "err", err)
					continue
				}
				procs[pid] = p
			}
			name := p.User
			if name == "" && p.UID != "" {
				name = s.userName(p.UID)
			}
			key := "job:" + p.JobID
			if p.JobID == "" {
				key = "user:" + name
			}
			a, ok := byKey[key]
			if !ok {
				a = &collector.Allocation{GPUIndex: g.Index, JobID: p.JobID, User: name,
					Account: p.Account, Partition: p.Partition, Observed: now}
				byKey[key] = a
				keys = append(keys, key)
			}
			a.PIDs = append(a.PIDs, pid)
		}
		slices.Sort(keys)
		for _, k := range keys {
			res.allocs = append(res.allocs, *byKey[k])
		}
	}
	return res, errors.Join(errs...)
}

// errGPULost is gpuPIDs' answer for a GPU NVML reports lost.
var errGPULost = errors.New("GPU is lost")

// gpuPIDs lists the compute and graphics processes on a GPU, each once.
func (s *Source) gpuPIDs(g collector.GPUInfo) ([]uint32, error) {
	dev, ret := s.opts.NVML.DeviceGetHandleByIndex(g.Index)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("GPU %d: DeviceGetHandleByIndex: %v", g.Index, nvml.ErrorString(ret))
	}
	compute, ret := dev.GetComputeRunningProcesses()
	if ret == nvml.ERROR_GPU_IS_LOST {
		return nil, errGPULost
	}
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("GPU %d: GetComputeRunningProcesses: %v", g.Index, nvml.ErrorString(ret))
	}
	var pids []uint32
	for _, p := range compute {
		pids = append(pids, p.Pid)
	}
	// Graphics processes are optional: many data-center GPUs answer NOT_SUPPORTED.
	if graphics, ret := dev.GetGraphicsRunningProcesses(); ret == nvml.SUCCESS {
		for _, p := range graphics {
			pids = append(pids, p.Pid)
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// userName resolves a uid once; a uid with no name stays numeric.
func (s *Source) userName(uid string) string {
	if n, ok := s.users[uid]; ok {
		return n
	}
	n, err := s.opts.LookupUser(uid)
	if err != nil || n == "" {
		n = uid
	}
	s.users[uid] = n
	return n
}

// refreshPods asks the kubelet which containers hold which GPUs. answered is true
// when the kubelet answered (or there is none), so out replaces the last answer; a
// device that is on no GPU of the inventory is left out and named in err.
func (s *Source) refreshPods(ctx context.Context, now time.Time) (out []collector.Allocation, answered bool, err error) {
	sock := s.opts.KubeletSocket
	if _, err := os.Stat(sock); err != nil {
		if errors.Is(err, os.ErrNotExist) && sock == DefaultKubeletSocket && !s.kubeSeen {
			return nil, true, nil // no kubelet on this node
		}
		return nil, false, fmt.Errorf("kubelet pod-resources socket: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	devs, err := s.listPods(cctx, sock)
	if err != nil && status.Code(err) == codes.Unavailable {
		// A kubelet restart leaves the old connection broken: dial again at once.
		devs, err = s.listPods(cctx, sock)
	}
	if err != nil {
		return nil, false, err
	}
	s.kubeSeen = true
	var unknown []string
	seen := map[string]bool{}
	for _, d := range devs {
		idx, ok := s.gpuIndex(d.DeviceID)
		if !ok {
			unknown = append(unknown, d.DeviceID)
			continue
		}
		key := strconv.Itoa(idx) + "|" + d.Namespace + "|" + d.Pod + "|" + d.Container
		if seen[key] {
			continue // two MIG devices of one GPU in one container
		}
		seen[key] = true
		out = append(out, collector.Allocation{GPUIndex: idx, Pod: d.Pod, Namespace: d.Namespace,
			Container: d.Container, Observed: now})
	}
	if len(unknown) > 0 {
		return out, true, fmt.Errorf("kubelet pod-resources: devices on no GPU of the inventory: %s", strings.Join(unknown, ", "))
	}
	return out, true, nil
}

// listPods calls List on the kubelet connection, dialing it first if needed; a
// failed call drops the connection so the next one starts afresh.
func (s *Source) listPods(ctx context.Context, sock string) ([]podDevice, error) {
	if s.kube == nil {
		k, err := newKubelet(sock)
		if err != nil {
			return nil, err
		}
		s.kube = k
	}
	devs, err := s.kube.list(ctx)
	if err != nil {
		_ = s.kube.close()
		s.kube = nil
	}
	return devs, err
}

// gpuIndex maps a GPU UUID, or a MIG device UUID through NVML to its parent GPU, to
// the NVML index.
func (s *Source) gpuIndex(uuid string) (int, bool) {
	if g, ok := s.opts.Inventory.ByUUID(uuid); ok {
		return g.Index, true
	}
	if !strings.HasPrefix(uuid, "MIG-") || s.opts.NVML == nil {
		return 0, false
	}
	mig, ret := s.opts.NVML.DeviceGetHandleByUUID(uuid)
	if ret != nvml.SUCCESS {
		return 0, false
	}
	parent, ret := mig.GetDeviceHandleFromMigDeviceHandle()
	if ret != nvml.SUCCESS {
		return 0, false
	}
	pu, ret := parent.GetUUID()
	if ret != nvml.SUCCESS {
		return 0, false
	}
	g, ok := s.opts.Inventory.ByUUID(pu)
	return g.Index, ok
}
