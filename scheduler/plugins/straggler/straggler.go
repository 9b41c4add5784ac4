package straggler

import (
	"context"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// Name is the plugin's name in decisions.
const Name = "straggler"

// Plugin is the straggler scorer.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: the node's straggler GPUs.
func (Plugin) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	return k.GPUs(n.Stragglers())
}

// AppendRequestKey implements framework.Classifier: the scorer reads nothing
// of the request.
func (Plugin) AppendRequestKey(k framework.Key, _ *framework.Request) framework.Key { return k }

// Score implements framework.Scorer: 1 − the share of the chosen GPUs that are
// stragglers (1 when none is, or none is chosen). With Candidate.Explain the
// status names each straggler GPU with its job, signal, lag and age.
func (Plugin) Score(_ context.Context, _ *framework.Request, c *framework.Candidate) (float64, framework.Status) {
	chosen := c.Chosen.Len()
	bad := c.Chosen & c.Node.Stragglers()
	if chosen == 0 || bad == 0 {
		return 1, framework.Status{}
	}
	k := bad.Len()
	score := 1 - float64(k)/float64(chosen)
	if !c.Explain {
		return score, framework.Note("straggler GPUs among the chosen")
	}
	now := c.Cycle.Snap.Now()
	var parts []string
	for set := bad; set != 0; set &= set - 1 {
		g := &c.Node.GPUs[bits.TrailingZeros64(uint64(set))]
		m := g.Straggler
		s := fmt.Sprintf("gpu %d %s %.0f%% behind", g.Index, m.Signal, 100*m.Lag)
		if m.Job != "" {
			s += " in job " + m.Job
		}
		s += fmt.Sprintf(", named %s ago", now.Sub(m.At).Round(time.Second))
		parts = append(parts, s)
	}
	return score, framework.Note(fmt.Sprintf("%d of %d chosen GPUs are stragglers: %s", k, chosen, strings.Join(parts, "; ")))
}
