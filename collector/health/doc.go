// Package health is the node agent's health engine. It turns a cycle's Snapshot and
// the Xid events the xid source forwards into telemetry.Conditions, a per-GPU and
// per-node telemetry.State, the gpuwatch_*health* series, and the Report behind the
// agent's /health endpoint and `gpuwatch check`.
//
// # How it judges
//
// Counters are judged as deltas since a baseline: the first value the engine sees
// for a series (or the one persisted in the state file) is the baseline, so a node
// that carries years of correctable errors comes up healthy. A value below the last
// one (a driver reload, a GPU reset) rebases the series. Rate rules compare the
// growth over a sliding window with a threshold (Rules); event rules fire on any
// growth. State rules (a link down, a row remap pending, a GPU lost) compare the
// current value with what is healthy, and for links and ports with what was seen at
// baseline: a link that was never up is not judged.
//
// Xids take their severity and action from NVIDIA's Xid catalog (telemetry.LookupXid,
// telemetry.ResolveXids for workflows that combine Xids, telemetry.DecodeNVLink5 for
// Xids 144–150). The driver's own recovery action (Xid 154's message, or the
// DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION field) overrides the per-Xid guess. Repeat
// offenders escalate one step (see Rules.RepeatCount and Rules.RepeatGPUs).
//
// # The driver, the fabric and the NVSwitches
//
// gpu-count compares NVML's GPU count with the NVIDIA GPUs on the PCI bus (the pci
// source) and with the most the node has had (ExpectedGPUs, else remembered in the
// state file), and names the counts: "NVIDIA driver not loaded: 8 NVIDIA GPUs on
// the PCI bus, NVML: …" when NVML did not start, "NVML sees 7 of the 8 …" when the
// driver failed to initialise a GPU. fabric-manager is raised on the node while a
// GPU with an NVLink fabric is not registered in it or its registration failed;
// nvswitch-fatal on an NVSwitch for an SXid the driver printed as Fatal (the
// engine is a collector.SXidSink), until every GPU has been reset or the node
// rebooted; persistence-mode on a GPU whose persistence mode is off when
// Options.RequirePersistenceMode says the site requires it.
//
// # How conditions clear
//
// Every condition kind has a clearing policy, chosen so that a flapping input does
// not flap the state:
//
//   - counter rules (SBE rate, NVLink, InfiniBand and PCIe error rates, throttling):
//     after Rules.ClearAfter with no growth above the threshold;
//   - state rules (link down, port down, row remap pending, GPU lost, recovery
//     action, PCIe degraded, GPU count, fabric, persistence mode): after
//     Rules.ClearCycles consecutive cycles in which
//     the input was read and good (a missing input is neither good nor bad);
//   - Xids: an Xid whose catalog action is RESTART_APP or weaker stays for
//     Rules.XidSticky after its last occurrence; a stronger ("fatal") one, and a new
//     double-bit ECC error, stay until the GPU is reset. The engine sees a reset when
//     the GPU disappears (lost, or missing while its peers report) and comes back,
//     when its volatile ECC counters go down, or when the node's boot id changes
//     (a reboot resets every GPU). A reset that leaves both volatile counters at zero
//     and keeps the GPU visible is invisible; such conditions then need an agent
//     restart after a reboot, or the operator's reset of the state file.
//
// # States
//
// The worst active severity drives the state machine of telemetry.State, one move per
// cycle and only along telemetry.State.CanTransition: warning → suspect; critical or
// fatal → draining; draining → drained once the GPU runs no processes
// (gpuwatch_gpu_processes is 0) or the condition is fatal; drained → probation once no
// critical condition is left (after a reset); probation → healthy after
// Rules.Probation without a warning. The node's state follows the worst condition of
// the node, its GPUs, links and ports, because a Slurm node drains as a whole.
//
// # Persistence
//
// With Options.StateFile set, baselines, active conditions, states and the Xid
// history survive an agent restart. The file is JSON with a version field, written
// atomically (temporary file, fsync, rename). A file that cannot be read is moved
// aside to StateFile+".corrupt", reported in Report.Warnings, and replaced.
package health
