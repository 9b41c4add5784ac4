package telemetry

import "testing"

func TestLabelKeysAreLowerSnake(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range LabelKeys() {
		if !IsLowerSnake(k) {
			t.Errorf("label key %q is not lower_snake", k)
		}
		if seen[k] {
			t.Errorf("label key %q listed twice", k)
		}
		seen[k] = true
	}
	// Prometheus reserves these on scraped series; a gpuwatch key must not collide.
	for _, reserved := range []string{"job", "instance", "le", "quantile"} {
		if seen[reserved] {
			t.Errorf("label key %q collides with a Prometheus-reserved label", reserved)
		}
	}
	if len(seen) < 40 {
		t.Errorf("only %d label keys; LabelKeys lost some", len(seen))
	}
}

func TestDCGMLabelSpelling(t *testing.T) {
	// Spelled as dcgm-exporter emits them; metrics_test.go also checks them against a
	// real scrape.
	want := []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname", "DCGM_FI_DRIVER_VERSION"}
	got := DCGMGPULabels()
	if len(got) != len(want) {
		t.Fatalf("DCGMGPULabels() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("DCGMGPULabels()[%d] = %q, want %q", i, got[i], want[i])
		}
	}
	// dcgm-exporter before 4.8 (NVIDIA/dcgm-exporter#655).
	if DCGMLabelHostnameLegacy != "Hostname" {
		t.Errorf("legacy host-name label %q", DCGMLabelHostnameLegacy)
	}
	// What a Prometheus scrape adds, and the shipper with it.
	if LabelInstance != "instance" || LabelJob != "job" {
		t.Errorf("scrape labels %q %q", LabelInstance, LabelJob)
	}
	if DCGMLabelGPUInstanceProfile != "GPU_I_PROFILE" || DCGMLabelGPUInstanceID != "GPU_I_ID" {
		t.Errorf("MIG labels %q %q", DCGMLabelGPUInstanceProfile, DCGMLabelGPUInstanceID)
	}
}

func TestIsLowerSnake(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"node", true},
		{"gpu_uuid", true},
		{"nvlink_domain", true},
		{"ib_port", true},
		{"gpu2_index", true},
		{"", false},
		{"Node", false},
		{"gpuUUID", false},
		{"_node", false},
		{"node_", false},
		{"gpu__uuid", false},
		{"2gpu", false},
		{"gpu-uuid", false},
		{"pci bus", false},
		{"UUID", false},
		{"modelName", false},
		{"DCGM_FI_DRIVER_VERSION", false},
	}
	for _, tc := range tests {
		if got := IsLowerSnake(tc.in); got != tc.want {
			t.Errorf("IsLowerSnake(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
