package framework

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// Code is the outcome of a plugin call.
type Code uint8

// Codes.
const (
	// Success: the node passes (a Filter), the GPUs are picked (a Picker), the score
	// stands (a Scorer). A Success may carry a reason worth showing ("gpu 3 draining").
	Success Code = iota
	// Unschedulable: the node cannot take its part of this request.
	Unschedulable
	// Error: the plugin failed; the node is rejected and the reason says why.
	Error
)

var codeNames = [...]string{"success", "unschedulable", "error"}

// String returns "success", "unschedulable" or "error".
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", int(c))
}

// MarshalText writes the code's name.
func (c Code) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a code's name.
func (c *Code) UnmarshalText(b []byte) error {
	for i, n := range codeNames {
		if n == string(b) {
			*c = Code(i)
			return nil
		}
	}
	return fmt.Errorf("invalid status code %q: want success, unschedulable or error", b)
}

// Status is a plugin's verdict. The zero Status is a plain success. It is a value, so
// returning one costs no allocation.
type Status struct {
	Code   Code   `json:"code"`
	Reason string `json:"reason,omitempty"`
}

// OK reports whether the status is a success.
func (s Status) OK() bool { return s.Code == Success }

// String returns "success" or "unschedulable: reason".
func (s Status) String() string {
	if s.Reason == "" {
		return s.Code.String()
	}
	return s.Code.String() + ": " + s.Reason
}

// Reject returns an Unschedulable status.
func Reject(reason string) Status { return Status{Code: Unschedulable, Reason: reason} }

// Note returns a Success carrying a reason.
func Note(reason string) Status { return Status{Reason: reason} }

// Plugin is one step of the pipeline; its Name appears in decisions and metrics.
type Plugin interface {
	Name() string
}

// Filter decides whether a node can take its part of a request. It may narrow
// c.Usable (drop GPUs it rules out) and rejects when fewer than c.Need remain.
// Filters are pure: no I/O, safe to run concurrently on distinct candidates.
type Filter interface {
	Plugin
	Filter(ctx context.Context, req *Request, c *Candidate) Status
}

// Picker chooses c.Take GPUs among c.Usable and stores them in c.Chosen. It rejects
// when it cannot. Pure, like a Filter.
type Picker interface {
	Plugin
	Pick(ctx context.Context, req *Request, c *Candidate) Status
}

// Scorer rates a node with its chosen GPUs: a score in [0,1], higher is better. A
// non-success Status rejects nothing: the engine records it and uses the score.
// Pure, like a Filter.
type Scorer interface {
	Plugin
	Score(ctx context.Context, req *Request, c *Candidate) (float64, Status)
}

// Cycle is what one decision's plugins share: the snapshot and the engine's
// reservation overlay on it. Read-only for plugins.
type Cycle struct {
	Snap *snapshot.Snapshot
	// Free is every GPU's free milli-GPU (flat GPU numbers): the snapshot's, minus
	// reservations.
	Free []int32
	// LeafFree is every leaf's free milli-GPU (dense leaf ids), minus reservations.
	LeafFree []int64
	// Near are the node positions of Request.Near that the snapshot knows.
	Near []int32
}

// Candidate is one node being evaluated for a request.
type Candidate struct {
	Cycle *Cycle
	Index int // node position in the snapshot
	Node  *snapshot.Node
	// Free is this node's part of Cycle.Free, by GPU position.
	Free []int32
	// Need is the fewest GPUs that make the node useful: GPUsPerNode for a fixed
	// shape, 1 for a flexible one.
	Need int
	// Take is how many GPUs the picker chooses: GPUsPerNode, or for a flexible shape
	// min(usable, GPUs).
	Take int
	// Usable starts as every GPU of the node and is narrowed by filters.
	Usable snapshot.GPUSet
	// Chosen is set by the picker.
	Chosen snapshot.GPUSet
	// PreferRails is a set of rail numbers (bit r = rail r) the picker should prefer,
	// so that every node of a gang uses the same rails.
	PreferRails uint64
	// Explain asks plugins for detailed reasons (which GPUs, which values).
	Explain bool
}

// Reset prepares c for node i of the cycle.
func (c *Candidate) Reset(cy *Cycle, i int) {
	n := cy.Snap.Node(i)
	*c = Candidate{Cycle: cy, Index: i, Node: n, Free: cy.Free[n.First : n.First+len(n.GPUs)], Usable: snapshot.AllGPUs(len(n.GPUs))}
}

// FitsMilli reports whether GPU position p has at least milli free.
func (c *Candidate) FitsMilli(p, milli int) bool { return int(c.Free[p]) >= milli }

// NodeFreeMilli returns the node's free milli-GPU including reservations.
func (c *Candidate) NodeFreeMilli() int64 {
	var s int64
	for _, f := range c.Free {
		s += int64(f)
	}
	return s
}

// GPUList writes the NVML indexes of the set's GPUs of node n: "0,3,5".
func GPUList(n *snapshot.Node, s snapshot.GPUSet) string {
	var buf []byte
	var pos [snapshot.MaxGPUsPerNode]int
	for k, p := range s.Positions(pos[:0]) {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(n.GPUs[p].Index), 10)
	}
	return string(buf)
}
