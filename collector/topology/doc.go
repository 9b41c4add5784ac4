// Package topology is the agent's topology source: it discovers how the node's GPUs
// and InfiniBand HCAs are wired (telemetry.NodeTopology) and emits it as the
// gpuwatch_topology_* info series; Source.Topology serves the same graph to the
// /topology endpoint.
//
// What it reads, all through the real interfaces:
//
//   - GPU↔GPU: NVML. Every active NVLink's remote end (GetNvLinkRemoteDeviceType,
//     GetNvLinkRemotePciInfo): links that end on another GPU make an NVLINK pair
//     with that many links; when both GPUs have active links into NVSwitches the
//     pair is NVSWITCH with the smaller of their switch-link counts (NV18 on HGX
//     H100, NV12 on DGX A100). A pair without NVLink gets the PCIe path NVML's
//     GetTopologyCommonAncestor reports, or, when NVML cannot say, the one the
//     sysfs PCI tree shows.
//   - GPU↔NIC: the sysfs PCI tree. Each GPU's /sys/bus/pci/devices/<bdf> and each
//     HCA's /sys/class/infiniband/<dev>/device resolve to a path under
//     /sys/devices/pci<domain>:<bus>/…; two devices under one switch (at most two
//     hops below their deepest common bridge) are PIX, deeper under one root port
//     PXB, under one host bridge PHB, on one NUMA node NODE, else SYS. The closest
//     NIC is the GPU's rail NIC (telemetry.NodeTopology.Rail).
//   - NUMA nodes: sysfs numa_node of the PCI function, else NVML GetNumaNodeId,
//     else -1.
//
// Topology changes rarely, so discovery runs at the first Collect and again every
// Options.Refresh (10 minutes by default); a discovery that met errors is retried
// after a minute. Between discoveries Collect re-emits the cached series.
package topology
