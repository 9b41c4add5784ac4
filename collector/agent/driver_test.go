package agent

import (
	"context"
	"encoding/json"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/healthpush"
	"github.com/gpuwatch/gpuwatch/collector/pci/pcitest"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// driverlessOptions are the options of an agent on node gpu01 whose PCI bus
// (a real A100 node's) shows eight GPUs and whose NVML library cannot be
// loaded, pushing its health reports to serverURL every 100 ms.
func driverlessOptions(t *testing.T, serverURL string) Options {
	t.Helper()
	sys := t.TempDir()
	if err := pcitest.WriteA100(sys); err != nil {
		t.Fatal(err)
	}
	kmsg := filepath.Join(t.TempDir(), "kmsg.log")
	if err := os.WriteFile(kmsg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return Options{Node: "gpu01", NVML: gonvml.New(gonvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))),
		SysfsRoot: sys, ProcRoot: t.TempDir(), KmsgPath: kmsg, DCGMDisable: true, KubeletSocket: "-", StateDir: t.TempDir(),
		ServerURL: serverURL, HealthInterval: 100 * time.Millisecond, Interval: 100 * time.Millisecond}
}

// TestAgentWithoutDriver: a node whose PCI bus (a real A100 node's) shows eight
// GPUs and whose NVML library cannot be loaded (the real go-nvml, pointed at a
// library that is not there). The agent starts, exports NVML's count as 0 next
// to the bus's 8, raises gpu-count naming both, and pushes that report to the
// server: the driver missing is seen, not silence.
func TestAgentWithoutDriver(t *testing.T) {
	var mu sync.Mutex
	var pushed []healthreport.Report
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep healthreport.Report
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == healthpush.Path && json.Unmarshal(b, &rep) == nil {
			mu.Lock()
			pushed = append(pushed, rep)
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	a, err := New(driverlessOptions(t, srv.URL))
	if err != nil {
		t.Fatalf("the agent did not start without NVML: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	defer func() { cancel(); wait(); a.Close() }()
	for range 3 {
		a.Collect(ctx, true)
	}
	r := a.Health.Report()
	var gc telemetry.Condition
	for _, c := range r.AllConditions() {
		if c.Kind == telemetry.ConditionGPUCount {
			gc = c
		}
	}
	const want = "NVIDIA driver not loaded: 8 NVIDIA GPUs on the PCI bus, NVML: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND)"
	if gc.Message != want || gc.Severity != telemetry.SeverityCritical || !r.Drain() {
		t.Fatalf("report %s: %+v", r.State, r.AllConditions())
	}

	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, line := range []string{
		`gpuwatch_node_gpus{node="gpu01",source="pci"} 8`,
		`gpuwatch_node_gpus{node="gpu01",source="nvml"} 0`,
		`gpuwatch_node_gpus{node="gpu01",source="expected"} 8`,
		`gpuwatch_source_up{node="gpu01",source="pci"} 1`,
		`gpuwatch_source_up{node="gpu01",source="nvml"} 0`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if !strings.Contains(body, `condition="gpu-count"`) {
		t.Error("/metrics lacks the gpu-count condition")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := false
		for _, p := range pushed {
			for _, c := range p.Conditions {
				got = got || (c.Kind == telemetry.ConditionGPUCount && c.Message == want)
			}
		}
		mu.Unlock()
		if got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no health push with gpu-count reached the server (%d pushes)", len(pushed))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSimulatedDriverFaults: the simulated hardware's driver and fabric faults
// reach the health engine through the production sources.
func TestSimulatedDriverFaults(t *testing.T) {
	t.Run("a GPU the driver did not initialise", func(t *testing.T) {
		s := newSimAgentAfter(t, func(n *simhw.Node) error { return n.Inject(simhw.Fault{GPU: 5, Kind: simhw.FaultGPUMissing}) }, nil)
		s.step(0)
		r := s.health()
		c, ok := condition(r, telemetry.ConditionGPUCount)
		if !ok || c.Message != "NVML sees 7 of the 8 NVIDIA GPUs on the PCI bus" || len(s.a.Inventory.GPUs) != 7 {
			t.Fatalf("%d GPUs; conditions %+v", len(s.a.Inventory.GPUs), r.AllConditions())
		}
		fams := s.metrics()
		for src, want := range map[string]float64{"pci": 8, "nvml": 7, "expected": 8} {
			if v, _ := value(fams, telemetry.MetricNodeGPUs, map[string]string{"source": src}); v != want {
				t.Errorf("gpuwatch_node_gpus{source=%q} = %v, want %v", src, v, want)
			}
		}
	})
	t.Run("driver not loaded", func(t *testing.T) {
		s := newSimAgentAfter(t, func(n *simhw.Node) error {
			return n.Inject(simhw.Fault{GPU: simhw.AllGPUs, Kind: simhw.FaultDriverNotLoaded})
		}, nil)
		s.step(0)
		c, ok := condition(s.health(), telemetry.ConditionGPUCount)
		if want := "NVIDIA driver not loaded: 8 NVIDIA GPUs on the PCI bus, NVML: the NVIDIA kernel module is not loaded (ERROR_DRIVER_NOT_LOADED)"; !ok || c.Message != want {
			t.Fatalf("gpu-count %q, want %q", c.Message, want)
		}
	})
	t.Run("fabric, SXid, persistence mode", func(t *testing.T) {
		s := newSimAgentAfter(t, nil, func(o *Options) { o.RequirePersistenceMode = true })
		s.step(0)
		if r := s.health(); len(r.AllConditions()) != 0 {
			t.Fatalf("healthy node: %+v", r.AllConditions())
		}
		for _, f := range []simhw.Fault{
			{GPU: simhw.AllGPUs, Kind: simhw.FaultFabricManager},
			{GPU: simhw.AllGPUs, Kind: simhw.FaultSXid, SXid: 24007, NVSwitch: 2, Link: 17},
			{GPU: 6, Kind: simhw.FaultPersistenceOff},
		} {
			if err := s.node.Inject(f); err != nil {
				t.Fatal(err)
			}
		}
		s.step(time.Second)
		s.step(time.Second)
		r := s.health()
		for _, k := range []telemetry.ConditionKind{telemetry.ConditionFabricManager, telemetry.ConditionNVSwitchFatal, telemetry.ConditionPersistenceMode} {
			if _, ok := condition(r, k); !ok {
				t.Errorf("no %s in %+v", k, r.AllConditions())
			}
		}
		if c, _ := condition(r, telemetry.ConditionNVSwitchFatal); c.Target.String() != "node-01/nvswitch2" || !strings.Contains(c.Message, "SXid 24007") {
			t.Errorf("nvswitch-fatal %+v", c)
		}
		if v, _ := value(s.metrics(), telemetry.MetricNVSwitchSXidErrorsTotal, map[string]string{"nvswitch": "2", "sxid": "24007", "fatal": "true", "pci_bus_id": "0000:07:00.0"}); v != 1 {
			t.Errorf("gpuwatch_nvswitch_sxid_errors_total = %v", v)
		}
		if v, _ := value(s.metrics(), telemetry.MetricGPUFabricState, map[string]string{"gpu_index": "0"}); v != 1 {
			t.Errorf("gpuwatch_gpu_fabric_state = %v, want 1 (not started)", v)
		}
	})
}

// newSimAgentAfter is a simulated agent whose node had before applied at boot.
func newSimAgentAfter(t *testing.T, before func(*simhw.Node) error, mod func(*Options)) *simAgent {
	t.Helper()
	return newSimAgentWith(t, simhw.FleetSpec{Seed: 5}, before, mod)
}

func condition(r healthreport.Report, k telemetry.ConditionKind) (telemetry.Condition, bool) {
	for _, c := range r.AllConditions() {
		if c.Kind == k {
			return c, true
		}
	}
	return telemetry.Condition{}, false
}
