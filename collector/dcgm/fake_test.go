package dcgm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// fakeLib is a library that behaves like go-dcgm's contract: any call but Connect
// made without a successful Connect is a violation (go-dcgm would crash the
// process); the fake records it and fails the test.
type fakeLib struct {
	t testing.TB

	mu         sync.Mutex
	connected  bool
	connects   int
	disconns   int
	violations []string

	connectErr  error
	block       chan struct{} // Connect waits for it when non-nil
	gpus        []godcgm.Device
	watchErr    error
	healthWErr  error
	values      []godcgm.FieldValue_v2
	latestErr   error
	health      godcgm.HealthResponse
	healthErr   error
	watchedFlds []godcgm.Short
}

func (f *fakeLib) check(call string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.connected {
		f.violations = append(f.violations, call)
		f.t.Errorf("%s called without a successful Connect: go-dcgm would crash here", call)
		return false
	}
	return true
}

func (f *fakeLib) Connect(bool, string) error {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block != nil {
		<-block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connects++
	if f.connected {
		f.t.Error("Connect while connected")
	}
	if f.connectErr != nil {
		return f.connectErr
	}
	f.connected = true
	return nil
}

func (f *fakeLib) Disconnect() error {
	if !f.check("Disconnect") {
		return errors.New("not connected")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connected = false
	f.disconns++
	return nil
}

func (f *fakeLib) GPUs() ([]godcgm.Device, error) {
	if !f.check("GPUs") {
		return nil, errors.New("not connected")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gpus, nil
}

func (f *fakeLib) WatchFields(_ []uint, fields []godcgm.Short, _ time.Duration) error {
	if !f.check("WatchFields") {
		return errors.New("not connected")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchedFlds = fields
	return f.watchErr
}

func (f *fakeLib) WatchHealth([]uint, godcgm.HealthSystem) error {
	if !f.check("WatchHealth") {
		return errors.New("not connected")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.healthWErr
}

func (f *fakeLib) Latest([]uint, []godcgm.Short) ([]godcgm.FieldValue_v2, error) {
	if !f.check("Latest") {
		return nil, errors.New("not connected")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.values, f.latestErr
}

func (f *fakeLib) Health() (godcgm.HealthResponse, error) {
	if !f.check("Health") {
		return godcgm.HealthResponse{}, errors.New("not connected")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health, f.healthErr
}

func (f *fakeLib) set(fn func(f *fakeLib)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeLib) counts() (connects, disconns int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects, f.disconns
}

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC)} }
func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// logBuf is a logger that records every message at debug level and above.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func newLog() (*logBuf, *slog.Logger) {
	l := &logBuf{}
	return l, slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// inventory is two GPUs whose NVML order is the reverse of DCGM's ids in
// twoGPUs, so a test sees the UUID mapping at work.
func inventory() *collector.Inventory {
	return &collector.Inventory{Node: "node-01", GPUs: []collector.GPUInfo{
		{Index: 0, UUID: "GPU-aaaaaaaa-0000-0000-0000-000000000000"},
		{Index: 1, UUID: "GPU-bbbbbbbb-0000-0000-0000-000000000000"},
	}}
}

var twoGPUs = []godcgm.Device{
	{GPU: 0, UUID: "GPU-bbbbbbbb-0000-0000-0000-000000000000"}, // NVML index 1
	{GPU: 1, UUID: "GPU-aaaaaaaa-0000-0000-0000-000000000000"}, // NVML index 0
}

// fv builds a FieldValue_v2 the way go-dcgm fills it.
func fv(gpu uint, id godcgm.Short, v any, ts int64) godcgm.FieldValue_v2 {
	out := godcgm.FieldValue_v2{Version: 2, EntityGroupId: godcgm.FE_GPU, EntityID: gpu, FieldID: id, TS: ts}
	switch x := v.(type) {
	case float64:
		out.FieldType = godcgm.DCGM_FT_DOUBLE
		binary.LittleEndian.PutUint64(out.Value[:], math.Float64bits(x))
	case int64:
		out.FieldType = godcgm.DCGM_FT_INT64
		binary.LittleEndian.PutUint64(out.Value[:], uint64(x))
	case string:
		out.FieldType = godcgm.DCGM_FT_STRING
		copy(out.Value[:], x)
	}
	return out
}

// collect runs Collect and returns the samples and error.
func collect(t testing.TB, ctx context.Context, s *Source) ([]telemetry.Sample, error) {
	t.Helper()
	var out []telemetry.Sample
	err := s.Collect(ctx, func(x telemetry.Sample) { out = append(out, x) })
	return out, err
}
