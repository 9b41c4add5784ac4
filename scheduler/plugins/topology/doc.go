// Package topology is the placement scorer for where a node sits in the fleet. With
// Request.Near (peers already placed, the extender's case) it rates the lowest tier
// the node shares with its closest peer: 1 for the same node, falling by tier to 0
// across the cluster. Without peers it rates leaf packing, 1 − the free share of the
// node's leaf, so small jobs fill busy leaves and leave whole leaves free for large
// gangs. Unknown leaves rate 0.5.
//
// Compactness of a multi-node gang (fewest leaves, lowest common ancestor) is not a
// per-node score: the engine assembles the gang in the lowest domain that fits.
package topology
