// Package gpuset is the in-node step of placement: as the Picker it chooses which of
// a node's usable GPUs a gang part gets, and as a Scorer it rates that choice.
//
// Whole GPUs are chosen for connectivity first: on an NVSwitch node (every pair
// alike) any subset is as good, so the choice goes to rails; otherwise a greedy
// search from every seed GPU grows the set that maximises its worst link (then the
// sum of its links), the bottleneck of a collective. Then rails: GPUs whose rails are
// in Candidate.PreferRails (so every node of a gang uses the same rails), then GPUs on
// distinct rails, then the lowest positions. Fractional requests take the GPUs with
// the least free room that still fits (best fit), keeping whole GPUs free. Last,
// stragglers: when whole GPUs chosen so hold a GPU named a straggler
// (snapshot.Node.Stragglers) and enough usable GPUs are not, the same choice among
// those is taken if it rates as well on links and rails (never at their cost;
// the straggler scorer then rates the node).
//
// The score is 0.7 × the worst link's rating (NVLink/NVSwitch 0.8–1 by link count,
// PIX 0.6, PXB 0.5, PHB 0.4, NODE 0.3, SYS 0.2; 0.5 when the topology is unknown) +
// 0.3 × the rail rating (the share of chosen GPUs on distinct rails, halved for those
// outside PreferRails; 0.5 when rails are unknown). One GPU rates 1 for links.
package gpuset
