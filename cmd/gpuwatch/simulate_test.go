package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSimulateOpenB(t *testing.T) {
	// Two 1-GPU nodes, three half-GPU pods: tune 1 keeps 1500 of 2000 milli; all
	// fit, so the final ratio equals the demand, 75 %.
	nodes := writeFile(t, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,1024,1,T4\nn1,8000,1024,1,T4\n")
	pods := writeFile(t, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,1,500\np1,1000,10,1,500\np2,1000,10,1,500\n")
	var out, errOut bytes.Buffer
	err := runSimulate(context.Background(), []string{"openb", "--node-list", nodes, "--pod-list", pods, "--policy", "fgd", "--tune", "0"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != "final 75.00" {
		t.Errorf("last line %q, want final 75.00\n%s", last, out.String())
	}
	out.Reset()
	err = runSimulate(context.Background(), []string{"openb", "--node-list", nodes, "--pod-list", pods, "--policy", "bestfit", "--tune", "0", "--seeds", "1-3", "--output", "json"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Final   float64 `json:"final"`
		PerSeed []struct {
			Seed int64 `json:"seed"`
		} `json:"per_seed"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Final != 75 || len(rep.PerSeed) != 3 {
		t.Errorf("json report %+v", rep)
	}
}

func TestSimulateUsageErrors(t *testing.T) {
	pods := writeFile(t, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,x,10,1,500\n")
	nodes := writeFile(t, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,1024,1,T4\n")
	tests := []struct {
		args  []string
		usage bool
		want  string
	}{
		{nil, true, "missing simulation"},
		{[]string{"tetris"}, true, `unknown simulation "tetris"`},
		{[]string{"fairshare", "--data", "/nonexistent"}, true, "give --data DIR or --trace FILE"},
		{[]string{"fairshare", "--charge", "free"}, true, `--charge "free"`},
		{[]string{"fairshare", "--trace", pods}, false, "p.csv"},
		{[]string{"openb", "--pod-list", pods, "--policy", "fgd"}, true, "--node-list is required"},
		{[]string{"openb", "--node-list", nodes, "--pod-list", pods, "--policy", "worstfit"}, true, `unknown --policy "worstfit"`},
		{[]string{"openb", "--node-list", nodes, "--pod-list", pods, "--policy", "fgd", "--seeds", "9-1"}, true, "--seeds"},
		{[]string{"openb", "--node-list", nodes, "--pod-list", pods, "--policy", "fgd"}, false, "p.csv:2:4: column cpu_milli: not an integer"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		err := runSimulate(context.Background(), tt.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, errUsage) != tt.usage {
			t.Errorf("%v: error %v, want %q (usage %v)", tt.args, err, tt.want, tt.usage)
		}
	}
}
