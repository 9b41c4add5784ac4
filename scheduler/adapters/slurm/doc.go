// Package slurm is gpuwatch's adapter to Slurm through its command-line tools.
//
// It started with what `gpuwatch check` needs to act as a Slurm
// HealthCheckProgram the way NHC does: read a node's state and reason (scontrol
// show node), drain it with a reason carrying gpuwatch's owned prefix, and resume
// only nodes whose reason carries that prefix, so gpuwatch never undoes a drain a
// human or another tool made. The drain controller and the fair-share feedback
// build on the rest:
//
//   - Nodes (sinfo --json): every node's state and flags (drain, draining,
//     drained, down, reboot requested or issued, not responding), reason, and
//     GPUs configured and in use with their indices ("gpu:h100:3(IDX:0-2)").
//   - Jobs, RunningJobs, PendingJobs (squeue --json): each job's account, user,
//     priority, and per node the GPU indices it holds.
//   - Reboot and CancelReboot (scontrol reboot ASAP nextstate=RESUME …).
//   - SetSiteFactor (scontrol update jobid=N sitefactor=V) and SiteFactors
//     (sprio), the fair-share lever: priority/multifactor adds a job's SiteFactor
//     to its priority.
//
// The commands come from PATH (or next to Scontrol.Path) and honour SLURM_CONF
// from the environment or Scontrol.Env, so a test cluster on loopback
// (test/realslurm) is driven exactly like a site's. Every call is bounded by
// Scontrol.Timeout. A failed call is a *CommandError that matches ErrUnreachable
// (the controller did not answer: retry later) or ErrRejected (it refused: do not
// retry). Slurm 22.05 does not always say which: `squeue --json` and `sinfo
// --json` exit 0 with only "Unspecified error" in their JSON when slurmctld is
// down, and a job update prints "Unexpected message received"; such failures are
// settled with `scontrol ping`.
//
// The parsers (ParseShowNode, ParseSinfoJSON, ParseSqueueJSON, ParseSprio,
// ParseGRES, ExpandHostlist) are tested on output captured from Slurm 22.05.8
// (testdata/real, see its README) and fuzzed. The JSON parsers also take the
// shapes Slurm 23.02+ prints (states as lists, numbers as {"set","number"}
// objects), so a newer Slurm does not break them.
package slurm
