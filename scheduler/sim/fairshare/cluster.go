package fairshare

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// nodeState is the free GPUs of every node and which GPU indices they are.
type nodeState struct {
	c     Cluster
	free  []int    // free GPUs per node
	used  [][]bool // used[node][gpu]
	names [][]string
}

func newNodeState(c Cluster) *nodeState {
	s := &nodeState{c: c, free: make([]int, c.Nodes), used: make([][]bool, c.Nodes), names: make([][]string, c.Nodes)}
	for n := range s.free {
		s.free[n] = c.GPUsPerNode
		s.used[n] = make([]bool, c.GPUsPerNode)
		s.names[n] = make([]string, c.GPUsPerNode)
		for g := range s.names[n] {
			s.names[n][g] = "node" + strconv.Itoa(n) + "/gpu" + strconv.Itoa(g)
		}
	}
	return s
}

// take is how many GPUs a placement takes on one node.
type take struct{ node, gpus int }

// place decides where a job of g GPUs goes given free GPUs per node, without
// changing free. The rule, deterministic:
//   - g ≤ GPUs per node: the one node with the fewest free GPUs that still
//     fits g (best fit), lowest index on ties;
//   - g > GPUs per node: ⌊g/G⌋ completely free nodes (lowest indices first),
//     and the remainder best fit on one more node.
//
// ok is false when the job does not fit now.
func place(free []int, gpn, g int, out []take) ([]take, bool) {
	out = out[:0]
	bestFit := func(need int, skip []take) int {
		best := -1
	nodes:
		for n, f := range free {
			if f < need || (best >= 0 && f >= free[best]) {
				continue
			}
			for _, t := range skip {
				if t.node == n {
					continue nodes
				}
			}
			best = n
			if f == need {
				break
			}
		}
		return best
	}
	if g <= gpn {
		n := bestFit(g, nil)
		if n < 0 {
			return out, false
		}
		return append(out, take{n, g}), true
	}
	whole := g / gpn
	for n, f := range free {
		if len(out) == whole {
			break
		}
		if f == gpn {
			out = append(out, take{n, gpn})
		}
	}
	if len(out) < whole {
		return out[:0], false
	}
	if r := g - whole*gpn; r > 0 {
		n := bestFit(r, out)
		if n < 0 {
			return out[:0], false
		}
		out = append(out, take{n, r})
	}
	return out, true
}

func fits(free []int, gpn, g int, scratch []take) bool {
	_, ok := place(free, gpn, g, scratch)
	return ok
}

// allocate takes the GPUs of a placement, lowest free indices first, and
// returns their (node, gpu) pairs.
func (s *nodeState) allocate(p []take) [][2]int {
	var gpus [][2]int
	for _, t := range p {
		s.free[t.node] -= t.gpus
		left := t.gpus
		for g, u := range s.used[t.node] {
			if left == 0 {
				break
			}
			if !u {
				s.used[t.node][g] = true
				gpus = append(gpus, [2]int{t.node, g})
				left--
			}
		}
		if left != 0 {
			panic("fairshare sim: node free count out of step with its GPUs")
		}
	}
	return gpus
}

func (s *nodeState) release(gpus [][2]int) {
	for _, ng := range gpus {
		if !s.used[ng[0]][ng[1]] {
			panic("fairshare sim: releasing a free GPU")
		}
		s.used[ng[0]][ng[1]] = false
		s.free[ng[0]]++
	}
}

func (s *nodeState) totalFree() int {
	t := 0
	for _, f := range s.free {
		t += f
	}
	return t
}

// reservation is EASY backfill's plan for the blocked head job: the earliest
// time (shadow) it can start if running jobs end at their walltimes, and the
// free GPUs per node at that time (minus what backfilled jobs still running
// then will hold).
type reservation struct {
	shadow time.Duration
	free   []int
}

// reserve computes the head job's reservation. running must hold every
// running job; their walltime ends are what the scheduler knows.
func reserve(s *nodeState, running []*runJob, head int, scratch []take) reservation {
	free := slices.Clone(s.free)
	byEnd := slices.Clone(running)
	slices.SortFunc(byEnd, func(a, b *runJob) int {
		if c := cmp.Compare(a.expectedEnd, b.expectedEnd); c != 0 {
			return c
		}
		return a.job.ID - b.job.ID
	})
	for i := 0; i < len(byEnd); {
		t := byEnd[i].expectedEnd
		for ; i < len(byEnd) && byEnd[i].expectedEnd == t; i++ {
			for _, ng := range byEnd[i].gpus {
				free[ng[0]]++
			}
		}
		if fits(free, s.c.GPUsPerNode, head, scratch) {
			return reservation{shadow: t, free: free}
		}
	}
	// Unreachable for a validated workload: every job fits the empty cluster.
	panic("fairshare sim: head job fits no cluster state")
}
