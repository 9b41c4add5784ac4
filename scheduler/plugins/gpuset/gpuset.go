package gpuset

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Name is the plugin's name in decisions.
const Name = "gpuset"

// Plugin is the picker and its scorer.
type Plugin struct{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// AppendNodeKey implements framework.Classifier: whether the node's links are
// uniform and its topology known, the GPUs named stragglers, each GPU's rail, and
// the link quality of every pair.
func (Plugin) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	k = k.Bool(n.UniformLinks()).Bool(n.Topology.Value != nil).GPUs(n.Stragglers())
	for _, h := range n.Hot() {
		k = append(k, byte(h.Rail))
	}
	for a := range n.GPUs {
		for b := range n.GPUs {
			if a != b {
				q := n.LinkQuality(a, b)
				k = append(k, byte(q), byte(q>>8))
			}
		}
	}
	return k
}

// AppendRequestKey implements framework.Classifier.
func (Plugin) AppendRequestKey(k framework.Key, req *framework.Request) framework.Key {
	return k.Bool(req.Fractional())
}

// Pick implements framework.Picker.
func (Plugin) Pick(_ context.Context, req *framework.Request, c *framework.Candidate) framework.Status {
	k := c.Take
	if k < 1 || c.Usable.Len() < k {
		if c.Explain {
			return framework.Reject(fmt.Sprintf("cannot pick %d GPUs from %d usable", k, c.Usable.Len()))
		}
		return framework.Reject("too few usable GPUs to pick from")
	}
	switch {
	case req.Fractional():
		c.Chosen = bestFit(c, k)
	case c.Usable.Len() == k:
		c.Chosen = c.Usable
	case c.Node.UniformLinks():
		c.Chosen = avoidStragglers(c, byRails(c, c.Usable, k), k)
	default:
		c.Chosen = avoidStragglers(c, greedy(c, c.Usable, k), k)
	}
	return framework.Status{}
}

// avoidStragglers returns the same kind of pick among the usable GPUs not named
// stragglers when chosen holds one, enough of them are usable, and that pick
// rates as well (links and rails); else chosen. Stragglers are the picker's last
// tie-break: never worth a worse link or rail.
func avoidStragglers(c *framework.Candidate, chosen snapshot.GPUSet, k int) snapshot.GPUSet {
	bad := c.Node.Stragglers()
	clean := c.Usable &^ bad
	if chosen&bad == 0 || clean.Len() < k {
		return chosen
	}
	var alt snapshot.GPUSet
	if c.Node.UniformLinks() {
		alt = byRails(c, clean, k)
	} else {
		alt = greedy(c, clean, k)
	}
	if rating(c, alt) >= rating(c, chosen) {
		return alt
	}
	return chosen
}

// bestFit takes the k usable GPUs with the least free milli-GPU (lowest position on
// ties).
func bestFit(c *framework.Candidate, k int) snapshot.GPUSet {
	var chosen snapshot.GPUSet
	for range k {
		best := -1
		for p := range c.Free {
			if !c.Usable.Has(p) || chosen.Has(p) {
				continue
			}
			if best < 0 || c.Free[p] < c.Free[best] {
				best = p
			}
		}
		chosen = chosen.With(best)
	}
	return chosen
}

func railBit(r int) uint64 {
	if r < 0 || r >= 64 {
		return 0
	}
	return 1 << uint(r)
}

// byRails takes k GPUs from set: preferred rails first, then distinct rails, then
// the rest, lowest positions first within each pass.
func byRails(c *framework.Candidate, set snapshot.GPUSet, k int) snapshot.GPUSet {
	var chosen snapshot.GPUSet
	var used uint64
	hot := c.Node.Hot()
	var pos [snapshot.MaxGPUsPerNode]int
	if k == 1 && c.PreferRails == 0 {
		return set & -set // the lowest position: its rail is unused by definition
	}
	ps := set.Positions(pos[:0])
	first := 0
	if c.PreferRails == 0 {
		first = 1
	}
	for pass := first; pass < 3 && chosen.Len() < k; pass++ {
		for _, p := range ps {
			if chosen.Len() == k {
				break
			}
			if chosen.Has(p) {
				continue
			}
			rb := railBit(int(hot[p].Rail))
			switch pass {
			case 0:
				if rb == 0 || c.PreferRails&rb == 0 || used&rb != 0 {
					continue
				}
			case 1:
				if rb != 0 && used&rb != 0 {
					continue
				}
			}
			chosen = chosen.With(p)
			used |= rb
		}
	}
	return chosen
}

// greedy grows a set from every seed, adding the GPU whose worst link to the set is
// best (then the best sum of links, then rails), and keeps the best set.
func greedy(c *framework.Candidate, usable snapshot.GPUSet, k int) snapshot.GPUSet {
	n := c.Node
	var pos [snapshot.MaxGPUsPerNode]int
	ps := usable.Positions(pos[:0])
	var best snapshot.GPUSet
	bestWorst, bestSum, bestRail := -1, -1, -1
	var members [snapshot.MaxGPUsPerNode]int
	for _, seed := range ps {
		set := snapshot.GPUSet(0).With(seed)
		m := append(members[:0], seed)
		for len(m) < k {
			cand, cw, cs, cr := -1, -1, -1, -1
			for _, q := range ps {
				if set.Has(q) {
					continue
				}
				w, s := 1<<16, 0
				for _, x := range m {
					l := n.LinkQuality(q, x)
					w = min(w, l)
					s += l
				}
				r := railRating(c, q)
				if w > cw || w == cw && (s > cs || s == cs && r > cr) {
					cand, cw, cs, cr = q, w, s, r
				}
			}
			set = set.With(cand)
			m = append(m, cand)
		}
		w, s := setLinks(n, m)
		r := 0
		for _, x := range m {
			r += railRating(c, x)
		}
		if w > bestWorst || w == bestWorst && (s > bestSum || s == bestSum && r > bestRail) {
			best, bestWorst, bestSum, bestRail = set, w, s, r
		}
	}
	return best
}

func railRating(c *framework.Candidate, p int) int {
	hot := c.Node.Hot()
	rb := railBit(int(hot[p].Rail))
	switch {
	case rb == 0:
		return 0
	case c.PreferRails&rb != 0:
		return 2
	}
	return 1
}

// setLinks returns the worst and the sum of link qualities among positions m.
func setLinks(n *snapshot.Node, m []int) (worst, sum int) {
	worst = 1 << 16
	for i, a := range m {
		for _, b := range m[i+1:] {
			l := n.LinkQuality(a, b)
			worst = min(worst, l)
			sum += l
		}
	}
	return worst, sum
}

// LinkRating rates a link Quality (telemetry.GPULink.Quality) in [0,1]; known says
// whether the node's topology is known at all.
func LinkRating(q int, known bool) float64 {
	switch {
	case q >= 1000:
		return 0.8 + 0.2*float64(min(q-1000, 18))/18
	case q >= 500:
		return 0.6
	case q >= 400:
		return 0.5
	case q >= 300:
		return 0.4
	case q >= 200:
		return 0.3
	case q >= 100:
		return 0.2
	case !known:
		return 0.5
	}
	return 0.1 // a pair the topology does not list
}

// Score implements framework.Scorer.
func (Plugin) Score(_ context.Context, _ *framework.Request, c *framework.Candidate) (float64, framework.Status) {
	if c.Chosen == 0 {
		return 0, framework.Status{Code: framework.Error, Reason: "no GPUs chosen"}
	}
	return rating(c, c.Chosen), framework.Status{}
}

// rating is the score of choosing set on c's node.
func rating(c *framework.Candidate, set snapshot.GPUSet) float64 {
	n := c.Node
	var pos [snapshot.MaxGPUsPerNode]int
	m := set.Positions(pos[:0])
	links := 1.0
	switch {
	case len(m) > 1 && n.UniformLinks():
		links = LinkRating(n.LinkQuality(0, 1), n.Topology.Value != nil)
	case len(m) > 1:
		w, _ := setLinks(n, m)
		links = LinkRating(w, n.Topology.Value != nil)
	}
	rails := 0.5
	hot := n.Hot()
	var seen uint64
	known, good := 0, 0.0
	for _, p := range m {
		rb := railBit(int(hot[p].Rail))
		if rb == 0 {
			continue
		}
		known++
		if seen&rb != 0 {
			continue
		}
		seen |= rb
		if c.PreferRails == 0 || c.PreferRails&rb != 0 {
			good++
		} else {
			good += 0.5
		}
	}
	if known > 0 {
		rails = good / float64(len(m))
	}
	return 0.7*links + 0.3*rails
}

// RankOrder returns the positions of the set's GPUs in gang rank order: by rail
// (GPUs with unknown rails last), then by index.
func RankOrder(n *snapshot.Node, set snapshot.GPUSet) []int {
	var pos [snapshot.MaxGPUsPerNode]int
	ps := set.Positions(pos[:0])
	slices.SortStableFunc(ps, func(a, b int) int {
		ra, rb := n.GPUs[a].Rail, n.GPUs[b].Rail
		if (ra < 0) != (rb < 0) {
			if ra < 0 {
				return 1
			}
			return -1
		}
		if ra != rb {
			return ra - rb
		}
		return n.GPUs[a].Index - n.GPUs[b].Index
	})
	return slices.Clone(ps)
}

// WorstLink returns the worst link type among the set's GPUs ("" for fewer than two
// GPUs or unknown topology).
func WorstLink(n *snapshot.Node, set snapshot.GPUSet) telemetry.LinkType {
	t := n.Topology.Value
	if t == nil || set.Len() < 2 {
		return telemetry.LinkUnknown
	}
	var pos [snapshot.MaxGPUsPerNode]int
	ps := set.Positions(pos[:0])
	idx := make([]int, len(ps))
	for i, p := range ps {
		idx[i] = n.GPUs[p].Index
	}
	w, _ := t.WorstLink(idx)
	return w.Type
}
