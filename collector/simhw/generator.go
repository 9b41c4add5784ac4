package simhw

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"time"
)

// WorkloadOptions tunes a WorkloadGenerator. Zero values take the defaults.
type WorkloadOptions struct {
	// Seed drives every choice of the generator (independent of the fleet seed).
	Seed int64
	// Occupancy is the fraction of GPUs the generator fills up to at each Step
	// (0.8); the last job started may overshoot it by its size.
	Occupancy float64
	// TrainingShare and IdleHoldShare are the fractions of new jobs that are
	// training jobs (0.35) and idle-held allocations (0.15); the rest are
	// inference services.
	TrainingShare float64
	IdleHoldShare float64
	// MaxJobNodes is the largest multi-node training job, in whole nodes (4).
	MaxJobNodes int
	// DurationScale multiplies job durations (1): training runs 2–8 h, inference
	// 30 min–4 h, idle holds 1–6 h.
	DurationScale float64
	// Place, when set, chooses where each new job goes instead of the
	// generator's own choice (see JobSpec and workload_place.go): a scheduler
	// such as gpuwatch's placement engine plays the scheduler's part.
	Place func(spec JobSpec) ([]JobPlacement, error)
	// Refused, when set with Place, is told about a job whose placement the
	// generator could not start (a GPU busy, lost, hung or stalled; a node not
	// in the fleet), so that whoever placed it can undo what it holds.
	Refused func(spec JobSpec, err error)
}

// WorkloadGenerator plays a batch scheduler over a fleet: at every Step it ends
// the jobs whose time is up and starts new ones on free GPUs until the target
// occupancy is reached. The mix is whole-node training (single- or multi-node
// within one leaf group), 1–4 GPU inference services packed within a socket, and
// 1–2 GPU allocations held idle. Jobs get Slurm-like numeric ids, an account and a
// user; accounts use the fleet unevenly, as teams do. Given the same fleet, seed
// and Step times, the generator makes the same choices.
type WorkloadGenerator struct {
	fleet   *Fleet
	opts    WorkloadOptions
	rng     *rand.Rand
	nextID  int
	running []*genJob
}

type genJob struct {
	id    string
	nodes []*Node
	end   time.Time
}

// Accounts and their users; the weights make some teams heavy users.
var genAccounts = []struct {
	name   string
	weight float64
	users  []string
}{
	{"nlp", 0.35, []string{"alice", "bob", "carol"}},
	{"vision", 0.25, []string{"dave", "erin"}},
	{"recsys", 0.2, []string{"frank", "grace"}},
	{"speech", 0.1, []string{"heidi"}},
	{"infra", 0.1, []string{"ivan", "judy"}},
}

// NewWorkloadGenerator returns a generator for f.
func NewWorkloadGenerator(f *Fleet, opts WorkloadOptions) *WorkloadGenerator {
	if opts.Occupancy <= 0 || opts.Occupancy > 1 {
		opts.Occupancy = 0.8
	}
	if opts.TrainingShare <= 0 {
		opts.TrainingShare = 0.35
	}
	if opts.IdleHoldShare <= 0 {
		opts.IdleHoldShare = 0.15
	}
	if opts.MaxJobNodes <= 0 {
		opts.MaxJobNodes = 4
	}
	if opts.DurationScale <= 0 {
		opts.DurationScale = 1
	}
	r := rand.New(rand.NewPCG(uint64(opts.Seed), 0x776f726b6c6f6164))
	return &WorkloadGenerator{fleet: f, opts: opts, rng: r, nextID: 10000 + r.IntN(90000)}
}

// Step stops finished jobs and starts new ones at the fleet's current time.
func (w *WorkloadGenerator) Step() error {
	now := w.fleet.Now()
	var errs []error
	kept := w.running[:0]
	for _, j := range w.running {
		if j.end.After(now) {
			kept = append(kept, j)
			continue
		}
		for _, n := range j.nodes {
			if err := n.StopJob(j.id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	w.running = kept

	nodes := w.fleet.Nodes()
	free := make([][]int, len(nodes))
	total, busy := 0, 0
	for i, n := range nodes {
		free[i] = n.freeGPUs()
		total += n.shape.GPUs()
		busy += n.shape.GPUs() - len(free[i])
	}
	target := int(w.opts.Occupancy * float64(total))
	for attempt := 0; busy < target && attempt < 4*len(nodes)+16; attempt++ {
		kind := w.pickKind()
		if w.opts.Place != nil {
			n, err := w.placeByHook(kind, nodes, free)
			if err != nil {
				errs = append(errs, err)
			}
			busy += n
			continue
		}
		var placed []placement
		switch kind {
		case JobTraining:
			placed = w.placeTraining(nodes, free)
		case JobInference:
			placed = w.placeOnOneNode(nodes, free, pickSize(w.rng, []int{1, 1, 2, 4}))
		case JobIdleHold:
			placed = w.placeOnOneNode(nodes, free, pickSize(w.rng, []int{1, 1, 2}))
		}
		if placed == nil {
			continue
		}
		j := w.newJob(kind, len(placed) > 1)
		g := &genJob{id: j.ID, end: now.Add(w.duration(kind))}
		for _, p := range placed {
			n := nodes[p.node]
			if err := n.StartJob(j, p.gpus...); err != nil {
				errs = append(errs, err)
				continue
			}
			g.nodes = append(g.nodes, n)
			free[p.node] = without(free[p.node], p.gpus)
			busy += len(p.gpus)
		}
		if len(g.nodes) > 0 {
			w.running = append(w.running, g)
		}
	}
	return errors.Join(errs...)
}

type placement struct {
	node int
	gpus []int
}

func (w *WorkloadGenerator) pickKind() JobKind {
	x := w.rng.Float64()
	switch {
	case x < w.opts.TrainingShare:
		return JobTraining
	case x < w.opts.TrainingShare+w.opts.IdleHoldShare:
		return JobIdleHold
	}
	return JobInference
}

// placeTraining finds whole free nodes in one leaf group: 1, 2 or 4 nodes (up to
// MaxJobNodes), falling back to one node.
func (w *WorkloadGenerator) placeTraining(nodes []*Node, free [][]int) []placement {
	want := 1
	if x := w.rng.Float64(); x < 0.25 && w.opts.MaxJobNodes >= 4 {
		want = 4
	} else if x < 0.5 && w.opts.MaxJobNodes >= 2 {
		want = 2
	}
	for ; want >= 1; want /= 2 {
		byLeaf := map[string][]int{}
		var leaves []string
		for i, n := range nodes {
			if len(free[i]) != n.shape.GPUs() {
				continue
			}
			if _, ok := byLeaf[n.leaf]; !ok {
				leaves = append(leaves, n.leaf)
			}
			byLeaf[n.leaf] = append(byLeaf[n.leaf], i)
		}
		if len(leaves) == 0 {
			return nil
		}
		off := w.rng.IntN(len(leaves))
		for k := range leaves {
			idx := byLeaf[leaves[(off+k)%len(leaves)]]
			if len(idx) < want {
				continue
			}
			out := make([]placement, want)
			for i := range out {
				out[i] = placement{node: idx[i], gpus: free[idx[i]]}
			}
			return out
		}
	}
	return nil
}

// placeOnOneNode finds size free GPUs on one node, preferring one socket.
func (w *WorkloadGenerator) placeOnOneNode(nodes []*Node, free [][]int, size int) []placement {
	off := w.rng.IntN(len(nodes))
	for k := range nodes {
		i := (off + k) % len(nodes)
		if len(free[i]) < size {
			continue
		}
		sh := nodes[i].shape
		bySocket := map[int][]int{}
		for _, g := range free[i] {
			bySocket[sh.NUMAOf(g)] = append(bySocket[sh.NUMAOf(g)], g)
		}
		for s := 0; s < sh.NUMANodes; s++ {
			if len(bySocket[s]) >= size {
				return []placement{{node: i, gpus: bySocket[s][:size]}}
			}
		}
		return []placement{{node: i, gpus: free[i][:size]}}
	}
	return nil
}

func (w *WorkloadGenerator) newJob(kind JobKind, multiNode bool) Job {
	w.nextID++
	x := w.rng.Float64()
	acc := genAccounts[len(genAccounts)-1]
	for _, a := range genAccounts {
		if x < a.weight {
			acc = a
			break
		}
		x -= a.weight
	}
	return Job{
		ID:        strconv.Itoa(w.nextID),
		Account:   acc.name,
		User:      acc.users[w.rng.IntN(len(acc.users))],
		Kind:      kind,
		MultiNode: multiNode,
	}
}

func (w *WorkloadGenerator) duration(kind JobKind) time.Duration {
	lo, hi := 2*time.Hour, 8*time.Hour
	switch kind {
	case JobInference:
		lo, hi = 30*time.Minute, 4*time.Hour
	case JobIdleHold:
		lo, hi = time.Hour, 6*time.Hour
	}
	d := lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
	return time.Duration(float64(d) * w.opts.DurationScale).Round(time.Second)
}

func pickSize(r *rand.Rand, sizes []int) int { return sizes[r.IntN(len(sizes))] }

func without(xs, drop []int) []int {
	out := xs[:0:0]
	for _, x := range xs {
		keep := true
		for _, d := range drop {
			if x == d {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, x)
		}
	}
	return out
}
