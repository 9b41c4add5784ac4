package dcgm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Defaults for Options fields left at zero.
const (
	DefaultAddress     = "localhost:5555"
	DefaultRetryEvery  = time.Minute
	DefaultUpdateEvery = 5 * time.Second
)

// Options configure the DCGM source.
type Options struct {
	// Address is the host engine: "host:port" (DefaultAddress), "unix:///path" or
	// "/path" of its unix socket. Ignored when Embedded.
	Address string
	// Embedded starts a host engine inside the agent instead of connecting to one
	// (needs root and libdcgm.so.4; a node running nv-hostengine should connect).
	Embedded bool
	// Inventory maps DCGM's GPUs to NVML indexes by UUID. nil takes DCGM's GPU id as
	// the index.
	Inventory *collector.Inventory
	// Logger receives the one message saying DCGM is not reachable, and connection
	// changes; nil discards.
	Logger *slog.Logger
	// RetryEvery is the least time between two connection attempts
	// (DefaultRetryEvery).
	RetryEvery time.Duration
	// UpdateEvery is how often DCGM samples the profiling fields
	// (DefaultUpdateEvery); set it to the agent's collection interval.
	UpdateEvery time.Duration
	// HealthSystems is the bitmask of DCGM health systems to watch
	// (DCGM_HEALTH_WATCH_*); 0 means DefaultHealthSystems.
	HealthSystems uint
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Library is DCGM: nil is go-dcgm over libdcgm.so.4 (a real node); a
	// simulated node passes its collector/simhw DCGM.
	Library Library
}

// state is where the source's connection to DCGM is. The library is called only in
// stateUp (by Collect and Close) and by a connection attempt in stateConnecting;
// every call but Connect only after Connect succeeded.
type state int

const (
	stateDown       state = iota // no connection; the next attempt is due at nextTry
	stateConnecting              // an attempt runs in the background
	stateUp                      // connected, fields and health watched
	stateClosed                  // Close was called
)

func (s state) String() string {
	return [...]string{"down", "connecting", "up", "closed"}[s]
}

// ErrClosed is returned by Collect after Close.
var ErrClosed = errors.New("dcgm: source closed")

// Source is the DCGM source. It implements collector.Source. go-dcgm keeps one
// connection per process, so an agent has at most one Source.
type Source struct {
	opts   Options
	lib    *guard // called only with libMu held
	log    *slog.Logger
	now    func() time.Time
	fields []godcgm.Short
	names  map[godcgm.Short]string

	mu        sync.Mutex
	state     state
	nextTry   time.Time
	downErr   error         // what Collect returns while down
	said      bool          // the outage was logged
	attempt   chan struct{} // closed when the running attempt ends
	attempts  int           // connection attempts made
	gpus      gpuMap
	labels    map[uint]telemetry.Labels // by DCGM GPU id
	ids       []uint
	profiling bool // the profiling fields are watched
	health    bool // the health watches are set
	incidents []Incident

	libMu sync.Mutex // serializes library calls
}

// New returns the DCGM source over opts.Library (go-dcgm when nil). It does not
// connect: the first Collect does, in the background.
func New(opts Options) *Source {
	if opts.Library == nil {
		return newSource(opts, &goDCGM{})
	}
	return newSource(opts, opts.Library)
}

func newSource(opts Options, lib Library) *Source {
	if opts.Address == "" {
		opts.Address = DefaultAddress
	}
	if opts.RetryEvery <= 0 {
		opts.RetryEvery = DefaultRetryEvery
	}
	if opts.UpdateEvery <= 0 {
		opts.UpdateEvery = DefaultUpdateEvery
	}
	if opts.HealthSystems == 0 {
		opts.HealthSystems = DefaultHealthSystems
	}
	s := &Source{opts: opts, lib: &guard{lib: lib}, log: opts.Logger, now: opts.Now,
		names: map[godcgm.Short]string{}}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	for _, f := range profilingFields() {
		s.fields = append(s.fields, f.ID)
		s.names[f.ID] = f.Name
	}
	return s
}

// Name returns "dcgm".
func (s *Source) Name() string { return string(telemetry.SourceDCGM) }

// where names the host engine in messages.
func (s *Source) where() string {
	if s.opts.Embedded {
		return "embedded host engine"
	}
	return "host engine at " + s.opts.Address
}

// Collect emits the profiling fields of every GPU and refreshes the health
// incidents. While DCGM is not reachable it returns the cached error at once;
// when a connection attempt is due it starts one and waits for it at most until
// ctx ends.
func (s *Source) Collect(ctx context.Context, emit func(telemetry.Sample)) error {
	s.mu.Lock()
	switch s.state {
	case stateClosed:
		s.mu.Unlock()
		return ErrClosed
	case stateDown:
		if s.now().Before(s.nextTry) {
			err := s.downErr
			s.mu.Unlock()
			return err
		}
		s.startAttemptLocked()
	}
	ch := s.attempt
	st := s.state
	s.mu.Unlock()
	if st == stateConnecting {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("dcgm: still connecting to the %s: %w", s.where(), ctx.Err())
		}
		s.mu.Lock()
		st = s.state
		err := s.downErr
		s.mu.Unlock()
		switch st {
		case stateClosed:
			return ErrClosed
		case stateDown:
			return err
		}
	}
	return s.read(emit)
}

// startAttemptLocked starts a connection attempt; s.mu is held.
func (s *Source) startAttemptLocked() {
	s.state = stateConnecting
	s.attempts++
	ch := make(chan struct{})
	s.attempt = ch
	go s.connect(ch)
}

// connect is one connection attempt. Only Connect is called until it succeeds;
// after that, any failure disconnects before going down.
func (s *Source) connect(done chan struct{}) {
	defer close(done)
	s.libMu.Lock()
	defer s.libMu.Unlock()
	if err := s.lib.Connect(s.opts.Embedded, s.opts.Address); err != nil {
		s.down(fmt.Errorf("dcgm: %s not reachable (next attempt in %s): %w", s.where(), s.opts.RetryEvery, err), false)
		return
	}
	fail := func(err error) {
		if derr := s.lib.Disconnect(); derr != nil {
			s.log.Debug("dcgm disconnect failed", "err", derr)
		}
		s.down(err, false)
	}
	list, err := s.lib.GPUs()
	if err != nil {
		fail(fmt.Errorf("dcgm: listing the GPUs of the %s: %w", s.where(), err))
		return
	}
	gpus, merr := mapGPUs(list, s.opts.Inventory)
	if len(gpus) == 0 {
		fail(fmt.Errorf("dcgm: no GPU of the %s matches the NVML inventory (%d DCGM GPUs; %v)", s.where(), len(list), merr))
		return
	}
	if merr != nil {
		s.log.Warn("dcgm: some GPUs left out", "err", merr)
	}
	ids := gpus.ids()
	profiling := true
	if err := s.lib.WatchFields(ids, s.fields, s.opts.UpdateEvery); err != nil {
		profiling = false
		s.log.Warn("dcgm: profiling fields not available; health watches only", "err", err)
	}
	health := true
	if err := s.lib.WatchHealth(ids, godcgm.HealthSystem(s.opts.HealthSystems)); err != nil {
		health = false
		if !profiling {
			fail(fmt.Errorf("dcgm: neither profiling fields nor health watches could be set up on the %s: %w", s.where(), err))
			return
		}
		s.log.Warn("dcgm: health watches not available", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateClosed {
		if err := s.lib.Disconnect(); err != nil {
			s.log.Debug("dcgm disconnect failed", "err", err)
		}
		return
	}
	s.labels = gpus.labels()
	s.state, s.gpus, s.ids, s.profiling, s.health, s.said, s.downErr = stateUp, gpus, ids, profiling, health, false, nil
	s.log.Info("dcgm: connected", "to", s.where(), "gpus", len(ids), "profiling", profiling, "health_watches", health)
}

// down records an outage: the state goes down, the next attempt is due RetryEvery
// from now, and the first failure of an outage is logged. lost says the source was
// up. s.mu must not be held.
func (s *Source) down(err error, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.incidents = nil
	s.downErr = err
	s.nextTry = s.now().Add(s.opts.RetryEvery)
	if s.state != stateClosed {
		s.state = stateDown
	}
	if s.said {
		return
	}
	s.said = true
	if lost {
		s.log.Warn("dcgm: lost the host engine; DCGM profiling fields and health watches are off until it is back",
			"err", err, "retry_every", s.opts.RetryEvery)
		return
	}
	s.log.Warn("dcgm: not available; DCGM profiling fields and health watches are off, NVML carries on",
		"err", err, "retry_every", s.opts.RetryEvery)
}

// read collects from a connected DCGM.
func (s *Source) read(emit func(telemetry.Sample)) error {
	s.libMu.Lock()
	s.mu.Lock()
	if s.state != stateUp { // closed meanwhile
		s.mu.Unlock()
		s.libMu.Unlock()
		return ErrClosed
	}
	gpus, labels, ids, profiling, health, prev := s.gpus, s.labels, s.ids, s.profiling, s.health, s.incidents
	s.mu.Unlock()
	var (
		values     []godcgm.FieldValue_v2
		resp       godcgm.HealthResponse
		verr, herr error
	)
	if profiling {
		values, verr = s.lib.Latest(ids, s.fields)
	}
	if health {
		resp, herr = s.lib.Health()
	}
	if (verr != nil || !profiling) && (herr != nil || !health) {
		// Nothing answers: treat the connection as lost and start over later.
		if derr := s.lib.Disconnect(); derr != nil {
			s.log.Debug("dcgm disconnect failed", "err", derr)
		}
		s.libMu.Unlock()
		err := fmt.Errorf("dcgm: lost the %s (next attempt in %s): %w", s.where(), s.opts.RetryEvery, errors.Join(verr, herr))
		s.down(err, true)
		return err
	}
	s.libMu.Unlock()
	emitValues(values, labels, s.names, emit)
	var errs []error
	if verr != nil {
		errs = append(errs, fmt.Errorf("dcgm: reading profiling fields: %w", verr))
	}
	if herr != nil {
		errs = append(errs, fmt.Errorf("dcgm: health check: %w", herr))
	} else if health {
		byKey := make(map[string]Incident, len(prev))
		for _, p := range prev {
			byKey[p.key()] = p
		}
		cur := incidents(resp, gpus, byKey, s.now())
		s.mu.Lock()
		s.incidents = cur
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Incidents returns what the last health check reported; nil while DCGM is not
// reachable. Each call returns a fresh slice.
func (s *Source) Incidents() []Incident {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.incidents)
}

// Up reports whether the source is connected to DCGM.
func (s *Source) Up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateUp
}

// Close disconnects from DCGM, waiting for a connection attempt in flight. Collect
// returns ErrClosed afterwards.
func (s *Source) Close() error {
	s.mu.Lock()
	prev, ch := s.state, s.attempt
	s.state = stateClosed
	s.incidents = nil
	s.mu.Unlock()
	if prev == stateConnecting {
		<-ch // the attempt sees stateClosed and disconnects if it got through
	}
	s.libMu.Lock()
	defer s.libMu.Unlock()
	if !s.lib.up {
		return nil
	}
	return s.lib.Disconnect()
}
