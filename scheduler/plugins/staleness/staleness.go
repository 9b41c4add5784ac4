package staleness

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// Name is the plugin's name in decisions.
const Name = "staleness"

// Plugin is the staleness filter.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: the GPUs whose health is stale.
func (Plugin) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	return k.GPUs(n.HealthStale())
}

// AppendRequestKey implements framework.Classifier.
func (Plugin) AppendRequestKey(k framework.Key, req *framework.Request) framework.Key {
	return k.Bool(req.RequireFresh)
}

// Filter implements framework.Filter.
func (Plugin) Filter(_ context.Context, req *framework.Request, c *framework.Candidate) framework.Status {
	stale := c.Usable & c.Node.HealthStale()
	if stale == 0 {
		return framework.Status{}
	}
	if !req.RequireFresh {
		if c.Explain {
			return framework.Note(describe(c, stale) + ": last known state used")
		}
		return framework.Status{}
	}
	c.Usable &^= stale
	if c.Usable.Len() < c.Need {
		if c.Explain {
			return framework.Reject(fmt.Sprintf("%d GPUs with fresh health, need %d: %s", c.Usable.Len(), c.Need, describe(c, stale)))
		}
		return framework.Reject("too few GPUs with fresh health (fresh health required)")
	}
	if c.Explain {
		return framework.Note("not using " + describe(c, stale))
	}
	return framework.Status{}
}

func describe(c *framework.Candidate, stale snapshot.GPUSet) string {
	snap := c.Cycle.Snap
	oldest := time.Time{}
	never := false
	var pos [snapshot.MaxGPUsPerNode]int
	for _, p := range stale.Positions(pos[:0]) {
		at := c.Node.GPUs[p].Health.At
		switch {
		case at.IsZero():
			never = true
		case oldest.IsZero() || at.Before(oldest):
			oldest = at
		}
	}
	s := "health of gpus " + framework.GPUList(c.Node, stale) + " is stale"
	switch {
	case never:
		s += " (never observed)"
	default:
		s += fmt.Sprintf(" (observed %v ago, bound %v)", snap.Now().Sub(oldest).Round(time.Second), snap.Bound())
	}
	return s
}
