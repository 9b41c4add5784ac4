// Package simhw is gpuwatch's simulated GPU fleet. It simulates at the hardware
// boundary and never above it (DESIGN.md, principle 1): each node is an
// nvml.Interface built on go-nvml's own mock package, a DCGM host engine (DCGM,
// collector/dcgm's Library seam in go-dcgm's types), a kernel log (simkmsg) and a
// set of InfiniBand HCAs that write a /sys tree (simib). The production NVML,
// DCGM, Xid and InfiniBand collectors run against it unchanged; nothing above this
// package knows it is simulated.
//
//	Fleet ── Advance(dt) ──▶ Node ──┬─ GPUs (workload, thermal, power, faults)
//	  │  Schedule(scenario)         ├─ Server: nvml.Interface ─▶ Device: nvml.Device
//	  │                             ├─ DCGM(): dcgm.Library (profiling fields, health watches)
//	  │  WorkloadGenerator          ├─ simkmsg.Log ─▶ <Root>/<node>/kmsg.log
//	  │                             ├─ 8× simib.HCA ─▶ <Root>/<node>/sys/class/infiniband
//	  │                             └─ jobs ─▶ <Root>/<node>/proc/<pid>/cgroup
//
// # The model
//
// Time is simulated: nothing happens until Fleet.Advance, and every value is a
// function of the seed and the sequence of calls, never of wall time or of reads
// (NVML reads take no random numbers). Advance splits long steps into steps of at
// most 5 s and applies scheduled faults at their exact time. The fleet is 16 HGX
// H100 nodes in about 45 µs per simulated second, without allocating.
//
// Jobs (Node.StartJob, or a WorkloadGenerator playing scheduler) drive each GPU:
// training runs near 100% with a checkpoint pause every 30 minutes and pushes an
// H100 into its 700 W cap (ClocksEventReasonSwPowerCap, power violation time);
// inference runs at 35–80% with a slow swing; an idle-held allocation keeps a CUDA
// context and ~500 MiB at 0% and near-idle power. Power follows utilization at
// once; temperature follows power with a 40 s time constant; SM clocks drop under
// power caps and thermal or power-brake slowdown; energy integrates power; the
// violation counters integrate the active clocks event reasons. Multi-GPU jobs
// move NVLink traffic (FI_DEV_NVLINK_THROUGHPUT_*) spread over the active links;
// multi-node jobs move InfiniBand traffic, GPU i's on rail i (HCA mlx5_i).
// Nodes start with the history of a machine that has been up for hours to weeks:
// energy, low-utilization time, and on some GPUs and ports a few PCIe replays,
// corrected ECC errors, NVLink replays and symbol errors. Collectors must work
// with deltas from a baseline, as on real nodes.
//
// The fabric is rail-optimized (NVIDIA's SuperPOD design): NodesPerLeaf nodes form
// a scalable unit whose rail r all plug into leaf switch leaf-NN-rail<r>; units
// group under spines and spines into blocks; NVLinkDomainNodes groups nodes into
// multi-node NVLink domains, which NVML reports through the GPU fabric info
// (cluster UUID, clique id). The names are inventory data (Node.Leaf, HCALeaf,
// Spine, Block, NVLinkDomain), as a real site keeps them.
//
// # NVML behaviours reproduced
//
//   - Shapes from real nvidia-smi dumps: names, 81559/81920 MiB, 18 NVLink 4 /
//     12 NVLink 3 links to 4/6 NVSwitches, 700/400 W, PCIe Gen5/Gen4, clocks,
//     thresholds, PCI bus ids in NVML's "00000000:1B:00.0" form, driver 570 (the
//     first branch with the recovery-action field and Xid 154; a Shape with an
//     older driver answers NOT_SUPPORTED for field 230).
//   - Init/Shutdown reference counting; ERROR_UNINITIALIZED outside them.
//   - A GPU that fell off the bus (Xid 79) answers ERROR_GPU_IS_LOST to every
//     call, including the unmodelled ones, until a recover fault; its handle stays
//     valid by index, UUID and PCI address and the device count does not change,
//     as the driver keeps its handle. The other GPUs answer normally.
//   - A GSP hang (Xid 119) makes telemetry calls answer ERROR_TIMEOUT while the
//     identity calls the driver answers from its own copy still succeed.
//   - SXM boards have no fan (GetFanSpeed: NOT_SUPPORTED); A100 and H100 remap
//     rows instead of retiring pages (GetRetiredPages: NOT_SUPPORTED); the NVLink
//     utilization counters are gone since Ampere (NOT_SUPPORTED: use the
//     throughput fields); FI_DEV_POWER_AVERAGE is not on GA100; GPU fabric info is
//     Hopper only.
//   - GetFieldValues answers each value with its own NvmlReturn, ValueType and a
//     simulated-time Timestamp; link-scoped fields take the link in ScopeId,
//     unknown fields answer NOT_SUPPORTED, invalid ids INVALID_ARGUMENT.
//   - Events: XidCriticalError, SingleBitEccError, DoubleBitEccError,
//     SingleBitEccErrorStorm, DramRetirementEvent/Failure and GpuRecoveryAction.
//     Xids 62, 79, 119 and 120 are not delivered (they reach only the kernel log,
//     as the health model expects); a lost GPU makes the next Wait answer
//     ERROR_GPU_IS_LOST once. Wait times out on simulated or wall time, whichever
//     comes first, so agents neither spin nor stall when the fleet runs fast.
//   - Counters only grow, across faults and resets; a reset clears only the
//     volatile ECC counts and pending row remaps (and the InfoROM keeps the
//     remap-failure flag).
//
// Every nvml.Device and nvml.Interface method the simulation does not model
// answers ERROR_NOT_SUPPORTED instead of panicking like the bare moq mock, and
// Interface.DeviceXxx(dev, …) delegates to dev.Xxx(…) as the real library does.
// The methods the agent uses are implemented directly on Device and Server, so
// the mock's unbounded call recording does not grow in a long-running demo.
//
// # Faults
//
// Node.Inject applies a Fault now; a Scenario (YAML, ParseScenario/LoadScenario)
// scheduled with Fleet.Schedule applies each fault when simulated time crosses
// its offset. Kinds: xid (13, 31, 43, 48, 62, 63, 64, 74, 79, 94, 95, 119, 120,
// 154 with their side effects; any other number just logs and delivers), gpu-lost,
// ecc-dbe, ecc-sbe-storm, row-remap-pending, row-remap-failure, thermal, power,
// nvlink-down, nvlink-crc, ib-down, ib-flap, ib-symbol-errors, driver-not-loaded
// (NVML's Init answers ERROR_DRIVER_NOT_LOADED), gpu-missing (the driver failed
// to initialise a GPU: NVML lists one less, the PCI bus still has it),
// fabric-manager (GPU fabric state not started), sxid (an NVSwitch error in the
// kernel log; a fatal one takes the NVLink on that switch port down),
// persistence-mode-off and recover. Optional fields: link, hca, port, count,
// duration, temp, watts, action, sxid, nvswitch.
// docs/faults.md has the format, an example and each kind's observable effects.
//
// # Files
//
// With FleetSpec.Root set, every Advance writes each node's view of the world under
// <Root>/<node>: sys/ (the InfiniBand sysfs tree and the PCI tree of bridges,
// GPUs and NVSwitches under devices/ and bus/pci/devices/; Node.SysRoot), kmsg.log (the
// kernel log in /dev/kmsg format, appended; Node.KmsgPath) and, from StartJob,
// proc/<pid>/cgroup in Slurm's cgroup v2 form
// (0::/system.slice/slurmstepd.scope/job_<id>/step_0/user/task_0) and
// proc/<pid>/comm. Writing the sysfs trees costs a few file operations per changed
// counter (about 10 ms per node on a slow disk); FleetSpec.SysfsEvery thins them
// out when the fleet runs much faster than real time.
//
// Node.GPUs and Node.Jobs give read-only snapshots for tests and the demo's
// summary; collectors must read the hardware through NVML and the files instead.
package simhw
