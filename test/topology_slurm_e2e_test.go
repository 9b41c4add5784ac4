package test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/topology"
	"github.com/gpuwatch/gpuwatch/scheduler/topology/hostlist"
	"github.com/gpuwatch/gpuwatch/scheduler/topology/ibnet"
	"github.com/gpuwatch/gpuwatch/test/realslurm"
)

// topoSiteYAML places the realslurm cluster's four nodes under two leaf switches
// joined by one spine.
const topoSiteYAML = `nodes:
  - names: gpu[01-02]
    leaf: leaf-a
    spine: spine-1
  - names: gpu[03-04]
    leaf: leaf-b
    spine: spine-1
`

// slurmSwitch is one line of `scontrol show topology`, nodes and child switches
// expanded.
type slurmSwitch struct {
	level    string
	nodes    []string
	switches []string
}

// parseShowTopology reads `scontrol show topology` ("SwitchName=leaf-a Level=0
// LinkSpeed=1 Nodes=gpu[01-02]"), one switch a line.
func parseShowTopology(t *testing.T, out string) map[string]slurmSwitch {
	t.Helper()
	sws := map[string]slurmSwitch{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		kv := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				t.Fatalf("scontrol show topology: %q in line %q is not key=value", f, line)
			}
			kv[k] = v
		}
		name := kv["SwitchName"]
		if name == "" {
			t.Fatalf("scontrol show topology: line %q has no SwitchName", line)
		}
		expand := func(key string) []string {
			if kv[key] == "" || kv[key] == "(null)" {
				return nil
			}
			l, err := hostlist.Expand(kv[key])
			if err != nil {
				t.Fatalf("scontrol show topology: switch %s %s=%q: %v", name, key, kv[key], err)
			}
			return l
		}
		sws[name] = slurmSwitch{level: kv["Level"], nodes: expand("Nodes"), switches: expand("Switches")}
	}
	return sws
}

// TestSlurmAcceptsGeneratedTreeTopology generates topology.conf from a site YAML
// through scheduler/topology, starts a real Slurm 22.05 with TopologyPlugin=
// topology/tree on it, and checks that slurmctld read the switches as written
// (scontrol show topology), that every node is idle, and that the topology steers
// placement: with gpu01 taken, a 2-node job with --switches=1 runs on gpu[03-04]
// (both of leaf-b) rather than gpu[02-03] (lowest free nodes, across leaves), which
// is where Slurm puts it without a topology.
func TestSlurmAcceptsGeneratedTreeTopology(t *testing.T) {
	tr, err := topology.FromYAML("site.yaml", []byte(topoSiteYAML))
	if err != nil {
		t.Fatal(err)
	}
	var conf bytes.Buffer
	if err := tr.WriteSlurmTree(&conf, "site.yaml"); err != nil {
		t.Fatal(err)
	}
	t.Logf("generated topology.conf:\n%s", conf.String())

	c := realslurm.Start(t, realslurm.Options{TopologyConf: conf.String()})
	if got := strings.TrimSpace(c.Run(t, "scontrol", "show", "config")); !strings.Contains(got, "topology/tree") {
		t.Fatalf("slurmctld does not run topology/tree; scontrol show config:\n%s", got)
	}

	show := c.Run(t, "scontrol", "show", "topology")
	t.Logf("scontrol show topology:\n%s", show)
	sws := parseShowTopology(t, show)
	want := map[string]slurmSwitch{
		"leaf-a":  {level: "0", nodes: []string{"gpu01", "gpu02"}},
		"leaf-b":  {level: "0", nodes: []string{"gpu03", "gpu04"}},
		"spine-1": {level: "1", nodes: []string{"gpu01", "gpu02", "gpu03", "gpu04"}, switches: []string{"leaf-a", "leaf-b"}},
	}
	if len(sws) != len(want) {
		t.Errorf("scontrol show topology lists %d switches, want %d", len(sws), len(want))
	}
	for name, w := range want {
		g, ok := sws[name]
		switch {
		case !ok:
			t.Errorf("switch %s missing from scontrol show topology", name)
		case g.level != w.level || !slices.Equal(g.nodes, w.nodes) || !slices.Equal(g.switches, w.switches):
			t.Errorf("switch %s: Slurm has level %s nodes %v switches %v, want level %s nodes %v switches %v",
				name, g.level, g.nodes, g.switches, w.level, w.nodes, w.switches)
		}
	}

	sinfo := strings.TrimSpace(c.Sinfo(t, "-h", "-N", "-o", "%N %T"))
	t.Logf("sinfo -N:\n%s", sinfo)
	if want := "gpu01 idle\ngpu02 idle\ngpu03 idle\ngpu04 idle"; sinfo != want {
		t.Fatalf("sinfo -N says\n%s\nwant all four nodes idle", sinfo)
	}

	blocker := c.Submit(t, "sleep 60", "-N", "1", "-w", "gpu01", "--exclusive")
	c.WaitJobState(t, blocker, "RUNNING", 15*time.Second)
	job := c.Submit(t, "sleep 60", "-N", "2", "--exclusive", "--switches=1")
	c.WaitJobState(t, job, "RUNNING", 15*time.Second)
	nodeList := strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", job, "-o", "%N"))
	show = c.Run(t, "scontrol", "show", "job", job)
	t.Logf("squeue NodeList of job %s: %s\nscontrol show job %s:\n%s", job, nodeList, job, show)
	if nodeList != "gpu[03-04]" {
		t.Errorf("2-node --switches=1 job with gpu01 busy runs on %s, want gpu[03-04] (leaf-b)", nodeList)
	}
	if !strings.Contains(show, "NodeList=gpu[03-04]") || !strings.Contains(show, "Switches=1@") {
		t.Errorf("scontrol show job %s lacks NodeList=gpu[03-04] or Switches=1@…:\n%s", job, show)
	}
	c.Run(t, "scancel", blocker, job)
	log := c.Log("slurmctld")
	t.Logf("slurmctld.log, topology lines:\n%s", grepLog(log, "topolog", "switch", "lookup"))
	if bad := grepLog(log, "lookup failure", "invalid hostnames", "lack access", "no switch can reach", "fatal"); bad != "" {
		t.Errorf("slurmctld complained about the topology:\n%s", bad)
	}
}

// TestSlurmAcceptsX5TreeTopology feeds Slurm the topology.conf generated from the
// real PSMN X5 fabric dump (six leaves, four spines and a core, leaves cabled to
// several spines, three top switches sharing no parent). Its 89 hosts are defined
// in slurm.conf as State=FUTURE nodes (known by name, never started): Slurm 22.05
// starts on a topology.conf naming unknown nodes, but only after logging a lookup
// failure for each and leaving them out of every switch, which would prove little.
// It checks that slurmctld starts, reports every switch with the level, children
// and leaf nodes gpuwatch wrote, reaches the right nodes through every upper
// switch, and logs no lookup failure or invalid host name.
func TestSlurmAcceptsX5TreeTopology(t *testing.T) {
	dir := "../scheduler/topology/testdata/data/ibnetdiscover-topologies/psmn-X5"
	mf, err := os.Open(filepath.Join(dir, "X5.map"))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	gm, err := topology.ReadGUIDMap("X5.map", mf)
	if err != nil {
		t.Fatal(err)
	}
	df, err := os.Open(filepath.Join(dir, "X5.topofile"))
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	fab, err := ibnet.Parse("X5.topofile", df)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := topology.FromIBNetDiscover(fab, topology.IBOptions{GUIDMap: gm})
	if err != nil {
		t.Fatal(err)
	}
	var conf bytes.Buffer
	if err := tr.WriteSlurmTree(&conf, "X5.topofile"); err != nil {
		t.Fatal(err)
	}
	t.Logf("generated topology.conf:\n%s", conf.String())

	var hosts []string
	for _, n := range tr.Nodes() {
		hosts = append(hosts, n.Name)
	}
	future, err := hostlist.Compress(hosts)
	if err != nil {
		t.Fatal(err)
	}
	c := realslurm.Start(t, realslurm.Options{TopologyConf: conf.String(), FutureNodes: future})
	show := c.Run(t, "scontrol", "show", "topology")
	t.Logf("scontrol show topology:\n%s", show)
	sws := parseShowTopology(t, show)
	if len(sws) != len(tr.Switches()) {
		t.Errorf("scontrol show topology lists %d switches, gpuwatch wrote %d", len(sws), len(tr.Switches()))
	}
	for _, s := range tr.Switches() {
		g, ok := sws[s.Name]
		if !ok {
			t.Errorf("switch %s missing from scontrol show topology", s.Name)
			continue
		}
		// Slurm numbers levels from 0 at the leaves and derives them from the
		// Switches= lines, so a matching level proves it read the hierarchy.
		if want := strconv.Itoa(s.Level - topology.LevelLeaf); g.level != want {
			t.Errorf("switch %s (%s): Slurm level %s, want %s", s.Name, topology.LevelName(s.Level), g.level, want)
		}
		if s.Level == topology.LevelLeaf {
			if !sameSet(g.nodes, s.Nodes) {
				t.Errorf("leaf %s: Slurm lists nodes %v, gpuwatch wrote %v", s.Name, g.nodes, s.Nodes)
			}
		} else {
			if !sameSet(g.switches, s.Children) {
				t.Errorf("switch %s: Slurm lists switches %v, gpuwatch wrote %v", s.Name, g.switches, s.Children)
			}
			// Slurm computes an upper switch's nodes from its node bitmaps: they
			// are there only if it resolved every leaf's names to its nodes.
			if want := below(tr, s.Name); !sameSet(g.nodes, want) {
				t.Errorf("switch %s: Slurm reaches nodes %v, want %v", s.Name, g.nodes, want)
			}
		}
	}
	log := c.Log("slurmctld")
	t.Logf("slurmctld.log, topology lines:\n%s", grepLog(log, "topolog", "switch", "lookup"))
	if bad := grepLog(log, "lookup failure", "invalid hostnames", "invalid node name", "fatal"); bad != "" {
		t.Errorf("slurmctld complained about the topology:\n%s", bad)
	}
}

// below returns the nodes under switch name, through every child switch.
func below(tr *topology.Tree, name string) []string {
	s, _ := tr.Switch(name)
	seen := map[string]bool{}
	var out []string
	for _, n := range s.Nodes {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, ch := range s.Children {
		for _, n := range below(tr, ch) {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// sameSet reports whether a and b hold the same names in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// grepLog returns the lines of log that contain any of words (case-insensitive).
func grepLog(log string, words ...string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		l := strings.ToLower(line)
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
