// Package slurm is gpuwatch's adapter to Slurm through its command-line tools.
//
// It starts with what `gpuwatch check` needs to act as a Slurm HealthCheckProgram
// the way NHC does: read a node's state and reason (scontrol show node), drain it
// with a reason carrying gpuwatch's owned prefix, and resume only nodes whose
// reason carries that prefix, so gpuwatch never undoes a drain a human or another
// tool made. The drain controller (issue 6) builds on the same calls.
//
// scontrol is taken from PATH (or Scontrol.Path) and honours SLURM_CONF from the
// environment, so a test cluster on loopback is driven exactly like a site's.
package slurm
