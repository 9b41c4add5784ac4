package demo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoEndsWithReport: a short run ends with the utilization report by
// account, from the store, and leaves the HTML report in its directory.
func TestDemoEndsWithReport(t *testing.T) {
	var out strings.Builder
	dir := t.TempDir()
	if _, err := Run(context.Background(), Options{Nodes: 2, Duration: 3 * time.Minute, Speed: -1, Dir: dir, Out: &out}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	i := strings.Index(s, "GPU utilization by account")
	if i < 0 {
		t.Fatalf("no utilization report at the end:\n%s", s)
	}
	tail := s[i:]
	if !strings.Contains(tail, "ALLOCATED_GPU_H") || !strings.Contains(tail, "total") || !strings.Contains(tail, "HTML report: "+filepath.Join(dir, ReportFile)) {
		t.Errorf("report:\n%s", tail)
	}
	html, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil || !strings.Contains(string(html), "<svg") {
		t.Errorf("HTML report: %v", err)
	}
}
