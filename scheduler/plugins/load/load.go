package load

import (
	"context"
	"math/bits"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// Name is the plugin's name in decisions.
const Name = "load"

// Weights of the three terms.
const (
	WeightUtilization = 0.5
	WeightThermal     = 0.25
	WeightPower       = 0.25
)

// Plugin is the load and headroom scorer.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: each GPU's utilization and
// thermal and power headroom (NaN when stale).
func (Plugin) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	for _, h := range n.Hot() {
		k = k.Float32(h.Utilization).Float32(h.ThermalHeadroom).Float32(h.PowerHeadroom)
	}
	return k
}

// AppendRequestKey implements framework.Classifier: load reads nothing of the
// request.
func (Plugin) AppendRequestKey(k framework.Key, _ *framework.Request) framework.Key { return k }

// Score implements framework.Scorer.
func (Plugin) Score(_ context.Context, _ *framework.Request, c *framework.Candidate) (float64, framework.Status) {
	var util, therm, pow float64
	var nu, nt, np int
	hot := c.Node.Hot()
	for set := c.Chosen; set != 0; set &= set - 1 {
		h := &hot[bits.TrailingZeros64(uint64(set))]
		if v := h.Utilization; v == v {
			util += float64(v)
			nu++
		}
		if v := h.ThermalHeadroom; v == v {
			therm += float64(v)
			nt++
		}
		if v := h.PowerHeadroom; v == v {
			pow += float64(v)
			np++
		}
	}
	var sum, w float64
	if nu > 0 {
		sum += WeightUtilization * (1 - util/float64(nu))
		w += WeightUtilization
	}
	if nt > 0 {
		sum += WeightThermal * therm / float64(nt)
		w += WeightThermal
	}
	if np > 0 {
		sum += WeightPower * pow / float64(np)
		w += WeightPower
	}
	if w == 0 {
		return 0.5, framework.Note("telemetry stale: load and headroom ignored")
	}
	var st framework.Status
	if nu+nt+np < 3*c.Chosen.Len() {
		st = framework.Note("some telemetry stale: left out")
	}
	return max(0, min(1, sum/w)), st
}
