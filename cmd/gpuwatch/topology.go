//go:build !agentonly

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/topology"
)

// topologyCommands are the subcommands of `gpuwatch topology`.
var topologyCommands = map[string]struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}{
	"slurm":   {"print a Slurm topology.conf (topology/tree, or topology/block with --block)", runTopologySlurm},
	"labels":  {"print Kubernetes node labels in NVIDIA topograph's scheme (kubectl or JSON), or a Kueue Topology", runTopologyLabels},
	"volcano": {"print Volcano HyperNode objects for kubectl apply", runTopologyVolcano},
}

func runTopology(_ context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "Usage: gpuwatch topology <slurm|labels|volcano> [flags]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Exports the fabric between nodes, read from an ibnetdiscover dump, a site YAML file, a Slurm")
		fmt.Fprintln(w, "topology.conf or Kubernetes node labels, in the forms schedulers read, so they place jobs by")
		fmt.Fprintln(w, "leaf, spine and NVLink domain.")
		fmt.Fprintln(w)
		names := make([]string, 0, len(topologyCommands))
		for n := range topologyCommands {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "  %-8s %s\n", n, topologyCommands[n].summary)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Run 'gpuwatch topology <command> -h' for its flags.")
	}
	if len(args) == 0 {
		usage(stderr)
		return fmt.Errorf("%w: which export? want slurm, labels or volcano", errUsage)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return flag.ErrHelp
	}
	c, ok := topologyCommands[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("%w: unknown topology command %q: want slurm, labels or volcano", errUsage, args[0])
	}
	return c.run(args[1:], stdout, stderr)
}

// topologyInput is the input flags every topology command shares, and the
// server's --placement.* site flags.
type topologyInput struct {
	topology.Source
	names topologyFlagNames // the flags' names, for errors
}

// topologyFlagNames names the flags that set each field of a topology.Source.
type topologyFlagNames struct{ ibnetdiscover, guidMap, yaml, slurm, k8s string }

func (in *topologyInput) register(fs *flag.FlagSet) {
	in.names = topologyFlagNames{"--ibnetdiscover", "--guid-map", "--from-yaml", "--from-slurm", "--from-k8s-nodes"}
	fs.StringVar(&in.IBNetDiscover, "ibnetdiscover", "", "an ibnetdiscover dump (plain or -p format) to read the fabric from")
	fs.StringVar(&in.GUIDMap, "guid-map", "", "a GUID→host map (\"H-<guid> host\" lines) naming the hosts of the dump's HCAs; wins over their node descriptions")
	fs.StringVar(&in.SiteYAML, "from-yaml", "", "a site YAML file (nodes with leaf, spine, core, nvlink_domain) for sites without a fabric dump")
	fs.StringVar(&in.SlurmTopology, "from-slurm", "", "a Slurm topology.conf (topology/tree) to read the switch tree from")
	fs.StringVar(&in.KubeNodes, "from-k8s-nodes", "", "`kubectl get nodes -o json` output whose node labels (topograph's network.topology.nvidia.com/* scheme) give the tree")
}

// load builds the tree (topology.Load) and prints its warnings to stderr;
// source names the input.
func (in *topologyInput) load(stderr io.Writer) (tree *topology.Tree, source string, err error) {
	n := in.names
	switch in.Check() {
	case topology.ErrSeveralSources:
		return nil, "", fmt.Errorf("%w: give one of %s, %s, %s and %s, not several", errUsage, n.ibnetdiscover, n.yaml, n.slurm, n.k8s)
	case topology.ErrNoSource:
		return nil, "", fmt.Errorf("%w: no input: give %s FILE, %s FILE, %s FILE or %s FILE", errUsage, n.ibnetdiscover, n.yaml, n.slurm, n.k8s)
	case topology.ErrGUIDMapAlone:
		return nil, "", fmt.Errorf("%w: %s names the hosts of an %s dump", errUsage, n.guidMap, n.ibnetdiscover)
	}
	if tree, err = topology.Load(in.Source); err != nil {
		return nil, "", err
	}
	for _, w := range tree.Warnings() {
		fmt.Fprintf(stderr, "gpuwatch topology: warning: %s\n", w)
	}
	return tree, in.Name(), nil
}

func topologyUsage(fs *flag.FlagSet, stderr io.Writer, synopsis string, text ...string) {
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch topology "+synopsis)
		fmt.Fprintln(stderr)
		for _, t := range text {
			fmt.Fprintln(stderr, t)
		}
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
}

func runTopologySlurm(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topology slurm", stderr)
	var in topologyInput
	in.register(fs)
	block := fs.Bool("block", false, "write topology/block (BlockName=, BlockSizes=) instead of topology/tree")
	level := fs.String("block-level", "", "with --block, what a block is: nvlink (NVLink domain) or leaf (default: nvlink where every node has one, else leaf)")
	sizes := fs.String("block-sizes", "", "with --block, BlockSizes as a comma-separated list (default: the smallest block's size, doubled while enough blocks remain)")
	topologyUsage(fs, stderr, "slurm (--ibnetdiscover FILE [--guid-map FILE] | --from-yaml FILE | --from-slurm FILE | --from-k8s-nodes FILE) [--block]",
		"Prints a Slurm topology.conf: SwitchName lines with Slurm host lists for TopologyPlugin=topology/tree,",
		"or BlockName lines and BlockSizes for topology/block. What the tree cannot hold is written as comments.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*block && (*level != "" || *sizes != "") {
		return fmt.Errorf("%w: --block-level and --block-sizes need --block", errUsage)
	}
	var o topology.BlockOptions
	o.Level = *level
	if *sizes != "" {
		for _, s := range strings.Split(*sizes, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return fmt.Errorf("%w: --block-sizes %q: %q is not a number", errUsage, *sizes, s)
			}
			o.Sizes = append(o.Sizes, v)
		}
	}
	tree, source, err := in.load(stderr)
	if err != nil {
		return err
	}
	if *block {
		return tree.WriteSlurmBlock(stdout, o, source)
	}
	return tree.WriteSlurmTree(stdout, source)
}

func runTopologyLabels(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topology labels", stderr)
	var in topologyInput
	in.register(fs)
	output := fs.String("output", "kubectl", "kubectl (one 'kubectl label node' line per node) or json (node → labels)")
	kueue := fs.Bool("kueue-topology", false, "print a Kueue Topology object (kueue.x-k8s.io/v1beta1) with these labels as levels instead of the labels")
	kueueName := fs.String("kueue-name", "gpuwatch", "with --kueue-topology, the Topology's name")
	noClique := fs.Bool("no-gpu-clique", false, "leave out nvidia.com/gpu.clique (GPU feature discovery writes it where it runs)")
	topologyUsage(fs, stderr, "labels (--ibnetdiscover FILE [--guid-map FILE] | --from-yaml FILE | --from-slurm FILE | --from-k8s-nodes FILE) [--output kubectl|json] [--kueue-topology]",
		"Prints node labels in NVIDIA topograph's scheme: "+topology.LabelAccelerator+" (NVLink domain),",
		topology.LabelLeaf+", "+topology.LabelSpine+", "+topology.LabelCore+",",
		"and "+topology.LabelGPUClique+" where the NVLink domain is known. Kueue's topology-aware scheduling and KAI read them.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *output != "kubectl" && *output != "json" {
		return fmt.Errorf("%w: --output %q: want kubectl or json", errUsage, *output)
	}
	tree, _, err := in.load(stderr)
	if err != nil {
		return err
	}
	if *kueue {
		return tree.WriteKueueTopology(stdout, *kueueName)
	}
	labels := tree.Labels(topology.LabelOptions{NoGPUClique: *noClique})
	if *output == "json" {
		return topology.WriteLabelsJSON(stdout, labels)
	}
	return topology.WriteKubectl(stdout, labels)
}

func runTopologyVolcano(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topology volcano", stderr)
	var in topologyInput
	in.register(fs)
	regex := fs.Bool("regex", false, "match each leaf's nodes with one regexMatch member instead of one exactMatch member per node")
	topologyUsage(fs, stderr, "volcano (--ibnetdiscover FILE [--guid-map FILE] | --from-yaml FILE | --from-slurm FILE | --from-k8s-nodes FILE) [--regex]",
		"Prints Volcano HyperNode objects (topology.volcano.sh/v1alpha1): tier 1 per leaf domain with its nodes,",
		"tier 2 per spine domain, tier 3 per core domain, as YAML for kubectl apply.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tree, _, err := in.load(stderr)
	if err != nil {
		return err
	}
	hns, err := tree.HyperNodes(*regex)
	if err != nil {
		return err
	}
	return topology.WriteVolcano(stdout, hns)
}
