package agent

import (
	"context"
	"encoding/json"
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

	"github.com/gpuwatch/gpuwatch/collector/health"
	"github.com/gpuwatch/gpuwatch/collector/healthpush"
	"github.com/gpuwatch/gpuwatch/collector/pci/pcitest"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestAgentWithoutDriver: a node whose PCI bus (a real A100 node's) shows eight
// GPUs and whose NVML library cannot be loaded (the real go-nvml, pointed at a
// library that is not there). The agent starts, exports NVML's count as 0 next
// to the bus's 8, raises gpu-count naming both, and pushes that report to the
// server: the driver missing is seen, not silence.
func TestAgentWithoutDriver(t *testing.T) {
	sys := t.TempDir()
	if err := pcitest.WriteA100(sys); err != nil {
		t.Fatal(err)
	}
	kmsg := filepath.Join(t.TempDir(), "kmsg.log")
	if err := os.WriteFile(kmsg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var pushed []health.Report
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep health.Report
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == healthpush.Path && json.Unmarshal(b, &rep) == nil {
			mu.Lock()
			pushed = append(pushed, rep)
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	a, err := New(Options{Node: "gpu01", NVML: gonvml.New(gonvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))),
		SysfsRoot: sys, ProcRoot: t.TempDir(), KmsgPath: kmsg, DCGMDisable: true, KubeletSocket: "-", StateDir: t.TempDir(),
		ServerURL: srv.URL, HealthInterval: 100 * time.Millisecond, Interval: 100 * time.Millisecond})
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
