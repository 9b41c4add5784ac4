// Package attribution is the agent's attribution source: which Slurm job or
// Kubernetes pod uses each GPU.
//
// Slurm: NVML lists each GPU's running compute and graphics processes; each
// process's /proc/<pid>/cgroup names its Slurm job (cgroup v2
// ".../slurmstepd.scope/job_<id>/step_<n>/...", cgroup v1 "/slurm/uid_<uid>/job_<id>/...",
// and the "<node>_slurmstepd.scope" and "slurm_<node>" forms of multiple-slurmd
// nodes); /proc/<pid>/status gives the owner's uid, resolved to a name through
// os/user; /proc/<pid>/environ, when readable (the agent runs as root), gives
// SLURM_JOB_ACCOUNT, SLURM_JOB_PARTITION and SLURM_JOB_USER.
//
// Kubernetes: the kubelet's pod-resources API (gRPC on
// /var/lib/kubelet/pod-resources/kubelet.sock) lists the devices each container
// was given; the nvidia.com/gpu (and nvidia.com/gpu.shared, nvidia.com/mig-*)
// device ids are GPU or MIG UUIDs, mapped to NVML indexes through the Inventory
// (and NVML for a MIG device's parent).
//
// None of this happens during a collection. Run refreshes a cache every
// RefreshEvery; Collect and Allocations only read the cache, so a hung /proc or
// kubelet never slows a cycle (dcgm-exporter's per-scrape pod mapping has been seen
// burning 10 cores). A refresh that fails keeps the last good answer of the part
// that failed and reports the error through Collect.
package attribution
