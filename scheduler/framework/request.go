package framework

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// MaxGangGPUs bounds a request's GPUs.
const MaxGangGPUs = 1 << 20

// Duration is a time.Duration written as Go's duration text ("5m0s") in JSON.
type Duration time.Duration

// MarshalText writes the duration as "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "90s", "5m", "1h".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: %w", b, err)
	}
	*d = Duration(v)
	return nil
}

// Request asks for a gang of GPUs, placed all or nothing.
//
// The shape is either flexible (GPUs only: any split over nodes, fewest nodes
// preferred) or fixed (Nodes × GPUsPerNode; any two of GPUs, Nodes and GPUsPerNode
// determine the third). Milli below 1000 asks for a fraction of each GPU.
type Request struct {
	// JobID names the job (optional); a reservation for it ends on its own when a
	// later snapshot shows an allocation of that job.
	JobID       string `json:"job_id,omitempty"`
	GPUs        int    `json:"gpus,omitempty"`
	Nodes       int    `json:"nodes,omitempty"`
	GPUsPerNode int    `json:"gpus_per_node,omitempty"`
	// Milli is the share of each GPU in milli-GPU: 0 or 1000 for whole GPUs.
	Milli int `json:"milli,omitempty"`
	// Model matches GPUs whose model contains it, case-insensitively ("h100").
	Model        string `json:"model,omitempty"`
	MinMemoryMiB int64  `json:"min_memory_mib,omitempty"`
	// Required is the highest topology tier the gang may span (node, nvlink_domain,
	// leaf, spine, block); unset means cluster (anywhere). Preferred is the tier the
	// gang should stay within (unset: Required); missing it is noted in the
	// decision and its quality, not an error.
	// Placement always searches from the node tier upward.
	Required  telemetry.Tier `json:"required_tier,omitzero"`
	Preferred telemetry.Tier `json:"preferred_tier,omitzero"`
	// Exclusive takes whole nodes: a node qualifies only with nothing allocated or
	// reserved on it, and the reservation holds all its GPUs.
	Exclusive bool `json:"exclusive,omitempty"`
	// Near names nodes the job's peers already run on; the topology scorer prefers
	// nodes close to them (the extender's case: one pod of a placed group).
	Near []string `json:"near,omitempty"`
	// Candidates limits placement to these nodes (the extender's node list); empty
	// means every node.
	Candidates []string `json:"candidates,omitempty"`
	// RequireFresh rejects GPUs whose health observation is stale instead of
	// trusting their last known state.
	RequireFresh bool `json:"require_fresh,omitempty"`
	// Explain records every candidate node's verdicts and scores in the decision,
	// not only the chosen nodes and the best runners-up.
	Explain bool `json:"explain,omitempty"`
	// Lease is how long a reservation holds its GPUs; 0 takes the engine's default.
	Lease Duration `json:"lease,omitempty"`

	model string // lower-case Model, set by Normalize
}

// Fixed reports whether the shape is Nodes × GPUsPerNode.
func (r *Request) Fixed() bool { return r.GPUsPerNode > 0 }

// Fractional reports whether each GPU is asked for in part.
func (r *Request) Fractional() bool { return r.Milli < snapshot.FullMilli }

// ModelMatches reports whether a GPU model satisfies the request (always true without
// a Model). Call Normalize first.
func (r *Request) ModelMatches(model string) bool {
	if r.model == "" {
		return true
	}
	return containsFold(model, r.model)
}

// LowerModel returns the lower-case model constraint ("" for none). Call Normalize first.
func (r *Request) LowerModel() string { return r.model }

// containsFold reports whether s contains lowerSub, ignoring ASCII case in s.
func containsFold(s, lowerSub string) bool {
	n := len(lowerSub)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerSub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// Normalize fills the derived fields (GPUs, Nodes or GPUsPerNode from the other two,
// Milli 1000 for whole GPUs, Required cluster and Preferred node when unset) and
// returns an error naming the field that is wrong.
func (r *Request) Normalize() error {
	if r.Milli == 0 {
		r.Milli = snapshot.FullMilli
	}
	switch {
	case r.GPUs < 0:
		return fmt.Errorf("request: gpus %d: want ≥ 1", r.GPUs)
	case r.GPUs > MaxGangGPUs:
		return fmt.Errorf("request: gpus %d: want 1 to %d", r.GPUs, MaxGangGPUs)
	case r.Nodes < 0 || r.Nodes > MaxGangGPUs:
		return fmt.Errorf("request: nodes %d: want 0 to %d", r.Nodes, MaxGangGPUs)
	case r.GPUsPerNode < 0 || r.GPUsPerNode > snapshot.MaxGPUsPerNode:
		return fmt.Errorf("request: gpus_per_node %d: want 0 to %d", r.GPUsPerNode, snapshot.MaxGPUsPerNode)
	case r.Milli < 1 || r.Milli > snapshot.FullMilli:
		return fmt.Errorf("request: milli %d: want 1 to %d (0 means a whole GPU)", r.Milli, snapshot.FullMilli)
	case r.MinMemoryMiB < 0:
		return fmt.Errorf("request: min_memory_mib %d: want ≥ 0", r.MinMemoryMiB)
	case r.Lease < 0:
		return fmt.Errorf("request: lease %v: want ≥ 0", time.Duration(r.Lease))
	}
	switch {
	case r.Nodes > 0 && r.GPUsPerNode > 0:
		if r.GPUs == 0 {
			r.GPUs = r.Nodes * r.GPUsPerNode
		} else if r.GPUs != r.Nodes*r.GPUsPerNode {
			return fmt.Errorf("request: gpus %d ≠ nodes %d × gpus_per_node %d", r.GPUs, r.Nodes, r.GPUsPerNode)
		}
	case r.Nodes > 0:
		if r.GPUs == 0 || r.GPUs%r.Nodes != 0 {
			return fmt.Errorf("request: gpus %d cannot be split evenly over nodes %d: give gpus_per_node", r.GPUs, r.Nodes)
		}
		r.GPUsPerNode = r.GPUs / r.Nodes
		if r.GPUsPerNode > snapshot.MaxGPUsPerNode {
			return fmt.Errorf("request: gpus %d over nodes %d is %d per node: at most %d", r.GPUs, r.Nodes, r.GPUsPerNode, snapshot.MaxGPUsPerNode)
		}
	case r.GPUsPerNode > 0:
		if r.GPUs == 0 || r.GPUs%r.GPUsPerNode != 0 {
			return fmt.Errorf("request: gpus %d is not a multiple of gpus_per_node %d", r.GPUs, r.GPUsPerNode)
		}
		r.Nodes = r.GPUs / r.GPUsPerNode
	}
	if r.GPUs < 1 || r.GPUs > MaxGangGPUs {
		return fmt.Errorf("request: gpus %d: want 1 to %d", r.GPUs, MaxGangGPUs)
	}
	if r.Required == telemetry.TierUnknown {
		r.Required = telemetry.TierCluster
	}
	if r.Preferred == telemetry.TierUnknown {
		r.Preferred = r.Required // no preference beyond the requirement
	}
	if r.Required < telemetry.TierNode || r.Required > telemetry.TierCluster {
		return fmt.Errorf("request: required_tier %d: want node, nvlink_domain, leaf, spine, block or cluster", int(r.Required))
	}
	if r.Preferred < telemetry.TierNode || r.Preferred > telemetry.TierCluster {
		return fmt.Errorf("request: preferred_tier %d: want node, nvlink_domain, leaf, spine, block or cluster", int(r.Preferred))
	}
	if r.Preferred > r.Required {
		return fmt.Errorf("request: preferred_tier %s is above required_tier %s", r.Preferred, r.Required)
	}
	if r.Required == telemetry.TierNode && r.Nodes > 1 {
		return fmt.Errorf("request: required_tier node with nodes %d: a gang on one node has nodes 1", r.Nodes)
	}
	r.model = strings.ToLower(strings.TrimSpace(r.Model))
	return nil
}
