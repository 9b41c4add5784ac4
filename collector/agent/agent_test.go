package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// simAgent is one agent on one simulated node, driven cycle by cycle.
type simAgent struct {
	t     *testing.T
	fleet *simhw.Fleet
	node  *simhw.Node
	a     *Agent
	h     http.Handler
	ctx   context.Context
}

func newSimAgent(t *testing.T, spec simhw.FleetSpec, mod func(*Options)) *simAgent {
	t.Helper()
	return newSimAgentWith(t, spec, nil, mod)
}

// newSimAgentWith is newSimAgent with before applied to the simulated node
// before the agent starts (a fault present at boot).
func newSimAgentWith(t *testing.T, spec simhw.FleetSpec, before func(*simhw.Node) error, mod func(*Options)) *simAgent {
	t.Helper()
	if spec.Root == "" {
		spec.Root = t.TempDir()
	}
	spec.Nodes = 1
	f, err := simhw.NewFleet(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(0); err != nil {
		t.Fatal(err)
	}
	n := f.Nodes()[0]
	if before != nil {
		if err := before(n); err != nil {
			t.Fatal(err)
		}
		if err := f.Advance(0); err != nil {
			t.Fatal(err)
		}
	}
	boot := n.Boot()
	o := Options{
		Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, KmsgPoll: 5 * time.Millisecond,
		BootTime: func() (time.Time, error) { return boot, nil }, BootID: "sim-boot",
		StateDir: t.TempDir(), DCGM: n.DCGM(), KubeletSocket: "-",
		Interval: 10 * time.Second, HealthInterval: time.Second, Now: f.Now,
	}
	if mod != nil {
		mod(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	t.Cleanup(func() {
		cancel()
		wait()
		if err := a.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &simAgent{t: t, fleet: f, node: n, a: a, h: a.Handler(), ctx: ctx}
}

// step advances simulated time by d and runs a full cycle.
func (s *simAgent) step(d time.Duration) {
	s.t.Helper()
	if err := s.fleet.Advance(d); err != nil {
		s.t.Fatal(err)
	}
	s.a.Collect(s.ctx, true)
}

func (s *simAgent) get(path string) (int, []byte) {
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, b
}

func (s *simAgent) metrics() map[string]*dto.MetricFamily {
	s.t.Helper()
	code, b := s.get("/metrics")
	if code != 200 {
		s.t.Fatalf("/metrics: %d", code)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		s.t.Fatal(err)
	}
	return fams
}

func (s *simAgent) health() healthreport.Report {
	s.t.Helper()
	code, b := s.get("/health")
	if code != 200 {
		s.t.Fatalf("/health: %d", code)
	}
	var r healthreport.Report
	if err := json.Unmarshal(b, &r); err != nil {
		s.t.Fatalf("/health: %v\n%s", err, b)
	}
	return r
}

func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for k, v := range labels {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// TestAgentHealthyNode: a healthy simulated HGX H100 comes up healthy, every source
// is up (DCGM through the node's simulated host engine), and /metrics carries
// every series its sources promise, DCGM's profiling fields included, with
// dcgm-exporter's labels.
func TestAgentHealthyNode(t *testing.T) {
	s := newSimAgent(t, simhw.FleetSpec{Seed: 3}, nil)
	s.step(0)
	s.step(10 * time.Second)
	fams := s.metrics()
	for _, src := range []string{"nvml", "nvlink", "pci", "dcgm", "infiniband", "xid", "topology", "attribution", "health"} {
		if v, ok := value(fams, telemetry.MetricSourceUp, map[string]string{"source": src}); !ok || v != 1 {
			code, b := s.get("/sources")
			t.Errorf("source %s up = %v (present %v); /sources %d:\n%s", src, v, ok, code, b)
		}
	}
	// What an HGX H100 cannot have: a fan, retired pages (it remaps rows), and
	// series that only exist once something happens.
	absent := map[string]string{
		telemetry.DCGMFanSpeed:   "SXM modules have no fan",
		telemetry.DCGMRetiredSBE: "Hopper remaps rows instead of retiring pages", telemetry.DCGMRetiredDBE: "", telemetry.DCGMRetiredPending: "",
		telemetry.MetricXidErrorsTotal: "no Xid yet", "gpuwatch_xid_suppressed_lines_total": "no flood",
		"gpuwatch_xid_kmsg_records_lost_total":  "a file, not /dev/kmsg",
		telemetry.MetricNVSwitchSXidErrorsTotal: "no SXid yet",
		telemetry.MetricHealthCondition:         "healthy", telemetry.MetricHealthConditionsTotal: "healthy",
		telemetry.MetricTopologyNodeInfo: "no leaf/spine configured", telemetry.MetricGPUAllocationInfo: "no jobs on a fresh node",
		telemetry.MetricIBHWStatisticTotal:        "simib writes no hw_counters",
		telemetry.NodeIBPortDiscardsReceivedTotal: "mlx5 has no port_rcv_discards (the real H100 fixture neither)",
	}
	for _, d := range telemetry.Metrics() {
		if _, ok := absent[d.Name]; ok {
			continue
		}
		if strings.HasPrefix(d.Name, "gpuwatch_shipper_") { // only with --remote-write (remotewrite_test.go)
			continue
		}
		if fams[d.Name] == nil {
			t.Errorf("%s (%s) missing from /metrics", d.Name, d.Source)
		}
	}
	if v, ok := value(fams, telemetry.DCGMGPUTemp, map[string]string{"gpu": "7", "hostname": s.node.Name(), "node": s.node.Name(), "modelName": "NVIDIA H100 80GB HBM3"}); !ok || v <= 0 {
		t.Errorf("DCGM_FI_DEV_GPU_TEMP gpu 7 = %v, %v", v, ok)
	}
	if v, _ := value(fams, telemetry.MetricGPUHealthState, map[string]string{"gpu_index": "0"}); v != 0 {
		t.Errorf("gpu 0 health state %v", v)
	}
	r := s.health()
	if r.State != telemetry.StateHealthy || len(r.GPUs) != 8 || len(r.AllConditions()) != 0 {
		t.Errorf("health = %s with %d GPUs; conditions %v", r.State, len(r.GPUs), r.Conditions)
	}
	code, b := s.get("/topology")
	var topo telemetry.NodeTopology
	if code != 200 || json.Unmarshal(b, &topo) != nil || len(topo.GPUs) != 8 || len(topo.GPULinks) != 28 {
		t.Errorf("/topology = %d: %d GPUs %d links", code, len(topo.GPUs), len(topo.GPULinks))
	}
	if rail, ok := topo.Rail(3); !ok || rail.NIC != "mlx5_3" {
		t.Errorf("gpu 3 rail = %v", rail)
	}

	// promtool's linter: clean apart from dcgm-exporter's own names.
	_, raw := s.get("/metrics")
	problems, err := promlint.New(bytes.NewReader(raw)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "DCGM_FI_") && (strings.Contains(p.Text, "_total") ||
			strings.Contains(p.Text, "camelCase") || strings.Contains(p.Text, "should not include type")) {
			continue
		}
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	// The real promtool, which `make test` installs: the same verdict.
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (make test-deps installs it); promlint above ran the same checks")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(raw)
	out, _ := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" || strings.HasPrefix(line, "DCGM_FI_") && (strings.Contains(line, "_total") ||
			strings.Contains(line, "camelCase") || strings.Contains(line, "should not include type")) {
			continue
		}
		t.Errorf("promtool check metrics: %s", line)
	}
}

// TestAgentFaults plays faults on the simulated node and checks what the agent
// makes of each: counters, health conditions, actions, and that the rest of the
// node keeps reporting.
func TestAgentFaults(t *testing.T) {
	s := newSimAgent(t, simhw.FleetSpec{Seed: 5}, nil)
	s.step(0)
	for _, f := range []simhw.Fault{
		{Kind: simhw.FaultXid, GPU: 2, Xid: 13},
		{Kind: simhw.FaultGPULost, GPU: 3},
		{Kind: simhw.FaultNVLinkDown, GPU: 5, Link: 7},
		{Kind: simhw.FaultIBDown, HCA: "mlx5_6", Port: 1},
		{Kind: simhw.FaultECCDBE, GPU: 1, Count: 1},
	} {
		if err := s.node.Inject(f); err != nil {
			t.Fatalf("inject %+v: %v", f, err)
		}
	}
	for range 4 {
		s.step(2 * time.Second)
	}
	fams := s.metrics()
	if v, _ := value(fams, telemetry.MetricXidErrorsTotal, map[string]string{"gpu_index": "3", "xid": "79"}); v != 1 {
		t.Errorf("xid 79 on gpu 3 counted %v times, want 1", v)
	}
	if v, _ := value(fams, telemetry.MetricXidErrorsTotal, map[string]string{"gpu_index": "2", "xid": "13"}); v != 1 {
		t.Errorf("xid 13 on gpu 2 counted %v times, want 1 (NVML event and log line merged)", v)
	}
	// The driver follows Xid 79 with Xid 154 (recovery action changed).
	if v, _ := value(fams, telemetry.DCGMXidErrors, map[string]string{"gpu": "3"}); v != 79 && v != 154 {
		t.Errorf("DCGM_FI_DEV_XID_ERRORS gpu 3 = %v, want the last Xid (79 or 154)", v)
	}
	if v, _ := value(fams, telemetry.MetricGPULost, map[string]string{"gpu_index": "3"}); v != 1 {
		t.Errorf("gpu 3 lost = %v", v)
	}
	if v, ok := value(fams, telemetry.DCGMGPUTemp, map[string]string{"gpu": "4"}); !ok || v <= 0 {
		t.Errorf("gpu 4 stopped reporting after gpu 3 was lost")
	}
	if v, _ := value(fams, telemetry.MetricNVLinkUp, map[string]string{"gpu_index": "5", "link": "7"}); v != 0 {
		t.Errorf("nvlink 5/7 up = %v", v)
	}
	if v, _ := value(fams, telemetry.NodeIBStateID, map[string]string{"device": "mlx5_6", "port": "1"}); v != 1 {
		t.Errorf("mlx5_6 state = %v, want 1 (down)", v)
	}

	checkLabelsDeclared(t, fams)
	checkLabelsDeclared(t, s.metrics()) // with the health conditions rendered

	r := s.health()
	want := map[string]telemetry.ConditionKind{ // target → a condition it must carry
		s.node.Name() + "/gpu3":         telemetry.ConditionGPULost,
		s.node.Name() + "/gpu5/nvlink7": telemetry.ConditionNVLinkDown,
		s.node.Name() + "/mlx5_6/port1": telemetry.ConditionIBDown,
		s.node.Name() + "/gpu1":         telemetry.ConditionECCDBE,
		s.node.Name() + "/gpu2":         telemetry.ConditionXid,
	}
	got := map[string][]telemetry.ConditionKind{}
	for _, c := range r.AllConditions() {
		got[c.Target.String()] = append(got[c.Target.String()], c.Kind)
	}
	for target, kind := range want {
		found := false
		for _, k := range got[target] {
			found = found || k == kind
		}
		if !found {
			t.Errorf("no %s condition on %s; conditions: %v", kind, target, got)
		}
	}
	if !r.Drain() || r.Action.Rank() < telemetry.ActionRestartBM.Rank() {
		t.Errorf("node state %s action %s; want a drain with at least RESTART_BM (Xid 79)", r.State, r.Action)
	}
	if sum := r.Summary(); !strings.HasPrefix(sum, "gpuwatch: ") || len(sum) > 200 {
		t.Errorf("summary %q", sum)
	}
	if v, ok := value(s.metrics(), telemetry.MetricHealthCondition, map[string]string{"condition": string(telemetry.ConditionGPULost), "gpu_index": "3"}); !ok || v != 1 {
		t.Errorf("gpuwatch_health_condition for gpu-lost on gpu 3 = %v, %v", v, ok)
	}
}

// TestAgentRealFixtures runs the whole agent on real data: node_exporter's
// InfiniBand fixture tree as sysfs and gpud's kernel log with the 48 → 63 → 94
// sequence, on a simulated node whose GPU 0 sits at that log's PCI address.
func TestAgentRealFixtures(t *testing.T) {
	shape := simhw.HGXH100()
	shape.GPUBus = append([]uint8{0x19}, shape.GPUBus[1:]...)
	kmsg := filepath.Join(t.TempDir(), "dmesg.log")
	b, err := os.ReadFile("../xid/testdata/components_query_log_tail__dmesg.0.log")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kmsg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The node's clock starts three minutes after the log's 48 → 63 → 94 burst, as
	// on the node it came from.
	start := time.Date(2024, 11, 15, 12, 5, 0, 0, time.UTC)
	s := newSimAgent(t, simhw.FleetSpec{CustomShape: &shape, Start: start}, func(o *Options) {
		o.SysfsRoot = "../infiniband/testdata/node-exporter/sys"
		o.KmsgPath = kmsg
	})
	s.step(0)
	s.step(time.Second)
	fams := s.metrics()
	for xid, n := range map[string]float64{"48": 1, "63": 1, "94": 9} {
		if v, _ := value(fams, telemetry.MetricXidErrorsTotal, map[string]string{"gpu_index": "0", "xid": xid}); v != n {
			t.Errorf("xid %s on gpu 0 = %v, want %v (grep count)", xid, v, n)
		}
	}
	r := s.health()
	if r.Action != telemetry.ActionDrainAndReset {
		t.Errorf("action %s, want DRAIN_AND_RESET (48 with 63); summary %s", r.Action, r.Summary())
	}

	// node_exporter's expected output for its own fixture, line for line, once
	// the node label gpuwatch puts on every series is set aside.
	want, err := os.ReadFile("../infiniband/testdata/node-exporter/e2e-infiniband.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, raw := s.get("/metrics")
	have := map[string]bool{}
	nodeLabel := telemetry.LabelNode + "=" + strconv.Quote(s.node.Name())
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "node_infiniband_") && !strings.Contains(l, nodeLabel) {
			t.Errorf("no %s on %s", nodeLabel, l)
		}
		l = strings.Replace(strings.Replace(l, ","+nodeLabel, "", 1), nodeLabel+",", "", 1)
		have[l] = true
	}
	n := 0
	for _, l := range strings.Split(string(want), "\n") {
		if !strings.HasPrefix(l, "node_infiniband_") || strings.HasPrefix(l, "node_infiniband_legacy_") {
			continue
		}
		n++
		if !have[l] {
			t.Errorf("node_exporter line missing from /metrics: %s", l)
		}
	}
	if n < 30 {
		t.Fatalf("only %d node_exporter lines compared", n)
	}
}

// checkLabelsDeclared fails for any exported label the catalog does not declare
// for its series: the catalog is what docs/metrics.md and dashboards rely on.
// node is on every series (collector.ExporterOptions).
func checkLabelsDeclared(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for name, f := range fams {
		d, ok := telemetry.LookupMetric(name)
		if !ok {
			if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
				t.Errorf("%s is not in the catalog", name)
			}
			continue
		}
		allowed := map[string]bool{telemetry.LabelNode: true}
		for _, l := range d.Labels {
			allowed[l] = true
		}
		if d.Family == telemetry.FamilyDCGMExporter {
			for _, l := range []string{telemetry.DCGMLabelPod, telemetry.DCGMLabelNamespace, telemetry.DCGMLabelContainer} {
				allowed[l] = true
			}
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if !allowed[l.GetName()] {
					t.Errorf("%s carries label %q, which the catalog does not declare (%v)", name, l.GetName(), d.Labels)
				}
			}
		}
	}
}
