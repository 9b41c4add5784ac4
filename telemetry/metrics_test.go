package telemetry

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// skippedDCGMFields lists every field in dcgm-exporter's catalogs or in the real scrape
// that gpuwatch deliberately does not export under dcgm-exporter's name, with the
// reason. A field found in testdata that is neither in the catalog nor here fails the
// tests, and so does an entry here that no testdata file mentions.
var skippedDCGMFields = map[string]string{
	"DCGM_FI_DEV_NVLINK_BANDWIDTH_L0": "per-link NVLink bytes are gpuwatch_nvlink_{transmitted,received}_bytes_total with a link label, not one field name per link",
	"DCGM_FI_DEV_COUNT":               "a node-level count that dcgm-exporter types counter and repeats on every GPU; gpuwatch exports gpuwatch_node_gpus (gauge)",
	"DCGM_EXP_CLOCK_EVENTS_COUNT":     "computed by dcgm-exporter over a window; gpuwatch exports the raw bitmask (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS), the violation counters, and throttle conditions",
	"DCGM_EXP_XID_ERRORS_COUNT":       "a count over a sliding window typed counter; gpuwatch exports a true counter, gpuwatch_xid_errors_total{xid}",
	"DCGM_EXP_GPU_HEALTH_STATUS":      "DCGM health watches become gpuwatch_health_condition{condition=\"dcgm-health\"} and gpuwatch_gpu_health_state",
	"DCGM_EXP_P2P_STATUS":             "GPU-to-GPU connectivity is gpuwatch_topology_gpu_link_info and gpuwatch_nvlink_up",
	// Fields dcgm-exporter turns into labels on every series.
	"DCGM_FI_NVML_VERSION":          "static; the driver version label identifies the NVML build",
	"DCGM_FI_CUDA_DRIVER_VERSION":   "static; follows from the driver version",
	"DCGM_FI_DEV_BRAND":             "static; the modelName label carries the product",
	"DCGM_FI_DEV_NAME":              "the modelName label carries it",
	"DCGM_FI_DEV_MINOR_NUMBER":      "the device label (nvidiaN) carries it",
	"DCGM_FI_DEV_SERIAL":            "inventory: a label of gpuwatch_gpu_info, not of every series",
	"DCGM_FI_DEV_VBIOS_VERSION":     "inventory: a label of gpuwatch_gpu_info, not of every series",
	"DCGM_FI_DEV_OEM_INFOROM_VER":   "static inventory nobody alerts on; nvidia-smi -q has it",
	"DCGM_FI_DEV_ECC_INFOROM_VER":   "static inventory nobody alerts on; nvidia-smi -q has it",
	"DCGM_FI_DEV_POWER_INFOROM_VER": "static inventory nobody alerts on; nvidia-smi -q has it",
	"DCGM_FI_DEV_INFOROM_IMAGE_VER": "static inventory nobody alerts on; nvidia-smi -q has it",
	"DCGM_FI_PROCESS_NAME":          "names the exporter process, not anything about the GPU",
}

// typeExceptions lists DCGM fields whose Prometheus type differs between dcgm-exporter
// versions. The catalog follows the current default-counters.csv; older expositions
// (the scrape, 1.x names) may say otherwise.
var typeExceptions = map[string]string{
	DCGMProfPCIeTxBytes: "DCGM field 1009 is a rate in bytes/s: current default-counters.csv types it gauge; dcgm-exporter 1.x (and the scrape's dummy rows) typed it counter",
	DCGMProfPCIeRxBytes: "DCGM field 1010 is a rate in bytes/s: current default-counters.csv types it gauge; dcgm-exporter 1.x (and the scrape's dummy rows) typed it counter",
}

// legacy1xNames maps dcgm-exporter 1.x's metric names to the field names that replaced
// them: a dashboard written for 1.x finds its series in the catalog under the new name.
var legacy1xNames = map[string]string{
	"dcgm_sm_clock":                          DCGMSMClock,
	"dcgm_memory_clock":                      DCGMMemClock,
	"dcgm_memory_temp":                       DCGMMemoryTemp,
	"dcgm_gpu_temp":                          DCGMGPUTemp,
	"dcgm_power_usage":                       DCGMPowerUsage,
	"dcgm_total_energy_consumption":          DCGMTotalEnergyConsumption,
	"dcgm_fi_prof_pcie_tx_bytes":             DCGMProfPCIeTxBytes,
	"dcgm_fi_prof_pcie_rx_bytes":             DCGMProfPCIeRxBytes,
	"dcgm_pcie_replay_counter":               DCGMPCIeReplayCounter,
	"dcgm_gpu_utilization":                   DCGMGPUUtil,
	"dcgm_mem_copy_utilization":              DCGMMemCopyUtil,
	"dcgm_enc_utilization":                   DCGMEncUtil,
	"dcgm_dec_utilization":                   DCGMDecUtil,
	"dcgm_xid_errors":                        DCGMXidErrors,
	"dcgm_power_violation":                   DCGMPowerViolation,
	"dcgm_thermal_violation":                 DCGMThermalViolation,
	"dcgm_sync_boost_violation":              DCGMSyncBoostViolation,
	"dcgm_board_limit_violation":             DCGMBoardLimitViolation,
	"dcgm_low_util_violation":                DCGMLowUtilViolation,
	"dcgm_reliability_violation":             DCGMReliabilityViolation,
	"dcgm_fb_free":                           DCGMFBFree,
	"dcgm_fb_used":                           DCGMFBUsed,
	"dcgm_ecc_sbe_volatile_total":            DCGMECCSBEVolTotal,
	"dcgm_ecc_dbe_volatile_total":            DCGMECCDBEVolTotal,
	"dcgm_ecc_sbe_aggregate_total":           DCGMECCSBEAggTotal,
	"dcgm_ecc_dbe_aggregate_total":           DCGMECCDBEAggTotal,
	"dcgm_retired_pages_sbe":                 DCGMRetiredSBE,
	"dcgm_retired_pages_dbe":                 DCGMRetiredDBE,
	"dcgm_retired_pages_pending":             DCGMRetiredPending,
	"dcgm_nvlink_flit_crc_error_count_total": DCGMNVLinkCRCFlitErrorCountTotal,
	"dcgm_nvlink_data_crc_error_count_total": DCGMNVLinkCRCDataErrorCountTotal,
	"dcgm_nvlink_replay_error_count_total":   DCGMNVLinkReplayErrorCountTotal,
	"dcgm_nvlink_recovery_error_count_total": DCGMNVLinkRecoveryErrorCountTotal,
	"dcgm_nvlink_bandwidth_total":            DCGMNVLinkBandwidthTotal,
	"dcgm_fi_prof_gr_engine_active":          DCGMProfGrEngineActive,
	"dcgm_fi_prof_sm_active":                 DCGMProfSMActive,
	"dcgm_fi_prof_sm_occupancy":              DCGMProfSMOccupancy,
	"dcgm_fi_prof_pipe_tensor_active":        DCGMProfPipeTensorActive,
	"dcgm_fi_prof_dram_active":               DCGMProfDRAMActive,
}

// skippedNodeExporterIB lists node_exporter InfiniBand series gpuwatch does not export.
var skippedNodeExporterIB = map[string]string{
	"node_infiniband_legacy_data_received_bytes_total":           legacyIB,
	"node_infiniband_legacy_data_transmitted_bytes_total":        legacyIB,
	"node_infiniband_legacy_multicast_packets_received_total":    legacyIB,
	"node_infiniband_legacy_multicast_packets_transmitted_total": legacyIB,
	"node_infiniband_legacy_packets_received_total":              legacyIB,
	"node_infiniband_legacy_packets_transmitted_total":           legacyIB,
	"node_infiniband_legacy_unicast_packets_received_total":      legacyIB,
	"node_infiniband_legacy_unicast_packets_transmitted_total":   legacyIB,
}

const legacyIB = "counters_ext/ copies of the port counters that only mlx4-era HCAs expose; mlx5 HCAs (current GPU fleets) have them in counters/"

var (
	promNameRE  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	promLabelRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	fieldNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// csvField is one row of a dcgm-exporter counters csv.
type csvField struct {
	name, typ, help string
	commented       bool
	line            int
}

// readCountersCSV parses dcgm-exporter's "DCGM field, Prometheus type, help" format,
// keeping commented-out field rows (marked) and dropping prose comments. When a field
// has several rows, the active one wins, else the first.
func readCountersCSV(t *testing.T, path string) []csvField {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []csvField
	index := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		commented := strings.HasPrefix(line, "#")
		if commented {
			line = strings.TrimSpace(strings.TrimPrefix(line, "#"))
		}
		parts := strings.SplitN(line, ",", 3)
		if len(parts) != 3 || !fieldNameRE.MatchString(strings.TrimSpace(parts[0])) {
			if !commented {
				t.Fatalf("%s:%d: not a field row: %q", path, n, sc.Text())
			}
			continue // prose
		}
		r := csvField{
			name:      strings.TrimSpace(parts[0]),
			typ:       strings.TrimSpace(parts[1]),
			help:      strings.TrimSpace(parts[2]),
			commented: commented,
			line:      n,
		}
		if i, dup := index[r.name]; dup {
			if rows[i].commented && !r.commented {
				rows[i] = r
			}
			continue
		}
		index[r.name] = len(rows)
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// exposition is what a Prometheus text file says about each metric name.
type exposition struct {
	typ, help map[string]string
	labels    map[string]bool // every label key on any sample
	order     []string        // names in order of their TYPE line
}

func readExposition(t *testing.T, path string) exposition {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := exposition{typ: map[string]string{}, help: map[string]string{}, labels: map[string]bool{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	labelRE := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("%s: bad TYPE line %q", path, line)
			}
			e.typ[f[2]] = f[3]
			e.order = append(e.order, f[2])
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			e.help[name] = help
		case strings.HasPrefix(line, "#"), line == "":
		default:
			if open := strings.IndexByte(line, '{'); open >= 0 {
				for _, m := range labelRE.FindAllStringSubmatch(line[open:], -1) {
					e.labels[m[1]] = true
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return e
}

func dcgmTestdata(name string) string { return filepath.Join("testdata", "dcgm-exporter", name) }

// TestCatalogShape checks rules every catalog entry follows.
func TestCatalogShape(t *testing.T) {
	gpuwatchKeys := map[string]bool{}
	for _, k := range LabelKeys() {
		gpuwatchKeys[k] = true
	}
	sources := map[Source]bool{}
	for _, s := range Sources() {
		sources[s] = true
	}
	names := map[string]bool{}
	fields := map[int]string{}
	counts := map[MetricFamily]int{}
	for _, d := range Metrics() {
		counts[d.Family]++
		if names[d.Name] {
			t.Errorf("%s: listed twice", d.Name)
		}
		names[d.Name] = true
		if !promNameRE.MatchString(d.Name) {
			t.Errorf("%s: not a valid Prometheus metric name", d.Name)
		}
		if d.Type != MetricGauge && d.Type != MetricCounter {
			t.Errorf("%s: type %q", d.Name, d.Type)
		}
		if !sources[d.Source] {
			t.Errorf("%s: unknown source %q", d.Name, d.Source)
		}
		if strings.TrimSpace(d.Help) == "" {
			t.Errorf("%s: no help", d.Name)
		}
		if len(d.Labels) == 0 {
			t.Errorf("%s: no labels", d.Name)
		}
		seen := map[string]bool{}
		for _, l := range d.Labels {
			if !promLabelRE.MatchString(l) || strings.HasPrefix(l, "__") {
				t.Errorf("%s: label %q is not a valid Prometheus label name", d.Name, l)
			}
			if seen[l] {
				t.Errorf("%s: label %q listed twice", d.Name, l)
			}
			seen[l] = true
		}
		if d.NVMLFieldID < 0 || d.DCGMFieldID < 0 {
			t.Errorf("%s: negative field id", d.Name)
		}
		switch d.Family {
		case FamilyDCGMExporter:
			if !strings.HasPrefix(d.Name, "DCGM_FI_") {
				t.Errorf("%s: dcgm-exporter family name without DCGM_FI_ prefix", d.Name)
			}
			if d.DCGMFieldID <= 0 {
				t.Errorf("%s: no DCGM field id", d.Name)
			} else if other, dup := fields[d.DCGMFieldID]; dup {
				t.Errorf("%s: DCGM field %d already used by %s", d.Name, d.DCGMFieldID, other)
			}
			fields[d.DCGMFieldID] = d.Name
			if strings.Join(d.Labels, ",") != strings.Join(DCGMGPULabels(), ",") {
				t.Errorf("%s: labels %v, want dcgm-exporter's %v", d.Name, d.Labels, DCGMGPULabels())
			}
		case FamilyNodeExporter:
			if !strings.HasPrefix(d.Name, "node_infiniband_") {
				t.Errorf("%s: node_exporter family name without node_infiniband_ prefix", d.Name)
			}
		case FamilyGPUWatch:
			if !strings.HasPrefix(d.Name, "gpuwatch_") || !IsLowerSnake(d.Name) {
				t.Errorf("%s: gpuwatch names are gpuwatch_ and lower_snake", d.Name)
			}
			if d.DCGMFieldID != 0 {
				t.Errorf("%s: gpuwatch series with a DCGM field id", d.Name)
			}
			for _, l := range d.Labels {
				if !gpuwatchKeys[l] {
					t.Errorf("%s: label %q is not one of gpuwatch's label keys (labels.go)", d.Name, l)
				}
			}
			if d.Labels[0] != LabelNode {
				t.Errorf("%s: first label %q, want node", d.Name, d.Labels[0])
			}
		default:
			t.Errorf("%s: unknown family %q", d.Name, d.Family)
		}
		if d.Family != FamilyDCGMExporter {
			// Prometheus naming: counters and only counters end in _total.
			if total := strings.HasSuffix(d.Name, "_total"); total != (d.Type == MetricCounter) {
				t.Errorf("%s: a %s; counters, and only counters, end in _total", d.Name, d.Type)
			}
			if strings.HasSuffix(d.Name, "_info") && d.Type != MetricGauge {
				t.Errorf("%s: info series are gauges", d.Name)
			}
		}
		got, ok := LookupMetric(d.Name)
		if !ok || got.Name != d.Name || got.Type != d.Type {
			t.Errorf("LookupMetric(%q) = %v, %v", d.Name, got, ok)
		}
		if d.DCGMFieldID != 0 {
			if got, ok := LookupDCGMField(d.DCGMFieldID); !ok || got.Name != d.Name {
				t.Errorf("LookupDCGMField(%d) = %v, %v; want %s", d.DCGMFieldID, got.Name, ok, d.Name)
			}
		}
	}
	if _, ok := LookupMetric("no_such_metric"); ok {
		t.Error("LookupMetric found no_such_metric")
	}
	if _, ok := LookupDCGMField(0); ok {
		t.Error("LookupDCGMField(0) found a field")
	}
	t.Logf("catalog: %d series: %d dcgm-exporter, %d node_exporter, %d gpuwatch",
		len(names), counts[FamilyDCGMExporter], counts[FamilyNodeExporter], counts[FamilyGPUWatch])
}

// TestMetricsReturnsCopies checks that callers cannot change the catalog.
func TestMetricsReturnsCopies(t *testing.T) {
	m := Metrics()
	m[0].Name = "changed"
	m[0].Labels[0] = "changed"
	d, _ := LookupMetric(DCGMSMClock)
	d.Labels[0] = "changed"
	if got := Metrics()[0]; got.Name == "changed" || got.Labels[0] == "changed" {
		t.Fatalf("catalog changed through a returned copy: %+v", got)
	}
	if got := DCGMGPULabels()[0]; got != DCGMLabelGPU {
		t.Fatalf("dcgm label set changed through a returned copy: %q", got)
	}
}

// TestCatalogNamedFields spot-checks the series the brief names, with the numbers from
// dcgm_fields.h and the NVML headers written out.
func TestCatalogNamedFields(t *testing.T) {
	tests := []struct {
		name   string
		typ    MetricType
		field  int
		nvml   int
		source Source
	}{
		{DCGMGPUTemp, MetricGauge, 150, 0, SourceNVML},
		{DCGMTotalEnergyConsumption, MetricCounter, 156, 0, SourceNVML},
		{DCGMXidErrors, MetricGauge, 230, 0, SourceXid},
		{DCGMRowRemapPending, MetricGauge, 396, 0, SourceNVML},
		{DCGMGPURecoveryAction, MetricGauge, 1523, 230, SourceNVML}, // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230
		{DCGMProfSMActive, MetricGauge, 1002, 0, SourceDCGM},
		{DCGMNVLinkBandwidthTotal, MetricCounter, 449, 0, SourceNVLink},
		{NodeIBPortDataReceivedBytesTotal, MetricCounter, 0, 0, SourceInfiniBand},
		{MetricXidErrorsTotal, MetricCounter, 0, 0, SourceXid},
		{MetricGPULost, MetricGauge, 0, 0, SourceNVML},
		{MetricGPUHealthState, MetricGauge, 0, 0, SourceHealth},
		{MetricHealthCondition, MetricGauge, 0, 0, SourceHealth},
		{MetricSourceUp, MetricGauge, 0, 0, SourceSelf},
		{MetricSourceDurationSeconds, MetricGauge, 0, 0, SourceSelf},
		{MetricTopologyGPULinkInfo, MetricGauge, 0, 0, SourceTopology},
		{MetricGPUAllocationInfo, MetricGauge, 0, 0, SourceAttribution},
	}
	for _, tc := range tests {
		d, ok := LookupMetric(tc.name)
		if !ok {
			t.Errorf("%s: not in the catalog", tc.name)
			continue
		}
		if d.Type != tc.typ || d.DCGMFieldID != tc.field || d.NVMLFieldID != tc.nvml || d.Source != tc.source {
			t.Errorf("%s: got %s field %d nvml %d source %s; want %s field %d nvml %d source %s",
				tc.name, d.Type, d.DCGMFieldID, d.NVMLFieldID, d.Source, tc.typ, tc.field, tc.nvml, tc.source)
		}
	}
}

// TestDCGMExporterCounters checks the catalog against dcgm-exporter's own field
// catalogs: every field they list, enabled or commented out, is either exported with
// dcgm-exporter's name, type and help, carried as dcgm-exporter's label, or listed in
// skippedDCGMFields with a reason.
func TestDCGMExporterCounters(t *testing.T) {
	for _, file := range []string{"dcgm-exporter_default-counters.csv", "dcgm-exporter_dcp-metrics-included.csv"} {
		t.Run(file, func(t *testing.T) {
			rows := readCountersCSV(t, dcgmTestdata(file))
			if len(rows) < 50 {
				t.Fatalf("read only %d field rows; the parser is broken", len(rows))
			}
			var matched, enabled, asLabel, skipped int
			for _, r := range rows {
				where := file + ":" + strconv.Itoa(r.line) + ": " + r.name
				if r.typ == "label" {
					switch {
					case r.name == DCGMLabelDriverVersion:
						asLabel++
					case skippedDCGMFields[r.name] != "":
						skipped++
					default:
						t.Errorf("%s: label field neither carried nor in skippedDCGMFields", where)
					}
					continue
				}
				d, ok := LookupMetric(r.name)
				if !ok {
					if skippedDCGMFields[r.name] == "" {
						t.Errorf("%s (%s): neither in the catalog nor in skippedDCGMFields", where, r.typ)
					}
					skipped++
					continue
				}
				matched++
				if !r.commented {
					enabled++
				}
				if d.Family != FamilyDCGMExporter {
					t.Errorf("%s: in the catalog as family %s", where, d.Family)
				}
				if string(d.Type) != r.typ {
					t.Errorf("%s: type %s, dcgm-exporter says %s", where, d.Type, r.typ)
				}
				if d.Help != r.help {
					t.Errorf("%s: help %q, dcgm-exporter says %q", where, d.Help, r.help)
				}
			}
			t.Logf("%s: %d fields: %d in the catalog (%d of them enabled by dcgm-exporter), %d carried as a label, %d intentionally skipped",
				file, len(rows), matched, enabled, asLabel, skipped)
		})
	}
}

// TestDCGMExporterScrape checks the catalog against a real dcgm-exporter scrape: every
// DCGM_FI_* series in it is exported with the type its # TYPE line gives (bar the
// documented typeExceptions) or is skipped for a reason, and the label keys on its
// samples are the ones labels.go spells.
func TestDCGMExporterScrape(t *testing.T) {
	e := readExposition(t, dcgmTestdata("datadog-integrations-core_dcgm_tests_fixtures_metrics.txt"))
	if len(e.order) < 30 {
		t.Fatalf("read only %d TYPE lines; the parser is broken", len(e.order))
	}
	var matched, skipped int
	for _, name := range e.order {
		if !strings.HasPrefix(name, "DCGM_FI_") {
			t.Errorf("scrape has non-DCGM series %s; extend the test", name)
			continue
		}
		d, ok := LookupMetric(name)
		if !ok {
			if skippedDCGMFields[name] == "" {
				t.Errorf("%s (%s): neither in the catalog nor in skippedDCGMFields", name, e.typ[name])
			}
			skipped++
			continue
		}
		matched++
		if string(d.Type) == e.typ[name] {
			continue
		}
		if typeExceptions[name] == "" {
			t.Errorf("%s: type %s, the scrape says %s", name, d.Type, e.typ[name])
		}
	}
	// Label keys: what the scrape's samples carry is what labels.go spells. The
	// scrape predates dcgm-exporter 4.8, which renamed Hostname to hostname.
	for _, k := range []string{DCGMLabelGPU, DCGMLabelUUID, DCGMLabelDevice, DCGMLabelModelName,
		DCGMLabelHostnameLegacy, DCGMLabelDriverVersion, DCGMLabelPod, DCGMLabelNamespace, DCGMLabelContainer} {
		if !e.labels[k] {
			t.Errorf("label %q is not on any sample of the real scrape", k)
		}
	}
	known := map[string]bool{}
	for _, k := range []string{DCGMLabelGPU, DCGMLabelUUID, DCGMLabelPCIBusID, DCGMLabelDevice,
		DCGMLabelModelName, DCGMLabelHostname, DCGMLabelHostnameLegacy, DCGMLabelDriverVersion, DCGMLabelGPUInstanceProfile,
		DCGMLabelGPUInstanceID, DCGMLabelPod, DCGMLabelNamespace, DCGMLabelContainer} {
		known[k] = true
	}
	for k := range e.labels {
		if !known[k] && skippedDCGMFields[k] == "" {
			t.Errorf("scrape label %q: neither a DCGMLabel* constant nor a skipped label field", k)
		}
	}
	t.Logf("scrape: %d DCGM series: %d in the catalog, %d intentionally skipped; %d label keys", len(e.order), matched, skipped, len(e.labels))
}

// TestDCGMExporter1xNames checks that every series of dcgm-exporter 1.x has a
// counterpart in the catalog under its current name with the same type, and that the
// 1.x names themselves are not exported.
func TestDCGMExporter1xNames(t *testing.T) {
	rows := readCountersCSV(t, dcgmTestdata("dcgm-exporter_1.x-compatibility-metrics.csv"))
	if len(rows) < 30 {
		t.Fatalf("read only %d rows; the parser is broken", len(rows))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.name] = true
		if _, ok := LookupMetric(r.name); ok {
			t.Errorf("%s: 1.x name exported; gpuwatch uses current names only", r.name)
		}
		modern := legacy1xNames[r.name]
		if modern == "" {
			t.Errorf("%s: no entry in legacy1xNames", r.name)
			continue
		}
		d, ok := LookupMetric(modern)
		if !ok {
			t.Errorf("%s: its current name %s is not in the catalog", r.name, modern)
			continue
		}
		if string(d.Type) != r.typ && typeExceptions[modern] == "" {
			t.Errorf("%s: 1.x type %s, catalog %s has %s", r.name, r.typ, modern, d.Type)
		}
	}
	for old := range legacy1xNames {
		if !seen[old] {
			t.Errorf("legacy1xNames has %s, which the 1.x csv does not list", old)
		}
	}
}

// TestSkipListsAreCurrent fails on skip-list and exception entries that no testdata
// file mentions any more, or that the catalog exports after all.
func TestSkipListsAreCurrent(t *testing.T) {
	mentioned := map[string]bool{}
	for _, file := range []string{"dcgm-exporter_default-counters.csv", "dcgm-exporter_dcp-metrics-included.csv"} {
		for _, r := range readCountersCSV(t, dcgmTestdata(file)) {
			mentioned[r.name] = true
		}
	}
	e := readExposition(t, dcgmTestdata("datadog-integrations-core_dcgm_tests_fixtures_metrics.txt"))
	for name := range e.typ {
		mentioned[name] = true
	}
	for k := range e.labels {
		mentioned[k] = true
	}
	for name, reason := range skippedDCGMFields {
		if !mentioned[name] {
			t.Errorf("skippedDCGMFields[%s]: no testdata file mentions it", name)
		}
		if _, ok := LookupMetric(name); ok {
			t.Errorf("skippedDCGMFields[%s]: the catalog exports it", name)
		}
		if strings.TrimSpace(reason) == "" {
			t.Errorf("skippedDCGMFields[%s]: no reason", name)
		}
	}
	for name := range typeExceptions {
		d, ok := LookupMetric(name)
		if !ok {
			t.Errorf("typeExceptions[%s]: not in the catalog", name)
			continue
		}
		if got := e.typ[name]; got == "" || got == string(d.Type) {
			t.Errorf("typeExceptions[%s]: the scrape types it %q, no conflict with %s", name, got, d.Type)
		}
	}
	ib := readExposition(t, filepath.Join("testdata", "node-exporter", "infiniband-e2e-output.txt"))
	for name := range skippedNodeExporterIB {
		if ib.typ[name] == "" {
			t.Errorf("skippedNodeExporterIB[%s]: not in node_exporter's output", name)
		}
		if _, ok := LookupMetric(name); ok {
			t.Errorf("skippedNodeExporterIB[%s]: the catalog exports it", name)
		}
	}
}

// TestNodeExporterInfiniBand checks the InfiniBand series against node_exporter's
// golden output: same names, types and help, or skipped for a reason; and the
// catalog exports no node_infiniband_* series node_exporter does not.
func TestNodeExporterInfiniBand(t *testing.T) {
	e := readExposition(t, filepath.Join("testdata", "node-exporter", "infiniband-e2e-output.txt"))
	if len(e.order) < 20 {
		t.Fatalf("read only %d TYPE lines; the parser is broken", len(e.order))
	}
	var matched, skipped int
	for _, name := range e.order {
		d, ok := LookupMetric(name)
		if !ok {
			if skippedNodeExporterIB[name] == "" {
				t.Errorf("%s: neither in the catalog nor in skippedNodeExporterIB", name)
			}
			skipped++
			continue
		}
		matched++
		if string(d.Type) != e.typ[name] || d.Help != e.help[name] {
			t.Errorf("%s: %s %q; node_exporter: %s %q", name, d.Type, d.Help, e.typ[name], e.help[name])
		}
		if d.Family != FamilyNodeExporter || d.Source != SourceInfiniBand {
			t.Errorf("%s: family %s source %s", name, d.Family, d.Source)
		}
	}
	for _, d := range Metrics() {
		if d.Family == FamilyNodeExporter && e.typ[d.Name] == "" {
			t.Errorf("%s: node_exporter does not export it; use a gpuwatch_ name", d.Name)
		}
	}
	for _, k := range []string{"device", "port", "board_id", "firmware_version", "hca_type"} {
		if !e.labels[k] {
			t.Errorf("label %q not in node_exporter's output", k)
		}
	}
	t.Logf("node_exporter infiniband: %d series: %d in the catalog, %d intentionally skipped", len(e.order), matched, skipped)
}

// TestMetricDescJSON pins the JSON field names the agent serves the catalog with.
func TestMetricDescJSON(t *testing.T) {
	d, _ := LookupMetric(DCGMGPURecoveryAction)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION"`, `"type":"gauge"`,
		`"source":"nvml"`, `"family":"dcgm-exporter"`, `"dcgm_field_id":1523`, `"nvml_field_id":230`, `"labels":["gpu","UUID"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
}
