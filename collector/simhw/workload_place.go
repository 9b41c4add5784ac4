package simhw

import (
	"errors"
	"fmt"
	"slices"
)

// JobSpec is a job the WorkloadGenerator wants to start, before it has GPUs:
// what WorkloadOptions.Place is asked to place. Job.MultiNode is set when
// Nodes > 1.
type JobSpec struct {
	Job
	// GPUs is the job's total GPU count: Nodes × GPUsPerNode.
	GPUs int
	// Nodes is how many nodes the job spans; GPUsPerNode how many GPUs it takes
	// on each.
	Nodes, GPUsPerNode int
	// Exclusive jobs take whole nodes (training); the generator's own choice
	// keeps a multi-node job within one leaf group.
	Exclusive bool
}

// JobPlacement is one node's part of a placed job: the node's name and the
// GPU indices the job takes there.
type JobPlacement struct {
	Node string
	GPUs []int
}

// placeByHook draws one job of kind, asks opts.Place where it goes and starts
// it there. It returns how many GPUs it started. A nil placement leaves the job
// unstarted (it does not fit now); a placement the fleet cannot honour is
// refused (opts.Refused is told) and leaves it unstarted too.
func (w *WorkloadGenerator) placeByHook(kind JobKind, nodes []*Node, free [][]int) (int, error) {
	spec := JobSpec{Nodes: 1}
	switch kind {
	case JobTraining:
		spec.Nodes = 1
		if x := w.rng.Float64(); x < 0.25 && w.opts.MaxJobNodes >= 4 {
			spec.Nodes = 4
		} else if x < 0.5 && w.opts.MaxJobNodes >= 2 {
			spec.Nodes = 2
		}
		spec.GPUsPerNode, spec.Exclusive = nodes[0].shape.GPUs(), true
	case JobInference:
		spec.GPUsPerNode = pickSize(w.rng, []int{1, 1, 2, 4})
	case JobIdleHold:
		spec.GPUsPerNode = pickSize(w.rng, []int{1, 1, 2})
	}
	spec.GPUs = spec.Nodes * spec.GPUsPerNode
	spec.Job = w.newJob(kind, spec.Nodes > 1)
	where, err := w.opts.Place(spec)
	if err != nil {
		return 0, fmt.Errorf("place job %s (%d GPUs): %w", spec.ID, spec.GPUs, err)
	}
	if len(where) == 0 {
		return 0, nil
	}
	idx, err := checkPlacement(spec, where, nodes, free)
	if err != nil {
		if w.opts.Refused != nil {
			w.opts.Refused(spec, err)
		}
		return 0, nil
	}
	// Several nodes: the job's GPUs exchange traffic over InfiniBand.
	job := spec.Job
	job.MultiNode = len(where) > 1
	g := &genJob{id: job.ID, end: w.fleet.Now().Add(w.duration(kind))}
	started := 0
	var errs []error
	for k, p := range where {
		n := nodes[idx[k]]
		if err := n.StartJob(job, p.GPUs...); err != nil {
			errs = append(errs, err)
			continue
		}
		g.nodes = append(g.nodes, n)
		free[idx[k]] = without(free[idx[k]], p.GPUs)
		started += len(p.GPUs)
	}
	if len(g.nodes) > 0 {
		w.running = append(w.running, g)
	}
	return started, errors.Join(errs...)
}

// checkPlacement verifies that where gives spec exactly its GPUs on known nodes,
// each GPU free and named once, and returns the nodes' positions in nodes.
func checkPlacement(spec JobSpec, where []JobPlacement, nodes []*Node, free [][]int) ([]int, error) {
	idx := make([]int, len(where))
	total := 0
	for k, p := range where {
		i := slices.IndexFunc(nodes, func(n *Node) bool { return n.name == p.Node })
		if i < 0 {
			return nil, fmt.Errorf("job %s placed on node %q, which is not in the fleet", spec.ID, p.Node)
		}
		if slices.Contains(idx[:k], i) {
			return nil, fmt.Errorf("job %s placed twice on node %s", spec.ID, p.Node)
		}
		idx[k] = i
		if len(p.GPUs) == 0 {
			return nil, fmt.Errorf("job %s placed on node %s with no GPUs", spec.ID, p.Node)
		}
		for j, g := range p.GPUs {
			if slices.Contains(p.GPUs[:j], g) {
				return nil, fmt.Errorf("job %s given GPU %d of %s twice", spec.ID, g, p.Node)
			}
			if !slices.Contains(free[i], g) {
				return nil, fmt.Errorf("job %s placed on GPU %d of %s, which is not free (busy, lost, hung or stalled)", spec.ID, g, p.Node)
			}
		}
		total += len(p.GPUs)
	}
	if total != spec.GPUs {
		return nil, fmt.Errorf("job %s asked for %d GPUs and was placed on %d", spec.ID, spec.GPUs, total)
	}
	return idx, nil
}
