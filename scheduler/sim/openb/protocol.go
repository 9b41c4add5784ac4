package openb

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/sim"
)

// informerDraws is how many values the simulator's informers take from the
// global source between tuning and the node permutation. The count is
// empirical: with 10, BestFit and FGD reproduce the published curves
// (openb-fgd-expected-results) column for column; see TestPublishedCurvesExact.
const informerDraws = 10

// Plan is a replay prepared as the simulator prepares it.
type Plan struct {
	// Pods in submission order.
	Pods []*sim.Pod
	// Rank is each node's tie-break rank, by node index (see sim.Options.Rank).
	Rank []int
	// Rand is the random source as it stands when scheduling starts.
	Rand *rand.Rand
}

// Arrivals returns the pods in the order the paper's simulator submits them, the
// node ranking its ties follow, and its random source as it stands when
// scheduling starts. It follows
// pkg/simulator/core.go Simulate step by step, drawing from Go's math/rand seeded
// with seed exactly as the simulator draws from its seeded global source:
//
//  1. rand.Seed(seed), then one rand.Int() (the simulator logs it);
//  2. pods sorted by name, then rand.Shuffle when shuffle is set (the simulator's
//     creation-time order ends up as name order for the openb lists, whose
//     integer timestamps do not parse as RFC 3339);
//  3. tuning to tune × GPU capacity (-tune): above it, rand.Intn picks pods to
//     drop from the shuffled list until the request is at most the target;
//     below it, rand.Intn picks pods of the original list (sorted by name) to
//     clone and append, stopping at the first clone whose per-GPU milli would
//     take the request past the target (the simulator's tuneUpPods compares
//     MilliGpu, not the clone's total);
//  4. informerDraws values drawn by the simulator's informers as its scheduler
//     starts (client-go reflectors jitter their watch timeouts with the global
//     source), then
//  5. rand.Perm over the nodes sorted by name: the simulator renames the i-th
//     node "%04d-<name>" with the i-th value, and its kube-scheduler fork
//     (mental2008/kubernetes v1.20.5-minor, selectHost) gives a tied best score to
//     the lexicographically smallest name, so that value is the node's rank.
//
// The clones are appended after the shuffled originals, not shuffled in. A tune
// of 0 or less means no tuning.
func Arrivals(pods []sim.Pod, nodes []sim.Node, tune float64, seed int64, shuffle bool) (*Plan, error) {
	if len(pods) == 0 {
		return nil, fmt.Errorf("cannot replay an empty pod list")
	}
	var capacityMilli int64
	for _, n := range nodes {
		capacityMilli += int64(n.GPUs) * sim.MilliPerGPU
	}
	if capacityMilli <= 0 {
		return nil, fmt.Errorf("cannot replay on a cluster without GPUs")
	}
	byName := make([]*sim.Pod, len(pods))
	for i := range pods {
		byName[i] = &pods[i]
	}
	slices.SortStableFunc(byName, func(a, b *sim.Pod) int { return strings.Compare(a.Name, b.Name) })

	rng := rand.New(rand.NewSource(seed))
	rng.Int()
	order := slices.Clone(byName)
	if shuffle {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	var total int64
	for _, p := range order {
		total += p.TotalMilliGPU()
	}
	if tune > 0 {
		target := tune * float64(capacityMilli)
		switch {
		case float64(total) > target:
			for float64(total) > target {
				i := rng.Intn(len(order))
				total -= order[i].TotalMilliGPU()
				order = slices.Delete(order, i, i+1)
			}
		case float64(total) < target:
			for i := 0; ; i++ {
				src := byName[rng.Intn(len(byName))]
				if float64(total+src.MilliGPU) > target {
					break
				}
				clone := *src
				clone.Name = fmt.Sprintf("%s-tuned-%d", src.Name, i)
				total += clone.TotalMilliGPU()
				order = append(order, &clone)
			}
		}
	}
	nodeByName := make([]int, len(nodes))
	for i := range nodeByName {
		nodeByName[i] = i
	}
	slices.SortStableFunc(nodeByName, func(a, b int) int { return strings.Compare(nodes[a].Name, nodes[b].Name) })
	rank := make([]int, len(nodes))
	for range informerDraws {
		rng.Int63()
	}
	for i, v := range rng.Perm(len(nodes)) {
		rank[nodeByName[i]] = v
	}
	return &Plan{Pods: order, Rank: rank, Rand: rng}, nil
}
