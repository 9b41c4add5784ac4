package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/collector/pci/pcitest"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
)

// withNVML makes `gpuwatch` read the real node through lib for the test.
func withNVML(t *testing.T, lib func() gonvml.Interface) {
	t.Helper()
	old := newNVML
	newNVML = lib
	t.Cleanup(func() { newNVML = old })
}

// noNVML is go-nvml itself, pointed at a library that is not there: what a
// node without the driver (this machine, and any CI) gives, the same on a
// machine that has one.
func noNVML(t *testing.T) func() gonvml.Interface {
	missing := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	return func() gonvml.Interface { return gonvml.New(gonvml.WithLibraryPath(missing)) }
}

// sevenOfEight is the NVML of a simulated HGX H100 whose driver failed to
// initialise GPU 5: it lists seven GPUs.
func sevenOfEight(t *testing.T) func() gonvml.Interface {
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	if err := n.Inject(simhw.Fault{GPU: 5, Kind: simhw.FaultGPUMissing}); err != nil {
		t.Fatal(err)
	}
	return func() gonvml.Interface { return n.NVML() }
}

// sysTree writes a real machine's PCI bus under a fresh --path.sysfs.
func sysTree(t *testing.T, write func(string) error) string {
	t.Helper()
	root := t.TempDir()
	if err := write(root); err != nil {
		t.Fatal(err)
	}
	return root
}

// realNodeArgs are `gpuwatch check` flags for a real node whose /sys is sys:
// an empty kernel log, no /proc jobs, no DCGM.
func realNodeArgs(t *testing.T, sys string) []string {
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"check", "--node", "gpu01", "--path.sysfs", sys, "--path.proc", t.TempDir(), "--path.kmsg", kmsg,
		"--dcgm.disable", "--kubelet.socket", "-", "--state-dir", t.TempDir()}
}

// TestCheckGPUCount: `gpuwatch check` on fake sysfs trees from real machines.
func TestCheckGPUCount(t *testing.T) {
	a100 := func(t *testing.T) string { return sysTree(t, func(r string) error { return pcitest.WriteA100(r) }) }
	cpu := func(t *testing.T) string { return sysTree(t, pcitest.WriteCPUNode) }
	for _, tc := range []struct {
		name string
		sys  func(*testing.T) string
		nvml func(*testing.T) func() gonvml.Interface
		code int
		line string
	}{
		// Eight GPUs on a real A100 node's bus, no NVML: the driver is not loaded.
		{"8 GPUs on the bus, no NVML", a100, noNVML, 1,
			"gpuwatch: gpu-count action=RESTART_BM (NVIDIA driver not loaded: 8 NVIDIA GPUs on the PCI bus, NVML: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND))"},
		// A real machine's bus without an NVIDIA device, no NVML: a CPU node.
		{"no NVIDIA device, no NVML", cpu, noNVML, 0, "gpuwatch: healthy (no GPUs)"},
		// Eight on the bus, NVML lists seven.
		{"NVML 7, bus 8", a100, sevenOfEight, 1,
			"gpuwatch: gpu-count action=RESTART_BM (NVML sees 7 of the 8 NVIDIA GPUs on the PCI bus)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withNVML(t, tc.nvml(t))
			code, out, errOut := runCmd(t, realNodeArgs(t, tc.sys(t))...)
			if code != tc.code || out != tc.line+"\n" || len(out) > 201 {
				t.Errorf("exit %d, stdout %q; want %d, %q\nstderr: %s", code, out, tc.code, tc.line, errOut)
			}
		})
	}
}

// TestCheckSimulatedDriverFaults: the same verdicts from the simulated node's
// own PCI tree and NVML, with the scenarios in docs/examples.
func TestCheckSimulatedDriverFaults(t *testing.T) {
	for file, want := range map[string]string{
		"../../docs/examples/gpu-missing.yaml":       "gpuwatch: gpu-count action=RESTART_BM (NVML sees 7 of the 8 NVIDIA GPUs on the PCI bus)",
		"../../docs/examples/driver-not-loaded.yaml": "gpuwatch: gpu-count action=RESTART_BM (NVIDIA driver not loaded: 8 NVIDIA GPUs on the PCI bus, NVML: the NVIDIA kernel module is not loaded (ERROR_DRIVER_NOT_LOADED))",
	} {
		code, out, errOut := runCmd(t, "check", "--simulate", "hgx-h100", "--faults", file, "--state-dir", t.TempDir())
		if code != 1 || out != want+"\n" {
			t.Errorf("%s: exit %d, stdout %q, want %q\nstderr: %s", file, code, out, want, errOut)
		}
	}
}

// promQuery asks a server's query API and returns each result's labels and value.
func promQuery(t *testing.T, base, secret, q string) []map[string]string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(q), nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range body.Data.Result {
		m := r.Metric
		m["__value__"], _ = r.Value[1].(string)
		out = append(out, m)
	}
	return out
}

// TestCheckPush: `gpuwatch check --push` against a real `gpuwatch server` with a
// token file. The verdict, the GPU counts and the duration land in its store
// under the node's agent token; the exit status and line never change with the
// push: not when it lands, not when the endpoint is unreachable, not when the
// token is refused.
func TestCheckPush(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	agentSecret := makeToken(t, tokens, "agent-gpu0x", "agent", "--nodes", "gpu0*")
	strangerSecret := makeToken(t, tokens, "agent-rack9", "agent", "--nodes", "gpu9*")
	readSecret := makeToken(t, tokens, "grafana", "read")
	server, _ := startServerCommand(t, "--actuator", "log", "--auth.tokens", tokens)
	withNVML(t, noNVML(t))
	a100 := sysTree(t, func(r string) error { return pcitest.WriteA100(r) })
	const line = "gpuwatch: gpu-count action=RESTART_BM (NVIDIA driver not loaded: 8 NVIDIA GPUs on the PCI bus, NVML: libnvidia-ml.so.1 not found (ERROR_LIBRARY_NOT_FOUND))\n"

	before := time.Now()
	code, out, errOut := runCmd(t, append(realNodeArgs(t, a100), "--push", server, "--token-file", agentSecret)...)
	if code != 1 || out != line || strings.Contains(errOut, "not pushed") {
		t.Fatalf("with --push: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	read := readFile(t, readSecret)
	want := map[string]string{
		`gpuwatch_check_healthy`:                   "0",
		`gpuwatch_check_gpus{source="pci"}`:        "8",
		`gpuwatch_check_gpus{source="nvml"}`:       "0",
		`gpuwatch_check_gpus{source="expected"}`:   "8",
		`gpuwatch_check_duration_seconds > 0`:      "",
		`gpuwatch_check_timestamp_seconds > 1e9`:   "",
		`count(gpuwatch_check_gpus{node="gpu01"})`: "3",
	}
	for q, v := range want {
		res := promQuery(t, server, read, q)
		if len(res) != 1 || (v != "" && res[0]["__value__"] != v) {
			t.Errorf("%s = %v, want one series = %q", q, res, v)
			continue
		}
		if strings.HasPrefix(q, "count(") {
			continue
		}
		if m := res[0]; m["job"] != "gpuwatch-check" || m["instance"] != "gpu01" || m["node"] != "gpu01" {
			t.Errorf("%s labels %v", q, m)
		}
	}
	if res := promQuery(t, server, read, "gpuwatch_check_timestamp_seconds"); len(res) == 1 {
		ts, _ := strconv.ParseFloat(res[0]["__value__"], 64)
		if at := time.Unix(int64(ts), 0); at.Before(before.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
			t.Errorf("timestamp %v not the check's time", at)
		}
	}

	// A CPU node's verdict: healthy.
	cpu := sysTree(t, pcitest.WriteCPUNode)
	args := realNodeArgs(t, cpu)
	args[2] = "gpu02"
	if code, out, errOut := runCmd(t, append(args, "--push", server+importPath, "--token-file", agentSecret)...); code != 0 || out != "gpuwatch: healthy (no GPUs)\n" || strings.Contains(errOut, "not pushed") {
		t.Fatalf("CPU node: exit %d, %q, %q", code, out, errOut)
	}
	if res := promQuery(t, server, read, `gpuwatch_check_healthy{node="gpu02"}`); len(res) != 1 || res[0]["__value__"] != "1" {
		t.Errorf("CPU node healthy = %v", res)
	}

	// The push fails: same exit status, same line, a warning on stderr.
	for name, extra := range map[string][]string{
		"unreachable":     {"--push", "http://127.0.0.1:1" + importPath, "--token-file", agentSecret},
		"another's token": {"--push", server, "--token-file", strangerSecret},
		"no token":        {"--push", server},
	} {
		code, out, errOut := runCmd(t, append(realNodeArgs(t, a100), extra...)...)
		if code != 1 || out != line || !strings.Contains(errOut, "gpuwatch check: warning: the verdict was not pushed: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
	}
	if code, _, errOut := runCmd(t, append(realNodeArgs(t, a100), "--push", "ftp://x")...); code != 2 || !strings.Contains(errOut, "--push") {
		t.Errorf("bad --push: exit %d, %q", code, errOut)
	}
}
