package infiniband

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Options configures the source. The zero value reads every device under /sys.
type Options struct {
	// SysfsRoot is the directory that stands for /sys ("/sys" when empty); the
	// source reads <SysfsRoot>/class/infiniband.
	SysfsRoot string
	// DeviceInclude, when not empty, is a regular expression a device name must
	// match to be read; DeviceExclude one it must not match. Both are unanchored,
	// like node_exporter's --collector.infiniband.device-include/-exclude. An
	// excluded device is never opened.
	DeviceInclude string
	DeviceExclude string
}

// Source reads InfiniBand ports from sysfs. Collect and CollectHealth may run
// concurrently with each other; Close releases what the source keeps open.
//
// Between collections it keeps the device list (listed again by every Collect,
// and by CollectHealth when there is none, or the last listing met errors) and
// the health schedule's attribute files, open: reading an open sysfs attribute
// again from offset 0 asks the driver again, so a health collection costs one
// pread per file rather than an open, a read and a close. A file removed or
// replaced behind the source (its link count drops to 0, as when a simulated
// node renames a new file over it) or that fails a read is opened again.
type Source struct {
	classDir         string // <SysfsRoot>/class/infiniband
	include, exclude *regexp.Regexp

	mu   sync.Mutex // guards devs and the files kept open in it
	devs []device   // the last clean listing; nil: list at the next collection
}

var (
	_ collector.Source          = (*Source)(nil)
	_ collector.HealthCollector = (*Source)(nil)
)

// New returns the source. The error names a device pattern that does not compile.
func New(opts Options) (*Source, error) {
	root := opts.SysfsRoot
	if root == "" {
		root = "/sys"
	}
	s := &Source{classDir: filepath.Join(root, "class", "infiniband")}
	var err error
	if opts.DeviceInclude != "" {
		if s.include, err = regexp.Compile(opts.DeviceInclude); err != nil {
			return nil, fmt.Errorf("infiniband: device include pattern: %w", err)
		}
	}
	if opts.DeviceExclude != "" {
		if s.exclude, err = regexp.Compile(opts.DeviceExclude); err != nil {
			return nil, fmt.Errorf("infiniband: device exclude pattern: %w", err)
		}
	}
	return s, nil
}

// Name returns "infiniband".
func (s *Source) Name() string { return string(telemetry.SourceInfiniBand) }

// counterFile is one file of a port's counters/ directory and the series it feeds.
type counterFile struct {
	file   string // under the port's directory
	metric string
	scale  uint64 // 4 for the data counters (4-byte words), else 1
	family telemetry.MetricFamily
}

// healthCounters are the error counters read on the health schedule.
var healthCounters = []counterFile{
	{"counters/link_downed", telemetry.NodeIBLinkDownedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/link_error_recovery", telemetry.NodeIBLinkErrorRecoveryTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/port_rcv_errors", telemetry.NodeIBPortErrorsReceivedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/port_rcv_discards", telemetry.NodeIBPortDiscardsReceivedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/port_xmit_discards", telemetry.NodeIBPortDiscardsTransmittedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/port_rcv_constraint_errors", telemetry.NodeIBPortConstraintErrorsReceivedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/port_xmit_constraint_errors", telemetry.NodeIBPortConstraintErrorsTransmittedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/symbol_error", telemetry.MetricIBSymbolErrorsTotal, 1, telemetry.FamilyGPUWatch},
	{"counters/local_link_integrity_errors", telemetry.MetricIBLocalLinkIntegrityErrorsTotal, 1, telemetry.FamilyGPUWatch},
	{"counters/excessive_buffer_overrun_errors", telemetry.MetricIBExcessiveBufferOverrunErrorsTotal, 1, telemetry.FamilyGPUWatch},
	{"counters/port_rcv_remote_physical_errors", telemetry.MetricIBRemotePhysicalErrorsTotal, 1, telemetry.FamilyGPUWatch},
}

// trafficCounters are the data and packet counters read on the full schedule.
var trafficCounters = []counterFile{
	{"counters/port_rcv_data", telemetry.NodeIBPortDataReceivedBytesTotal, 4, telemetry.FamilyNodeExporter},
	{"counters/port_xmit_data", telemetry.NodeIBPortDataTransmittedBytesTotal, 4, telemetry.FamilyNodeExporter},
	{"counters/port_rcv_packets", telemetry.NodeIBPortPacketsReceivedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/port_xmit_packets", telemetry.NodeIBPortPacketsTransmittedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/unicast_rcv_packets", telemetry.NodeIBUnicastPacketsReceivedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/unicast_xmit_packets", telemetry.NodeIBUnicastPacketsTransmittedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/multicast_rcv_packets", telemetry.NodeIBMulticastPacketsReceivedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/multicast_xmit_packets", telemetry.NodeIBMulticastPacketsTransmittedTotal, 1, telemetry.FamilyNodeExporter},
	{"counters/port_xmit_wait", telemetry.NodeIBPortTransmitWaitTotal, 1, telemetry.FamilyNodeExporter},
}

// hwCounterSkip are hw_counters files that are settings, not counters: lifespan is
// the counters' refresh period in milliseconds.
var hwCounterSkip = map[string]bool{"lifespan": true}

// reader reads one collection's files with a shared buffer and gathers the errors.
type reader struct {
	buf  [256]byte
	errs []error
}

// maxErrors bounds the errors one collection reports; the rest are counted.
const maxErrors = 16

func (r *reader) fail(err error) {
	r.errs = append(r.errs, err)
}

func (r *reader) err() error {
	if len(r.errs) <= maxErrors {
		return errors.Join(r.errs...)
	}
	more := fmt.Errorf("infiniband: %d more errors", len(r.errs)-maxErrors)
	return errors.Join(append(r.errs[:maxErrors:maxErrors], more)...)
}

// read returns the content of a small sysfs file, or ok=false when the file is
// absent or the driver does not support it (ENOENT, EINVAL, EOPNOTSUPP, ENODATA),
// or after recording an error naming the file. The slice is valid until the next
// read.
func (r *reader) read(path string) ([]byte, bool) {
	return r.readAt(atFDCWD, "", path)
}

// atFDCWD is AT_FDCWD: a path for openat relative to the working directory.
const atFDCWD = -0x64

// readAt is read of the file name under the directory open as dirfd, whose path
// (for errors) is dir.
//
// It is three system calls (open, one read, close), not os.Open's six: sysfs
// returns an attribute whole in the first read, and the health schedule reads
// about a hundred of them every second. Opening them relative to their port's
// directory spares the kernel walking the whole path (through the class
// directory's symlink on real sysfs) for each. A file that fills the buffer is
// too long.
func (r *reader) readAt(dirfd int, dir, name string) ([]byte, bool) {
	var fd int
	var err error = syscall.EINTR
	for err == syscall.EINTR {
		fd, err = syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		if !benign(err) {
			r.fail(&fs.PathError{Op: "open", Path: filepath.Join(dir, name), Err: err})
		}
		return nil, false
	}
	n := 0
	err = syscall.EINTR
	for err == syscall.EINTR {
		n, err = syscall.Read(fd, r.buf[:])
	}
	syscall.Close(fd)
	switch {
	case err != nil:
		if !benign(err) {
			r.fail(&fs.PathError{Op: "read", Path: filepath.Join(dir, name), Err: err})
		}
		return nil, false
	case n == len(r.buf):
		r.fail(fmt.Errorf("read %s: more than %d bytes", filepath.Join(dir, name), len(r.buf)))
		return nil, false
	}
	return r.buf[:n], true
}

// readKept is readAt of the file name under dir through f, a file kept open
// between collections: it is opened when it is not, read again from offset 0
// when it is, and opened again first when it was removed or replaced (link count
// 0) or when reading it fails (ENODEV once its device is gone: a driver reload
// makes a new one). A file that fails is closed, to be opened again next time.
func (r *reader) readKept(f *keptFile, dir, name string) ([]byte, bool) {
	kept := f.fd >= 0
	if kept {
		var st syscall.Stat_t
		if err := syscall.Fstat(f.fd, &st); err != nil || st.Nlink == 0 {
			f.close()
			kept = false
		}
	}
	for {
		fd := f.fd
		if fd < 0 {
			var err error = syscall.EINTR
			for err == syscall.EINTR {
				fd, err = syscall.Open(filepath.Join(dir, name), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			}
			if err != nil {
				if !benign(err) {
					r.fail(&fs.PathError{Op: "open", Path: filepath.Join(dir, name), Err: err})
				}
				return nil, false
			}
			if reserveKept() {
				f.fd = fd
			}
		}
		n := 0
		var err error = syscall.EINTR
		for err == syscall.EINTR {
			n, err = syscall.Pread(fd, r.buf[:], 0)
		}
		if f.fd != fd {
			syscall.Close(fd) // read once: the process's budget of kept files is spent
		}
		switch {
		case err != nil:
			f.close()
			if kept {
				kept = false
				continue // the file kept open may be gone: once more, opened afresh
			}
			if !benign(err) {
				r.fail(&fs.PathError{Op: "read", Path: filepath.Join(dir, name), Err: err})
			}
			return nil, false
		case n == len(r.buf):
			r.fail(fmt.Errorf("read %s: more than %d bytes", filepath.Join(dir, name), len(r.buf)))
			return nil, false
		}
		return r.buf[:n], true
	}
}

// keptBudget bounds the attribute files kept open by every InfiniBand source of
// the process together: a quarter of the process's file-descriptor limit, so that
// keeping files open never starves the process of descriptors for its sockets and
// other files. One agent keeps 14 per port (112 on a node with eight HCAs), far
// below it; a process with many agents (a soak, a test) keeps what fits and reads
// the rest with open, read, close.
var keptBudget struct {
	once sync.Once
	left atomic.Int64
}

// reserveKept takes one slot of keptBudget, or reports that none is left.
func reserveKept() bool {
	keptBudget.once.Do(func() {
		limit := int64(1024)
		var rl syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur > 0 && rl.Cur < 1<<40 {
			limit = int64(rl.Cur)
		}
		keptBudget.left.Store(limit / 4)
	})
	if keptBudget.left.Add(-1) >= 0 {
		return true
	}
	keptBudget.left.Add(1)
	return false
}

// openDir opens a port's directory for readAt, or returns ok=false when it is
// gone (the port's files would all be absent) or after recording why not.
func (r *reader) openDir(dir string) (int, bool) {
	var fd int
	var err error = syscall.EINTR
	for err == syscall.EINTR {
		fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		if !benign(err) {
			r.fail(&fs.PathError{Op: "open", Path: dir, Err: err})
		}
		return -1, false
	}
	return fd, true
}

// benign reports whether err means "this attribute is not there" rather than a
// failure: sysfs answers EINVAL or EOPNOTSUPP for counters a port cannot provide.
func benign(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENODATA)
}

// device is one HCA and its port numbers.
type device struct {
	name  string
	dir   string
	ports []port
}

type port struct {
	num  string // decimal, as the directory is named
	dir  string
	kept []keptFile // the health attributes (healthAttrs), open between collections
}

// keptFile is an attribute file kept open between collections; fd -1: not open.
type keptFile struct{ fd int }

func (f *keptFile) close() {
	if f.fd >= 0 {
		syscall.Close(f.fd)
		f.fd = -1
		keptBudget.left.Add(1)
	}
}

// healthAttrs are the files CollectHealth reads, under a port's directory: its
// state, physical state and rate, then healthCounters.
var healthAttrs = func() []string {
	a := []string{"state", "phys_state", "rate"}
	for _, c := range healthCounters {
		a = append(a, c.file)
	}
	return a
}()

// devices lists the devices that pass the filters, sorted, and each one's ports,
// sorted numerically. It opens nothing inside an excluded device. It returns
// collector.ErrNoDevices when there is no InfiniBand class directory or no device
// passes.
func (s *Source) devices(r *reader) ([]device, error) {
	entries, err := os.ReadDir(s.classDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, collector.ErrNoDevices
	}
	if err != nil {
		return nil, fmt.Errorf("infiniband: %w", err)
	}
	var out []device
	for _, e := range entries {
		name := e.Name()
		if s.include != nil && !s.include.MatchString(name) || s.exclude != nil && s.exclude.MatchString(name) {
			continue
		}
		d := device{name: name, dir: filepath.Join(s.classDir, name)}
		portsDir := filepath.Join(d.dir, "ports")
		pes, err := os.ReadDir(portsDir)
		if err != nil {
			r.fail(fmt.Errorf("infiniband %s: list ports: %w", name, err))
		}
		for _, pe := range pes {
			if _, err := strconv.ParseUint(pe.Name(), 10, 16); err != nil {
				r.fail(fmt.Errorf("infiniband %s: unexpected port directory %q", name, filepath.Join(portsDir, pe.Name())))
				continue
			}
			d.ports = append(d.ports, port{num: pe.Name(), dir: filepath.Join(portsDir, pe.Name())})
		}
		slices.SortFunc(d.ports, func(a, b port) int {
			x, _ := strconv.Atoi(a.num)
			y, _ := strconv.Atoi(b.num)
			return x - y
		})
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, collector.ErrNoDevices
	}
	return out, nil
}

// portLabels returns the label sets of a port for each family.
func portLabels(dev, port string) (nodeExp, own telemetry.Labels) {
	return telemetry.NewLabels(telemetry.NodeExpLabelDevice, dev, telemetry.NodeExpLabelPort, port),
		telemetry.NewLabels(telemetry.LabelIBDevice, dev, telemetry.LabelIBPort, port)
}

// list lists the devices again and keeps the listing when it met no error,
// carrying over the files kept open for ports still there and closing the others.
// s.mu is held.
func (s *Source) list(r *reader) ([]device, error) {
	errs := len(r.errs)
	devs, err := s.devices(r)
	old := map[string][]keptFile{}
	for _, d := range s.devs {
		for _, p := range d.ports {
			old[p.dir] = p.kept
		}
	}
	for _, d := range devs {
		for i := range d.ports {
			p := &d.ports[i]
			if k, ok := old[p.dir]; ok {
				p.kept = k
				delete(old, p.dir)
			} else {
				p.kept = make([]keptFile, len(healthAttrs))
				for j := range p.kept {
					p.kept[j].fd = -1
				}
			}
		}
	}
	for _, k := range old {
		closeKept(k)
	}
	s.devs = nil
	if err == nil && len(r.errs) == errs {
		s.devs = devs
	} else {
		// Not kept: neither are its files (CollectHealth closes those it opens).
		for _, d := range devs {
			for _, p := range d.ports {
				closeKept(p.kept)
			}
		}
	}
	return devs, err
}

func closeKept(k []keptFile) {
	for i := range k {
		k[i].close()
	}
}

// Close closes the files the source keeps open. A later collection opens them
// again.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devs {
		for _, p := range d.ports {
			closeKept(p.kept)
		}
	}
	s.devs = nil
	return nil
}

// CollectHealth emits each port's state, physical state and rate and its error
// counters.
func (s *Source) CollectHealth(ctx context.Context, emit func(telemetry.Sample)) error {
	r := &reader{}
	s.mu.Lock()
	defer s.mu.Unlock()
	devs := s.devs
	if devs == nil {
		var err error
		if devs, err = s.list(r); err != nil {
			return err
		}
		if s.devs == nil {
			// A listing with errors is not kept: its files are not either.
			defer func() {
				for _, d := range devs {
					for _, p := range d.ports {
						closeKept(p.kept)
					}
				}
			}()
		}
	}
	for _, d := range devs {
		if err := ctx.Err(); err != nil {
			r.fail(fmt.Errorf("infiniband: %w", err))
			break
		}
		for _, p := range d.ports {
			ne, own := portLabels(d.name, p.num)
			for i, name := range healthAttrs {
				b, ok := r.readKept(&p.kept[i], p.dir, name)
				if !ok {
					continue
				}
				switch i {
				case 0, 1:
					metric := telemetry.NodeIBStateID
					if i == 1 {
						metric = telemetry.NodeIBPhysicalStateID
					}
					if v, err := parseState(b); err != nil {
						r.fail(fmt.Errorf("read %s: %w", filepath.Join(p.dir, name), err))
					} else {
						emit(telemetry.Sample{Name: metric, Labels: ne, Value: float64(v)})
					}
				case 2:
					if v, err := parseRate(b); err != nil {
						r.fail(fmt.Errorf("read %s: %w", filepath.Join(p.dir, name), err))
					} else {
						emit(telemetry.Sample{Name: telemetry.NodeIBRateBytesPerSecond, Labels: ne, Value: v})
					}
				default:
					r.counter(b, p.dir, healthCounters[i-3], ne, own, emit)
				}
			}
		}
	}
	return r.err()
}

// Collect emits each device's info series, each port's traffic counters and its
// hw_counters.
func (s *Source) Collect(ctx context.Context, emit func(telemetry.Sample)) error {
	r := &reader{}
	s.mu.Lock()
	devs, err := s.list(r)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for _, d := range devs {
		if err := ctx.Err(); err != nil {
			r.fail(fmt.Errorf("infiniband: %w", err))
			break
		}
		// node_infiniband_info: an unreadable attribute leaves its label empty, as
		// procfs does for a missing board_id or hca_type.
		var attrs [3]string
		for i, f := range [...]string{"board_id", "fw_ver", "hca_type"} {
			if b, ok := r.read(filepath.Join(d.dir, f)); ok {
				attrs[i] = string(trim(b))
			}
		}
		emit(telemetry.Sample{Name: telemetry.NodeIBInfo, Value: 1, Labels: telemetry.NewLabels(
			telemetry.NodeExpLabelBoardID, attrs[0], telemetry.NodeExpLabelDevice, d.name,
			telemetry.NodeExpLabelFirmwareVersion, attrs[1], telemetry.NodeExpLabelHCAType, attrs[2])})
		for _, p := range d.ports {
			pd, ok := r.openDir(p.dir)
			if !ok {
				continue
			}
			ne, own := portLabels(d.name, p.num)
			r.counters(pd, p.dir, trafficCounters, ne, own, emit)
			r.hwCounters(pd, d.name, p, emit)
			syscall.Close(pd)
		}
	}
	return r.err()
}

// counters reads the given files of a port's counters/ directory; pd is the port's
// directory, open.
func (r *reader) counters(pd int, portDir string, files []counterFile, ne, own telemetry.Labels, emit func(telemetry.Sample)) {
	for _, c := range files {
		if b, ok := r.readAt(pd, portDir, c.file); ok {
			r.counter(b, portDir, c, ne, own, emit)
		}
	}
}

// counter emits the value of counter file c read as b.
func (r *reader) counter(b []byte, portDir string, c counterFile, ne, own telemetry.Labels, emit func(telemetry.Sample)) {
	v, err := parseCounter(b)
	if errors.Is(err, errNotAvailable) {
		return
	}
	if err != nil {
		r.fail(fmt.Errorf("read %s: %w", filepath.Join(portDir, c.file), err))
		return
	}
	ls := ne
	if c.family == telemetry.FamilyGPUWatch {
		ls = own
	}
	// Multiply in uint64, wrapping like procfs, then convert.
	emit(telemetry.Sample{Name: c.metric, Labels: ls, Value: float64(v * c.scale)})
}

// hwCounters reads every file of a port's hw_counters/ directory (mlx5 and other
// drivers with rdma_hw_stats); pd is the port's directory, open.
func (r *reader) hwCounters(pd int, dev string, p port, emit func(telemetry.Sample)) {
	dir := filepath.Join(p.dir, "hw_counters")
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !benign(err) {
			r.fail(fmt.Errorf("infiniband %s port %s: list hw_counters: %w", dev, p.num, err))
		}
		return
	}
	for _, e := range entries {
		name := e.Name()
		if hwCounterSkip[name] || e.IsDir() {
			continue
		}
		b, ok := r.readAt(pd, p.dir, "hw_counters/"+name)
		if !ok {
			continue
		}
		v, err := parseCounter(b)
		if errors.Is(err, errNotAvailable) {
			continue
		}
		if err != nil {
			r.fail(fmt.Errorf("read %s: %w", filepath.Join(dir, name), err))
			continue
		}
		emit(telemetry.Sample{Name: telemetry.MetricIBHWStatisticTotal, Value: float64(v), Labels: telemetry.NewLabels(
			telemetry.LabelIBDevice, dev, telemetry.LabelIBPort, p.num, telemetry.LabelCounter, name)})
	}
}
