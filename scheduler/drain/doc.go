// Package drain is gpuwatch's health-driven drain controller: it turns the agents'
// health reports (healthreport.Report) into budgeted, audited drains, reboots and resumes
// through an Actuator (Slurm, Kubernetes, or LogActuator), and into a list of GPUs
// gpuwatch's own placement must avoid.
//
//	agent push ──▶ Observe (cheap; no I/O unless it decides)
//	                 │ per condition: rule match, hysteresis (N reports or T time; fatal at once)
//	                 │ per node: healthy → suspect → draining → drained → probation → healthy
//	                 │ budget (circuit breaker), decision audited + state saved
//	                 ▼
//	              pending action ──▶ Run/Process worker: State, then Drain/Reboot/Evacuate/Resume,
//	                                 retried with back-off until accepted; never repeated
//
// # Invariants
//
//   - Automation never drains more than Budget.Limit distinct nodes within the budget
//     window. A refused drain trips the circuit breaker: automation keeps observing,
//     audits "would drain, budget exhausted" (outcome skipped-budget), sets
//     gpuwatch_drain_budget_exhausted to 1, and drains nothing more until
//     ResetBudget (or, with budget.auto_reset, until the window has room).
//   - Automation resumes only nodes whose current reason starts with ReasonPrefix
//     (read through Actuator.State just before the call). A node drained by someone
//     else is never resumed nor re-drained: audited as skipped-not-owned.
//   - Before every Drain, Reboot and Resume the worker reads State, so a retry, or a
//     restart after a call that took effect, never repeats it.
//   - Every decision, actuation attempt and state transition is one fsync'd line of
//     the audit log; the controller state is saved atomically before Observe returns
//     a decision and after each actuation, so a restart loses no decision, pending
//     action or budget entry. The log is written before the state; the state records
//     the log's length, and a restart after a crash audits (event recovery) the
//     records written after the last save and the state each node was restored to.
//   - While a drain-rule condition persists on a node gpuwatch holds drained, the
//     worker checks every Options.VerifyInterval that the drain is still in place
//     and re-asserts it (as a cordon, no new budget) if a reboot or someone outside
//     gpuwatch resumed the node; ManualResume is the way to override.
//   - A standby controller (Options.Standby: the follower of replicas that elect a
//     leader) decides and actuates nothing; Takeover first reconciles its state
//     with the drains the scheduler carries (Lister: adopt what the state lacks,
//     release what it holds and the scheduler does not, each audited as event
//     takeover), then replays the latest reports, then acts.
//   - Node state moves only along telemetry.State.CanTransition (each step audited as
//     a transition), except where Takeover sets it to what the scheduler shows
//     (audited as takeover, with from and to).
//   - Every window (hysteresis, probation, back-off, verification, budget) measures
//     elapsed time: a step of the wall clock, noticed against the monotonic clock
//     (Options.Monotonic), moves every timer with it (audited as event clock).
//
// # States
//
// healthy: nothing tracked. suspect: a rule tracks a condition (waiting for
// hysteresis, excluding a GPU, or waiting for budget). draining: a drain is decided
// and the actuator has not accepted it yet. drained: the actuator accepted it.
// probation: the node reports no drain-rule condition; it stays drained until it has
// done so for probation.duration with no report gap over probation.max_report_gap and
// the probation checks pass, then it is resumed and becomes healthy. A drain-rule
// condition during probation sends it back to drained (it never left: no new
// budget). A manual drain holds the node until ManualResume.
//
// # Policy file
//
//	dry_run: false            # decide and audit, never call the actuator
//	hysteresis:
//	  observations: 3         # act after N consecutive reports with the condition...
//	  for: 30s                # ...or after it has been present this long (fatal: at once)
//	  clear_observations: 5   # forget a condition after N consecutive reports without it...
//	  clear_after: 10m        # ...and at least this long
//	budget:
//	  max: "10%"              # share of known nodes, or a count: 3
//	  min: 1                  # smallest limit a share gives (0: exact share)
//	  window: 1h              # sliding window drains are counted in
//	  auto_reset: false       # false: a tripped breaker waits for ResetBudget
//	probation:
//	  duration: 30m
//	  max_report_gap: 5m
//	  checks: [gpu-count, no-warnings]   # also: agent-healthy
//	retry:
//	  initial: 5s             # back-off of failed actuations, doubling...
//	  max: 5m                 # ...up to this
//	rules:                    # first match wins; a file's rules replace the defaults
//	  - name: reboot-node
//	    match:                # every given criterion must match; any value within one
//	      severities: [critical, fatal]
//	      actions: [RESTART_BM]
//	      # kinds: [xid, gpu-lost]  xids: [79]  scopes: [gpu, nvlink, node, nvswitch, ib_port]
//	    mode: reboot          # cordon | drain | requeue | reboot | exclude-gpu | ignore
//	    immediate: false      # true: act on the first report
//
// Sections left out keep DefaultPolicy's values. Modes: cordon stops new work;
// drain also evacuates the work on the faulty GPUs (Evacuator, with
// Options.Workloads); requeue evacuates all work on the node; reboot drains and
// reboots the node (the node stays drained after the reboot until probation ends);
// exclude-gpu only lists the GPU in Exclusions.
package drain
