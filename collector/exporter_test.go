package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

func testInventory(t testing.TB) *Inventory {
	pci, err := telemetry.ParsePCIBusID("00000000:1B:00.0")
	if err != nil {
		t.Fatal(err)
	}
	return &Inventory{Node: "gpu01", DriverVersion: "570.133.20", GPUs: []GPUInfo{
		{Index: 0, UUID: "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e", PCIBusID: pci, Minor: 0, Model: "NVIDIA H100 80GB HBM3"},
	}}
}

func testSnapshot(t testing.TB) *Snapshot {
	now := time.Unix(1_700_000_000, 0)
	return &Snapshot{Time: now, Inventory: testInventory(t),
		Samples: []telemetry.Sample{
			{Name: telemetry.DCGMSMClock, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, "0"), Value: 1980, Time: now},
			{Name: telemetry.DCGMTotalEnergyConsumption, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, "0"), Value: 123456, Time: now},
			{Name: telemetry.MetricXidErrorsTotal, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, "0", telemetry.LabelXid, "79"), Value: 1, Time: now},
			{Name: telemetry.NodeIBStateID, Labels: telemetry.NewLabels("device", "mlx5_0", "port", "1"), Value: 4, Time: now},
			{Name: telemetry.MetricNodeGPUs, Value: 1, Time: now},
		},
		Sources: []SourceStatus{{Name: "nvml", Up: true, Duration: 3 * time.Millisecond, LastSuccess: now}, {Name: "dcgm", Err: "no host engine"}},
	}
}

// parse renders families as text and parses them back: what a scraper sees.
func parse(t testing.TB, fams []*dto.MetricFamily) map[string]*dto.MetricFamily {
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	out, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	return out
}

func labelNames(m *dto.Metric) []string {
	var ns []string
	for _, l := range m.Label {
		ns = append(ns, l.GetName())
	}
	slices.Sort(ns)
	return ns
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestExporterDCGMLabelsMatchRealScrape checks the DCGM_FI_* label set against a
// real dcgm-exporter scrape: the same keys, plus pci_bus_id (dcgm-exporter 3.2 and
// later), minus DCGM_FI_PROCESS_NAME (the exporter's own process, meaningless here),
// with Hostname spelled hostname (dcgm-exporter 4.8 and later; the scrape is
// older) unless the old spelling is asked for, plus gpuwatch's node.
func TestExporterDCGMLabelsMatchRealScrape(t *testing.T) {
	f, err := os.Open("../telemetry/testdata/dcgm-exporter/datadog-integrations-core_dcgm_tests_fixtures_metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rp := expfmt.NewTextParser(model.LegacyValidation)
	real, err := rp.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	legacy := labelNames(real[telemetry.DCGMSMClock].Metric[0])
	legacy = slices.DeleteFunc(legacy, func(s string) bool { return s == "DCGM_FI_PROCESS_NAME" })
	legacy = append(legacy, telemetry.DCGMLabelPCIBusID, telemetry.LabelNode)
	slices.Sort(legacy)
	if !slices.Contains(legacy, telemetry.DCGMLabelHostnameLegacy) {
		t.Fatalf("the real scrape has no %s label: %v", telemetry.DCGMLabelHostnameLegacy, legacy)
	}
	current := slices.Clone(legacy)
	current[slices.Index(current, telemetry.DCGMLabelHostnameLegacy)] = telemetry.DCGMLabelHostname
	slices.Sort(current)

	old := parse(t, NewExporter(ExporterOptions{Node: "gpu01", HostnameLabel: telemetry.DCGMLabelHostnameLegacy}).Render(testSnapshot(t)))
	if m := old[telemetry.DCGMSMClock].Metric[0]; !slices.Equal(labelNames(m), legacy) || label(m, "Hostname") != "gpu01" {
		t.Errorf("labels with the old host-name key = %v, want %v with Hostname=gpu01", labelNames(m), legacy)
	}
	e := NewExporter(ExporterOptions{Node: "gpu01"})
	got := parse(t, e.Render(testSnapshot(t)))
	m := got[telemetry.DCGMSMClock].Metric[0]
	if !slices.Equal(labelNames(m), current) {
		t.Fatalf("labels = %v, want %v", labelNames(m), current)
	}
	for k, v := range map[string]string{"gpu": "0", "UUID": "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e",
		"pci_bus_id": "00000000:1B:00.0", "device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3",
		"hostname": "gpu01", "DCGM_FI_DRIVER_VERSION": "570.133.20", "node": "gpu01"} {
		if label(m, k) != v {
			t.Errorf("%s = %q, want %q", k, label(m, k), v)
		}
	}
	if got[telemetry.DCGMSMClock].GetHelp() != real[telemetry.DCGMSMClock].GetHelp() {
		t.Errorf("help %q, want %q", got[telemetry.DCGMSMClock].GetHelp(), real[telemetry.DCGMSMClock].GetHelp())
	}
	if got[telemetry.DCGMTotalEnergyConsumption].GetType() != dto.MetricType_COUNTER {
		t.Errorf("energy type %v", got[telemetry.DCGMTotalEnergyConsumption].GetType())
	}
	// gpuwatch series: lower_snake identity.
	x := got[telemetry.MetricXidErrorsTotal].Metric[0]
	if w := []string{"gpu_index", "gpu_uuid", "node", "pci_bus_id", "xid"}; !slices.Equal(labelNames(x), w) {
		t.Errorf("xid labels = %v, want %v", labelNames(x), w)
	}
	if label(x, "pci_bus_id") != "0000:1b:00.0" {
		t.Errorf("gpuwatch pci_bus_id = %q, want the canonical form", label(x, "pci_bus_id"))
	}
	// node_exporter series keep node_exporter's keys, plus node.
	if w := []string{"device", "node", "port"}; !slices.Equal(labelNames(got[telemetry.NodeIBStateID].Metric[0]), w) {
		t.Errorf("ib labels = %v", labelNames(got[telemetry.NodeIBStateID].Metric[0]))
	}
	if label(got[telemetry.MetricNodeGPUs].Metric[0], "node") != "gpu01" {
		t.Errorf("node-scoped series lacks node label")
	}
	// Self-metrics: one per source, dcgm down.
	up := got[telemetry.MetricSourceUp]
	if up == nil || len(up.Metric) != 2 || up.Metric[0].GetGauge().GetValue()+up.Metric[1].GetGauge().GetValue() != 1 {
		t.Errorf("source_up = %v", up)
	}
	if len(e.Unknown()) != 0 {
		t.Errorf("unknown series: %v", e.Unknown())
	}
}

func TestExporterSnakeLabelsAndPods(t *testing.T) {
	attr := staticAttributor{{GPUIndex: 0, Pod: "train-0", Namespace: "ml", Container: "main"}}
	e := NewExporter(ExporterOptions{Node: "gpu01", Labels: LabelsSnake, Attributor: attr, Timestamps: true})
	got := parse(t, e.Render(testSnapshot(t)))
	m := got[telemetry.DCGMSMClock].Metric[0]
	want := []string{"container", "driver_version", "gpu_index", "gpu_uuid", "model", "namespace", "node", "pci_bus_id", "pod"}
	if !slices.Equal(labelNames(m), want) {
		t.Fatalf("labels = %v, want %v", labelNames(m), want)
	}
	for _, n := range labelNames(m) {
		if !telemetry.IsLowerSnake(n) {
			t.Errorf("label %q is not lower_snake", n)
		}
	}
	if m.GetTimestampMs() != 1_700_000_000_000 {
		t.Errorf("timestamp = %d", m.GetTimestampMs())
	}
}

type staticAttributor []Allocation

func (s staticAttributor) Allocations() []Allocation { return s }

// TestExporterLint runs Prometheus's metric linter (what `promtool check metrics`
// runs) on the output: gpuwatch_* series are clean; the only findings are on names
// and labels dcgm-exporter fixed long ago and that dashboards depend on.
func TestExporterLint(t *testing.T) {
	for _, mode := range []LabelMode{LabelsDCGM, LabelsSnake} {
		e := NewExporter(ExporterOptions{Node: "gpu01", Labels: mode})
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range e.Render(testSnapshot(t)) {
			if err := enc.Encode(f); err != nil {
				t.Fatal(err)
			}
		}
		problems, err := promlint.New(&buf).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			if compatFinding(p, mode) {
				continue
			}
			t.Errorf("%s: %s: %s", mode, p.Metric, p.Text)
		}
	}
}

// compatFinding says whether a lint finding is one dcgm-exporter's users rely on:
// its counters lack _total and its labels are camelCase.
func compatFinding(p promlint.Problem, mode LabelMode) bool {
	if !strings.HasPrefix(p.Metric, "DCGM_FI_") {
		return false
	}
	if strings.Contains(p.Text, "counter metrics should have \"_total\" suffix") ||
		strings.Contains(p.Text, "should not include type") { // DCGM_FI_DEV_PCIE_REPLAY_COUNTER
		return true
	}
	return mode == LabelsDCGM && strings.Contains(p.Text, "camelCase")
}

func TestHandlerEndpoints(t *testing.T) {
	src := &fakeSource{name: "nvml", full: testSnapshot(t).Samples}
	now := time.Unix(1_700_000_000, 0)
	clock := now
	e := NewExporter(ExporterOptions{Node: "gpu01"})
	r, err := NewRunner(RunnerOptions{Sources: []Source{src}, Inventory: testInventory(t), Interval: 10 * time.Second,
		OnPublish: func(s *Snapshot) { e.Render(s) }, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(HandlerOptions{Runner: r, Exporter: e, Now: func() time.Time { return clock },
		Health: func() any { return map[string]string{"state": "healthy"} }})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		b, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(b)
	}
	if code, _ := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("healthz before first cycle = %d", code)
	}
	r.Cycle(context.Background(), true)
	if code, body := get("/healthz"); code != 200 {
		t.Errorf("healthz = %d %s", code, body)
	}
	code, body := get("/metrics")
	if code != 200 || !strings.Contains(body, `DCGM_FI_DEV_SM_CLOCK{DCGM_FI_DRIVER_VERSION="570.133.20"`) ||
		!strings.Contains(body, "go_goroutines") || !strings.Contains(body, `gpuwatch_source_up{node="gpu01",source="nvml"} 1`) {
		t.Errorf("/metrics = %d\n%s", code, body)
	}
	if code, body := get("/health"); code != 200 || !strings.Contains(body, "healthy") {
		t.Errorf("/health = %d %s", code, body)
	}
	if code, _ := get("/topology"); code != http.StatusNotFound {
		t.Errorf("/topology without a provider = %d", code)
	}
	clock = now.Add(time.Minute)
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "1m0s ago") {
		t.Errorf("stale healthz = %d %s", code, body)
	}
}

func BenchmarkRender(b *testing.B) {
	snap := benchSnapshot(b)
	e := NewExporter(ExporterOptions{Node: "gpu01"})
	b.ReportAllocs()
	for b.Loop() {
		e.Render(snap)
	}
	b.ReportMetric(float64(len(snap.Samples)), "series")
}

// BenchmarkScrape is one /metrics request against a rendered H100-sized snapshot:
// the render-time goal (under 5 ms) is about this.
func BenchmarkScrape(b *testing.B) {
	snap := benchSnapshot(b)
	e := NewExporter(ExporterOptions{Node: "gpu01"})
	e.Render(snap)
	r, _ := NewRunner(RunnerOptions{Interval: time.Second})
	h := NewHandler(HandlerOptions{Runner: r, Exporter: e})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
}

// benchSnapshot is about what one HGX H100 node exports: 8 GPUs × ~60 GPU series,
// 8 × 18 NVLinks × 7 link series, 8 IB ports × ~25 series.
func benchSnapshot(b testing.TB) *Snapshot {
	inv := &Inventory{Node: "gpu01", DriverVersion: "570.133.20"}
	var samples []telemetry.Sample
	now := time.Now()
	var gpuMetrics, linkMetrics, ibMetrics []string
	for _, d := range telemetry.Metrics() {
		switch {
		case d.Family == telemetry.FamilyDCGMExporter:
			gpuMetrics = append(gpuMetrics, d.Name)
		case strings.HasPrefix(d.Name, "gpuwatch_nvlink_"):
			linkMetrics = append(linkMetrics, d.Name)
		case d.Family == telemetry.FamilyNodeExporter && d.Name != telemetry.NodeIBInfo:
			ibMetrics = append(ibMetrics, d.Name)
		}
	}
	for g := range 8 {
		pci, _ := telemetry.ParsePCIBusID("0000:" + []string{"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"}[g] + ":00.0")
		inv.GPUs = append(inv.GPUs, GPUInfo{Index: g, UUID: "GPU-0000000" + string(rune('0'+g)), PCIBusID: pci, Minor: g, Model: "NVIDIA H100 80GB HBM3"})
		idx := string(rune('0' + g))
		for _, n := range gpuMetrics {
			samples = append(samples, telemetry.Sample{Name: n, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, idx), Value: 1, Time: now})
		}
		for l := range 18 {
			for _, n := range linkMetrics {
				samples = append(samples, telemetry.Sample{Name: n, Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, idx, telemetry.LabelLink, string(rune('a'+l))), Value: 1, Time: now})
			}
		}
		for _, n := range ibMetrics {
			samples = append(samples, telemetry.Sample{Name: n, Labels: telemetry.NewLabels("device", "mlx5_"+idx, "port", "1"), Value: 1, Time: now})
		}
	}
	return &Snapshot{Time: now, Inventory: inv, Samples: samples, Sources: []SourceStatus{{Name: "nvml", Up: true}}}
}

// TestScrapeGzip: a Prometheus-style scrape (Accept-Encoding: gzip) gets a gzip body
// that decodes to the same exposition as a plain one.
func TestScrapeGzip(t *testing.T) {
	e := NewExporter(ExporterOptions{Node: "gpu01"})
	e.Render(testSnapshot(t))
	r, _ := NewRunner(RunnerOptions{Interval: time.Second})
	h := NewHandler(HandlerOptions{Runner: r, Exporter: e})
	get := func(enc string) *http.Response {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	plain := get("")
	zipped := get("gzip")
	if plain.Header.Get("Content-Encoding") != "" || zipped.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("encodings %q, %q", plain.Header.Get("Content-Encoding"), zipped.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	unz, _ := io.ReadAll(zr)
	pb, _ := io.ReadAll(plain.Body)
	// go_ and process_ series move between the two requests; compare ours.
	ours := func(b []byte) string {
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "DCGM_FI_") || strings.Contains(l, "gpuwatch_xid") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if ours(unz) != ours(pb) || ours(pb) == "" {
		t.Errorf("gzip body differs:\n%s\n---\n%s", ours(unz), ours(pb))
	}
	if get("gzip;q=0").Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got gzip")
	}
}

// TestPublishRendersOnDemand: publishing renders nothing; the first Gather after
// a publication renders it, later ones reuse the rendering.
func TestPublishRendersOnDemand(t *testing.T) {
	e := NewExporter(ExporterOptions{Node: "gpu01"})
	if fams, _ := e.Gather(); fams != nil {
		t.Fatalf("Gather before any publication: %d families", len(fams))
	}
	for range 3 {
		e.Publish(testSnapshot(t))
	}
	if n := e.Renders(); n != 0 {
		t.Fatalf("%d renders after three publications, want none", n)
	}
	a, _ := e.Gather()
	b, _ := e.Gather()
	if e.Renders() != 1 || len(a) == 0 || &a[0] != &b[0] {
		t.Fatalf("%d renders for two scrapes of one snapshot, want one shared rendering", e.Renders())
	}
	x := e.Publish(testSnapshot(t))
	c, _ := e.Gather()
	if e.Renders() != 2 || &c[0] != &x.Families()[0] {
		t.Fatalf("%d renders, want a new one for the new snapshot, shared with its exposition", e.Renders())
	}
}

// TestSeriesAreTheRenderedSeries: what Exposition.Series hands the shipper is
// what /metrics shows: the same names, label sets and values, timestamps as the
// exporter stamps them, in both label modes and with pods.
func TestSeriesAreTheRenderedSeries(t *testing.T) {
	attr := staticAttributor{{GPUIndex: 0, Pod: "train-0", Namespace: "ml", Container: "main"}}
	for _, mode := range []LabelMode{LabelsDCGM, LabelsSnake} {
		e := NewExporter(ExporterOptions{Node: "gpu01", Labels: mode, Attributor: attr, Timestamps: true})
		snap := testSnapshot(t)
		snap.Samples = append(snap.Samples, telemetry.Sample{Name: "no_time_of_its_own", Value: 2})
		snap.Time = snap.Time.Add(time.Second)
		x := e.Publish(snap)
		key := func(name string, ls []*dto.LabelPair, v float64) string {
			s := name
			for _, l := range ls {
				s += "," + l.GetName() + "=" + l.GetValue()
			}
			return s + " " + strconv.FormatFloat(v, 'g', -1, 64)
		}
		var rendered []string
		for _, mf := range x.Families() {
			for _, m := range mf.Metric {
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
				ts := snap.Time.UnixMilli()
				if m.TimestampMs != nil {
					ts = m.GetTimestampMs()
				}
				rendered = append(rendered, key(mf.GetName(), m.Label, v)+" @"+strconv.FormatInt(ts, 10))
			}
		}
		var series []string
		x.Series(func(uint64) bool { t.Error("skip asked without parts"); return true }, func(s *Series) {
			series = append(series, key(s.Name, s.Labels, s.Value)+" @"+strconv.FormatInt(s.Time.UnixMilli(), 10))
		})
		slices.Sort(rendered)
		slices.Sort(series)
		if !slices.Equal(rendered, series) || len(series) != x.Len() {
			t.Errorf("%s: rendered\n%s\nseries (%d, Len %d)\n%s", mode, strings.Join(rendered, "\n"), len(series), x.Len(), strings.Join(series, "\n"))
		}
	}
}

type podAttributor struct{ pod *string }

func (p podAttributor) Allocations() []Allocation {
	return []Allocation{{GPUIndex: 0, Pod: *p.pod, Namespace: "ml", Container: "main"}}
}

// TestLabelCacheFollowsPodsAndForgets: labels kept between renders change with
// the GPU's pod, and the series that stop coming are forgotten.
func TestLabelCacheFollowsPodsAndForgets(t *testing.T) {
	pod := "train-0"
	e := NewExporter(ExporterOptions{Node: "gpu01", Attributor: podAttributor{&pod}})
	podOf := func(fams []*dto.MetricFamily) string {
		for _, mf := range fams {
			if mf.GetName() == telemetry.DCGMSMClock {
				return label(mf.Metric[0], telemetry.DCGMLabelPod)
			}
		}
		return "no SM clock"
	}
	snap := testSnapshot(t)
	if got := podOf(e.Render(snap)); got != "train-0" {
		t.Fatalf("pod %q", got)
	}
	pod = "train-1"
	if got := podOf(e.Render(snap)); got != "train-1" {
		t.Fatalf("pod %q after the GPU changed hands", got)
	}
	// Every snapshot a new job's series: the cache stays bounded.
	for i := range 10 * cacheAge {
		s := testSnapshot(t)
		s.Samples = append(s.Samples, telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Value: 1,
			Labels: telemetry.NewLabels(telemetry.LabelGPUIndex, "0", telemetry.LabelJobID, strconv.Itoa(i))})
		e.Render(s)
	}
	if n := len(e.cache); n > 2*cacheAge+len(snap.Samples) {
		t.Errorf("label cache holds %d entries", n)
	}
}
