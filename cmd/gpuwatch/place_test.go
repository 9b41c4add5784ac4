package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

// placementServer is the placement service over an embedded store holding four
// 8-GPU nodes (node-00..node-03) under two leaves, two per leaf, mounted where the
// server mounts it, over real HTTP.
func placementServer(t *testing.T) string {
	t.Helper()
	st := embeddedtest.Open(t, embedded.Options{OutOfOrderWindow: time.Hour})
	now := time.Now().Truncate(time.Second)
	var batch []telemetry.Sample
	add := func(name string, kv ...string) {
		batch = append(batch, telemetry.Sample{Name: name, Labels: telemetry.NewLabels(kv...), Value: 1, Time: now.Add(-time.Second)})
	}
	for n := range 4 {
		node := fmt.Sprintf("node-%02d", n)
		add(telemetry.MetricTopologyNodeInfo, "node", node, "leaf", fmt.Sprintf("leaf-%d", n/2))
		for g := range 8 {
			idx := strconv.Itoa(g)
			add(telemetry.MetricGPUInfo, "node", node, "gpu_index", idx, "gpu_uuid", fmt.Sprintf("GPU-%d-%d", n, g), "model", "NVIDIA H100 80GB HBM3")
			batch = append(batch, telemetry.Sample{Name: telemetry.MetricGPUHealthState, Labels: telemetry.NewLabels("node", node, "gpu_index", idx), Time: now.Add(-time.Second)})
		}
	}
	if err := st.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	s, err := service.New(service.Options{Querier: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux, "/api/gpuwatch/v1")
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL
}

func runPlaceCmd(f func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) error, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := f(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func placeCmd(ctx context.Context, args []string, out, errb *bytes.Buffer) error {
	return runPlace(ctx, args, out, errb)
}

func explainCmd(ctx context.Context, args []string, out, errb *bytes.Buffer) error {
	return runExplain(ctx, args, out, errb)
}

// TestPlaceCommand runs `gpuwatch place` against the service over HTTP: a dry
// run of 16 GPUs fills one leaf; a reservation prints its lease; JSON output is
// the API's answer; a gang that cannot fit exits 1 with the reason.
func TestPlaceCommand(t *testing.T) {
	url := placementServer(t)
	out, _, err := runPlaceCmd(placeCmd, "--server", url, "--gpus", "16", "--dry-run")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{": placed (dry run)", "16 GPUs on 2 nodes in leaf", "leaves spanned 1", "gpus 0,1,2,3,4,5,6,7", "gpuwatch explain --server " + url} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}

	out, _, err = runPlaceCmd(placeCmd, "--server", url, "--gpus", "4", "--gpus-per-node", "4", "--model", "h100", "--lease", "10m", "--output", "json")
	if err != nil {
		t.Fatalf("reserve: %v\n%s", err, out)
	}
	var d service.PlaceResponse
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Reservation == nil || d.Outcome != framework.OutcomePlaced || len(d.Assignments) != 1 {
		t.Fatalf("reserve JSON: %v\n%s", err, out)
	}
	if left := time.Until(d.Reservation.Expires); left < 9*time.Minute || left > 10*time.Minute {
		t.Errorf("lease ends in %v; want 10 minutes", left)
	}

	// 32 GPUs with 4 reserved do not fit: exit 1, the reason printed.
	out, _, err = runPlaceCmd(placeCmd, "--server", url, "--gpus", "32", "--dry-run")
	var code exitCode
	if !errors.As(err, &code) || code != 1 || !strings.Contains(out, ": unschedulable (dry run): ") {
		t.Errorf("32 GPUs: %v\n%s", err, out)
	}

	// Explain the reservation, as text and as JSON.
	out, _, err = runPlaceCmd(explainCmd, "--server", url, d.ID)
	if err != nil || !strings.HasPrefix(out, "decision "+d.ID+" ") || !strings.Contains(out, "reservation "+d.ID) {
		t.Errorf("explain: %v\n%s", err, out)
	}
	out, _, err = runPlaceCmd(explainCmd, d.ID, "--server", url, "--output", "json")
	var full framework.Decision
	if err != nil || json.Unmarshal([]byte(out), &full) != nil || full.ID != d.ID || full.Request.Model != "h100" {
		t.Errorf("explain JSON: %v\n%s", err, out)
	}
	if _, _, err = runPlaceCmd(explainCmd, "--server", url, "no-such-id"); err == nil || !strings.Contains(err.Error(), `no decision "no-such-id"`) {
		t.Errorf("explain unknown: %v", err)
	}
}

// TestPlaceCommandUsage: bad flags are usage errors naming the flag, before any
// request is sent.
func TestPlaceCommandUsage(t *testing.T) {
	for _, tc := range []struct {
		cmd  func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) error
		args []string
		want string
	}{
		{placeCmd, []string{}, "--gpus 0"},
		{placeCmd, []string{"--gpus", "-2"}, "--gpus -2"},
		{placeCmd, []string{"--gpus", "8", "--output", "xml"}, `--output "xml"`},
		{placeCmd, []string{"--gpus", "8", "--tier", "rack"}, `--tier: invalid tier "rack"`},
		{placeCmd, []string{"--gpus", "8", "--lease", "soon"}, "invalid value"},
		{placeCmd, []string{"--gpus", "8", "--dry-run", "--lease", "1m"}, "a dry run holds nothing"},
		{placeCmd, []string{"--gpus", "8", "--server", "localhost:9402"}, `--server "localhost:9402"`},
		{placeCmd, []string{"--gpus", "8", "extra"}, `unexpected argument "extra"`},
		{explainCmd, []string{}, "which decision?"},
		{explainCmd, []string{"a", "b"}, "one decision at a time"},
		{explainCmd, []string{"a", "--output", "yaml"}, `--output "yaml"`},
	} {
		_, _, err := runPlaceCmd(tc.cmd, tc.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want a usage error with %q", tc.args, err, tc.want)
		}
	}
	// Server-side validation comes back with the server's message.
	url := placementServer(t)
	if _, _, err := runPlaceCmd(placeCmd, "--server", url, "--gpus", "9", "--gpus-per-node", "4"); err == nil || !strings.Contains(err.Error(), "not a multiple of gpus_per_node 4") {
		t.Errorf("uneven shape: %v", err)
	}
}
