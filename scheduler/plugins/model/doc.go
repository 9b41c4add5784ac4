// Package model is the placement filter for GPU kind: it keeps the GPUs whose model
// contains the requested one (case-insensitively) and whose memory is at least the
// requested minimum, and rejects a node left with too few.
package model
