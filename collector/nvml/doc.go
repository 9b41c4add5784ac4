// Package nvml is the agent's NVML source: GPU discovery (Discover builds the
// node's collector.Inventory), the dcgm-exporter default GPU series read straight
// from NVML (Source.Collect), the health-critical series on the short schedule
// (Source.CollectHealth: ECC, retired pages, remapped rows, the driver's recovery
// action, gpuwatch_gpu_lost) and NVML Xid events (Source.WatchEvents). The full
// schedule also reads NVML's device count (gpuwatch_node_gpus{source="nvml"}) and
// each GPU's NVLink fabric registration (gpuwatch_gpu_fabric_state and _status,
// where NVML has one). When NVML does not start, InitError says why in words and
// Unavailable stands in for the source: it reports the error and NVML's count as 0.
//
// It reads the hardware only through go-nvml's nvml.Interface and nvml.Device, so
// the same code runs against libnvidia-ml.so and collector/simhw.
//
// # Failures stay local
//
//   - ERROR_NOT_SUPPORTED omits that value. The source remembers which reads a GPU
//     does not support and skips them until the next re-probe (Options.Reprobe
//     cycles later), so an SXM board's missing fan or a Hopper's missing page
//     retirement costs one call, not one per cycle.
//   - ERROR_GPU_IS_LOST marks the GPU lost: gpuwatch_gpu_lost reads 1 and the rest
//     of that GPU's reads are skipped in the cycle. The next cycle tries again with
//     one call, so a GPU that comes back after a reset reports again. Other GPUs
//     are unaffected; a lost GPU is an observation, not a source error.
//   - ERROR_TIMEOUT (a hung GSP, Xid 119) skips the rest of that GPU's reads in the
//     cycle, since each would wait as long again on real hardware. It and any
//     other unexpected answer are returned as an error naming the GPU, the call
//     and the return code, after every other GPU has been read.
//
// # Labels and time
//
// Samples carry telemetry.LabelGPUIndex only (plus a metric's own labels); the
// exporter adds the GPU's identity from the Inventory. Label sets are built once
// per GPU at New and shared by every sample of that GPU, so they must be treated
// as read-only. Sample.Time is when the GPU was read (one clock reading per GPU
// per cycle).
//
// # Events
//
// WatchEvents registers XidCriticalError on every GPU that is not lost (and the
// single- and double-bit ECC event types where the GPU supports them) and hands
// each Xid to a collector.XidSink. NVML never reports Xids 62, 79, 119 and 120 as
// events (the driver only logs them), so the kernel-log reader stays necessary;
// ECC events carry no Xid and are counted (EventStats) rather than forwarded: the
// ECC counters themselves come through CollectHealth.
package nvml
