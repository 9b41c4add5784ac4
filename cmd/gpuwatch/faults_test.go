//go:build !agentonly

package main

import (
	"encoding/csv"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
	"github.com/gpuwatch/gpuwatch/analyzer/faults/faultstest"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestFaultsCommand: gpuwatch faults against a real gpuwatch server fed the
// simulated fleet of faultstest by remote write: every output format carries
// faultstest's answers (the server's drain controller has drained nothing,
// so only Xid failures count: node-a 2, node-c 1); bad input exits with one line naming
// what to change.
func TestFaultsCommand(t *testing.T) {
	// The fleet is two days old: the embedded store takes it in that window.
	url, _ := startServerCommand(t, "--out-of-order-window", "60h")
	t0 := time.Now().Add(-50 * time.Hour).Truncate(time.Hour)
	samples := faultstest.Fleet(t0)
	realstore.RemoteWrite(t, url, samples, 10*time.Minute) // ten minutes a request, as agents ship
	from, to := t0.Format(time.RFC3339), t0.Add(faultstest.Window).Format(time.RFC3339)

	code, out, errOut := gw(t, "faults", "--server", url, "--from", from, "--to", to)
	for _, want := range []string{"11 Xids, 3 failures", "Xids by code", "GPU-c1", "mlx5_1"} {
		if code != 0 || errOut != "" || !strings.Contains(out, want) {
			t.Errorf("table: exit %d, stderr %q, want %q in\n%s", code, errOut, want, out)
		}
	}
	code, out, errOut = gw(t, "faults", "--server", url, "--from", from, "--to", to, "--output", "json")
	var r faults.Report
	if err := json.Unmarshal([]byte(out), &r); code != 0 || errOut != "" || err != nil || r.XidTotal != 11 || r.Failures != 3 || len(r.DrainSoon) != 4 {
		t.Errorf("json: exit %d, stderr %q, %v: %s", code, errOut, err, out)
	}
	code, out, errOut = gw(t, "faults", "--server", url, "--from", from, "--to", to, "--output", "csv", "--top", "1")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || errOut != "" || err != nil || len(rows) < 2 || strings.Join(rows[0], ",") != "section,key,field,value" ||
		!strings.Contains(out, "\nnvlink_links,node-c/GPU-c0/0,replays,200\n") || strings.Contains(out, "node-a/GPU-a0/3") {
		t.Errorf("csv: exit %d, stderr %q, %v:\n%s", code, errOut, err, out)
	}

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
		{[]string{"--last", "1h", "--from", from, "--to", to}, 2, "not both"},
		{[]string{"--output", "html"}, 2, `--output: unknown output "html": want one of table, json, csv`},
		{[]string{"--lemon-count", "0"}, 2, `--lemon-count "0"`},
		{[]string{"--top", "-1"}, 2, "--top"},
		{[]string{"--server", dead, "--last", "1h"}, 1, "gpuwatch server"},
	} {
		args := append([]string{"faults", "--server", url}, c.args...)
		code, out, errOut := gw(t, args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}
