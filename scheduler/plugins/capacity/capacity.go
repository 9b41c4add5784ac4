package capacity

import (
	"context"
	"fmt"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// Name is the plugin's name in decisions.
const Name = "capacity"

// Plugin is the capacity filter.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: of the node, capacity reads only
// its GPUs' free milli-GPU, which the engine keys itself.
func (Plugin) AppendNodeKey(k framework.Key, _ *snapshot.Node) framework.Key { return k }

// AppendRequestKey implements framework.Classifier.
func (Plugin) AppendRequestKey(k framework.Key, req *framework.Request) framework.Key {
	return k.Bool(req.Exclusive).Int(int64(req.Milli))
}

// Filter implements framework.Filter.
func (Plugin) Filter(_ context.Context, req *framework.Request, c *framework.Candidate) framework.Status {
	if req.Exclusive {
		for p, f := range c.Free {
			if f < snapshot.FullMilli {
				if c.Explain {
					return framework.Reject(fmt.Sprintf("exclusive request, but gpu %d has %d milli-GPU in use", c.Node.GPUs[p].Index, snapshot.FullMilli-f))
				}
				return framework.Reject("node in use (exclusive request)")
			}
		}
	}
	if len(c.Free) < c.Need {
		if c.Explain {
			return framework.Reject(fmt.Sprintf("node has %d GPUs, need %d", len(c.Free), c.Need))
		}
		return framework.Reject("node has too few GPUs")
	}
	milli := int32(req.Milli)
	var full snapshot.GPUSet
	for p, f := range c.Free {
		if f < milli {
			full = full.With(p)
		}
	}
	c.Usable &^= full
	if c.Usable.Len() < c.Need {
		if c.Explain {
			return framework.Reject(fmt.Sprintf("%d GPUs with %d milli-GPU free, need %d (gpus without room: %s)",
				c.Usable.Len(), milli, c.Need, framework.GPUList(c.Node, full)))
		}
		return framework.Reject("too few GPUs with enough free capacity")
	}
	return framework.Status{}
}
