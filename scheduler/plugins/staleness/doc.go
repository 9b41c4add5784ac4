// Package staleness is the placement filter for old telemetry. By default it passes
// every node, noting GPUs whose health observation is older than the snapshot's bound
// (their last known state is used, flagged); with Request.RequireFresh it drops them
// and rejects a node left with too few.
package staleness
