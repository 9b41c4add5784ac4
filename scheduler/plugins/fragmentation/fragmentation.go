package fragmentation

import (
	"context"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// Name is the plugin's name in decisions.
const Name = "fragmentation"

// Plugin is the fragmentation scorer.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: the node's capacity.
func (Plugin) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	return k.Int(int64(n.CapacityMilli()))
}

// AppendRequestKey implements framework.Classifier.
func (Plugin) AppendRequestKey(k framework.Key, req *framework.Request) framework.Key {
	return k.Bool(req.Exclusive).Int(int64(req.Milli))
}

// Score implements framework.Scorer.
func (Plugin) Score(_ context.Context, req *framework.Request, c *framework.Candidate) (float64, framework.Status) {
	capacity := float64(c.Node.CapacityMilli())
	if capacity <= 0 || req.Exclusive {
		return 1, framework.Status{}
	}
	after := float64(c.NodeFreeMilli() - int64(c.Chosen.Len()*req.Milli))
	return LeftScore(after, capacity), framework.Status{}
}

// LeftScore is 1 − freeAfter/capacity clamped to [0,1].
func LeftScore(freeAfter, capacity float64) float64 {
	if capacity <= 0 {
		return 1
	}
	return max(0, min(1, 1-freeAfter/capacity))
}
