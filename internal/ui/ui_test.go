package ui_test

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/internal/ui"
)

// TestAlertLink: an alert naming a node links to its page with the GPU
// highlighted; one naming none, to the alerts page.
func TestAlertLink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"GPU alert", map[string]string{"alertname": "GpuwatchGPULost", "node": "node-04", "gpu_index": "5"},
			"https://gw.example/node/node-04?gpu=5#gpu-5"},
		{"dcgm-exporter's labels", map[string]string{"alertname": "X", "Hostname": "gpu01", "gpu": "3"}, "https://gw.example/node/gpu01?gpu=3#gpu-3"},
		{"node alert", map[string]string{"alertname": "GpuwatchInfiniBandPortDown", "node": "node-06"}, "https://gw.example/node/node-06"},
		{"fleet alert", map[string]string{"alertname": "GpuwatchDrainBudgetExhausted"}, "https://gw.example/alerts?alert=GpuwatchDrainBudgetExhausted"},
		{"odd node name", map[string]string{"alertname": "A B", "node": "../admin"}, "https://gw.example/alerts?alert=A+B"},
	} {
		if got := ui.AlertLink("https://gw.example/", tc.labels); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := ui.AlertLink("", map[string]string{"node": "n1"}); got != "/node/n1" {
		t.Errorf("without --web.external-url: %q", got)
	}
}
