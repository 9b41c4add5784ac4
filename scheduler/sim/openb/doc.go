// Package openb replays the Alibaba openb GPU traces (alibaba/clusterdata
// cluster-trace-gpu-v2023) with the protocol of the FGD paper (USENIX ATC '23,
// "Beware of Fragmentation") as its simulator, hkust-adsl/kubernetes-scheduler-simulator,
// runs it: pods shuffled with Go's math/rand seeded by -tuneseed, the GPU request
// inflated to -tune × capacity by cloning random pods, every pod submitted once
// (a pod that fits nowhere is dropped), and the allocation curve computed as the
// simulator's analysis scripts compute it. See Arrivals and sim.AllocationCurve
// for the exact steps.
//
// The CSV loaders report bad input as "file:line:column: column NAME: problem".
package openb
