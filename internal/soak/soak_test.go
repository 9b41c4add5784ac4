package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSoakShort is the soak `make test` runs: 50 simulated nodes with a real
// agent each, a real `gpuwatch server` process built from this tree, about
// a minute. Every sample the shippers sent must be accepted and stored,
// every health push answered 202 within 2 s at p99 and every node's health
// held by the server; the agents' live heap and both processes' goroutines
// must not grow by more than a loose bound (a leak per request or per cycle
// would); every dashboard query must answer. Query latency bounds are
// five times the benchmark's: a 2-core machine running other packages'
// tests at once is not where latency is measured (`make bench` is).
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes about a minute")
	}
	bin := os.Getenv("GPUWATCH_BIN")
	if bin == "" {
		bin = buildGpuwatch(t)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	res, err := Run(ctx, Options{
		Bin:             bin,
		Nodes:           50,
		Interval:        10 * time.Second,
		HealthInterval:  2 * time.Second,
		Warmup:          15 * time.Second,
		Duration:        40 * time.Second,
		SampleEvery:     4 * time.Second,
		QueryEvery:      10 * time.Second,
		FaultEvery:      4 * time.Second,
		PushBound:       2 * time.Second,
		QueryBoundScale: 5,
		// Loose: a minute is too short for the flatness the benchmark asks
		// (the store's head and the Go runtimes are still settling), long
		// enough for a leak per request or per cycle to show.
		MemTolerance:       0.5,
		GoroutineTolerance: 0.10,
		GoroutineSlack:     50,
		Out:                &out,
	})
	if res != nil && len(res.Checks) > 0 {
		printReport(&out, res)
	}
	t.Logf("soak of 50 nodes took %s:\n%s", time.Since(t0).Round(time.Second), out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if !c.ok {
			t.Errorf("%s: %s", c.name, c.detail)
		}
	}
	// The counts must be real: the agents shipped, the store was read.
	if res.Sent < 50*1000 || res.Stored != res.Sent {
		t.Errorf("sent %.0f samples, stored %.0f: want at least 1,000 per node, all stored", res.Sent, res.Stored)
	}
	if res.Pushes.N < 50 {
		t.Errorf("%d health pushes timed: want at least one per node", res.Pushes.N)
	}
}

// buildGpuwatch builds this tree's gpuwatch binary into the test's
// temporary directory.
func buildGpuwatch(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the soak needs the go command to build gpuwatch (or GPUWATCH_BIN): %v", err)
	}
	bin := filepath.Join(t.TempDir(), "gpuwatch")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/gpuwatch/gpuwatch/cmd/gpuwatch")
	cmd.Env = os.Environ()
	if !strings.Contains(os.Getenv("CGO_CFLAGS"), "deprecated") {
		// As the Makefile sets it: go-nvml's deprecated functions warn.
		cmd.Env = append(cmd.Env, "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build gpuwatch: %v\n%s", err, b)
	}
	return bin
}

// TestFlatJudgesGrowthOnly: a series that grows past the tolerance is not flat,
// one that falls by as much is (a soak looks for leaks).
func TestFlatJudgesGrowthOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals []float64
		ok   bool
	}{
		{"steady", []float64{100, 101, 99, 100, 100, 101}, true},
		{"grows 20 %", []float64{100, 100, 110, 110, 120, 120}, false},
		{"grows within 10 %", []float64{100, 100, 104, 104, 108, 108}, true},
		{"falls 20 %", []float64{100, 100, 90, 90, 80, 80}, true},
	} {
		if f := flat(tc.vals, 0.10, 0); f.OK != tc.ok {
			t.Errorf("%s: flat = %v (change %+.2f), want %v", tc.name, f.OK, f.Change, tc.ok)
		}
	}
}
