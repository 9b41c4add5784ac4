package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const topoData = "../../scheduler/topology/testdata/data/ibnetdiscover-topologies/psmn-X5/"

func topoFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runTopo(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runTopology(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestTopologySlurm(t *testing.T) {
	out, stderr, err := runTopo(t, "slurm", "--ibnetdiscover", topoData+"X5.topofile", "--guid-map", topoData+"X5.map")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// The X5 fabric: 6 leaves, 4 spines, 1 core; the site's leaf line for S-…17670.
	if got := strings.Count(out, "\nSwitchName="); got != 11 {
		t.Errorf("%d SwitchName lines, want 11:\n%s", got, out)
	}
	if !strings.Contains(out, "SwitchName=S-0002c90200417670 Nodes=sl390lin[1-5,7-11,13-18,20-21,24-27,29,33]\n") {
		t.Errorf("leaf line missing:\n%s", out)
	}
	out, _, err = runTopo(t, "slurm", "--ibnetdiscover", topoData+"X5.topofile", "--guid-map", topoData+"X5.map", "--block", "--block-sizes", "5,20")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "BlockName=") != 6 || !strings.HasSuffix(out, "BlockSizes=5,20\n") {
		t.Errorf("block output:\n%s", out)
	}
	// Without the map, unmapped HCAs keep their IDs; a warning-free dump prints
	// nothing to stderr.
	out, stderr, err = runTopo(t, "slurm", "--ibnetdiscover", topoData+"X5.topofile")
	if err != nil || stderr != "" || !strings.Contains(out, "Nodes=H-0002c90300048208") {
		t.Errorf("no map: %v %q\n%s", err, stderr, out)
	}
}

func TestTopologyLabelsAndVolcano(t *testing.T) {
	site := topoFile(t, "site.yaml", "nodes:\n  - names: gpu[01-04]\n    nvlink_domain: nvl-a\n    leaf: leaf-1\n    spine: spine-1\n  - names: gpu[05-08]\n    leaf: leaf-2\n    spine: spine-1\n")
	out, _, err := runTopo(t, "labels", "--from-yaml", site)
	if err != nil {
		t.Fatal(err)
	}
	want := "kubectl label node gpu01 network.topology.nvidia.com/accelerator=nvl-a network.topology.nvidia.com/leaf=leaf-1 network.topology.nvidia.com/spine=spine-1 nvidia.com/gpu.clique=nvl-a --overwrite\n"
	if !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 8 {
		t.Errorf("kubectl output:\n%s\nwant first line\n%s", out, want)
	}
	out, _, err = runTopo(t, "labels", "--from-yaml", site, "--output", "json", "--no-gpu-clique")
	if err != nil {
		t.Fatal(err)
	}
	var labels map[string]map[string]string
	if err := json.Unmarshal([]byte(out), &labels); err != nil || len(labels) != 8 || labels["gpu07"]["network.topology.nvidia.com/leaf"] != "leaf-2" || labels["gpu01"]["nvidia.com/gpu.clique"] != "" {
		t.Errorf("json: %v %v", err, labels)
	}
	out, _, err = runTopo(t, "labels", "--from-yaml", site, "--kueue-topology", "--kueue-name", "site")
	if err != nil || !strings.Contains(out, "kind: Topology\nmetadata:\n  name: site\n") || !strings.Contains(out, "- nodeLabel: kubernetes.io/hostname\n") {
		t.Errorf("kueue: %v\n%s", err, out)
	}
	// The site's own topology.conf gives the same HyperNodes as the dump.
	fromConf, _, err := runTopo(t, "volcano", "--from-slurm", topoData+"X5.topology.conf")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = runTopo(t, "volcano", "--ibnetdiscover", topoData+"X5.topofile", "--guid-map", topoData+"X5.map")
	if err != nil || strings.Count(out, "kind: HyperNode\n") != 8 || !strings.Contains(out, "name: s-0002c90200417670\n") {
		t.Errorf("volcano: %v\n%.600s", err, out)
	}
	if fromConf != out {
		t.Errorf("HyperNodes from X5.topology.conf differ from those of the dump")
	}
}

func TestTopologyUsage(t *testing.T) {
	bad := topoFile(t, "bad.yaml", "nodes:\n  - name: a\n    rack: r1\n")
	pods := topoFile(t, "pods.json", `{"kind":"PodList","items":[]}`)
	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no subcommand", nil, true, "which export?"},
		{"unknown subcommand", []string{"torus"}, true, `unknown topology command "torus"`},
		{"no input", []string{"slurm"}, true, "no input"},
		{"two inputs", []string{"labels", "--ibnetdiscover", "x", "--from-yaml", "y"}, true, "not several"},
		{"map without dump", []string{"volcano", "--from-yaml", bad, "--guid-map", "m"}, true, "--guid-map names the hosts"},
		{"bad output", []string{"labels", "--from-yaml", bad, "--output", "yaml"}, true, `--output "yaml"`},
		{"block flags without --block", []string{"slurm", "--from-yaml", bad, "--block-sizes", "4"}, true, "need --block"},
		{"bad block sizes", []string{"slurm", "--from-yaml", bad, "--block", "--block-sizes", "4,x"}, true, `"x" is not a number`},
		{"stray argument", []string{"slurm", "extra"}, true, `unexpected argument "extra"`},
		{"bad site file names file:line", []string{"labels", "--from-yaml", bad}, false, "bad.yaml:3: nodes[0].rack: unknown field"},
		{"missing dump", []string{"slurm", "--ibnetdiscover", "/nonexistent/x.topo"}, false, "cannot read ibnetdiscover dump"},
		{"not a node list", []string{"slurm", "--from-k8s-nodes", pods}, false, `kind "PodList"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runTopo(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if errors.Is(err, errUsage) != tc.usage {
				t.Errorf("usage error: %v, want %v", errors.Is(err, errUsage), tc.usage)
			}
		})
	}
	out, _, err := runTopo(t, "-h")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "volcano") {
		t.Errorf("help: %v\n%s", err, out)
	}
}

// TestServerSiteTopologyErrors: the server's site flags load through the same
// topology.Load, and their errors name the server's flags, not those of
// `gpuwatch topology`.
func TestServerSiteTopologyErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--placement.site-yaml", "a", "--placement.guid-map", "m"}, "--placement.guid-map names the hosts of an --placement.ibnetdiscover dump"},
		{[]string{"--placement.site-yaml", "a", "--placement.k8s-nodes", "b"}, "give one of --placement.ibnetdiscover, --placement.site-yaml"},
		{[]string{"--placement.site-yaml", "/nonexistent/site.yaml"}, "cannot read site topology"},
		{[]string{"--placement.straggler-weight", "-1"}, "--placement.straggler-weight -1: want a number ≥ 0"},
		{[]string{"--placement.straggler-window", "10s"}, "--placement.straggler-window 10s: want 1m or more"},
		{[]string{"--placement=false", "--placement.straggler-weight", "2"}, "--placement.* need --placement"},
	} {
		code, _, errOut := gw(t, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", dir}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("server %v: exit %d, want an error containing %q:\n%s", tc.args, code, tc.want, errOut)
		}
	}
}
