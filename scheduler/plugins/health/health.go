package health

import (
	"context"
	"fmt"
	"math/bits"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Name is the plugin's name in decisions.
const Name = "health"

// Plugin is the health filter and scorer.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: the node's exclusion, its
// schedulable GPUs and each GPU's health state.
func (Plugin) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	k = k.Bool(n.Excluded).GPUs(n.SchedulableGPUs())
	for _, h := range n.Hot() {
		k = append(k, h.State)
	}
	return k
}

// AppendRequestKey implements framework.Classifier: health reads nothing of the
// request.
func (Plugin) AppendRequestKey(k framework.Key, _ *framework.Request) framework.Key { return k }

// Filter implements framework.Filter.
func (Plugin) Filter(_ context.Context, _ *framework.Request, c *framework.Candidate) framework.Status {
	n := c.Node
	if n.Excluded {
		if c.Explain {
			return framework.Reject("node excluded by the drain controller: " + n.ExclusionReason)
		}
		return framework.Reject("node excluded by the drain controller")
	}
	bad := c.Usable &^ n.SchedulableGPUs()
	c.Usable &^= bad
	if c.Usable.Len() < c.Need {
		if c.Explain {
			return framework.Reject(fmt.Sprintf("%d schedulable GPUs, need %d: %s", c.Usable.Len(), c.Need, describe(n, bad)))
		}
		return framework.Reject("too few schedulable GPUs (unhealthy or excluded)")
	}
	if bad != 0 && c.Explain {
		return framework.Note("not using " + describe(n, bad))
	}
	return framework.Status{}
}

func describe(n *snapshot.Node, bad snapshot.GPUSet) string {
	var parts []string
	var pos [snapshot.MaxGPUsPerNode]int
	for _, p := range bad.Positions(pos[:0]) {
		g := &n.GPUs[p]
		s := fmt.Sprintf("gpu %d %s", g.Index, g.Health.Value)
		if g.Health.Stale {
			s += " (last known, stale)"
		}
		if g.Excluded {
			s += ", excluded: " + g.ExclusionReason
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// stateScore rates a schedulable health state.
func stateScore(s telemetry.State) float64 {
	switch s {
	case telemetry.StateHealthy:
		return 1
	case telemetry.StateProbation:
		return 0.6
	case telemetry.StateSuspect:
		return 0.4
	}
	return 0
}

// Score implements framework.Scorer: the mean over the chosen GPUs of 1 for healthy,
// 0.6 for probation, 0.4 for suspect. A stale state counts as last known.
func (Plugin) Score(_ context.Context, _ *framework.Request, c *framework.Candidate) (float64, framework.Status) {
	if c.Chosen == 0 {
		return 1, framework.Status{}
	}
	var sum float64
	hot := c.Node.Hot()
	for set := c.Chosen; set != 0; set &= set - 1 {
		sum += stateScore(hot[bits.TrailingZeros64(uint64(set))].Health())
	}
	return sum / float64(c.Chosen.Len()), framework.Status{}
}
