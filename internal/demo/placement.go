package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// placementLease is how long a job's reservation holds its GPUs in simulated
// time: until the snapshot shows the job's allocation (the agents report it at
// their next full cycle) and the engine hands the reservation off, or the job
// ends and the demo releases it.
const placementLease = 10 * time.Minute

// jobDurationScale shortens the simulated jobs (training 2–8 h, inference 30
// min–4 h, idle holds 1–6 h) so that jobs end and new ones arrive within a
// demo of a few minutes: training 3–12 min, inference 45 s–6 min, idle holds
// 1.5–9 min. New jobs then meet GPUs the drain controller has excluded.
const jobDurationScale = 1.0 / 40

// PlacementResult is what the server's placement engine decided for the
// simulated workload.
type PlacementResult struct {
	// Placed are the jobs the engine placed and the fleet started, in order.
	Placed []PlacedJob
	// Unschedulable counts the requests the engine could not place then (the
	// generator drew another job); Reasons counts them by the engine's reason.
	Unschedulable int
	Reasons       map[string]int
	// Refused are placements the simulated fleet could not start (a GPU it
	// knows lost, hung or busy before the engine did), with why.
	Refused []string
	// OnExcluded names the placements that landed on a GPU or node the drain
	// controller excluded at the time; a correct pipeline leaves it empty.
	OnExcluded []string
	// ExclusionsSeen counts the distinct GPUs and nodes the drain controller
	// excluded at some placement during the run.
	ExclusionsSeen int
}

// PlacedJob is one job the engine placed.
type PlacedJob struct {
	At       time.Time
	Job      string
	Kind     simhw.JobKind
	Decision string // the engine's decision id (its reservation's id)
	Parts    []simhw.JobPlacement
	// Leaves are the leaf switches of the job's nodes as the snapshot knows them
	// ("" unknown); LeavesSpanned is the decision's count.
	Leaves        []string
	LeavesSpanned int
	Score         float64 // the first node's weighted score, in [0,1]
	Feasible      int     // nodes that could take the job's part
	Evaluated     int
	Why           string // the short why the demo printed
}

// MeanLeavesSpanned is the mean of LeavesSpanned over the multi-node jobs, and
// how many there were.
func (r PlacementResult) MeanLeavesSpanned() (float64, int) {
	sum, n := 0, 0
	for _, j := range r.Placed {
		if len(j.Parts) > 1 {
			sum += j.LeavesSpanned
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(sum) / float64(n), n
}

// placer is the workload generator's Place hook: every job the simulated
// workload starts goes through the demo server's placement engine, as a real
// scheduler's would through gpuwatch's placement API.
type placer struct {
	ctx    context.Context
	ds     *demoServer
	fleet  *simhw.Fleet
	agents *fleetAgents

	fresh time.Time         // simulated time of the last snapshot refresh
	held  map[string]string // job id → reservation id
	seen  map[string]bool   // exclusions met: "node/gpu"
	lines []ctlLine
	res   PlacementResult
}

func newPlacer(ctx context.Context, ds *demoServer, fleet *simhw.Fleet) *placer {
	return &placer{ctx: ctx, ds: ds, fleet: fleet, held: map[string]string{}, seen: map[string]bool{},
		res: PlacementResult{Reasons: map[string]int{}}}
}

// refresh brings the engine's snapshot up to the agents' last cycle once per
// simulated instant: it waits until every agent has shipped what it collected,
// releases the reservations of jobs that ended before their allocation showed,
// and rebuilds the snapshot from the store (with the drain controller's
// exclusions).
func (p *placer) refresh() error {
	now := p.fleet.Now()
	if p.fresh.Equal(now) {
		return nil
	}
	if err := p.agents.drain(30 * time.Second); err != nil {
		return err
	}
	running := map[string]bool{}
	for _, n := range p.fleet.Nodes() {
		for _, j := range n.Jobs() {
			running[j.ID] = true
		}
	}
	eng := p.ds.srv.Placement().Engine()
	for job, id := range p.held {
		if running[job] {
			continue
		}
		delete(p.held, job)
		// Handed off already when the snapshot showed the job's allocation.
		if err := eng.Release(id); err != nil && !errors.Is(err, placement.ErrUnknownReservation) {
			return fmt.Errorf("cannot release the reservation of ended job %s: %w", job, err)
		}
	}
	if err := p.ds.srv.Placement().Refresh(p.ctx); err != nil {
		return fmt.Errorf("cannot refresh the placement snapshot: %w", err)
	}
	p.fresh = now
	return nil
}

// place asks the engine for spec's GPUs and reserves them.
func (p *placer) place(spec simhw.JobSpec) ([]simhw.JobPlacement, error) {
	if err := p.refresh(); err != nil {
		return nil, err
	}
	req := framework.Request{JobID: spec.ID, GPUs: spec.GPUs, Nodes: spec.Nodes, GPUsPerNode: spec.GPUsPerNode,
		Exclusive: spec.Exclusive, Lease: framework.Duration(placementLease)}
	if spec.Nodes > 1 {
		req.Preferred = telemetry.TierLeaf
	}
	eng := p.ds.srv.Placement().Engine()
	d, err := eng.Reserve(p.ctx, req)
	if err != nil {
		return nil, fmt.Errorf("the placement engine refused the request for job %s: %w", spec.ID, err)
	}
	if d.Outcome != framework.OutcomePlaced {
		p.res.Unschedulable++
		p.res.Reasons[d.Reason]++
		return nil, nil
	}
	if d.Reservation != nil {
		p.held[spec.ID] = d.Reservation.ID
	}
	job := PlacedJob{At: p.fleet.Now(), Job: spec.ID, Kind: spec.Kind, Decision: d.ID,
		Feasible: d.Feasible, Evaluated: d.Evaluated}
	snap := eng.Snapshot()
	leaves := snap.Domains(telemetry.TierLeaf)
	for _, a := range d.Assignments {
		job.Parts = append(job.Parts, simhw.JobPlacement{Node: a.Node, GPUs: slices.Clone(a.GPUs)})
		leaf := ""
		if i, ok := snap.Lookup(a.Node); ok {
			if l := snap.Node(i).Leaf; l >= 0 && int(l) < len(leaves) {
				leaf = leaves[l]
			}
		}
		job.Leaves = append(job.Leaves, leaf)
	}
	if len(d.Assignments) > 0 {
		job.Score = d.Assignments[0].Score
	}
	if d.Quality != nil {
		job.LeavesSpanned = d.Quality.LeavesSpanned
	}
	p.checkExclusions(&job, p.ds.srv.Drain().Exclusions())
	job.Why = why(d, &job)
	p.res.Placed = append(p.res.Placed, job)
	p.lines = append(p.lines, ctlLine{at: job.At, node: nodesColumn(job.Parts), text: placeLine(&job, spec)})
	return job.Parts, nil
}

// refused undoes a placement the fleet could not start.
func (p *placer) refused(spec simhw.JobSpec, err error) {
	if id, ok := p.held[spec.ID]; ok {
		delete(p.held, spec.ID)
		_ = p.ds.srv.Placement().Engine().Release(id)
	}
	if k := len(p.res.Placed) - 1; k >= 0 && p.res.Placed[k].Job == spec.ID {
		p.res.Placed = p.res.Placed[:k]
	}
	if k := len(p.lines) - 1; k >= 0 && strings.Contains(p.lines[k].text, "job "+spec.ID+" ") {
		p.lines = p.lines[:k]
	}
	p.res.Refused = append(p.res.Refused, err.Error())
	p.lines = append(p.lines, ctlLine{at: p.fleet.Now(), node: "placement", text: "the simulated fleet refused: " + err.Error()})
}

// take returns the lines of the placements since the last call.
func (p *placer) take() []ctlLine {
	out := p.lines
	p.lines = nil
	return out
}

// checkExclusions notes a placement on a GPU or node the drain controller
// excludes now.
func (p *placer) checkExclusions(job *PlacedJob, ex []drain.Exclusion) {
	for _, e := range ex {
		p.seen[e.Node+"/"+strconv.Itoa(e.GPU)] = true
		for _, part := range job.Parts {
			if part.Node == e.Node && (e.GPU < 0 || slices.Contains(part.GPUs, e.GPU)) {
				p.res.OnExcluded = append(p.res.OnExcluded, fmt.Sprintf("job %s on %s gpu %d: excluded (%s)", job.Job, e.Node, e.GPU, e.Reason))
			}
		}
	}
	p.res.ExclusionsSeen = len(p.seen)
}

// why is the decision in a few words: the score, how many nodes could take the
// job, the leaves a multi-node job spans, and what kept the most nodes out.
func why(d *framework.Decision, job *PlacedJob) string {
	parts := []string{fmt.Sprintf("score %.2f", job.Score), fmt.Sprintf("%d of %d nodes fit", d.Feasible, d.Evaluated)}
	if len(job.Parts) > 1 && d.Quality != nil {
		s := fmt.Sprintf("%d leaf", d.Quality.LeavesSpanned)
		if d.Quality.LeavesSpanned != 1 {
			s += "s"
		}
		if d.Quality.RailAligned {
			s += ", rail-aligned"
		}
		parts = append(parts, s)
	}
	if len(d.Rejections) > 0 {
		r := d.Rejections[0]
		parts = append(parts, fmt.Sprintf("%d out: %s", r.Nodes, r.Reason))
	}
	return strings.Join(parts, "; ")
}

func nodesColumn(parts []simhw.JobPlacement) string {
	if len(parts) == 1 {
		return parts[0].Node
	}
	return fmt.Sprintf("%s +%d", parts[0].Node, len(parts)-1)
}

// placeLine is one placed job: what it is, where it went, why.
func placeLine(job *PlacedJob, spec simhw.JobSpec) string {
	var where string
	if len(job.Parts) == 1 {
		where = "gpu " + ints(job.Parts[0].GPUs)
	} else {
		var names []string
		for _, pt := range job.Parts {
			names = append(names, pt.Node)
		}
		where = strings.Join(names, ",")
	}
	leaves := slices.Compact(slices.Sorted(slices.Values(job.Leaves)))
	leaf := strings.Join(leaves, ",")
	if leaf == "" {
		leaf = "leaf unknown"
	}
	size := fmt.Sprintf("%d GPU", spec.GPUs)
	if spec.GPUs > 1 {
		size += "s"
	}
	if spec.Nodes > 1 {
		size = fmt.Sprintf("%d×%d GPUs", spec.Nodes, spec.GPUsPerNode)
	}
	return fmt.Sprintf("placed job %s (%s, %s) on %s [%s]: %s", job.Job, spec.Kind, size, where, leaf, job.Why)
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// summaryLine is the final summary's account of placement.
func (r PlacementResult) summaryLine() string {
	mean, multi := r.MeanLeavesSpanned()
	var b strings.Builder
	fmt.Fprintf(&b, "placement: %d jobs placed through the server's placement engine (reserve, then start); %d requests unschedulable at the time, dropped by the generator",
		len(r.Placed), r.Unschedulable)
	if top := topReason(r.Reasons); top != "" {
		fmt.Fprintf(&b, " (most: %s)", top)
	}
	fmt.Fprintf(&b, ", %d refused by the simulated fleet\n", len(r.Refused))
	if multi > 0 {
		fmt.Fprintf(&b, "  multi-node jobs: %d, mean leaves spanned %.2f\n", multi, mean)
	} else {
		b.WriteString("  multi-node jobs: none placed\n")
	}
	if len(r.OnExcluded) == 0 {
		fmt.Fprintf(&b, "  no job landed on a GPU or node the drain controller excluded at the time (%d GPUs or nodes were excluded at some placement)", r.ExclusionsSeen)
	} else {
		fmt.Fprintf(&b, "  %d placements landed on excluded GPUs or nodes: %s", len(r.OnExcluded), strings.Join(r.OnExcluded, "; "))
	}
	return b.String()
}

func topReason(m map[string]int) string {
	best, n := "", 0
	for r, c := range m {
		if c > n || c == n && r < best {
			best, n = r, c
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("%d× %s", n, best)
}
