// Package localslurm starts and stops a real Slurm cluster on one host, for
// gpuwatch's tests (through test/realslurm, which wraps it for testing.TB) and
// `gpuwatch demo --slurm`: Debian bookworm's slurm-wlm 22.05 and munge, one slurmctld and
// (by default) four slurmd (`slurmd -N gpu01` … gpu04), each node advertising eight
// GPUs, all on 127.0.0.1 ports chosen free at start, with every file — slurm.conf,
// gres.conf, state, spool, logs, PID files, the munge key and socket — in a
// directory of the cluster's own.
//
// Launch starts a cluster; Close stops it. It does not import the testing
// package, so the shipped binary does not link it; test/realslurm gives tests
// Start, Shared and methods that fail a test on error. Env gives the SLURM_CONF that points scontrol,
// sinfo, squeue and sbatch at the cluster. Options.TopologyConf writes a
// topology.conf and sets TopologyPlugin=topology/tree (22.05 has no topology/block);
// Options.FutureNodes defines extra State=FUTURE nodes a topology.conf may name.
// StopControllerNow and StartControllerAgain take slurmctld down and up again on the same
// StateSaveLocation, for fault tests.
//
// What is real and what is not: slurmctld, slurmd, slurmstepd, munged and the
// client commands are the real programs, and jobs really run (as root) on this
// machine. The GPUs are not: each is a symlink to /dev/null, so Slurm allocates,
// counts and indexes them (CUDA_VISIBLE_DEVICES, `gpu:h100:2(IDX:0-1)`) but a job
// sees no device. A reboot (`scontrol reboot`) runs the cluster's RebootProgram,
// which restarts that node's slurmd with -b after Options.RebootDelay, so slurmctld
// sees the node go through REBOOT_ISSUED and come back as after a real reboot; no
// machine reboots.
//
// Requirements: root (slurmd launches jobs as their user, and SlurmUser is root),
// and slurmctld, slurmd, munged, sbatch, scontrol, sinfo, squeue, sprio and scancel on
// PATH (`sudo make test-deps` installs Debian's slurm-wlm and munge). munged is
// started per cluster with its own key and socket (AuthInfo=socket=…), so no
// system munged is needed or touched. When something is missing the test is
// skipped, naming it — unless GPUWATCH_REQUIRE_REALSLURM=1 is set, in which case
// it fails.
//
// Stopping sends SIGTERM to the daemons by their PID files (SIGKILL after a few
// seconds), then kills any process left that belongs to the cluster — one whose
// command line, environment (SLURM_CONF), working directory or open files point
// into the cluster's directory, such as a job's slurmstepd and script — and never
// a process by name.
package localslurm
