package sim

import (
	"errors"
	"fmt"
	"math/rand"
)

// Policy ranks the feasible nodes for a pod and picks the GPUs on the chosen one.
//
// Score and PickGPUs must be pure (see the package invariants): Score is cached
// per node state and pod shape, so an answer that depended on anything else
// would be served stale.
type Policy interface {
	// Name is the policy's registry name.
	Name() string
	// Score rates placing p on the feasible node s; higher is better.
	Score(s *NodeState, p *Pod) float64
	// PickGPUs returns p.NumGPU distinct GPU indices of s on which p fits; rng is
	// the Scheduler's random source, for policies that choose at random.
	PickGPUs(s *NodeState, p *Pod, rng *rand.Rand) []int
}

// Picker is implemented by policies that choose among the feasible nodes
// themselves instead of scoring them, such as a uniformly random choice (the
// simulator's RandomScore draws its node in PreScore). Pick gets the feasible
// node indices in cluster order, at least two of them, and returns one.
type Picker interface {
	Pick(feasible []int, p *Pod, rng *rand.Rand) int
}

// ErrUnschedulable means no node can take the pod now.
var ErrUnschedulable = errors.New("no node fits the pod")

// Scheduler places pods on a Cluster with a Policy, one at a time. It is not
// safe for concurrent use.
type Scheduler struct {
	c        *Cluster
	pol      Policy
	picker   Picker // pol, when it picks instead of scoring
	rng      *rand.Rand
	rank     []int
	shapes   map[Shape]int
	cache    [][]scoreEntry // [node][shape]
	feasible []int
	stats    Stats
}

// Options tune a Scheduler.
type Options struct {
	// Rank breaks ties between equal best scores: the node with the lowest rank
	// wins. The paper's simulator runs a kube-scheduler fork whose selectHost
	// takes the lexicographically smallest node name, and names its nodes with a
	// random-permutation prefix, so its ties go to a fixed random ranking of the
	// nodes (see openb.Arrivals). Nil breaks ties uniformly at random with the
	// rng, as upstream kube-scheduler's selectHost does.
	Rank []int
}

type scoreEntry struct {
	gen   uint64 // node generation + 1; 0 means empty
	score float64
}

// Stats counts the Scheduler's work, for benchmarks.
type Stats struct {
	Placed, Failed         int
	ScoreCalls, ScoreHits  int64
	FeasibleNodesEvaluated int64
}

// NewScheduler returns a Scheduler drawing its random choices from rng.
func NewScheduler(c *Cluster, pol Policy, rng *rand.Rand, o Options) (*Scheduler, error) {
	if rng == nil {
		return nil, errors.New("scheduler needs a random source")
	}
	if o.Rank != nil {
		if len(o.Rank) != c.Len() {
			return nil, fmt.Errorf("node rank has %d entries for %d nodes", len(o.Rank), c.Len())
		}
		seen := make([]bool, c.Len())
		for _, r := range o.Rank {
			if r < 0 || r >= c.Len() || seen[r] {
				return nil, fmt.Errorf("node rank must be a permutation of 0..%d", c.Len()-1)
			}
			seen[r] = true
		}
	}
	s := &Scheduler{c: c, pol: pol, rng: rng, rank: o.Rank, shapes: map[Shape]int{}, cache: make([][]scoreEntry, c.Len())}
	s.picker, _ = pol.(Picker)
	return s, nil
}

// Cluster returns the cluster the Scheduler places on.
func (s *Scheduler) Cluster() *Cluster { return s.c }

// Stats returns the work done so far.
func (s *Scheduler) Stats() Stats { return s.stats }

// Place filters the nodes, scores the feasible ones, binds the pod to the best
// (ties broken uniformly at random) on the GPUs the policy picks, and returns the
// binding. It returns ErrUnschedulable, changing nothing, when no node fits.
func (s *Scheduler) Place(p *Pod) (Binding, error) {
	s.feasible = s.feasible[:0]
	for i := range s.c.states {
		if Feasible(&s.c.states[i], p) {
			s.feasible = append(s.feasible, i)
		}
	}
	s.stats.FeasibleNodesEvaluated += int64(len(s.feasible))
	var best int
	switch {
	case len(s.feasible) == 0:
		s.stats.Failed++
		return Binding{}, ErrUnschedulable
	case len(s.feasible) == 1:
		best = s.feasible[0] // kube-scheduler skips scoring then
	case s.picker != nil:
		best = s.picker.Pick(s.feasible, p, s.rng)
	default:
		best = s.bestScored(p)
	}
	st := &s.c.states[best]
	var gpus []int
	if p.NumGPU > 0 {
		gpus = s.pol.PickGPUs(st, p, s.rng)
	}
	b, err := s.c.Bind(best, p, gpus)
	if err != nil {
		return Binding{}, fmt.Errorf("policy %s picked node %s GPUs %v: %w", s.pol.Name(), st.Node.Name, gpus, err)
	}
	s.stats.Placed++
	return b, nil
}

// bestScored returns the feasible node with the highest score, ties broken by
// rank or, without one, uniformly at random (reservoir sampling, as
// kube-scheduler's selectHost).
func (s *Scheduler) bestScored(p *Pod) int {
	shape, ok := s.shapes[p.Shape()]
	if !ok {
		shape = len(s.shapes)
		s.shapes[p.Shape()] = shape
	}
	best, ties := -1, 0
	var bestScore float64
	for _, i := range s.feasible {
		sc := s.score(i, shape, &s.c.states[i], p)
		switch {
		case best < 0 || sc > bestScore:
			best, bestScore, ties = i, sc, 1
		case sc < bestScore:
		case s.rank != nil:
			if s.rank[i] < s.rank[best] {
				best = i
			}
		default:
			ties++
			if s.rng.Intn(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// Release returns a placed pod's resources.
func (s *Scheduler) Release(b Binding) error { return s.c.Release(b) }

func (s *Scheduler) score(i, shape int, st *NodeState, p *Pod) float64 {
	s.stats.ScoreCalls++
	row := s.cache[i]
	if shape >= len(row) {
		row = append(row, make([]scoreEntry, len(s.shapes)-len(row))...)
		s.cache[i] = row
	}
	e := &row[shape]
	if e.gen == s.c.gen[i]+1 {
		s.stats.ScoreHits++
		return e.score
	}
	sc := s.pol.Score(st, p)
	*e = scoreEntry{gen: s.c.gen[i] + 1, score: sc}
	return sc
}
