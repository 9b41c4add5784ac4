package model

import (
	"context"
	"fmt"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// Name is the plugin's name in decisions.
const Name = "model"

// Plugin is the model and memory filter.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: the node's model and smallest
// memory, and each GPU's.
func (Plugin) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	k = k.Str(n.Model()).Int(n.MinMemoryMiB())
	for p := range n.GPUs {
		k = k.Str(n.GPUs[p].Model).Int(n.GPUs[p].MemoryMiB)
	}
	return k
}

// AppendRequestKey implements framework.Classifier.
func (Plugin) AppendRequestKey(k framework.Key, req *framework.Request) framework.Key {
	return k.Str(req.LowerModel()).Int(req.MinMemoryMiB)
}

// Filter implements framework.Filter.
func (Plugin) Filter(_ context.Context, req *framework.Request, c *framework.Candidate) framework.Status {
	n := c.Node
	want := req.LowerModel()
	modelOK := want == "" || n.Model() != "" && req.ModelMatches(n.Model())
	memOK := req.MinMemoryMiB == 0 || n.MinMemoryMiB() >= req.MinMemoryMiB
	if modelOK && memOK {
		return framework.Status{} // every GPU of the node qualifies
	}
	var off snapshot.GPUSet
	for p := range n.GPUs {
		g := &n.GPUs[p]
		if !req.ModelMatches(g.Model) || g.MemoryMiB < req.MinMemoryMiB {
			off = off.With(p)
		}
	}
	c.Usable &^= off
	if c.Usable.Len() < c.Need {
		if !c.Explain {
			return framework.Reject("too few GPUs of the requested model and memory")
		}
		g := &n.GPUs[0]
		return framework.Reject(fmt.Sprintf("%d GPUs match model %q with ≥ %d MiB, need %d (e.g. gpu %d is %q with %d MiB)",
			c.Usable.Len(), req.Model, req.MinMemoryMiB, c.Need, g.Index, g.Model, g.MemoryMiB))
	}
	if off != 0 && c.Explain {
		return framework.Note("gpus " + framework.GPUList(n, off) + " do not match model or memory")
	}
	return framework.Status{}
}
