package dcgm

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

var _ collector.Source = (*Source)(nil)

// TestUnreachableSaysOnceAndBacksOff: with no host engine, 100 collections fail
// cheaply, the outage is logged once, and Connect is tried once per RetryEvery.
func TestUnreachableSaysOnceAndBacksOff(t *testing.T) {
	lib := &fakeLib{t: t, connectErr: errors.New("error connecting to nv-hostengine: Host engine connection invalid/disconnected")}
	clk := newClock()
	logs, logger := newLog()
	const retry = time.Minute
	s := newSource(Options{Address: "10.0.0.9:5555", Logger: logger, RetryEvery: retry, Now: clk.now}, lib)
	for i := range 100 {
		got, err := collect(t, context.Background(), s)
		if err == nil || len(got) != 0 {
			t.Fatalf("collect %d: %d samples, err %v; want an error and nothing", i, len(got), err)
		}
		if !strings.Contains(err.Error(), "10.0.0.9:5555") || !strings.Contains(err.Error(), "not reachable") {
			t.Fatalf("collect %d: error %q does not name the host engine and the problem", i, err)
		}
		clk.add(retry / 10)
	}
	// Attempts at 0, 1×retry, …, 9×retry of the 100 collections spread over 10×retry.
	if c, d := lib.counts(); c != 10 || d != 0 {
		t.Errorf("Connect called %d times, Disconnect %d; want 10 and 0", c, d)
	}
	if l := logs.lines(); len(l) != 1 || !strings.Contains(l[0], "not available") {
		t.Errorf("log lines = %q; want exactly one saying DCGM is not available", l)
	}
	if s.Up() || s.Incidents() != nil {
		t.Error("source claims to be up or have incidents")
	}
}

// TestRealLibraryWithoutHostEngine drives the real go-dcgm binding on a machine with
// no host engine at the address (and here no libdcgm.so.4 at all): the process
// survives, every collection fails, one line is logged and one attempt made.
func TestRealLibraryWithoutHostEngine(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:1", "unix://" + t.TempDir() + "/absent.sock"} {
		t.Run(addr, func(t *testing.T) {
			logs, logger := newLog()
			s := New(Options{Address: addr, Logger: logger, RetryEvery: time.Hour})
			for i := range 100 {
				if _, err := collect(t, context.Background(), s); err == nil {
					t.Fatalf("collect %d succeeded without DCGM", i)
				}
			}
			s.mu.Lock()
			attempts, st := s.attempts, s.state
			s.mu.Unlock()
			if attempts != 1 || st != stateDown {
				t.Errorf("attempts %d, state %s; want 1, down", attempts, st)
			}
			if l := logs.lines(); len(l) != 1 {
				t.Errorf("log lines = %q; want one", l)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if _, err := collect(t, context.Background(), s); !errors.Is(err, ErrClosed) {
				t.Errorf("collect after Close: %v", err)
			}
		})
	}
}

// TestGuardRealLibrary calls every method of the real binding through the guard
// without and after a failed Connect: none may reach go-dcgm (it would crash).
func TestGuardRealLibrary(t *testing.T) {
	g := &guard{lib: &goDCGM{}}
	calls := func() []error {
		_, e1 := g.GPUs()
		e2 := g.WatchFields([]uint{0}, []godcgm.Short{1002}, time.Second)
		e3 := g.WatchHealth([]uint{0}, godcgm.DCGM_HEALTH_WATCH_ALL)
		_, e4 := g.Latest([]uint{0}, []godcgm.Short{1002})
		_, e5 := g.Health()
		e6 := g.Disconnect()
		return []error{e1, e2, e3, e4, e5, e6}
	}
	for i, err := range calls() {
		if !errors.Is(err, errNotConnected) {
			t.Errorf("call %d before Connect: %v", i, err)
		}
	}
	if err := g.Connect(false, "127.0.0.1:1"); err == nil {
		t.Fatal("Connect to 127.0.0.1:1 succeeded")
	}
	for i, err := range calls() {
		if !errors.Is(err, errNotConnected) {
			t.Errorf("call %d after a failed Connect: %v", i, err)
		}
	}
}

// TestGuardStateMachine walks the guard through its states with the fake.
func TestGuardStateMachine(t *testing.T) {
	lib := &fakeLib{t: t, connectErr: errors.New("no engine")}
	g := &guard{lib: lib}
	if _, err := g.Health(); !errors.Is(err, errNotConnected) {
		t.Errorf("Health before Connect: %v", err)
	}
	if err := g.Connect(false, "x"); err == nil || g.up {
		t.Fatalf("failed Connect: err %v, up %v", err, g.up)
	}
	if err := g.Disconnect(); !errors.Is(err, errNotConnected) {
		t.Errorf("Disconnect after a failed Connect: %v", err)
	}
	lib.set(func(f *fakeLib) { f.connectErr = nil })
	if err := g.Connect(false, "x"); err != nil || !g.up {
		t.Fatalf("Connect: %v", err)
	}
	if err := g.Connect(false, "x"); err == nil {
		t.Error("second Connect accepted")
	}
	if _, err := g.Health(); err != nil {
		t.Errorf("Health when up: %v", err)
	}
	if err := g.Disconnect(); err != nil || g.up {
		t.Errorf("Disconnect: %v", err)
	}
	if err := g.Disconnect(); !errors.Is(err, errNotConnected) {
		t.Errorf("second Disconnect: %v", err)
	}
	if _, err := g.Latest(nil, nil); !errors.Is(err, errNotConnected) {
		t.Errorf("Latest after Disconnect: %v", err)
	}
	if len(lib.violations) != 0 {
		t.Errorf("calls reached the library without a connection: %v", lib.violations)
	}
}

func connectedSource(t *testing.T, lib *fakeLib, clk *clock) (*Source, *logBuf) {
	t.Helper()
	logs, logger := newLog()
	s := newSource(Options{Inventory: inventory(), Logger: logger, RetryEvery: time.Minute, Now: clk.now}, lib)
	return s, logs
}

func TestEmitsProfilingFieldsByNVMLIndex(t *testing.T) {
	ts := time.Date(2025, 3, 3, 8, 0, 1, 0, time.UTC)
	lib := &fakeLib{t: t, gpus: twoGPUs, values: []godcgm.FieldValue_v2{
		fv(0, 1002, 0.75, ts.UnixMicro()),                             // SM active, NVML GPU 1
		fv(1, 1002, 0.25, ts.UnixMicro()),                             // SM active, NVML GPU 0
		fv(1, 1009, int64(123456789), ts.UnixMicro()),                 // PCIe TX bytes/s
		fv(1, 1004, godcgm.DCGM_FT_FP64_NOT_SUPPORTED, 0),             // tensor: not supported
		fv(1, 1011, godcgm.DCGM_FT_INT64_NOT_PERMISSIONED, 0),         // NVLink TX: no permission
		fv(7, 1002, 0.5, ts.UnixMicro()),                              // a GPU left out
		fv(0, 150, int64(40), ts.UnixMicro()),                         // a field not asked for
		{EntityGroupId: godcgm.FE_SWITCH, EntityID: 0, FieldID: 1002}, // not a GPU
	}}
	s, logs := connectedSource(t, lib, newClock())
	got, err := collect(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`DCGM_FI_PROF_SM_ACTIVE{gpu_index="1"}`:     0.75,
		`DCGM_FI_PROF_SM_ACTIVE{gpu_index="0"}`:     0.25,
		`DCGM_FI_PROF_PCIE_TX_BYTES{gpu_index="0"}`: 123456789,
	}
	if len(got) != len(want) {
		t.Errorf("got %d samples, want %d: %v", len(got), len(want), got)
	}
	for _, x := range got {
		k := x.Name + x.Labels.String()
		if v, ok := want[k]; !ok || v != x.Value {
			t.Errorf("sample %s = %v, want %v (known %v)", k, x.Value, v, ok)
		}
		if !x.Time.Equal(ts) {
			t.Errorf("sample %s time %v, want DCGM's %v", k, x.Time, ts)
		}
		d, ok := telemetry.LookupMetric(x.Name)
		if !ok || d.Source != telemetry.SourceDCGM {
			t.Errorf("%s is not a DCGM series of the catalog", x.Name)
		}
	}
	if len(lib.watchedFlds) != 12 {
		t.Errorf("watched %d fields, want the catalog's 12", len(lib.watchedFlds))
	}
	if l := logs.lines(); len(l) != 1 || !strings.Contains(l[0], "connected") {
		t.Errorf("log = %q", l)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if c, d := lib.counts(); c != 1 || d != 1 {
		t.Errorf("connects %d, disconnects %d; want 1, 1", c, d)
	}
}

func TestHealthIncidents(t *testing.T) {
	clk := newClock()
	resp := godcgm.HealthResponse{OverallHealth: godcgm.DCGM_HEALTH_RESULT_FAIL, Incidents: []godcgm.Incident{
		{System: godcgm.DCGM_HEALTH_WATCH_MEM, Health: godcgm.DCGM_HEALTH_RESULT_FAIL,
			Error:      godcgm.DiagErrorDetail{Code: godcgm.DCGM_FR_VOLATILE_DBE_DETECTED, Message: "Detected 2 volatile double-bit ECC error(s) in GPU 0."},
			EntityInfo: godcgm.GroupEntityPair{EntityGroupId: godcgm.FE_GPU, EntityId: 0}},
		{System: godcgm.DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL, Health: godcgm.DCGM_HEALTH_RESULT_WARN,
			Error:      godcgm.DiagErrorDetail{Code: godcgm.DCGM_FR_NVSWITCH_NON_FATAL_ERROR, Message: "non-fatal error"},
			EntityInfo: godcgm.GroupEntityPair{EntityGroupId: godcgm.FE_SWITCH, EntityId: 2}},
		{System: godcgm.DCGM_HEALTH_WATCH_PCIE, Health: godcgm.DCGM_HEALTH_RESULT_PASS,
			EntityInfo: godcgm.GroupEntityPair{EntityGroupId: godcgm.FE_GPU, EntityId: 1}},
	}}
	lib := &fakeLib{t: t, gpus: twoGPUs, health: resp, watchErr: errors.New("DCGM_ST_PROFILING_NOT_SUPPORTED")}
	s, _ := connectedSource(t, lib, clk)
	first := clk.now()
	if _, err := collect(t, context.Background(), s); err != nil {
		t.Fatal(err)
	}
	clk.add(30 * time.Second)
	if _, err := collect(t, context.Background(), s); err != nil {
		t.Fatal(err)
	}
	in := s.Incidents()
	if len(in) != 2 {
		t.Fatalf("incidents = %+v; want 2 (the passing watch dropped)", in)
	}
	dbe := in[0]
	if dbe.GPUIndex != 1 || dbe.System != "mem" || dbe.Result != "fail" || dbe.CodeName != "DCGM_FR_VOLATILE_DBE_DETECTED" ||
		dbe.Code != 4 || !dbe.Since.Equal(first) || !dbe.Observed.Equal(clk.now()) {
		t.Errorf("DBE incident = %+v", dbe)
	}
	c := dbe.Condition("node-01")
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	if c.Kind != telemetry.ConditionDCGMHealth || c.Target.String() != "node-01/gpu1" || c.Severity != telemetry.SeverityCritical ||
		c.Evidence["dcgm_fr"] != "DCGM_FR_VOLATILE_DBE_DETECTED" || !strings.Contains(c.Message, "double-bit") {
		t.Errorf("condition = %+v", c)
	}
	sw := in[1].Condition("node-01")
	if err := sw.Validate(); err != nil {
		t.Error(err)
	}
	if in[1].GPUIndex != -1 || sw.Target.String() != "node-01/nvswitch2" || sw.Severity != telemetry.SeverityWarning {
		t.Errorf("NVSwitch incident %+v → %+v", in[1], sw)
	}
	// The incidents clear when DCGM stops reporting them.
	lib.set(func(f *fakeLib) { f.health = godcgm.HealthResponse{} })
	if _, err := collect(t, context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if in := s.Incidents(); len(in) != 0 {
		t.Errorf("incidents after a clean check: %+v", in)
	}
}

// TestLostAndBack: a host engine that stops answering is disconnected once, the
// loss is logged once, and the source reconnects after RetryEvery.
func TestLostAndBack(t *testing.T) {
	clk := newClock()
	lib := &fakeLib{t: t, gpus: twoGPUs, values: []godcgm.FieldValue_v2{fv(0, 1002, 0.5, 0)}}
	s, logs := connectedSource(t, lib, clk)
	if got, err := collect(t, context.Background(), s); err != nil || len(got) != 1 {
		t.Fatalf("first collect: %v, %v", got, err)
	}
	lib.set(func(f *fakeLib) {
		f.latestErr = errors.New("Host engine connection invalid/disconnected")
		f.healthErr = f.latestErr
		f.connectErr = f.latestErr
	})
	for i := range 5 {
		if _, err := collect(t, context.Background(), s); err == nil {
			t.Fatalf("collect %d after the loss succeeded", i)
		}
		clk.add(time.Second)
	}
	if c, d := lib.counts(); c != 1 || d != 1 {
		t.Errorf("connects %d, disconnects %d; want 1, 1 (no retry before RetryEvery)", c, d)
	}
	clk.add(time.Minute)
	lib.set(func(f *fakeLib) { f.latestErr, f.healthErr, f.connectErr = nil, nil, nil })
	if got, err := collect(t, context.Background(), s); err != nil || len(got) != 1 {
		t.Fatalf("collect after the engine came back: %v, %v", got, err)
	}
	var lost int
	for _, l := range logs.lines() {
		if strings.Contains(l, "lost") {
			lost++
		}
	}
	if lost != 1 {
		t.Errorf("loss logged %d times: %q", lost, logs.lines())
	}
}

// TestSlowConnectDoesNotHoldCollect: a connection attempt that hangs costs a
// collection no more than its context, and later collections do not start another.
func TestSlowConnectDoesNotHoldCollect(t *testing.T) {
	block := make(chan struct{})
	lib := &fakeLib{t: t, gpus: twoGPUs, block: block, values: []godcgm.FieldValue_v2{fv(0, 1002, 0.5, 0)}}
	s, _ := connectedSource(t, lib, newClock())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 3 {
		if _, err := collect(t, ctx, s); !errors.Is(err, context.Canceled) {
			t.Fatalf("collect while connecting: %v; want the context's error", err)
		}
	}
	close(block)
	if got, err := collect(t, context.Background(), s); err != nil || len(got) != 1 {
		t.Fatalf("collect once connected: %v, %v", got, err)
	}
	if c, _ := lib.counts(); c != 1 {
		t.Errorf("Connect called %d times, want 1", c)
	}
}

// TestCloseDuringConnect: Close waits for the attempt in flight, which then
// disconnects what it set up.
func TestCloseDuringConnect(t *testing.T) {
	block := make(chan struct{})
	lib := &fakeLib{t: t, gpus: twoGPUs, block: block}
	s, _ := connectedSource(t, lib, newClock())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := collect(t, ctx, s); err == nil {
		t.Fatal("collect with a canceled context succeeded")
	}
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	close(block)
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if c, d := lib.counts(); c != 1 || d != 1 {
		t.Errorf("connects %d, disconnects %d; want 1, 1", c, d)
	}
	if _, err := collect(t, context.Background(), s); !errors.Is(err, ErrClosed) {
		t.Errorf("collect after Close: %v", err)
	}
}

func TestNoMatchingGPUDisconnects(t *testing.T) {
	lib := &fakeLib{t: t, gpus: []godcgm.Device{{GPU: 0, UUID: "GPU-unknown"}}}
	s, _ := connectedSource(t, lib, newClock())
	_, err := collect(t, context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "GPU-unknown") {
		t.Errorf("err = %v; want one naming the unknown GPU", err)
	}
	if c, d := lib.counts(); c != 1 || d != 1 {
		t.Errorf("connects %d, disconnects %d; want 1, 1", c, d)
	}
}

func TestNeitherWatchDisconnects(t *testing.T) {
	lib := &fakeLib{t: t, gpus: twoGPUs, watchErr: errors.New("no DCP"), healthWErr: errors.New("no health")}
	s, _ := connectedSource(t, lib, newClock())
	if _, err := collect(t, context.Background(), s); err == nil || !strings.Contains(err.Error(), "no health") {
		t.Errorf("err = %v", err)
	}
	if _, d := lib.counts(); d != 1 || s.Up() {
		t.Errorf("disconnects %d, up %v", d, s.Up())
	}
}

func TestFieldValue(t *testing.T) {
	tests := []struct {
		name string
		in   godcgm.FieldValue_v2
		want float64
		ok   bool
	}{
		{"double", fv(0, 1002, 0.875, 0), 0.875, true},
		{"zero double", fv(0, 1002, 0.0, 0), 0, true},
		{"int64", fv(0, 1009, int64(1<<40), 0), 1 << 40, true},
		{"fp64 blank", fv(0, 1002, godcgm.DCGM_FT_FP64_BLANK, 0), 0, false},
		{"fp64 not found", fv(0, 1002, godcgm.DCGM_FT_FP64_NOT_FOUND, 0), 0, false},
		{"fp64 not supported", fv(0, 1002, godcgm.DCGM_FT_FP64_NOT_SUPPORTED, 0), 0, false},
		{"fp64 not permissioned", fv(0, 1002, godcgm.DCGM_FT_FP64_NOT_PERMISSIONED, 0), 0, false},
		{"NaN", fv(0, 1002, math.NaN(), 0), 0, false},
		{"int64 blank", fv(0, 1009, godcgm.DCGM_FT_INT64_BLANK, 0), 0, false},
		{"int64 not supported", fv(0, 1009, godcgm.DCGM_FT_INT64_NOT_SUPPORTED, 0), 0, false},
		{"int32 blank", fv(0, 1009, godcgm.DCGM_FT_INT32_BLANK, 0), 0, false},
		{"int32 not supported", fv(0, 1009, godcgm.DCGM_FT_INT32_NOT_SUPPORTED, 0), 0, false},
		{"string", fv(0, 1009, "x", 0), 0, false},
	}
	for _, tt := range tests {
		got, ok := fieldValue(&tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: fieldValue = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	bad := fv(0, 1002, 0.5, 0)
	bad.Status = -5
	if _, ok := fieldValue(&bad); ok {
		t.Error("a value with an error status was accepted")
	}
	withTS := fv(0, 1002, 0.5, 1741000000123456)
	if got := fieldTime(&withTS); !got.Equal(time.UnixMicro(1741000000123456)) {
		t.Errorf("fieldTime = %v", got)
	}
	if got := fieldTime(&bad); !got.IsZero() {
		t.Errorf("fieldTime without a timestamp = %v", got)
	}
}

// TestProfilingFieldsMatchDCGM checks the catalog's DCGM source fields against
// go-dcgm's field ids: the series names are dcgm-exporter's, the ids DCGM's.
func TestProfilingFieldsMatchDCGM(t *testing.T) {
	want := map[string]godcgm.Short{
		telemetry.DCGMProfGrEngineActive:   godcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE,
		telemetry.DCGMProfSMActive:         godcgm.DCGM_FI_PROF_SM_ACTIVE,
		telemetry.DCGMProfSMOccupancy:      godcgm.DCGM_FI_PROF_SM_OCCUPANCY,
		telemetry.DCGMProfPipeTensorActive: godcgm.DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,
		telemetry.DCGMProfDRAMActive:       godcgm.DCGM_FI_PROF_DRAM_ACTIVE,
		telemetry.DCGMProfPipeFP64Active:   godcgm.DCGM_FI_PROF_PIPE_FP64_ACTIVE,
		telemetry.DCGMProfPipeFP32Active:   godcgm.DCGM_FI_PROF_PIPE_FP32_ACTIVE,
		telemetry.DCGMProfPipeFP16Active:   godcgm.DCGM_FI_PROF_PIPE_FP16_ACTIVE,
		telemetry.DCGMProfPCIeTxBytes:      godcgm.DCGM_FI_PROF_PCIE_TX_BYTES,
		telemetry.DCGMProfPCIeRxBytes:      godcgm.DCGM_FI_PROF_PCIE_RX_BYTES,
		telemetry.DCGMProfNVLinkTxBytes:    godcgm.DCGM_FI_PROF_NVLINK_TX_BYTES,
		telemetry.DCGMProfNVLinkRxBytes:    godcgm.DCGM_FI_PROF_NVLINK_RX_BYTES,
	}
	got := profilingFields()
	if len(got) != len(want) {
		t.Errorf("%d profiling fields, want %d", len(got), len(want))
	}
	for _, f := range got {
		if id, ok := want[f.Name]; !ok || id != f.ID {
			t.Errorf("%s: catalog field %d, go-dcgm %d (known %v)", f.Name, f.ID, id, ok)
		}
		if d, ok := telemetry.LookupDCGMField(int(f.ID)); !ok || d.Name != f.Name {
			t.Errorf("LookupDCGMField(%d) = %s", f.ID, d.Name)
		}
	}
}

func TestFRNames(t *testing.T) {
	for code, name := range map[godcgm.HealthCheckErrorCode]string{
		godcgm.DCGM_FR_OK:                            "DCGM_FR_OK",
		godcgm.DCGM_FR_PCI_REPLAY_RATE:               "DCGM_FR_PCI_REPLAY_RATE",
		godcgm.DCGM_FR_VOLATILE_DBE_DETECTED:         "DCGM_FR_VOLATILE_DBE_DETECTED",
		godcgm.DCGM_FR_NVLINK_DOWN:                   "DCGM_FR_NVLINK_DOWN",
		godcgm.DCGM_FR_XID_ERROR:                     "DCGM_FR_XID_ERROR",
		godcgm.DCGM_FR_ROW_REMAP_FAILURE:             "DCGM_FR_ROW_REMAP_FAILURE",
		godcgm.DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT: "DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT",
	} {
		if got := frName(uint(code)); got != name {
			t.Errorf("frName(%d) = %s, want %s", code, got, name)
		}
	}
	for c := uint(0); c < uint(godcgm.DCGM_FR_ERROR_SENTINEL); c++ {
		if _, ok := frNames[c]; !ok {
			t.Errorf("code %d has no name", c)
		}
	}
	if got := frName(9999); got != "DCGM_FR_9999" {
		t.Errorf("unknown code: %s", got)
	}
	if got := systemName(godcgm.DCGM_HEALTH_WATCH_THERMAL); got != "thermal" {
		t.Errorf("systemName = %s", got)
	}
	if got := systemName(0x80000); got != "system_0x80000" {
		t.Errorf("unknown system = %s", got)
	}
}

func TestMapGPUs(t *testing.T) {
	m, err := mapGPUs(twoGPUs, inventory())
	if err != nil || m[0] != 1 || m[1] != 0 {
		t.Errorf("mapGPUs = %v, %v", m, err)
	}
	m, err = mapGPUs(append(twoGPUs, godcgm.Device{GPU: 5, UUID: "GPU-x"}), inventory())
	if err == nil || !strings.Contains(err.Error(), `"GPU-x"`) || len(m) != 2 {
		t.Errorf("unknown GPU: %v, %v", m, err)
	}
	if m, err := mapGPUs(twoGPUs, nil); err != nil || m[0] != 0 || m[1] != 1 {
		t.Errorf("no inventory: %v, %v", m, err)
	}
}

func TestStandaloneArgs(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:5555":                 "localhost:5555 0",
		"tcp://10.0.0.1:5555":            "10.0.0.1:5555 0",
		"unix:///run/nv-hostengine.sock": "/run/nv-hostengine.sock 1",
		"/run/nv-hostengine.sock":        "/run/nv-hostengine.sock 1",
	} {
		if got := strings.Join(standaloneArgs(in), " "); got != want {
			t.Errorf("standaloneArgs(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkCollect(b *testing.B) {
	var values []godcgm.FieldValue_v2
	gpus := make([]godcgm.Device, 8)
	inv := &collector.Inventory{}
	for g := range 8 {
		uuid := "GPU-0000000" + string(rune('0'+g))
		gpus[g] = godcgm.Device{GPU: uint(g), UUID: uuid}
		inv.GPUs = append(inv.GPUs, collector.GPUInfo{Index: g, UUID: uuid})
		for _, f := range profilingFields() {
			values = append(values, fv(uint(g), f.ID, 0.5, 1741000000000000))
		}
	}
	lib := &fakeLib{t: b, gpus: gpus, values: values}
	s := newSource(Options{Inventory: inv}, lib)
	n := 0
	emit := func(telemetry.Sample) { n++ }
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Collect(context.Background(), emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "samples/op")
}
