package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// genTopology builds a node's inside of one of three kinds: 0 unknown (nil), 1 an
// NVSwitch box with one rail NIC per GPU, 2 pairs of GPUs on NVLink bridges with
// PCIe between the pairs (PXB within a half, SYS across) and one NIC per pair, so
// the picker's greedy search and shared rails are exercised.
func genTopology(kind int, name string, gpus int) *telemetry.NodeTopology {
	if kind == 0 {
		return nil
	}
	topo := &telemetry.NodeTopology{Node: telemetry.NodeID(name)}
	half := max(1, gpus/2)
	for g := range gpus {
		topo.GPUs = append(topo.GPUs, telemetry.TopologyGPU{Index: g, UUID: fmt.Sprintf("GPU-%s-%02d", name, g), NUMANode: g / half})
	}
	nics := gpus
	if kind == 2 {
		nics = max(1, gpus/2)
	}
	for k := range nics {
		topo.NICs = append(topo.NICs, telemetry.TopologyNIC{Device: fmt.Sprintf("mlx5_%d", k), NUMANode: k * gpus / nics / half})
	}
	for a := range gpus {
		for b := a + 1; b < gpus; b++ {
			l := telemetry.GPULink{A: a, B: b, Type: telemetry.LinkNVSwitch, NVLinks: 18}
			if kind == 2 {
				switch {
				case a/2 == b/2:
					l = telemetry.GPULink{A: a, B: b, Type: telemetry.LinkNVLink, NVLinks: 4}
				case a/half == b/half:
					l = telemetry.GPULink{A: a, B: b, Type: telemetry.LinkPXB}
				default:
					l = telemetry.GPULink{A: a, B: b, Type: telemetry.LinkSYS}
				}
			}
			topo.GPULinks = append(topo.GPULinks, l)
		}
		for k := range nics {
			typ := telemetry.LinkSYS
			if k == a*nics/gpus {
				typ = telemetry.LinkPIX
			}
			topo.NICLinks = append(topo.NICLinks, telemetry.NICLink{GPU: a, NIC: fmt.Sprintf("mlx5_%d", k), Type: typ})
		}
	}
	return topo
}

// gpuTemplate is what genMixedFleet draws for one GPU; ages are offsets before now
// (-1: never observed).
type gpuTemplate struct {
	model                       string
	health                      telemetry.State
	healthAge, utilAge, headAge time.Duration
	util, thermal, power        float64
	excluded                    bool
	milli                       []int // allocations on it
	// stragglerAge is how long ago the GPU was named a straggler (-1: never; past
	// the 30-minute window the mark no longer counts).
	stragglerAge time.Duration
}

type nodeTemplate struct {
	topo     int
	excluded bool
	gpus     []gpuTemplate
}

func drawGPU(t *rapid.T, model string) gpuTemplate {
	age := func(label string) time.Duration {
		switch rapid.IntRange(0, 5).Draw(t, label) {
		case 0:
			return -1 // never observed
		case 1:
			return 5 * time.Minute // stale
		}
		return 0
	}
	g := gpuTemplate{model: model, health: telemetry.StateHealthy,
		healthAge: age("healthAge"), utilAge: age("utilAge"), headAge: age("headAge"),
		util:         rapid.SampledFrom([]float64{0, 0, 0.5, 1}).Draw(t, "util"),
		thermal:      rapid.SampledFrom([]float64{1, 1, 0.25}).Draw(t, "thermal"),
		power:        rapid.SampledFrom([]float64{1, 1, 0.5}).Draw(t, "power"),
		excluded:     rapid.IntRange(0, 11).Draw(t, "exclude") == 0,
		stragglerAge: drawStragglerAge(t),
	}
	if rapid.IntRange(0, 3).Draw(t, "sick") == 0 {
		g.health = telemetry.State(rapid.IntRange(0, int(telemetry.StateProbation)).Draw(t, "state"))
	}
	if rapid.IntRange(0, 15).Draw(t, "oddModel") == 0 {
		g.model = "NVIDIA A100-SXM4-80GB"
	}
	used := 0
	for used < snapshot.FullMilli && rapid.IntRange(0, 2).Draw(t, "alloc") == 0 {
		m := rapid.SampledFrom([]int{250, 500, 1000}).Draw(t, "milli")
		if used+m > snapshot.FullMilli {
			break
		}
		used += m
		g.milli = append(g.milli, m)
	}
	return g
}

// drawStragglerAge draws when a GPU was last named a straggler: mostly never,
// sometimes minutes ago, sometimes past the straggler window.
func drawStragglerAge(t *rapid.T) time.Duration {
	switch rapid.IntRange(0, 7).Draw(t, "straggler") {
	case 0:
		return 4 * time.Minute
	case 1:
		return 45 * time.Minute // expired
	}
	return -1
}

// mutate changes one attribute of one GPU of a node, so the fleet holds nodes that
// differ from their template in exactly one input a plugin reads.
func mutate(t *rapid.T, n *nodeTemplate) {
	if rapid.IntRange(0, 9).Draw(t, "mutateNode") == 0 {
		n.excluded = !n.excluded
		return
	}
	g := &n.gpus[rapid.IntRange(0, len(n.gpus)-1).Draw(t, "mutateGPU")]
	fresh := drawGPU(t, g.model)
	switch rapid.IntRange(0, 10).Draw(t, "mutateWhat") {
	case 0:
		g.model = "NVIDIA A100-SXM4-80GB"
	case 1:
		g.health = telemetry.State(rapid.IntRange(0, int(telemetry.StateProbation)).Draw(t, "state"))
	case 2:
		g.healthAge = fresh.healthAge
	case 3:
		g.util = fresh.util
	case 4:
		g.utilAge = fresh.utilAge
	case 5:
		g.thermal = fresh.thermal
	case 6:
		g.power = fresh.power
	case 7:
		g.headAge = fresh.headAge
	case 8:
		g.excluded = !g.excluded
	case 9:
		g.stragglerAge = drawStragglerAge(t)
	default:
		g.milli = fresh.milli
	}
}

// genMixedFleet draws a fleet from one to three node templates that differ in size,
// topology, model, memory, health (schedulable or not, stale or fresh), telemetry
// (fresh, stale, never), allocations (whole and fractional) and exclusions. Most
// nodes copy a template; some differ from it in exactly one attribute, so a class
// key that missed an input would merge nodes the plugins tell apart.
func genMixedFleet(t *rapid.T, now time.Time) *snapshot.Snapshot {
	nodes := rapid.IntRange(1, 24).Draw(t, "nodes")
	leaves := rapid.IntRange(1, min(nodes, 4)).Draw(t, "leaves")
	spines := rapid.IntRange(0, 1).Draw(t, "spines")
	nvl := rapid.IntRange(0, 3).Draw(t, "nvl")
	templates := make([]nodeTemplate, rapid.IntRange(1, 3).Draw(t, "templates"))
	for k := range templates {
		gpus := rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus")
		model := rapid.SampledFrom([]string{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"}).Draw(t, "model")
		nt := nodeTemplate{topo: rapid.IntRange(0, 2).Draw(t, "topo"), excluded: rapid.IntRange(0, 11).Draw(t, "excludeNode") == 0}
		for range gpus {
			nt.gpus = append(nt.gpus, drawGPU(t, model))
		}
		templates[k] = nt
	}
	at := func(age time.Duration) time.Time {
		if age < 0 {
			return time.Time{}
		}
		return now.Add(-age)
	}
	b := snapshot.NewBuilder(now, time.Minute)
	perLeaf := (nodes + leaves - 1) / leaves
	for i := range nodes {
		name := snapshot.SyntheticNodeName(i)
		leaf := i / perLeaf
		loc := telemetry.NodeLocation{Leaf: fmt.Sprintf("leaf-%03d", leaf)}
		if spines > 0 {
			loc.Spine = "spine-00"
		}
		if nvl > 0 {
			loc.NVLinkDomain = fmt.Sprintf("nvl-%03d-%02d", leaf, (i%perLeaf)/nvl)
		}
		if rapid.IntRange(0, 11).Draw(t, "noLeaf") == 0 {
			loc = telemetry.NodeLocation{}
		}
		nt := templates[rapid.IntRange(0, len(templates)-1).Draw(t, "template")]
		nt.gpus = slices.Clone(nt.gpus)
		if rapid.IntRange(0, 2).Draw(t, "mutate") == 0 {
			mutate(t, &nt)
		}
		in := snapshot.NodeInput{Name: name, Location: loc, Topology: genTopology(nt.topo, name, len(nt.gpus)), TopologyAt: now}
		for g, gt := range nt.gpus {
			mem := int64(81559)
			if gt.model == "NVIDIA A100-SXM4-40GB" {
				mem = 40960
			}
			in.GPUs = append(in.GPUs, snapshot.GPUInput{
				Index: g, UUID: fmt.Sprintf("GPU-%s-%02d", name, g), Model: gt.model, MemoryMiB: mem,
				Health: gt.health, HealthAt: at(gt.healthAge),
				Utilization: gt.util, UtilizationAt: at(gt.utilAge),
				ThermalHeadroom: gt.thermal, PowerHeadroom: gt.power, HeadroomAt: at(gt.headAge),
			})
			for _, m := range gt.milli {
				b.AddAllocation(snapshot.Allocation{JobID: "bg", Node: name, GPUs: []int{g}, Milli: m})
			}
			if gt.excluded {
				b.Exclude(snapshot.Exclusion{Node: name, GPU: g, Reason: "xid 48"})
			}
			if gt.stragglerAge >= 0 {
				b.MarkStraggler(snapshot.StragglerMark{Node: name, GPU: g, Job: "slow", Signal: "sm_clock", Lag: 0.25, At: now.Add(-gt.stragglerAge)})
			}
		}
		if nt.excluded {
			b.Exclude(snapshot.Exclusion{Node: name, GPU: -1, Reason: "drained"})
		}
		b.AddNode(in)
	}
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// genNames draws node names: known ones, repeats, and names the snapshot lacks.
func genNames(t *rapid.T, snap *snapshot.Snapshot, label string) []string {
	n := rapid.IntRange(1, snap.Len()+3).Draw(t, label+".n")
	names := make([]string, n)
	for k := range names {
		i := rapid.IntRange(0, snap.Len()+1).Draw(t, label+".node")
		names[k] = snapshot.SyntheticNodeName(i) // beyond Len: unknown
	}
	return names
}

func genAnyRequest(t *rapid.T, snap *snapshot.Snapshot) framework.Request {
	r := genRequest(t)
	r.Model = rapid.SampledFrom([]string{"", "", "", "h100", "A100", "a100-sxm4-80"}).Draw(t, "req.model")
	r.MinMemoryMiB = rapid.SampledFrom([]int64{0, 0, 0, 50000}).Draw(t, "req.memory")
	r.Preferred = telemetry.Tier(rapid.IntRange(0, int(r.Required)).Draw(t, "req.preferred"))
	if r.Required == telemetry.TierUnknown {
		r.Preferred = telemetry.TierUnknown
	}
	if rapid.IntRange(0, 3).Draw(t, "req.hasNear") == 0 {
		r.Near = genNames(t, snap, "req.near")
	}
	if rapid.IntRange(0, 3).Draw(t, "req.hasCandidates") == 0 {
		r.Candidates = genNames(t, snap, "req.candidates")
	}
	r.Explain = rapid.IntRange(0, 5).Draw(t, "req.explain") == 0
	r.JobID = rapid.SampledFrom([]string{"", "job-a", "job-b"}).Draw(t, "req.job")
	return r
}

// normalized blanks what legitimately differs between two engines: the decision and
// reservation ids (random per engine) and the time taken.
func normalized(d *framework.Decision) framework.Decision {
	c := *d
	c.ID, c.Duration = "", 0
	if c.Reservation != nil {
		r := *c.Reservation
		r.ID = ""
		c.Reservation = &r
	}
	return c
}

func mustEqualDecisions(t *rapid.T, what string, got, want *framework.Decision) {
	g, w := normalized(got), normalized(want)
	if !reflect.DeepEqual(g, w) {
		gj, _ := json.MarshalIndent(g, "", " ")
		wj, _ := json.MarshalIndent(w, "", " ")
		t.Fatalf("%s: grouped decision differs from the exhaustive one\ngrouped:\n%s\nexhaustive:\n%s", what, gj, wj)
	}
}

// TestGroupedMatchesExhaustive is the differential test of the equivalence-class
// path: two engines over the same random fleets — one grouping nodes into classes,
// one running every plugin on every node (Options.Exhaustive) — take the same random
// reserves, dry runs, evaluations, releases, lease expiries and snapshot changes, and
// must answer identically: outcome, nodes, GPUs, scores, quality, rejections,
// recorded candidates and evaluations.
func TestGroupedMatchesExhaustive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clk := &clock{now: t0}
		snap := genMixedFleet(t, clk.now)
		opts := Options{Now: clk.Now, Parallelism: 3,
			ParallelThreshold: rapid.SampledFrom([]int{1, 1 << 20}).Draw(t, "threshold"),
			RecordTop:         rapid.SampledFrom([]int{-1, 0, 2}).Draw(t, "recordTop")}
		grouped, err := New(snap, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.Exhaustive = true
		exhaustive, err := New(snap, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !grouped.grouped || exhaustive.grouped {
			t.Fatalf("grouping: default engine %v, exhaustive engine %v", grouped.grouped, exhaustive.grouped)
		}
		ctx := context.Background()
		var liveG, liveE []string
		steps := rapid.IntRange(1, 16).Draw(t, "steps")
		for step := range steps {
			switch op := rapid.IntRange(0, 11).Draw(t, "op"); {
			case op < 6:
				req := genAnyRequest(t, snap)
				reserve := op < 3
				place := func(e *Engine) *framework.Decision {
					var d *framework.Decision
					var err error
					if reserve {
						d, err = e.Reserve(ctx, req)
					} else {
						d, err = e.DryRun(ctx, req)
					}
					if err != nil {
						t.Fatalf("valid request refused: %v", err)
					}
					return d
				}
				dg, de := place(grouped), place(exhaustive)
				mustEqualDecisions(t, fmt.Sprintf("step %d", step), dg, de)
				if reserve && dg.Reservation != nil {
					liveG, liveE = append(liveG, dg.ID), append(liveE, de.ID)
				}
			case op < 8:
				req := framework.Request{GPUs: rapid.IntRange(1, 8).Draw(t, "eval.gpus"),
					Milli:        rapid.SampledFrom([]int{0, 0, 250, 500}).Draw(t, "eval.milli"),
					Exclusive:    rapid.IntRange(0, 5).Draw(t, "eval.exclusive") == 0,
					RequireFresh: rapid.Bool().Draw(t, "eval.fresh"),
					Model:        rapid.SampledFrom([]string{"", "h100"}).Draw(t, "eval.model")}
				if rapid.Bool().Draw(t, "eval.hasNear") {
					req.Near = genNames(t, snap, "eval.near")
				}
				names := genNames(t, snap, "eval.nodes")
				if rapid.Bool().Draw(t, "eval.all") {
					names = names[:0]
					for i := range snap.Len() {
						names = append(names, snap.Node(i).Name)
					}
				}
				og, errG := grouped.Evaluate(ctx, req, names)
				oe, errE := exhaustive.Evaluate(ctx, req, names)
				if fmt.Sprint(errG) != fmt.Sprint(errE) || !reflect.DeepEqual(og, oe) {
					t.Fatalf("step %d: evaluate differs:\ngrouped %v %+v\nexhaustive %v %+v", step, errG, og, errE, oe)
				}
			case op < 10 && len(liveG) > 0:
				k := rapid.IntRange(0, len(liveG)-1).Draw(t, "release")
				if err := grouped.Release(liveG[k]); err != nil {
					t.Fatal(err)
				}
				if err := exhaustive.Release(liveE[k]); err != nil {
					t.Fatal(err)
				}
				liveG, liveE = append(liveG[:k], liveG[k+1:]...), append(liveE[:k], liveE[k+1:]...)
			case op == 10:
				// A new cycle: another fleet (reservations carry over, those whose
				// job the snapshot shows allocated end).
				clk.now = clk.now.Add(time.Duration(rapid.IntRange(0, 400).Draw(t, "advance")) * time.Second)
				snap = genMixedFleet(t, clk.now)
				if rapid.Bool().Draw(t, "jobAllocated") {
					b := snapshot.NewBuilder(clk.now, time.Minute)
					for i := range snap.Len() {
						n := snap.Node(i)
						in := snapshot.NodeInput{Name: n.Name, Location: n.Location, Topology: n.Topology.Value, TopologyAt: n.Topology.At}
						for _, g := range n.GPUs {
							in.GPUs = append(in.GPUs, snapshot.GPUInput{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB, HealthAt: clk.now})
						}
						b.AddNode(in)
					}
					b.AddAllocation(snapshot.Allocation{JobID: "job-a", Node: snap.Node(0).Name, GPUs: []int{snap.Node(0).GPUs[0].Index}})
					if s, err := b.Build(); err == nil {
						snap = s
					}
				}
				grouped.SetSnapshot(snap)
				exhaustive.SetSnapshot(snap)
				liveG, liveE = reservationIDs(grouped), reservationIDs(exhaustive)
			default:
				clk.now = clk.now.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "advance")) * time.Second)
				liveG, liveE = reservationIDs(grouped), reservationIDs(exhaustive)
			}
			if len(liveG) != len(liveE) {
				t.Fatalf("step %d: %d grouped reservations, %d exhaustive", step, len(liveG), len(liveE))
			}
			for i := range snap.Len() {
				n := snap.Node(i)
				for _, g := range n.GPUs {
					fg, _ := grouped.FreeMilli(n.Name, g.Index)
					fe, _ := exhaustive.FreeMilli(n.Name, g.Index)
					if fg != fe {
						t.Fatalf("step %d: gpu %d of %s free %d grouped, %d exhaustive", step, g.Index, n.Name, fg, fe)
					}
				}
			}
		}
	})
}

func reservationIDs(e *Engine) []string {
	var ids []string
	for _, r := range e.Reservations() {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestGroupedMatchesExhaustiveAtScale replays the benchmarks' kind of traffic on a
// 1,024-node fleet with mixed load and a few exclusions: single-node reservations
// with churn, gangs, fractional pods, flexible gangs and extender evaluations with
// a peer, on the parallel path.
func TestGroupedMatchesExhaustiveAtScale(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	spec := snapshot.SyntheticSpec{Nodes: 1024, GPUsPerNode: 8, Leaves: 16, Spines: 2, Now: t0}
	b, err := snapshot.SyntheticBuilder(spec)
	if err != nil {
		t.Fatal(err)
	}
	mixedLoad(r, spec.Nodes, 8, 0.4, 0.3)(b)
	for range 20 {
		b.Exclude(snapshot.Exclusion{Node: snapshot.SyntheticNodeName(r.IntN(spec.Nodes)), GPU: r.IntN(9) - 1, Reason: "xid"})
	}
	snap, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{ParallelThreshold: 256, Parallelism: 2, Now: func() time.Time { return t0 }}
	grouped, err := New(snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Exhaustive = true
	exhaustive, err := New(snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, snap.Len())
	for i := range names {
		names[i] = snap.Node(i).Name
	}
	ctx := context.Background()
	var liveG, liveE []string
	for step := range 150 {
		var req framework.Request
		switch r.IntN(5) {
		case 0:
			req = framework.Request{GPUs: 8}
		case 1:
			req = framework.Request{Nodes: 2 + r.IntN(30), GPUsPerNode: 8}
		case 2:
			req = framework.Request{GPUs: 1 + r.IntN(4), Milli: 250 * (1 + r.IntN(3))}
		case 3:
			req = framework.Request{GPUs: 1 + r.IntN(40)}
		default:
			req = framework.Request{GPUs: 1 + r.IntN(8), Near: []string{names[r.IntN(len(names))]}}
			og, _ := grouped.Evaluate(ctx, req, names)
			oe, _ := exhaustive.Evaluate(ctx, req, names)
			if !reflect.DeepEqual(og, oe) {
				t.Fatalf("step %d: evaluate differs", step)
			}
			continue
		}
		dg, _ := grouped.Reserve(ctx, req)
		de, _ := exhaustive.Reserve(ctx, req)
		if g, w := normalized(dg), normalized(de); !reflect.DeepEqual(g, w) {
			t.Fatalf("step %d: decisions differ:\n%s\n---\n%s", step, framework.Explain(dg), framework.Explain(de))
		}
		if dg.Reservation != nil {
			liveG, liveE = append(liveG, dg.ID), append(liveE, de.ID)
		}
		for len(liveG) > 0 && r.IntN(3) == 0 {
			k := r.IntN(len(liveG))
			if grouped.Release(liveG[k]) != nil || exhaustive.Release(liveE[k]) != nil {
				t.Fatal("release failed")
			}
			liveG, liveE = append(liveG[:k], liveG[k+1:]...), append(liveE[:k], liveE[k+1:]...)
		}
	}
	if c := grouped.cls.classes(); c >= snap.Len() {
		t.Errorf("%d classes for %d nodes: grouping never merged", c, snap.Len())
	}
}

// TestEvaluateNameResolution checks Evaluate's node-name resolution (the previous
// list at the same position, the next node of the snapshot, the snapshot's map)
// against single-node answers: lists sorted, shuffled, repeated, reused in place by
// the caller, shortened, with duplicates and unknown names, and after a snapshot
// change.
func TestEvaluateNameResolution(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	spec := snapshot.SyntheticSpec{Nodes: 64, GPUsPerNode: 8, Leaves: 4, Spines: 1}
	s1 := fleet(t, spec, mixedLoad(r, spec.Nodes, 8, 0.3, 0.3))
	s2 := fleet(t, spec, mixedLoad(r, spec.Nodes, 8, 0.3, 0.3))
	ctx := context.Background()
	req := framework.Request{GPUs: 2}
	for _, exhaustive := range []bool{false, true} {
		e, err := New(s1, Options{Exhaustive: exhaustive})
		if err != nil {
			t.Fatal(err)
		}
		single := func(snap *snapshot.Snapshot, name string) NodeScore {
			ref, err := New(snap, Options{Exhaustive: true})
			if err != nil {
				t.Fatal(err)
			}
			out, err := ref.Evaluate(ctx, req, []string{name})
			if err != nil {
				t.Fatal(err)
			}
			return out[0]
		}
		refs := map[*snapshot.Snapshot]map[string]NodeScore{}
		check := func(what string, snap *snapshot.Snapshot, names []string) {
			t.Helper()
			want := slices.Clone(names) // the caller may change names afterwards
			out, err := e.Evaluate(ctx, req, names)
			if err != nil {
				t.Fatal(err)
			}
			if refs[snap] == nil {
				refs[snap] = map[string]NodeScore{}
			}
			for k, name := range want {
				ref, ok := refs[snap][name]
				if !ok {
					ref = single(snap, name)
					refs[snap][name] = ref
				}
				if out[k] != ref {
					t.Fatalf("exhaustive %v, %s: answer %d %+v, want %+v", exhaustive, what, k, out[k], ref)
				}
			}
		}
		sorted := make([]string, s1.Len())
		for i := range sorted {
			sorted[i] = s1.Node(i).Name
		}
		check("sorted", s1, sorted)
		check("sorted again", s1, sorted)
		shuffled := slices.Clone(sorted)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		shuffled = append(shuffled, "node-99999", shuffled[3], "")
		check("shuffled with unknown and repeated names", s1, shuffled)
		check("shuffled again", s1, shuffled)
		shuffled[0], shuffled[5] = shuffled[5], "node-77777" // the caller reuses its slice
		check("changed in place", s1, shuffled)
		check("shorter", s1, shuffled[:10])
		check("longer", s1, append(slices.Clone(shuffled), sorted...))
		e.SetSnapshot(s2)
		check("new snapshot", s2, shuffled)
	}
}

// TestEvaluateAppend checks that EvaluateAppend into a reused buffer (holding stale
// answers) gives Evaluate's answers after the existing entries, and leaves the
// buffer alone on error.
func TestEvaluateAppend(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	spec := snapshot.SyntheticSpec{Nodes: 32, GPUsPerNode: 8, Leaves: 4, Spines: 1}
	e := engine(t, fleet(t, spec, mixedLoad(r, spec.Nodes, 8, 0.3, 0.3)), nil)
	ctx := context.Background()
	names := []string{"node-00003", "node-99999", "node-00001", "node-00003", "node-00031"}
	buf := make([]NodeScore, 0, 16)
	for _, req := range []framework.Request{{GPUs: 8}, {GPUs: 1, Milli: 250}, {GPUs: 2}} {
		want, err := e.Evaluate(ctx, req, names)
		if err != nil {
			t.Fatal(err)
		}
		head := NodeScore{Node: "kept", Reason: "entry before the answers"}
		buf = append(buf[:0], head)
		buf, err = e.EvaluateAppend(ctx, buf, req, names)
		if err != nil {
			t.Fatal(err)
		}
		if buf[0] != head || !slices.Equal(buf[1:], want) {
			t.Fatalf("request %+v: appended %+v, want %+v after %+v", req, buf, want, head)
		}
	}
	before := slices.Clone(buf)
	got, err := e.EvaluateAppend(ctx, buf, framework.Request{Nodes: 2, GPUsPerNode: 1}, names)
	if err == nil || !slices.Equal(got, before) {
		t.Fatalf("invalid request: error %v, buffer %+v", err, got)
	}
}

// TestConcurrentDecisions runs dry runs and evaluations on several goroutines while
// another reserves, releases and changes the snapshot (run with -race): every dry run
// of a request that fits an idle node is placed, and every evaluation answers each
// node.
func TestConcurrentDecisions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	spec := snapshot.SyntheticSpec{Nodes: 128, GPUsPerNode: 8, Leaves: 8, Spines: 1}
	snaps := []*snapshot.Snapshot{fleet(t, spec, mixedLoad(r, spec.Nodes, 8, 0.5, 0.2)), fleet(t, spec, mixedLoad(r, spec.Nodes, 8, 0.5, 0.2))}
	e, err := New(snaps[0], Options{ParallelThreshold: 32, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, spec.Nodes)
	for i := range names {
		names[i] = snapshot.SyntheticNodeName(i)
	}
	ctx := context.Background()
	done := make(chan error, 4)
	for w := range 3 {
		go func() {
			for k := range 150 {
				if (k+w)%2 == 0 {
					d, err := e.DryRun(ctx, framework.Request{GPUs: 1 + k%8, Near: names[k%4 : k%4+w]})
					if err != nil || d.Outcome != framework.OutcomePlaced {
						done <- fmt.Errorf("dry run %d: %v %s", k, err, d.Reason)
						return
					}
					continue
				}
				out, err := e.Evaluate(ctx, framework.Request{GPUs: 1 + k%4}, names)
				if err != nil || len(out) != len(names) {
					done <- fmt.Errorf("evaluate %d: %v, %d answers", k, err, len(out))
					return
				}
			}
			done <- nil
		}()
	}
	go func() {
		var live []string
		for k := range 150 {
			switch {
			case k%50 == 49:
				e.SetSnapshot(snaps[(k/50)%2])
			case len(live) > 10:
				if err := e.Release(live[0]); err != nil && !errors.Is(err, ErrUnknownReservation) {
					done <- err
					return
				}
				live = live[1:]
			default:
				if d, err := e.Reserve(ctx, framework.Request{GPUs: 1 + k%3}); err == nil && d.Reservation != nil {
					live = append(live, d.ID)
				}
			}
		}
		done <- nil
	}()
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// distinctFleet is a synthetic fleet whose nodes all differ in measured
// utilization, so every node is a class of its own.
func distinctFleet(t *testing.T, spec snapshot.SyntheticSpec) *snapshot.Snapshot {
	t.Helper()
	base := fleet(t, spec, nil)
	b := snapshot.NewBuilder(t0, time.Minute)
	for i := range base.Len() {
		n := base.Node(i)
		in := snapshot.NodeInput{Name: n.Name, Location: n.Location, Topology: n.Topology.Value, TopologyAt: t0}
		for _, g := range n.GPUs {
			in.GPUs = append(in.GPUs, snapshot.GPUInput{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB,
				HealthAt: t0, Utilization: float64(i) / float64(base.Len()), UtilizationAt: t0, ThermalHeadroom: 1, PowerHeadroom: 1, HeadroomAt: t0})
		}
		b.AddNode(in)
	}
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMemoReuseAndInvalidation checks, through gpuwatch_placement_pipeline_runs_total,
// that a repeated request runs the pipeline on no node, and that a reservation makes
// the next decision run it only on the nodes of the reserved node's leaf (the other
// leaves' outcomes are remembered). Scratch spaces come from a sync.Pool, which may
// drop one (the race detector drops some on purpose), so each claim needs only hold
// in one of several tries.
func TestMemoReuseAndInvalidation(t *testing.T) {
	spec := snapshot.SyntheticSpec{Nodes: 64, GPUsPerNode: 8, Leaves: 4, Spines: 1}
	e := engine(t, distinctFleet(t, spec), nil)
	ctx := context.Background()
	runs := func(f func()) int {
		before := testutilCount(e)
		f()
		return int(testutilCount(e) - before)
	}
	req := framework.Request{GPUs: 2}
	if n := runs(func() { _, _ = e.DryRun(ctx, req) }); n != spec.Nodes {
		t.Fatalf("first decision ran the pipeline on %d nodes, want all %d (every node is its own class)", n, spec.Nodes)
	}
	reused := false
	for range 10 {
		if runs(func() { _, _ = e.DryRun(ctx, req) }) == 0 {
			reused = true
			break
		}
	}
	if !reused {
		t.Error("a repeated request never reused the remembered outcomes")
	}
	perLeaf := spec.Nodes / spec.Leaves
	local := false
	for range 10 {
		d, err := e.Reserve(ctx, req)
		if err != nil || d.Outcome != framework.OutcomePlaced {
			t.Fatalf("reserve: %v %s", err, d.Reason)
		}
		n := runs(func() { _, _ = e.DryRun(ctx, req) })
		if n < 1 {
			t.Fatalf("after a reservation the next decision ran the pipeline on no node: its leaf's outcomes are stale")
		}
		if n <= perLeaf {
			local = true
		}
	}
	if !local {
		t.Errorf("a reservation never limited the next decision to its leaf's %d nodes", perLeaf)
	}
}

func testutilCount(e *Engine) float64 { return testutil.ToFloat64(e.metrics.runs) }

// keyFleet has, on 4 leaves, nodes that each request field tells apart: partly used
// and fractionally shared GPUs (exclusive, milli), stale health (fresh), A100s with
// less memory (model, memory). shift moves the pattern, for a second snapshot of the
// same nodes.
func keyFleet(t *testing.T, shift int) *snapshot.Snapshot {
	t.Helper()
	base := fleet(t, snapshot.SyntheticSpec{Nodes: 32, GPUsPerNode: 8, Leaves: 4, Spines: 1}, nil)
	b := snapshot.NewBuilder(t0, time.Minute)
	for i := range base.Len() {
		n := base.Node(i)
		k := (i + shift) % 8
		in := snapshot.NodeInput{Name: n.Name, Location: n.Location, Topology: n.Topology.Value, TopologyAt: t0}
		for _, g := range n.GPUs {
			gi := snapshot.GPUInput{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB, HealthAt: t0,
				UtilizationAt: t0, ThermalHeadroom: 1, PowerHeadroom: 1, HeadroomAt: t0}
			switch {
			case k == 1 && g.Index < 7:
				gi.HealthAt = t0.Add(-time.Hour) // stale health
			case k == 2:
				gi.Model, gi.MemoryMiB = "NVIDIA A100-SXM4-40GB", 40960
			}
			in.GPUs = append(in.GPUs, gi)
		}
		b.AddNode(in)
		switch k {
		case 3:
			b.AddAllocation(snapshot.Allocation{JobID: "bg", Node: n.Name, GPUs: []int{0, 1, 2, 3, 4}, Milli: 500})
		case 4:
			b.AddAllocation(snapshot.Allocation{JobID: "bg", Node: n.Name, GPUs: []int{0}})
		case 5:
			b.AddAllocation(snapshot.Allocation{JobID: "bg", Node: n.Name, GPUs: []int{0, 1, 2, 3, 4, 5, 6}, Milli: 750})
		}
	}
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMemoKeyAndEpoch alternates requests that differ in one field the plugins read,
// and changes the snapshot between equal requests, on a grouped and an exhaustive
// engine: a remembered outcome reused for the wrong request or the wrong snapshot
// would make the two differ.
func TestMemoKeyAndEpoch(t *testing.T) {
	s1, s2 := keyFleet(t, 0), keyFleet(t, 3)
	now := func() time.Time { return t0 }
	grouped, err := New(s1, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	exhaustive, err := New(s1, Options{Now: now, Exhaustive: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := framework.Request{GPUs: 2}
	variants := []framework.Request{
		{GPUs: 2, Exclusive: true}, {GPUs: 2, RequireFresh: true}, {GPUs: 2, Milli: 500}, {GPUs: 2, Milli: 250},
		{GPUs: 2, Model: "a100"}, {GPUs: 2, MinMemoryMiB: 50000}, {GPUs: 3}, {GPUs: 7}, {Nodes: 1, GPUsPerNode: 2},
		{GPUs: 2, Near: []string{"node-00005"}}, {GPUs: 2, Near: []string{"node-00020"}},
	}
	names := make([]string, s1.Len())
	for i := range names {
		names[i] = s1.Node(i).Name
	}
	compare := func(what string, req framework.Request) {
		t.Helper()
		dg, _ := grouped.DryRun(ctx, req)
		de, _ := exhaustive.DryRun(ctx, req)
		if g, w := normalized(dg), normalized(de); !reflect.DeepEqual(g, w) {
			gj, _ := json.MarshalIndent(g, "", " ")
			wj, _ := json.MarshalIndent(w, "", " ")
			t.Fatalf("%s: dry runs differ:\n%s\n---\n%s", what, gj, wj)
		}
		eg, _ := grouped.Evaluate(ctx, req, names)
		ee, _ := exhaustive.Evaluate(ctx, req, names)
		if !reflect.DeepEqual(eg, ee) {
			t.Fatalf("%s: evaluations differ:\n%+v\n---\n%+v", what, eg, ee)
		}
	}
	for _, snap := range []*snapshot.Snapshot{s1, s2, s1} {
		grouped.SetSnapshot(snap)
		exhaustive.SetSnapshot(snap)
		compare("base after a snapshot change", base)
		for _, v := range variants {
			compare(fmt.Sprintf("%+v after base", v), v)
			compare(fmt.Sprintf("base after %+v", v), base)
		}
	}
}
