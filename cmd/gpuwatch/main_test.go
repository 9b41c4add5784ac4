package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "help", args: nil, code: 0, stdout: "Commands:"},
		{name: "help lists demo", args: []string{"help"}, code: 0, stdout: "demo"},
		{name: "unknown", args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{name: "version", args: []string{"version"}, code: 0, stdout: "gpuwatch "},
		{name: "version stray arg", args: []string{"version", "x"}, code: 2, stderr: `unexpected argument "x"`},
		{name: "demo bad flag", args: []string{"demo", "--nodez", "3"}, code: 2, stderr: "flag provided but not defined: -nodez"},
		{name: "demo bad speed", args: []string{"demo", "--speed", "0"}, code: 2, stderr: "-speed must be positive"},
		{name: "demo missing faults file", args: []string{"demo", "--faults", "/nonexistent/story.yaml"}, code: 1, stderr: "/nonexistent/story.yaml"},
		{name: "demo runs", args: []string{"demo", "--nodes", "2", "--duration", "2m", "--speed", "100000"}, code: 0, stdout: "fleet: 16 GPUs"},
		{name: "demo shows metrics", args: []string{"demo", "--nodes", "2", "--duration", "30s", "--speed", "100000", "--show-metrics", "node-02"}, code: 0, stdout: `DCGM_FI_DEV_GPU_TEMP{DCGM_FI_DRIVER_VERSION=`},
		{name: "demo stores in its server", args: []string{"demo", "--nodes", "2", "--duration", "2m", "--speed", "100000", "--server-listen", "127.0.0.1:0"}, code: 0, stdout: "count(DCGM_FI_DEV_GPU_TEMP) = 16 GPUs"},
		{name: "demo at a given start", args: []string{"demo", "--nodes", "1", "--duration", "2m", "--speed", "100000", "--start", "2025-03-03T08:00:00Z"}, code: 0, stdout: "simulated time runs 2025-03-03T08:00:00Z to 08:02:00Z at"},
		{name: "demo bad start", args: []string{"demo", "--start", "yesterday"}, code: 2, stderr: "RFC 3339"},
		{name: "demo bad server address", args: []string{"demo", "--nodes", "1", "--duration", "30s", "--server-listen", "127.0.0.1:99999"}, code: 1, stderr: `--server-listen "127.0.0.1:99999"`},
		{name: "demo shows metrics of no node", args: []string{"demo", "--nodes", "2", "--show-metrics", "node-09"}, code: 1, stderr: `--show-metrics "node-09": no such node`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.stderr)
			}
		})
	}
}
