package topology

import (
	"context"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Name is the plugin's name in decisions.
const Name = "topology"

// Plugin is the topology scorer.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: the node's leaf (its free share
// and the tier shared with Near nodes the engine keys itself).
func (Plugin) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	return k.Int(int64(n.Leaf))
}

// AppendRequestKey implements framework.Classifier: topology reads nothing of
// the request but Near, which the engine keys itself.
func (Plugin) AppendRequestKey(k framework.Key, _ *framework.Request) framework.Key { return k }

// Score implements framework.Scorer.
func (Plugin) Score(_ context.Context, _ *framework.Request, c *framework.Candidate) (float64, framework.Status) {
	cy := c.Cycle
	if len(cy.Near) > 0 {
		best := telemetry.TierCluster
		for _, p := range cy.Near {
			best = min(best, LCATier(cy.Snap, c.Index, int(p)))
		}
		return TierRating(best), framework.Status{}
	}
	leaf := c.Node.Leaf
	if leaf < 0 || int(leaf) >= len(cy.LeafFree) {
		return 0.5, framework.Note("leaf unknown")
	}
	capacity := cy.Snap.DomainCapacityMilli(telemetry.TierLeaf, leaf)
	if capacity <= 0 {
		return 0.5, framework.Note("leaf has no capacity")
	}
	return clamp01(1 - float64(cy.LeafFree[leaf])/float64(capacity)), framework.Status{}
}

// TierRating maps a lowest-common tier to [0,1]: node 1, cluster 0.
func TierRating(t telemetry.Tier) float64 {
	if t <= telemetry.TierNode {
		return 1
	}
	return clamp01(1 - float64(t-telemetry.TierNode)/float64(telemetry.TierCluster-telemetry.TierNode))
}

// LCATier returns the lowest tier nodes a and b (snapshot positions) share, from the
// snapshot's dense domain ids; it agrees with telemetry.Hierarchy.LCATier without
// allocating.
func LCATier(s *snapshot.Snapshot, a, b int) telemetry.Tier {
	if a == b {
		return telemetry.TierNode
	}
	na, nb := s.Node(a), s.Node(b)
	for _, t := range [...]telemetry.Tier{telemetry.TierNVLinkDomain, telemetry.TierLeaf, telemetry.TierSpine, telemetry.TierBlock} {
		da, db := na.DomainID(t, a), nb.DomainID(t, b)
		if da >= 0 && da == db {
			return t
		}
	}
	return telemetry.TierCluster
}

func clamp01(v float64) float64 { return max(0, min(1, v)) }
