// Package topology is gpuwatch's model of the fabric between nodes, and its exports
// to the schedulers people already run.
//
// A Tree holds the nodes, the switches above them by level (1 leaf: the switches
// hosts are cabled to; 2 spine; 3 core; higher levels where a fabric has them) and
// each node's place: its NVLink domain, leaf, spine and core. It is built from an
// ibnetdiscover dump (FromIBNetDiscover), from a site YAML file for sites without a
// fabric dump (FromYAML), from a Slurm topology.conf (FromSlurmTopology), or from
// node labels (FromLabels, ParseKubeNodes for `kubectl get nodes -o json`); Load
// reads any of these files, named by a Source. A Tree converts to the fleet
// hierarchy placement reads (Tree.Hierarchy).
//
// Physical and logical levels. A real fat tree cables every leaf to several
// spines, so "the spine of a node" is not one switch. The switch graph keeps every
// link (Slurm's topology/tree takes it as it is: a switch may sit under several
// parents), and each node's Leaf, Spine and Core are domains: the nodes that can
// reach each other through switches of that level or below. A domain is named after
// its first switch in name order. On a fabric where every host has one HCA and
// every leaf one spine this is the switch itself.
//
//	 core  ── domain: spines joined by a core switch
//	spine  ── domain: leaves joined by a spine switch (all spines of a fat tree)
//	 leaf  ── domain: a leaf switch, or the leaves a multi-rail host is cabled to
//	 node
//
// Exports: Slurm topology.conf (topology/tree and topology/block), Kubernetes node
// labels in NVIDIA topograph's scheme (network.topology.nvidia.com/accelerator,
// leaf, spine, core, and nvidia.com/gpu.clique), a Kueue Topology object, and
// Volcano HyperNode objects. Slurm host lists are compressed by package hostlist;
// dumps are read by package ibnet.
package topology
