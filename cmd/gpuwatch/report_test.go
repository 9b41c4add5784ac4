//go:build !agentonly

package main

import (
	"bytes"
	"net"
	neturl "net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestReportCommand: gpuwatch report against a real gpuwatch server fed by
// remote write: an hour of job 7 (ml/ann) at 40 % utilization on one GPU is
// 1 GPU-hour allocated, 0.4 measured; every output format; bad input exits
// with one line naming what to change.
func TestReportCommand(t *testing.T) {
	url, _ := startServerCommand(t, "--out-of-order-window", "6h")
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	var batch []telemetry.Sample
	for i := range 360 {
		at := t0.Add(time.Duration(i)*10*time.Second + 5*time.Second)
		batch = append(batch,
			telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Time: at, Value: 1, Labels: telemetry.NewLabels(
				telemetry.LabelNode, "gpu01", telemetry.LabelGPUUUID, "GPU-1", telemetry.LabelJobID, "7",
				telemetry.LabelAccount, "ml", telemetry.LabelUser, "ann")},
			telemetry.Sample{Name: telemetry.DCGMGPUUtil, Time: at, Value: 40, Labels: telemetry.NewLabels(
				telemetry.DCGMLabelUUID, "GPU-1", telemetry.DCGMLabelHostname, "gpu01")})
	}
	// Job 8 (cv/bo) on another GPU, idle.
	for i := range 360 {
		at := t0.Add(time.Duration(i)*10*time.Second + 5*time.Second)
		batch = append(batch,
			telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Time: at, Value: 1, Labels: telemetry.NewLabels(
				telemetry.LabelNode, "gpu01", telemetry.LabelGPUUUID, "GPU-2", telemetry.LabelJobID, "8",
				telemetry.LabelAccount, "cv", telemetry.LabelUser, "bo")},
			telemetry.Sample{Name: telemetry.DCGMGPUUtil, Time: at, Value: 0, Labels: telemetry.NewLabels(
				telemetry.DCGMLabelUUID, "GPU-2", telemetry.DCGMLabelHostname, "gpu01")})
	}
	realstore.RemoteWrite(t, url, batch, 0)
	from, to := t0.Format(time.RFC3339), t0.Add(time.Hour).Format(time.RFC3339)

	code, out, errOut := gw(t, "report", "--server", url, "--from", from, "--to", to, "--output", "csv")
	if code != 0 || !strings.Contains(out, "\nml,1,1,1.00,0.40,40.0%,") || !strings.Contains(out, "\ncv,1,1,1.00,0.00,") || !strings.Contains(out, "\ntotal,2,2,2.00,0.40,20.0%,") || errOut != "" {
		t.Errorf("csv: exit %d\n%s%s", code, out, errOut)
	}
	// Filtered: only ml's allocations, in the rows and the total; the header
	// says so. Comma-separated and repeated flags add up.
	for _, args := range [][]string{{"--account", "ml"}, {"--account", "ml,nobody", "--user", "ann"}, {"--user", "nobody", "--user", "ann"}} {
		code, out, errOut = gw(t, append([]string{"report", "--server", url, "--from", from, "--to", to}, args...)...)
		if code != 0 || !strings.Contains(out, "only allocations of ") || strings.Contains(out, "cv") || !regexp.MustCompile(`(?m)^\s*total\s+1\s+1\s+1\.00\s+0\.40\s+40\.0%`).MatchString(out) {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	code, out, _ = gw(t, "report", "--server", url, "--from", from, "--to", to)
	if code != 0 || !strings.Contains(out, "GPU utilization by account") || !strings.Contains(out, "gpu_util") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	for _, f := range []struct{ output, want string }{{"json", `"allocated_gpu_hours": 1`}, {"markdown", "| ann | 1 | 1 | 1.00 | 0.40 | 40.0% |"}, {"html", "<svg"}} {
		code, out, errOut := gw(t, "report", "--server", url, "--from", from, "--to", to, "--by", "user", "--output", f.output)
		if code != 0 || !strings.Contains(out, f.want) || errOut != "" {
			t.Errorf("%s: exit %d, stderr %q, want %q in\n%s", f.output, code, errOut, f.want, out)
		}
	}

	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--from", to, "--to", from}, 2, "empty or reversed: --to must be after --from"},
		{[]string{"--from", from}, 2, "give both --from and --to"},
		{[]string{"--last", "1h", "--by", "team"}, 2, `--by: unknown grouping "team": want one of account, user, job, namespace, node, model`},
		{[]string{"--last", "1h", "--output", "pdf"}, 2, "--output: unknown output"},
		{[]string{"--last", "1h", "--idle-below", "5 percent"}, 2, "--idle-below"},
		{[]string{"--last", "1h", "--account", "ml,"}, 2, "--account: an empty value"},
		{[]string{"--last", "1h", "--user", strings.Repeat("u", 300)}, 2, "--user \"uuu"},
		{[]string{"--from", from, "--to", to, "--account", "nobody"}, 1, "no GPU was seen allocated"},
		{[]string{"--from", t0.Add(-72 * time.Hour).Format(time.RFC3339), "--to", t0.Add(-71 * time.Hour).Format(time.RFC3339)}, 1, "no GPU was seen allocated"},
		{[]string{"--server", dead, "--last", "1h"}, 1, "cannot reach the gpuwatch server at " + dead},
	} {
		args := append([]string{"report", "--server", url}, c.args...)
		code, out, errOut := gw(t, args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		done, total int
		want        string
	}{{0, 4, "[········] 0/4 chunks read"}, {1, 4, "[##······] 1/4 chunks read"}, {4, 4, "[########] 4/4 chunks read"}} {
		if got := progressBar(c.done, c.total, 8); got != c.want {
			t.Errorf("progressBar(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
	var b bytes.Buffer
	if isTerminal(&b) {
		t.Error("a buffer is a terminal")
	}
}

// TestReportProgressLines: the progress answer the bar is drawn from, read
// as the command reads it on a terminal (no terminal in tests, so the bar is
// asked for directly): the bar reaches the end and the report arrives.
func TestReportProgressLines(t *testing.T) {
	url, _ := startServerCommand(t)
	cf := clientFlags{server: url}
	c, err := cf.client()
	if err != nil {
		t.Fatal(err)
	}
	v := neturl.Values{report.ParamLast: {"1h"}}
	var stderr bytes.Buffer
	_, err = fetchReport(t.Context(), c, v, true, &stderr)
	// Nothing was written to this server: the error comes as the last line.
	if err == nil || !strings.Contains(err.Error(), "no GPU was seen allocated") {
		t.Errorf("error %v", err)
	}
	// The bar ends full (how many parts the window is read in depends on
	// the summaries the server's Downsampler has written).
	bars := strings.Split(strings.TrimSuffix(stderr.String(), "\r\033[K"), "\r")
	last := bars[len(bars)-1]
	if !strings.HasSuffix(stderr.String(), "\r\033[K") || !strings.HasSuffix(last, " chunks read") || strings.Contains(last, "·") {
		t.Errorf("progress drawn: %q", stderr.String())
	}
}
