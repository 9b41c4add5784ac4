// Package placement is gpuwatch's topology-aware, health-aware gang placement
// engine. It runs the framework pipeline over the nodes of a snapshot and assembles
// the gang in the lowest topology domain that fits:
//
//	request ─▶ Normalize ─▶ for each candidate node (bounded worker pool when the fleet is big):
//	                          filters: capacity → model → health → staleness
//	                          picker:  gpuset (best-connected, rail-aligned GPUs)
//	                          scorers: gpuset ×2, fragmentation ×2, topology, health, load, straggler
//	                      ─▶ assemble: one node → NVLink domain → leaf → spine → block → cluster
//	                          (up to Request.Required); in a domain, fewest leaves: the
//	                          largest leaves whole, then the smallest leaf covering the rest;
//	                          between domains: fewest leaves, best fit, best mean score
//	                      ─▶ rails: prefer the rails every chosen node has free
//	                      ─▶ Decision (id, assignments, quality, rejections, candidates)
//	                      ─▶ DryRun: nothing held │ Reserve: lease held in memory
//
// Evaluate is the kube-scheduler extender's path: filter and score a list of nodes
// for one pod, no decision recorded. EvaluateAppend writes the answers into a
// caller's buffer; at 5,000 nodes the 320 KB answer slice Evaluate allocates per pod
// costs the garbage collector more than the evaluation itself.
//
// # Node classes
//
// When every plugin is a framework.Classifier (the built-in ones are), nodes the
// plugins cannot tell apart — equal in every plugin's node key (GPU models and
// memory, health, staleness, exclusions, measured load and headroom, straggler
// marks, rails, link
// matrix, leaf for the built-in ones) and in the free milli-GPU per GPU — form a
// class, and the pipeline runs once per class: on the class's first candidate, its
// outcome copied to the others. Classes are kept incrementally: the static key is
// interned on SetSnapshot, the free vector on every reserve, release and expiry
// that touches the node. Each class's outcome is also remembered across decisions,
// per request key (GPUs per node or in all, near, and every plugin's request key:
// milli, model, memory, exclusive, fresh), until the class's leaf changes (the
// topology scorer reads the leaf's free share) or the snapshot does. Decisions are
// exactly those of running every plugin on every node, which Options.Exhaustive
// does and TestGroupedMatchesExhaustive compares against on random fleets. A
// plugin that is not a Classifier turns grouping off; a new plugin that is one
// keeps it (TestPluginContributesClassKey).
//
// The decision record (chosen nodes, runners-up, every node with
// Request.Explain) evaluates its nodes again with Candidate.Explain, for the
// reasons the fast path does not build; TestRecordMatchesFastPath holds every
// recorded verdict, GPU set and score equal to the fast path's.
//
// # Invariants
//
//   - No placement uses a GPU that is draining, drained, excluded by the drain
//     controller (or on an excluded node), or, with RequireFresh, of stale health.
//   - A gang is placed whole or not at all: a decision either assigns every GPU of
//     the request or none.
//   - Reservations never double-book: a GPU's allocations and reservations never
//     exceed 1000 milli-GPU at the time a reservation is made (a later snapshot may
//     show a scheduler over-committing it; the engine then sees it full).
//   - Every score is in [0,1]; a scorer answering outside is clamped and the clamp
//     recorded.
//   - Decisions read a snapshot and the in-memory reservations only: no I/O.
//
// Metrics (Engine is a prometheus.Collector): gpuwatch_placement_decisions_total
// {outcome,mode}, gpuwatch_placement_latency_seconds{mode},
// gpuwatch_placement_leaves_spanned, gpuwatch_placement_lca_tier_total{tier},
// gpuwatch_placement_nvlink_domains_spanned, gpuwatch_placement_fragmentation_left,
// gpuwatch_placement_rail_alignment, gpuwatch_placement_rejected_nodes_total{plugin},
// gpuwatch_placement_reservations, gpuwatch_placement_reserved_gpus,
// gpuwatch_placement_reservations_{expired,released}_total,
// gpuwatch_placement_pipeline_runs_total,
// gpuwatch_placement_snapshot_age_seconds. Each decision is an OpenTelemetry span
// (gpuwatch.placement.decide) through the global tracer provider unless
// Options.Tracer is set.
package placement
