//go:build !agentonly

package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers/stragglerstest"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestStragglersCommand: gpuwatch stragglers against a real gpuwatch server
// fed stragglerstest's jobs by remote write names their stragglers, in a
// table and in JSON; bad input exits with one line naming the flag.
func TestStragglersCommand(t *testing.T) {
	url, _ := startServerCommand(t)
	t1 := time.Now().Add(-stragglerstest.Every).Truncate(stragglerstest.Every)
	t0 := t1.Add(-10 * time.Minute)
	realstore.RemoteWrite(t, url, stragglerstest.Fleet(t0), 0)
	from, to := t0.Format(time.RFC3339), t1.Format(time.RFC3339)

	code, out, errOut := gw(t, "stragglers", "--server", url, "--from", from, "--to", to)
	t.Logf("gpuwatch stragglers:\n%s", out)
	for _, want := range []string{"4 multi-GPU jobs, 3 with stragglers, 10 GPUs named", "train-a  node-1  GPU-a3", "hw_thermal_slowdown",
		"No stragglers: ml/healthy (8 GPUs on 1 node)"} {
		if code != 0 || errOut != "" || !strings.Contains(out, want) {
			t.Errorf("table: exit %d, stderr %q, want %q in\n%s", code, errOut, want, out)
		}
	}
	code, out, errOut = gw(t, "stragglers", "--server", url, "--from", from, "--to", to, "--output", "json")
	var r stragglers.Report
	if err := json.Unmarshal([]byte(out), &r); code != 0 || errOut != "" || err != nil {
		t.Fatalf("json: exit %d, stderr %q, %v: %s", code, errOut, err, out)
	}
	got := map[string][]string{}
	for _, j := range r.Jobs {
		got[j.JobID] = stragglerstest.Summary(j)
	}
	if !reflect.DeepEqual(got, stragglerstest.Want) {
		t.Errorf("json stragglers\n got %q\nwant %q", got, stragglerstest.Want)
	}
	code, out, errOut = gw(t, "stragglers", "--server", url, "--from", from, "--to", to, "--job-id", "train-e", "--min-duration", "8m")
	if code != 0 || !strings.Contains(out, "1 multi-GPU jobs, 0 with stragglers") {
		t.Errorf("--job-id train-e --min-duration 8m: exit %d, stderr %q:\n%s", code, errOut, out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-gap", "0%"}, `--min-gap "0%"`},
		{[]string{"--min-duration", "-1m"}, "--min-duration"},
		{[]string{"--output", "csv"}, `--output: unknown output "csv": want one of table, json`},
		{[]string{"--from", from}, "give both --from and --to"},
	} {
		args := append([]string{"stragglers", "--server", url}, c.args...)
		code, out, errOut := gw(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}
