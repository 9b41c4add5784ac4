package fairshare

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedData is ../shared/data seen from this package.
const sharedData = "../../../../shared/data"

// TestDefaultWorkloadRuns replays the composed Helios × GenAI week under all
// three policies and checks the result is sane; with -v it prints the
// comparison table docs/fairshare-whatif.md shows.
func TestDefaultWorkloadRuns(t *testing.T) {
	if _, err := os.Stat(filepath.Join(sharedData, HeliosSequenceFile)); err != nil {
		t.Skip("no ../shared/data in this checkout")
	}
	var text, js bytes.Buffer
	if err := Run(context.Background(), Options{DataDir: sharedData}, &text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	if err := Run(context.Background(), Options{DataDir: sharedData, Output: "json", Charge: "measured"}, &js); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(js.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 || res.Runs[0].Charge != "measured" || res.Workload.Jobs < 1000 || len(res.Runs[0].Accounts) != 16 {
		t.Fatalf("result %+v", res.Workload)
	}
	c := res.Runs[0].Cluster
	if !(c.JainMeasured > 0 && c.JainMeasured <= 1) || !(c.AllocatedUtilization > 0.5 && c.AllocatedUtilization <= 1) ||
		!(c.MeasuredUtilization > 0 && c.MeasuredUtilization < c.AllocatedUtilization) {
		t.Errorf("cluster result out of range: %+v", c)
	}
	var sum float64
	for _, a := range res.Runs[0].Accounts {
		sum += a.MeasuredShare
	}
	if sum < 0.999 || sum > 1.001 {
		t.Errorf("measured shares sum to %v", sum)
	}
	for _, p := range Policies {
		if !strings.Contains(text.String(), string(p)) {
			t.Errorf("comparison table has no %s row", p)
		}
	}
}

func TestRunTraceJSONOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hand.csv")
	if err := os.WriteFile(path, []byte(handCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := Options{TracePath: path, Output: "json"}
	o.Replay.Interval = 3600e9
	o.Replay.HalfLife = 1000 * 3600e9
	if err := Run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	// The hand case's Jain indices (TestIdleVersusBusyByHand): allocation
	// 4/6.56, measured and blend 0.8.
	want := []float64{4 / 6.56, 0.8, 0.8}
	for i, r := range res.Runs {
		if !near(r.Cluster.JainMeasured, want[i]) {
			t.Errorf("%s: Jain %v, want %v", r.Charge, r.Cluster.JainMeasured, want[i])
		}
	}
	for _, bad := range []Options{{TracePath: path, Charge: "free"}, {TracePath: path, Output: "xml"}, {}} {
		if err := Run(context.Background(), bad, &out); err == nil {
			t.Errorf("options %+v ran; want an error", bad)
		}
	}
}
