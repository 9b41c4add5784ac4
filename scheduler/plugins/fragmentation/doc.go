// Package fragmentation is the placement scorer for what a placement leaves behind:
// the node's used share after the placement, 1 − free/capacity (best fit). A part that
// fills a node (or an exclusive one) rates 1; one that breaks into an empty node rates
// its share of it, so partly used nodes fill first and whole nodes stay free for
// whole-node and multi-node jobs. Free milli-GPU stranded on shared GPUs counts as
// free, so fractional work packs onto GPUs already shared.
package fragmentation
